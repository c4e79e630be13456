"""Scripts as values and as JSON files, and `python -m handrail.testing`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import handrail.testing
from handrail.testing import Fault, Reply, ToolUse, load_script


def test_public_surface() -> None:
    assert handrail.testing.__all__ == sorted(handrail.testing.__all__)
    for name in handrail.testing.__all__:
        obj = getattr(handrail.testing, name)
        if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__code__")):
            assert obj.__module__ == "handrail.testing", name


def test_values_are_frozen_and_keyword_only() -> None:
    reply = Reply(text="x", tool_calls=[ToolUse("ls", {"path": "."})])
    assert reply.tool_calls == (ToolUse("ls", {"path": "."}),)
    with pytest.raises(AttributeError):
        reply.text = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Reply("x")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Fault(429)  # type: ignore[misc]
    assert ToolUse("ls", '{"path": ').arguments_json() == '{"path": '
    assert ToolUse("ls").arguments_json() == "{}"


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"delay": -1}, "between 0 and 60"),
        ({"hang": 61}, "between 0 and 60"),
        ({"first_delay": float("nan")}, "number of seconds"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"cut_after": -1}, "cut_after"),
        ({"cached_tokens": 11}, "cannot exceed"),
        ({"output_tokens": 1, "reasoning_tokens": 2}, "cannot exceed"),
        ({"tool_calls": [{"name": "ls"}]}, "ToolUse"),
    ],
)
def test_reply_checks_its_values(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises((ValueError, TypeError), match=says):
        Reply(**kwargs)


def test_fault_checks_its_values() -> None:
    with pytest.raises(ValueError, match="HTTP status"):
        Fault(status=42)
    with pytest.raises(ValueError, match="between 0 and 60"):
        Fault(retry_after=-1)


def test_load_script(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            [
                {
                    "text": "Let me look.",
                    "tool_calls": [
                        {"name": "read_file", "arguments": {"file_path": "a.py"}},
                        {"name": "ls", "arguments": "{broken", "id": "call_x"},
                    ],
                    "input_tokens": 120,
                    "chunk_size": 1,
                },
                {"fault": {"status": 429, "retry_after": 0.5}},
                {"text": "Done.", "stop": "max_tokens"},
            ]
        )
    )
    assert load_script(path) == [
        Reply(
            text="Let me look.",
            tool_calls=[
                ToolUse("read_file", {"file_path": "a.py"}),
                ToolUse("ls", "{broken", id="call_x"),
            ],
            input_tokens=120,
            chunk_size=1,
        ),
        Fault(status=429, retry_after=0.5),
        Reply(text="Done.", stop="max_tokens"),
    ]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not JSON"),
        ('{"text": "x"}', "a JSON list"),
        ('["x"]', r"\[0\]: each script item must be an object"),
        ('[{"txt": "x"}]', r"\[0\]: unknown reply keys \['txt'\]"),
        ('[{"fault": {"status": 429, "wait": 1}}]', r"unknown fault keys \['wait'\]"),
        ('[{"fault": {}, "text": "x"}]', "nothing else"),
        (
            '[{"tool_calls": [{"arguments": {}}]}]',
            r"tool_calls\[0\]: a tool call needs a string `name`",
        ),
        ('[{"tool_calls": [{"name": "ls", "arguments": 3}]}]', "must be an object or a string"),
        ('[{"delay": 100}]', "between 0 and 60"),
    ],
)
def test_load_script_names_the_bad_entry(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "script.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=says):
        load_script(path)


def test_command_line_server(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"text": "Hello from the script."}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "handrail.testing", "--script", str(path), "--require-key", "k"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        r = httpx.post(
            url + "/v1/messages",
            headers={"x-api-key": "k"},
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]},
            timeout=5,
        )
        assert r.json()["content"] == [{"type": "text", "text": "Hello from the script."}]
        assert httpx.post(url + "/nowhere", json={}, timeout=5).status_code == 404
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    assert "2 requests, 0 script items left, 1 problems" in err
    assert "problem: request 2 (POST /nowhere): no such endpoint" in err


def test_command_line_refuses_a_bad_script(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text("[1]")
    proc = subprocess.run(
        [sys.executable, "-m", "handrail.testing", "--script", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "each script item must be an object" in proc.stderr


def test_the_module_example_runs() -> None:
    doc = handrail.testing.__doc__ or ""
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "handrail.testing docstring", "exec"), {})
