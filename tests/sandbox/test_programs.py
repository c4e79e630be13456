"""handrail's own helper programs come from the system, not from a folder a command can write.

The probe: a workspace whose `.venv/bin` is first on PATH holds a `git`, `find`, `cat`, `bash`
and `sh` that would leave a canary if handrail ran them. Unasked `git status` (the git guard
asks git for the repository's config), an approved line (the `.git` scan runs `find`, the
command's shell is bash) and a hook (its shell) must run none of them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from handrail import Hook, Registry, Runtime
from handrail.builtin import ReadFile, RunShell
from handrail.sandbox import sandbox_support
from handrail.sandbox._programs import SYSTEM_BIN, system_which

SUPPORT = sandbox_support()


def test_system_programs_come_from_the_systems_folders() -> None:
    for name in ("git", "find", "bash", "cat"):
        found = system_which(name)
        assert found is not None and os.path.dirname(found) in SYSTEM_BIN, found


@pytest.mark.skipif(not SUPPORT.namespaces, reason="needs namespaces for the write guard")
async def test_programs_planted_on_path_in_the_workspace_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    bin_dir = ws / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    canary = tmp_path / "PLANTED-RAN"
    for name in ("git", "find", "cat", "bash", "sh", "true"):
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\necho {name} >> {canary}\nexit 0\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (ws / ".git").mkdir()  # a repository for `git status` (its contents do not matter here)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    system_which.cache_clear()
    hook = Hook(event="post_tool_use", matcher="read_file", command="echo hooked")
    (ws / "a.txt").write_text("a\n")
    try:
        async with Runtime(Registry([RunShell(), ReadFile()]), root=ws, hooks=[hook]) as rt:
            await rt.call("run_shell", {"command": "git status"})  # unasked: the git guard
            await rt.call("read_file", {"file_path": "a.txt"})  # the hook's shell
        async with Runtime(Registry([RunShell()]), root=ws, mode="bypass") as rt:
            await rt.call("run_shell", {"command": "echo approved > b.txt"})  # find, bash
    finally:
        system_which.cache_clear()
    assert not canary.exists(), canary.read_text()
    assert (ws / "b.txt").read_text() == "approved\n"
