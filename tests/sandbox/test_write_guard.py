"""What a command that may write still cannot change: nested `.git`, hidden paths, handrail's own.

The commands here run in bypass mode (the write roots are theirs, as for an approved line). The
probes: a nested repository's config and hooks, a hidden folder moved out from under its cover
by renaming a folder above it, hidden locations that do not exist yet (a fresh home's
`~/.ssh/authorized_keys`, handrail's settings), and a glob the user hid. Canaries: the files'
contents, files that must not appear.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handrail import Registry, Runtime
from handrail.builtin import ReadFile, RunShell
from handrail.sandbox import sandbox_support

SUPPORT = sandbox_support()
pytestmark = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.hides_paths and SUPPORT.keeps_metadata),
    reason="this machine cannot confine commands in a mount namespace",
)


def runtime(ws: Path, hidden: list[str] | None = None) -> Runtime:
    return Runtime(
        Registry([RunShell(), ReadFile()]), root=ws, mode="bypass", hidden_paths=hidden or []
    )


async def test_nested_git_folders_are_read_only_at_any_depth(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    deep = ws / "vendor" / "lib" / "sub"
    (deep / ".git" / "hooks").mkdir(parents=True)
    (deep / ".git" / "config").write_text("[core]\n")
    (ws / "mod").mkdir(parents=True)
    (ws / "mod" / ".git").write_text("gitdir: ../.git/modules/mod\n")  # a submodule's file
    async with runtime(ws) as rt:
        r = await rt.call(
            "run_shell",
            {
                "command": (
                    "echo '[core]\n\tfsmonitor = touch PWNED' >> vendor/lib/sub/.git/config; "
                    "echo 'touch PWNED' > vendor/lib/sub/.git/hooks/pre-commit; "
                    "echo 'gitdir: /tmp/evil' > mod/.git; "
                    "mv vendor/lib/sub/.git vendor/lib/sub/git-moved; "
                    "echo ok > vendor/lib/sub/file.txt"
                )
            },
        )
    assert (deep / ".git" / "config").read_text() == "[core]\n"
    assert not (deep / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / "mod" / ".git").read_text() == "gitdir: ../.git/modules/mod\n"
    assert (deep / ".git").is_dir() and not (deep / "git-moved").exists()
    assert (deep / "file.txt").read_text() == "ok\n", r.content  # the rest stays writable


async def test_a_repository_made_by_a_command_is_protected_from_the_next(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with runtime(ws) as rt:
        await rt.call("run_shell", {"command": "git init -q made"})
        await rt.call("run_shell", {"command": "echo 'touch PWNED' > made/.git/hooks/post-commit"})
    assert not (ws / "made" / ".git" / "hooks" / "post-commit").exists()


async def test_a_hidden_folder_cannot_be_moved_out_from_under_its_cover(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    secrets = ws / "conf" / "secrets"
    secrets.mkdir(parents=True)
    (secrets / "key.pem").write_text("KEY-CANARY\n")
    async with runtime(ws, hidden=["conf/secrets"]) as rt:
        r = await rt.call(
            "run_shell",
            {
                "command": (
                    "mv conf conf2; mv conf/secrets conf/open; cp -r conf copy; "
                    "ln conf/secrets/key.pem hard.pem; cat conf2/secrets/key.pem conf/open/key.pem "
                    "copy/secrets/key.pem hard.pem conf/secrets/key.pem; rm -rf conf"
                )
            },
        )
        after = await rt.call("run_shell", {"command": "cat conf2/secrets/key.pem; ls -R"})
    assert "KEY-CANARY" not in r.content + after.content
    assert (secrets / "key.pem").read_text() == "KEY-CANARY\n"
    assert not (ws / "conf2").exists() and not (ws / "hard.pem").exists()


async def test_a_fresh_homes_ssh_folder_cannot_be_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "HANDRAIL_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    async with runtime(home) as rt:
        r = await rt.call(
            "run_shell",
            {
                "command": (
                    "mkdir -p ~/.ssh; echo 'ssh-ed25519 AAAA attacker' >> ~/.ssh/authorized_keys; "
                    "echo 'machine evil login x password y' > ~/.netrc; "
                    "mkdir -p ~/.config/handrail; "
                    "echo '{\"hooks\": {}}' > ~/.config/handrail/settings.json; "
                    "mkdir -p ~/.docker && echo '{}' > ~/.docker/config.json; "
                    "echo fine > ~/notes.txt"
                )
            },
        )
    assert not (home / ".ssh" / "authorized_keys").exists(), r.content
    assert not (home / ".config" / "handrail" / "settings.json").exists()
    assert not (home / ".docker" / "config.json").exists()
    assert (home / ".netrc").read_text() == ""  # the empty stand-in, unchanged
    assert (home / "notes.txt").read_text() == "fine\n"  # the home itself stays writable
    assert (home / ".ssh").stat().st_mode & 0o777 == 0o700


async def test_a_hidden_glob_gets_no_new_match(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "deploy").mkdir(parents=True)
    (ws / "deploy" / "app.yaml").write_text("a: 1\n")
    async with runtime(ws, hidden=["deploy/*.pem"]) as rt:
        r = await rt.call(
            "run_shell",
            {"command": "echo KEY > deploy/new.pem; echo b: 2 >> deploy/app.yaml; echo ok"},
        )
    assert not (ws / "deploy" / "new.pem").exists(), r.content
    assert (ws / "deploy" / "app.yaml").read_text() == "a: 1\nb: 2\n"


async def test_read_file_refuses_a_hidden_folder_moved_by_someone_else(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    secrets = ws / "conf" / "secrets"
    secrets.mkdir(parents=True)
    (secrets / "key.pem").write_text("KEY-CANARY\n")
    async with runtime(ws, hidden=["conf/secrets"]) as rt:
        first = await rt.call("read_file", {"file_path": "conf/secrets/key.pem"})
        os.rename(ws / "conf", ws / "conf2")  # the user, or a program outside the sandbox
        moved = await rt.call("read_file", {"file_path": "conf2/secrets/key.pem"})
        shell = await rt.call("run_shell", {"command": "cat conf2/secrets/key.pem"})
    assert not first.ok and not moved.ok
    assert "KEY-CANARY" not in moved.content + shell.content


async def test_a_nested_repository_cannot_be_swapped_by_renaming_its_parent(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    repo = ws / "vendor" / "lib"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[core]\n")
    async with runtime(ws) as rt:
        await rt.call(
            "run_shell",
            {
                "command": (
                    "mv vendor/lib vendor/lib.orig; mv vendor vendor.orig; "
                    "mkdir -p vendor/lib/.git; "
                    "printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > vendor/lib/.git/config"
                )
            },
        )
    assert (repo / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / "vendor.orig").exists() and not (ws / "vendor" / "lib.orig").exists()


async def test_folders_above_a_hidden_glob_or_a_missing_entry_cannot_be_renamed(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets" / "prod").mkdir(parents=True)
    (ws / "secrets" / "prod" / "server.pem").write_text("PEM-CANARY\n")
    (ws / "app" / "conf").mkdir(parents=True)
    hidden = ["secrets/prod/*.pem", "app/conf/token"]
    async with runtime(ws, hidden=hidden) as rt:
        r = await rt.call(
            "run_shell",
            {
                "command": (
                    "mv secrets s2; cat s2/prod/server.pem; "
                    "mv app app.old; mkdir -p app/conf; echo PLANTED > app/conf/token"
                )
            },
        )
        read = await rt.call("read_file", {"file_path": "s2/prod/server.pem"})
    assert "PEM-CANARY" not in r.content + read.content
    assert not (ws / "s2").exists() and not (ws / "app.old").exists()
    assert not (ws / "app" / "conf" / "token").exists()


async def test_identity_holds_for_glob_matches_and_entries_that_leave_and_come_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handrail.permissions import _hidden

    monkeypatch.setattr(_hidden, "_LOST_EVERY", 0.0)  # look for lost entries on every call
    ws = tmp_path / "ws"
    (ws / "keys").mkdir(parents=True)
    (ws / "keys" / "a.pem").write_text("GLOB-CANARY\n")
    (ws / "conf" / "secrets").mkdir(parents=True)
    (ws / "conf" / "secrets" / "k").write_text("LOST-CANARY\n")
    outside = tmp_path / "outside"
    async with runtime(ws, hidden=["keys/*.pem", "conf/secrets"]) as rt:
        await rt.call("read_file", {"file_path": "keys/a.pem"})  # identities noted
        os.rename(ws / "keys", ws / "k2")  # someone else renames the glob's folder
        glob = await rt.call("read_file", {"file_path": "k2/a.pem"})
        os.rename(ws / "conf" / "secrets", outside)  # out of the roots...
        await rt.call("read_file", {"file_path": "k2/a.pem"})
        os.rename(outside, ws / "back")  # ...and back under another name
        back = await rt.call("read_file", {"file_path": "back/k"})
        shell = await rt.call("run_shell", {"command": "cat back/k k2/a.pem"})
    assert not glob.ok and not back.ok
    assert "CANARY" not in glob.content + back.content + shell.content
