"""The `handrail` command (placeholder until the CLI issue): version and the demo."""

from __future__ import annotations

import subprocess
import sys

from handrail import __version__


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_version() -> None:
    out = run("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"handrail {__version__}"


def test_demo_runs_every_scenario() -> None:
    out = run("demo")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "took" in text and "3 x 300 ms lookups" in text
    assert "[INVALID_ARGS] add" in text
    assert "Did you mean `lookup`?" in text
    assert "[INTERRUPTED] save_note" in text
    assert "[ok ] save_note" in text
    assert "[PERMISSION_DENIED] save_note" in text


def test_no_arguments_prints_help() -> None:
    out = run()
    assert out.returncode == 0
    assert "demo" in out.stdout


def test_demo_coding_tools_scene() -> None:
    text = run("demo").stdout
    scene = text.split("4. Coding tools", 1)[1]
    assert "[FILE_NOT_READ] edit_file" in scene
    assert "[ok ] edit_file" in scene
    assert "[OUTSIDE_WRITE_ROOTS] write_file" in scene
    assert "CRLF line endings kept: True" in scene
