"""The `handrail` command: version, the demo, start-up imports, exit statuses and signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from handrail import __version__
from handrail.sandbox import sandbox_support


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


# -- the command as a whole: start-up imports, exit statuses, signals ---------------------------

IMPORTS_AFTER = """
import sys
from handrail._cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("MCP-SDK-LOADED" if "mcp" in sys.modules else "MCP-SDK-NOT-LOADED", code)
"""


def imports_after(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_AFTER, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "XDG_CONFIG_HOME": str(cwd / "xdg")},
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["serve", "--help"],
        ["call", "--help"],
        ["tools"],
        ["tools", "--json"],
        ["call", "read_file", "file_path=missing.txt"],
    ],
)
def test_help_tools_and_call_do_not_import_the_mcp_sdk(tmp_path: Path, args: list[str]) -> None:
    line = imports_after(tmp_path, *args)
    assert line.startswith("MCP-SDK-NOT-LOADED"), line


def test_the_console_script_is_installed(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("handrail")
    if not script.exists():
        pytest.skip("no console script next to this interpreter")
    out = subprocess.run(
        [str(script), "tools"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("TOOL ")


def test_help_lists_every_command() -> None:
    out = run("--help")
    assert out.returncode == 0
    for command in ("demo", "tools", "call", "serve"):
        assert f"    {command} " in out.stdout


def test_an_unknown_command_is_one_line_exit_2() -> None:
    out = run("frobnicate")
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1
    assert "invalid choice: 'frobnicate'" in out.stderr


def sleepers(mark: str) -> list[int]:
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, UnicodeDecodeError):
            continue
        if f"sleep {mark}" in cmd and "handrail" not in cmd and state != b"Z":
            found.append(int(entry))
    return found


@pytest.mark.skipif(
    not sandbox_support().available, reason="run_shell needs an OS sandbox on this machine"
)
def test_sigterm_stops_the_call_and_its_processes(tmp_path: Path) -> None:
    mark = f"1000.{os.getpid()}{int(time.monotonic() * 1000) % 10**6}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "handrail", "call", "run_shell", f"command=sleep {mark}", "--yes"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
    )
    try:
        for _ in range(600):  # up to 60 s for the command to start
            if sleepers(mark) or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert sleepers(mark), proc.communicate(timeout=60)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143
        assert "Traceback" not in err
        for _ in range(100):  # the sandboxed tree goes away with the call
            if not sleepers(mark):
                break
            time.sleep(0.1)
        assert sleepers(mark) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        for pid in sleepers(mark):
            os.kill(pid, signal.SIGKILL)
