"""The four reading tools agree on hidden paths: what one refuses, the others cannot reach.

A temporary home (HOME and the XDG folders point into it) holds planted secrets, each with a
canary text, plus a private file outside the workspace. The same list of paths goes through
read_file, grep_search, list_files and run_shell (cat, head, ls, grep -r, find; in every
permission mode), in three layouts: the workspace inside the home, the workspace *being* the
home, and the home as an extra read root. No canary of a hidden path may appear in anything a
tool returns; the private file is reachable by all four tools or by none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ErrorCode, Registry, Runtime, ToolResult
from handrail.builtin import GrepSearch, ListFiles, ReadFile, RunShell, WriteFile
from handrail.permissions import Settings
from handrail.permissions._hidden import hidden_entry, is_glob
from handrail.sandbox import sandbox_support
from handrail.sandbox._read_view import toolchain_dirs

SUPPORT = sandbox_support()
needs_mounts = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.hides_paths),
    reason="this machine cannot hide paths from commands in a mount namespace",
)
MODES = ("default", "plan", "accept_edits", "dont_ask", "bypass")
LAYOUTS = ("ws_in_home", "ws_is_home", "home_read_root")


@dataclass(frozen=True)
class Planted:
    path: Path
    canary: str
    hidden: bool


class Home:
    def __init__(self, base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path = base / "home"
        self.ws = self.path / "ws"
        self.ws.mkdir(parents=True)
        (self.ws / "a.txt").write_text("workspace file\n")
        tag = uuid.uuid4().hex[:10]
        self.secret = f"SECRET-CANARY-{tag}"
        self.outside = f"CANARY-OUTSIDE-{tag}"
        files = {
            ".ssh/id_rsa": "SSH",
            ".aws/credentials": "AWS",
            ".netrc": "NETRC",
            ".bash_history": "HISTORY",
            ".config/handrail/trusted.json": "HANDRAIL-CONFIG",
            ".cargo/credentials.toml": "CARGO",
            ".xdg-state/handrail/sessions/s.json": "SESSION",  # via XDG_STATE_HOME
            ".run/handrail/serve/4000.token": "TOKEN",  # via XDG_RUNTIME_DIR
            "private/notes.txt": "EXTRA",  # the hidden_paths setting
        }
        self.planted = [
            Planted(path=self.path / rel, canary=f"{self.secret}-{what}", hidden=True)
            for rel, what in files.items()
        ]
        self.planted.append(
            Planted(path=self.path / "other" / "diary.txt", canary=self.outside, hidden=False)
        )
        for p in self.planted:
            p.path.parent.mkdir(parents=True, exist_ok=True)
            p.path.write_text(p.canary + "\n")
        (self.path / "notes").mkdir()
        (self.path / "notes" / "readme.txt").write_text("extra read path\n")
        monkeypatch.setenv("HOME", str(self.path))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(self.path / ".config"))
        monkeypatch.setenv("XDG_STATE_HOME", str(self.path / ".xdg-state"))
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(self.path / ".run"))
        monkeypatch.delenv("HANDRAIL_STATE_DIR", raising=False)

    def runtime(self, layout: str, mode: str = "default", **shell: Any) -> Runtime:
        roots: dict[str, Any] = {"root": self.ws}
        if layout == "ws_is_home":
            roots = {"root": self.path}
        elif layout == "home_read_root":
            roots = {"root": self.ws, "read_roots": [self.path, self.ws], "write_roots": [self.ws]}
        tools = [ReadFile(), GrepSearch(), ListFiles(), RunShell(), WriteFile()]
        settings = Settings(hidden_paths=("~/private",), tools={"run_shell": shell})
        return Runtime(Registry(tools), mode=mode, settings=settings, **roots)

    def visible(self, p: Planted, layout: str) -> bool:
        return not p.hidden and layout != "ws_in_home"

    def entry(self, p: Planted, rt: Runtime) -> str:
        """The hidden entry holding `p`, relative to the home (a glob's match: `p` itself)."""
        entry = hidden_entry(p.path, rt.hidden_paths)
        assert entry is not None
        held = p.path if is_glob(entry.name) else entry
        return str(held.relative_to(self.path))

    def leaked(self, r: ToolResult) -> list[str]:
        seen = r.content + (r.summary or "") + json.dumps(r.metadata, default=str)
        return [p.canary for p in self.planted if p.hidden and p.canary in seen]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    return Home(tmp_path, monkeypatch)


# -- the agreement probe -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_read_file_grep_and_list_agree_on_every_planted_path(home: Home, layout: str) -> None:
    async with home.runtime(layout) as rt:
        for p in home.planted:
            expected = home.visible(p, layout)
            read = await rt.call("read_file", {"file_path": str(p.path)})
            in_file = await rt.call("grep_search", {"pattern": p.canary, "path": str(p.path)})
            in_dir = await rt.call(
                "grep_search",
                {"pattern": p.canary, "path": str(p.path.parent), "output_mode": "content"},
            )
            listed = await rt.call("list_files", {"path": str(p.path.parent)})
            for r in (read, in_file, in_dir, listed):
                assert home.leaked(r) == [], (p.path, r.tool_name, r.content)
            if not p.hidden:
                assert read.ok is in_file.ok is in_dir.ok is listed.ok is expected, p.path
                if expected:
                    assert p.canary in read.content and p.canary in in_dir.content
                    assert p.path.name in listed.content
                continue
            assert read.error is in_file.error is ErrorCode.OUTSIDE_READ_ROOTS, read.content
            # A search or listing of the folder runs when the folder is visible; it never
            # names the hidden thing.
            entry = home.entry(p, rt)
            for r in (in_dir, listed):
                assert not r.ok or entry not in r.content, r.content
        await _everything_from_the_home(home, rt, layout)


async def _everything_from_the_home(home: Home, rt: Runtime, layout: str) -> None:
    """grep_search and list_files with the home as the root: the walks skip what is hidden."""
    grep = await rt.call(
        "grep_search",
        {"pattern": "CANARY", "path": str(home.path), "output_mode": "content", "no_ignore": True},
    )
    listing = await rt.call(
        "list_files", {"path": str(home.path), "no_ignore": True, "limit": 1000}
    )
    counted = await rt.call(
        "grep_search", {"pattern": "CANARY", "path": str(home.path), "output_mode": "count"}
    )
    for r in (grep, listing, counted):
        assert home.leaked(r) == [], r.content
    if layout == "ws_in_home":
        assert grep.error is listing.error is ErrorCode.OUTSIDE_READ_ROOTS
        return
    assert grep.ok and listing.ok, (grep.content, listing.content)
    assert home.outside in grep.content  # the private file is in a root here: found
    names = listing.content
    assert "other/diary.txt" in names and "notes/readme.txt" in names
    for hidden in (
        ".ssh",
        ".aws",
        ".netrc",
        ".bash_history",
        ".config/handrail",
        ".cargo/credentials",
        "private/",
    ):
        assert hidden not in names, names


@needs_mounts
@pytest.mark.parametrize("layout", LAYOUTS)
async def test_run_shell_agrees_in_every_permission_mode(home: Home, layout: str) -> None:
    for mode in MODES:
        async with home.runtime(layout, mode) as rt:
            for p in home.planted:
                command = (
                    f"cat {p.path}; head -c 200 {p.path}; ls -la {p.path.parent}; "
                    f"grep -r {home.secret} {p.path.parent}; grep -rn CANARY ~; "
                    f"find ~ -name {p.path.name}"
                )
                r = await rt.call("run_shell", {"command": command})
                assert r.metadata.get("reads") == "confined", (mode, r.content)  # it did run
                assert home.leaked(r) == [], (mode, p.path, r.content)
                if p.hidden and not home.entry(p, rt).endswith(p.path.name):
                    # Inside a hidden folder nothing is listed, not even the names.
                    assert f" {p.path.name}\n" not in r.content, r.content
                assert (p.canary in r.content) is home.visible(p, layout), (mode, p.path, r.content)


@needs_mounts
async def test_a_symlink_in_the_workspace_leads_nowhere(home: Home) -> None:
    (home.ws / "key").symlink_to(home.path / ".ssh" / "id_rsa")
    (home.ws / "keys").symlink_to(home.path / ".ssh")
    async with home.runtime("ws_in_home", "plan") as rt:
        results = [
            await rt.call("read_file", {"file_path": "key"}),
            await rt.call("grep_search", {"pattern": home.secret, "path": "keys"}),
            await rt.call("grep_search", {"pattern": home.secret, "output_mode": "content"}),
            await rt.call("list_files", {"path": "keys"}),
            await rt.call(
                "run_shell", {"command": "cat key; ls keys/; cat keys/id_rsa; grep -rL x keys/"}
            ),
        ]
    for r in results:
        assert home.leaked(r) == [], (r.tool_name, r.content)
    assert results[0].error is results[1].error is results[3].error is ErrorCode.OUTSIDE_READ_ROOTS
    assert results[2].content == "No matches found."


async def test_writes_into_hidden_paths_are_refused_even_in_bypass(home: Home) -> None:
    async with home.runtime("ws_is_home", "bypass") as rt:
        r = await rt.call(
            "write_file",
            {"file_path": ".ssh/authorized_keys", "content": "ssh-ed25519 AAAA evil\n"},
        )
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert not (home.path / ".ssh" / "authorized_keys").exists()


async def test_what_the_model_reads_for_a_hidden_path(home: Home) -> None:
    async with home.runtime("ws_is_home", "bypass") as rt:
        r = await rt.call("read_file", {"file_path": "~/.ssh/id_rsa"})
    assert r.content.replace(str(home.path), "~") == snapshot(
        "Refused: ~/.ssh/id_rsa (inside ~/.ssh) is a protected secret location, hidden from every tool (read_file, grep_search, list_files and run_shell); no rule, mode or approval can open it. Work with files outside it; if the task needs something stored there, ask the user to provide it."
    )


# -- the workspace inside the home still works -------------------------------------------------


@needs_mounts
async def test_the_workspace_in_the_home_works_and_a_toolchain_there_runs(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = home.path / ".venvs" / "t"
    subprocess.run(  # noqa: ASYNC221 - set-up, before anything runs concurrently
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    monkeypatch.setenv("PATH", f"{venv}/bin:{os.environ['PATH']}")
    async with home.runtime("ws_in_home", "bypass") as rt:
        read = await rt.call("read_file", {"file_path": "a.txt"})
        wrote = await rt.call("write_file", {"file_path": "new.txt", "content": "new\n"})
        shell = await rt.call(
            "run_shell",
            {
                "command": "cat a.txt new.txt && echo out > out.txt && python -c 'import sys; print(sys.prefix)'"
            },
        )
    assert read.ok and wrote.ok, (read.content, wrote.content)
    assert shell.ok, shell.content
    assert "workspace file" in shell.content and "new" in shell.content
    assert str(venv) in shell.content
    assert (home.ws / "out.txt").read_text() == "out\n"


@needs_mounts
async def test_extra_read_paths_are_readable_by_the_shell_and_hidden_paths_stay_hidden(
    home: Home,
) -> None:
    command = "cat ~/notes/readme.txt; cat ~/other/diary.txt; cat ~/.ssh/id_rsa; echo end"
    async with home.runtime("ws_in_home", extra_read_paths=["~/notes", "~/.ssh"]) as rt:
        widened = await rt.call("run_shell", {"command": command})
    async with home.runtime("ws_in_home") as rt:
        default = await rt.call("run_shell", {"command": command})
    assert "extra read path" in widened.content and home.outside not in widened.content
    assert "extra read path" not in default.content
    for r in (widened, default):
        assert home.leaked(r) == [] and "end" in r.content


@needs_mounts
async def test_confine_reads_off_shows_the_home_but_never_the_secrets(home: Home) -> None:
    async with home.runtime("ws_in_home", confine_reads=False) as rt:
        r = await rt.call(
            "run_shell", {"command": "cat ~/other/diary.txt ~/.ssh/id_rsa ~/.netrc; ls ~/.ssh"}
        )
    assert home.outside in r.content
    assert home.leaked(r) == []
    assert r.metadata["reads"] == "secrets_hidden"


async def test_the_model_cannot_turn_read_confinement_off(home: Home) -> None:
    async with home.runtime("ws_in_home", "bypass") as rt:
        r = await rt.call("run_shell", {"command": "cat ~/.ssh/id_rsa", "confine_reads": False})
    assert r.error is ErrorCode.INVALID_ARGS and home.leaked(r) == []


@needs_mounts
async def test_the_read_hint_tells_the_model_why_a_path_is_missing(home: Home) -> None:
    async with home.runtime("ws_in_home", "bypass") as rt:
        r = await rt.call("run_shell", {"command": "cat ~/other/diary.txt"})
    assert r.error is ErrorCode.NONZERO_EXIT
    assert r.content.replace(str(home.path), "~").splitlines()[-1] == snapshot(
        "Note: sandboxed commands see the workspace, the read roots, $TMPDIR and the system folders, but not the rest of the home folder, and secret locations (~/.ssh, cloud and registry credentials, shell histories, handrail's own settings) are hidden from every tool. A 'No such file or directory' or 'Permission denied' error above for such a path comes from that: work inside the workspace, or ask the user to add the path to the extra_read_paths setting of run_shell."
    )


# -- the real home -----------------------------------------------------------------------------


@needs_mounts
async def test_the_real_home_keeps_the_toolchains_on_path(tmp_path: Path) -> None:
    # No HOME override: the machine's own home is covered, and its toolchains (pyenv, cargo...)
    # come back. Nothing is written there; only what a command sees of it is checked.
    real = os.path.realpath(Path.home())
    rt = Runtime(Registry([RunShell()]), root=tmp_path, mode="bypass")
    async with rt:
        r = await rt.call(
            "run_shell", {"command": "python3 -c 'print(6 * 7)' && ls -A ~ && echo listed"}
        )
    assert r.ok, r.content
    assert r.content.splitlines()[0] == "42"
    shown = set(r.content.splitlines()[1:-1])
    allowed = {
        os.path.relpath(p, real).split("/")[0]
        for p in (
            *toolchain_dirs(os.environ["PATH"], real),
            f"{real}/.gitconfig",
            f"{real}/.config",
        )
    }
    assert shown <= allowed, (shown, allowed)
