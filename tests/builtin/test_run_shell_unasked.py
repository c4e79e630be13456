"""What nobody approved cannot write: the kernel holds an unasked shell line, not the parser.

A line runs unasked when it is judged read-only (default, accept_edits and dont_ask modes) and
every line in plan mode does. Such a line runs with no write roots: only its `$TMPDIR` (`/tmp`)
is writable. The probes play a classifier that misjudges (a `RunShell` whose `read_only` says
yes to everything) and real lines the classifier of earlier releases called read-only, and
plant canaries: files that must not appear, settings that must not change.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import Approval, ApprovalRequest, Registry, Runtime
from handrail.builtin import RunShell
from handrail.permissions import Policy
from handrail.sandbox import sandbox_support

SUPPORT = sandbox_support()
needs_mounts = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.namespaces and SUPPORT.keeps_metadata),
    reason="this machine cannot confine commands in a mount namespace",
)
pytestmark = needs_mounts


class Misjudging(RunShell):
    """A classifier gone wrong: every line looks read-only, so every line runs unasked."""

    @staticmethod
    def read_only(args: Any) -> bool:
        return not args.run_in_background


WRITES = (
    "echo pwned > canary.txt; touch canary2.txt; mkdir canary_dir; "
    "chmod 000 keep.txt; rm -f keep.txt; ln -s /etc/passwd canary_link; "
    "sh -c 'echo child > canary3.txt'; python3 -c \"open('canary4.txt','w')\"; "
    "echo tmp-ok > /tmp/scratch && cat /tmp/scratch; "
    'echo tmpdir-ok > "$TMPDIR/t" && cat "$TMPDIR/t"'
)
CANARIES = ("canary.txt", "canary2.txt", "canary_dir", "canary_link", "canary3.txt", "canary4.txt")


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("keep me\n")
    os.chmod(ws / "keep.txt", 0o644)
    return ws


def assert_untouched(ws: Path) -> None:
    for name in CANARIES:
        assert not os.path.lexists(ws / name), name
    assert (ws / "keep.txt").read_text() == "keep me\n"
    assert (ws / "keep.txt").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("mode", ["default", "accept_edits", "dont_ask", "plan"])
async def test_a_misjudged_line_fails_to_write_in_every_mode_that_runs_it_unasked(
    tmp_path: Path, mode: str
) -> None:
    ws = workspace(tmp_path)
    async with Runtime(Registry([Misjudging()]), root=ws, mode=mode) as rt:
        r = await rt.call("run_shell", {"command": WRITES})
    assert r.metadata["writes"] == "tmpdir"
    assert_untouched(ws)
    # The private temporary folder still works, by both names.
    assert "tmp-ok" in r.content and "tmpdir-ok" in r.content
    assert "Read-only file system" in r.content or "Permission denied" in r.content
    hint = "plan mode" if mode == "plan" else "nobody approved this command"
    assert hint in r.content


async def test_an_approved_line_keeps_the_write_roots(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval.allow_once()

    async with Runtime(Registry([RunShell()]), root=ws, approver=approve) as rt:
        r = await rt.call("run_shell", {"command": "echo made > made.txt"})
    assert len(asked) == 1
    assert r.ok, r.content
    assert r.metadata["writes"] == "write_roots"
    assert (ws / "made.txt").read_text() == "made\n"


async def test_a_line_an_allow_rule_covers_keeps_the_write_roots(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    policy = Policy(allow=["run_shell(touch:*)"])
    async with Runtime(Registry([RunShell()]), root=ws, policy=policy) as rt:
        r = await rt.call("run_shell", {"command": "touch ruled.txt"})
    assert r.ok, r.content
    assert r.metadata["writes"] == "write_roots"
    assert (ws / "ruled.txt").exists()


async def test_a_read_only_line_reads_the_workspace_and_says_where_it_ran(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    async with Runtime(Registry([RunShell()]), root=ws) as rt:
        r = await rt.call("run_shell", {"command": "cat keep.txt; ls"})
    assert r.ok, r.content
    assert "keep me" in r.content
    assert r.metadata["writes"] == "tmpdir"
    assert r.metadata["sandbox"] == "landlock+namespaces"


async def test_plan_mode_with_the_home_as_workspace_cannot_plant_a_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The attack that opened this work: plan mode rewrote ~/.config/handrail/settings.json
    # so that the next run executed a hook outside the sandbox.
    home = tmp_path / "home"
    settings = home / ".config" / "handrail" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"locale": "en"}\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    hook = {"hooks": {"pre_tool_use": [{"command": "touch " + str(tmp_path / "HOOK-RAN")}]}}
    line = (
        "mkdir -p ~/.config/handrail; "
        f"echo '{json.dumps(hook)}' > ~/.config/handrail/settings.json; "
        "mv ~/.config ~/.config-x; mkdir -p ~/.config-x/handrail; "
        f"echo '{json.dumps(hook)}' > ~/.config-x/handrail/settings.json; "
        "mv ~/.config-x ~/.config"
    )
    for tool in (Misjudging(), RunShell()):
        async with Runtime(Registry([tool]), root=home, mode="plan") as rt:
            await rt.call("run_shell", {"command": line})
    assert settings.read_text() == '{"locale": "en"}\n'
    assert not (home / ".config-x").exists()
    assert not (tmp_path / "HOOK-RAN").exists()


async def test_lines_the_old_classifier_called_read_only_write_nothing_in_plan_mode(
    tmp_path: Path,
) -> None:
    # Each of these was judged read-only before this release; whatever the classifier says
    # now, in plan mode none of them may leave a file behind.
    ws = workspace(tmp_path)
    lines = [
        "echo ${x:-$(touch c1)}",
        "echo ${x:-`touch c2`}",
        "a='b[$(touch c3)]'; echo ${!a}",
        "y='b[$(touch c4)]'; echo ${PWD:y}",
        "y='b[$(touch c5)]'; [[ 1 -eq y ]]",
        "time -o c6 ls",
        "env -S 'touch c7' ls",
    ]
    async with Runtime(Registry([RunShell()]), root=ws, mode="plan") as rt:
        for line in lines:
            await rt.call("run_shell", {"command": line})
    for i in range(1, 8):
        assert not (ws / f"c{i}").exists(), lines[i - 1]


async def test_what_the_model_reads_when_an_unasked_write_fails(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    async with Runtime(Registry([Misjudging()]), root=ws) as rt:
        default = await rt.call("run_shell", {"command": "touch new.txt"})
    async with Runtime(Registry([Misjudging()]), root=ws, mode="plan") as rt:
        plan = await rt.call("run_shell", {"command": "touch new.txt"})
    assert default.content.split("\n", 3)[-1] == snapshot(
        "Note: nobody approved this command: it ran because it looks read-only, so the sandbox let it write nowhere but $TMPDIR (/tmp), and there is no network. A 'Read-only file system' or 'Permission denied' error above comes from that. To change files, use edit_file or write_file, or a command that changes things (the user is asked for it)."
    )
    assert plan.content.split("\n", 3)[-1] == snapshot(
        "Note: in plan mode every command runs read-only: nothing but $TMPDIR (/tmp) is writable, and there is no network. A 'Read-only file system' or 'Permission denied' error above comes from that. Finish the plan and leave plan mode before changing anything."
    )


async def test_a_session_folder_inside_the_workspace_is_refused_with_a_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    ws = workspace(tmp_path)
    (ws / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))
    async with Runtime(Registry([RunShell()]), root=ws) as rt:
        r = await rt.call("run_shell", {"command": "ls"})
    assert r.error == "SANDBOX_UNAVAILABLE"
    shown = re.sub(r"\(\S+/tmp/handrail-\S+\)", "(WS/tmp/handrail-ID/tmp)", r.content)
    assert shown == snapshot(
        "run_shell cannot run commands here: the session's temporary folder (WS/tmp/handrail-ID/tmp) lies inside the workspace or a root, where commands could change what handrail writes there. Ask the user to set TMPDIR to a folder outside the workspace."
    )
