"""The shell's sandbox through the commands people run: `handrail run` and `handrail call`.

A scripted model (our model server, over real HTTP) or a `handrail call` asks for read-only
lines that would reveal another program's secrets if the sandbox showed the machine: a token on
a running process's command line, a file in the host's /tmp. In plan mode and in default mode
(where the line runs unasked) the model must receive neither canary, and the line must have run
in the read-only sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.sandbox import sandbox_support
from handrail.testing import ModelServer, Reply, ToolUse

SUPPORT = sandbox_support()
pytestmark = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.fresh_proc and SUPPORT.hides_paths),
    reason="this machine cannot give a command its own /proc and /tmp",
)
TIMEOUT = 120


def env_for(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HANDRAIL_") and not k.endswith(("_API_KEY", "_AUTH_TOKEN"))
    }
    env.update(
        HANDRAIL_STATE_DIR=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "xdg-state"),
    )
    return env


class Canaries:
    """A process with a token on its command line, and a file in the host's /tmp."""

    def __init__(self) -> None:
        self.token = f"PROC-CANARY-{uuid.uuid4().hex}"
        self.file = Path("/tmp") / f"handrail-tmp-canary-{uuid.uuid4().hex}"
        self.file.write_text(f"TMP-CANARY-{uuid.uuid4().hex}\n")
        self.text = self.file.read_text().strip()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", self.token],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def leaked(self, text: str) -> list[str]:
        return [c for c in (self.token, self.text, self.file.name) if c in text]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.file.unlink(missing_ok=True)


@pytest.fixture
def canaries() -> Iterator[Canaries]:
    planted = Canaries()
    try:
        yield planted
    finally:
        planted.close()


PROBE = "ls -A /tmp; cat /proc/[0-9]*/cmdline | tr '\\0' '\\n'; ls /proc"


@pytest.mark.parametrize("mode", ["plan", "default"])
def test_handrail_run_gives_the_model_nothing_of_other_programs(
    tmp_path: Path, canaries: Canaries, mode: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = [
        Reply(text="Looking.", tool_calls=[ToolUse("run_shell", {"command": PROBE})]),
        Reply(text="Done."),
    ]
    with ModelServer(script) as server:
        out = subprocess.run(
            [
                *(sys.executable, "-m", "handrail", "run", "Look around.", "--root", str(root)),
                *("--mode", mode, "--model", "openai_chat:m", "--output-format", "json"),
                *("--base-url", server.base_url("openai_chat")),
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=env_for(tmp_path),
            check=False,
        )
        requests = server.requests
    assert out.returncode == 0, out.stderr
    seen = json.dumps([r.body for r in requests])
    assert "Looking." in seen  # the tool's result reached the model's next request
    assert "binary output" not in seen and "/bin/bash" in seen  # the probe's output was read
    assert canaries.leaked(seen) == []
    assert canaries.leaked(out.stdout + out.stderr) == []


def test_handrail_call_runs_a_read_only_line_unasked_in_the_read_only_sandbox(
    tmp_path: Path, canaries: Canaries
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "handrail", "call", "run_shell", f"command={PROBE}", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env_for(tmp_path),
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["metadata"]["writes"] == "tmpdir"
    assert "/bin/bash" in result["content"]  # the probe's output was read
    assert canaries.leaked(out.stdout + out.stderr) == []
