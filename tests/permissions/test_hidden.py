"""Hidden paths: the built-in list, the settings' extras, and refusals nothing can lift."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ErrorCode, PermissionMode, ReadPath, Registry, Runtime, ToolKind, WritePath
from handrail.builtin import ReadFile, WriteFile
from handrail.permissions import Decision, Policy, Settings
from handrail.permissions._hidden import HOME_SECRETS, hidden_entry, hidden_paths


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def names(paths: Sequence[Path], home: Path) -> set[str]:
    return {str(p.relative_to(home)) for p in paths if p.is_relative_to(home)}


# -- the list ----------------------------------------------------------------------------------


def test_the_built_in_list_covers_the_usual_secrets(home: Path) -> None:
    hidden = hidden_paths(home=home, env={})
    required = {
        ".ssh", ".aws", ".gnupg", ".config/gcloud", ".azure", ".kube", ".docker/config.json",
        ".netrc", ".git-credentials", ".config/gh", ".npmrc", ".pypirc", ".cargo/credentials.toml",
        ".local/share/keyrings", ".password-store", ".bash_history", ".zsh_history",
        ".python_history", ".psql_history", ".mysql_history", ".node_repl_history",
        ".local/share/fish", ".config/handrail", ".local/state/handrail",
    }  # fmt: skip
    assert required <= names(hidden, home) == set(HOME_SECRETS)
    system = {str(p) for p in hidden if not p.is_relative_to(home)}
    assert {
        "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers",
        "/etc/sudoers.d", "/etc/ssh/ssh_host_*_key", "/etc/ssl/private",
    } <= system  # fmt: skip


def test_the_environment_moves_handrails_own_folders(home: Path, tmp_path: Path) -> None:
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "conf"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "HANDRAIL_STATE_DIR": "~/hr-state",
    }
    hidden = {str(p) for p in hidden_paths(home=home, env=env)}
    for path in ("conf/handrail", "state/handrail", "run/handrail", "home/hr-state"):
        assert str(tmp_path / path) in hidden


def test_extras_expand_the_home_and_resolve_against_the_base(home: Path, tmp_path: Path) -> None:
    hidden = hidden_paths(
        ["~/vault", "secrets/", "/abs/x", "~"], home=home, env={}, base=tmp_path / "ws"
    )
    shown = {str(p) for p in hidden}
    assert {str(home / "vault"), str(tmp_path / "ws" / "secrets"), "/abs/x", str(home)} <= shown


def test_a_symlinked_secret_is_hidden_under_both_names(home: Path, tmp_path: Path) -> None:
    real = tmp_path / "keys"
    real.mkdir()
    (home / ".ssh").symlink_to(real)
    hidden = hidden_paths(home=home, env={})
    assert hidden_entry(str(real / "id_rsa"), hidden) == real
    assert hidden_entry(str(home / ".ssh" / "id_rsa"), hidden) == home / ".ssh"


def test_entries_match_by_component_and_globs_by_name(home: Path) -> None:
    hidden = hidden_paths(home=home, env={})
    assert hidden_entry(home / ".ssh", hidden) == home / ".ssh"
    assert hidden_entry(home / ".ssh" / "keys" / "id_rsa", hidden) == home / ".ssh"
    assert hidden_entry(home / ".sshx", hidden) is None  # never by string prefix
    assert hidden_entry(home / "project" / ".ssh", hidden) is None  # only the home's own
    assert (
        hidden_entry(home / ".cargo" / "credentials.toml", hidden)
        == home / ".cargo" / "credentials.toml"
    )
    assert hidden_entry(home / ".cargo" / "config.toml", hidden) is None
    assert hidden_entry("/etc/ssh/ssh_host_ed25519_key", hidden) == Path("/etc/ssh/ssh_host_*_key")
    assert hidden_entry("/etc/ssh/ssh_host_ed25519_key.pub", hidden) is None
    assert hidden_entry(home, hidden) is None and hidden_entry("/", hidden) is None


def test_the_root_is_never_an_entry(home: Path) -> None:
    assert Path("/") not in hidden_paths(["/"], home=home, env={})


# -- the policy --------------------------------------------------------------------------------


def decide(
    policy: Policy, home: Path, *requests: Any, mode: PermissionMode, **extra: Any
) -> Decision:
    return policy.decide(
        names=("read_file",),
        kind=ToolKind.READ,
        read_only=True,
        requests=requests,
        mode=mode,
        read_roots=(home,),
        write_roots=(home,),
        hidden_paths=hidden_paths(home=home, env={}),
        **extra,
    )


@pytest.mark.parametrize("mode", list(PermissionMode))
def test_no_mode_rule_or_hook_lifts_a_hidden_path_inside_a_root(
    home: Path, mode: PermissionMode
) -> None:
    policy = Policy(allow=["read_file", "write_file"])
    read = decide(
        policy, home, ReadPath(path=str(home / ".aws" / "credentials")), mode=mode, hook="allow"
    )
    write = decide(policy, home, WritePath(path=str(home / ".ssh" / "authorized_keys")), mode=mode)
    assert read.behavior == write.behavior == "deny"
    assert read.code is ErrorCode.OUTSIDE_READ_ROOTS and write.code is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert read.source == "roots"
    # Next to them, the same root still works.
    ok = decide(policy, home, ReadPath(path=str(home / "notes.txt")), mode=mode)
    assert ok.behavior == "allow"


def test_the_reason_the_model_reads(home: Path) -> None:
    d = decide(Policy(), home, ReadPath(path=str(home / ".netrc")), mode=PermissionMode.DEFAULT)
    assert d.reason.replace(str(home), "~") == snapshot(
        "~/.netrc is a protected secret location, hidden from every tool (read_file, grep_search, list_files and run_shell); no rule, mode or approval can open it. Work with files outside it; if the task needs something stored there, ask the user to provide it."
    )


# -- the runtime -------------------------------------------------------------------------------


class AllowEverything(Policy):
    """A host's policy that allows every call: hidden paths must stay shut anyway."""

    def has_rules_for(self, names: tuple[str, ...]) -> bool:
        return True

    def decide(self, **_: Any) -> Decision:
        return Decision(behavior="allow", reason="a permissive host")


@pytest.fixture
def planted(home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("HOME", str(home))
    canary = f"CANARY-{uuid.uuid4().hex}"
    for rel in (".ssh/id_rsa", "vault/key.txt", "ws/private/key.txt"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(canary)
    return home, canary


async def test_a_policy_subclass_cannot_lift_a_hidden_path(planted: tuple[Path, str]) -> None:
    home, canary = planted
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=home, policy=AllowEverything())
    read = await rt.call("read_file", {"file_path": ".ssh/id_rsa"})
    write = await rt.call("write_file", {"file_path": ".ssh/authorized_keys", "content": "evil"})
    assert read.error is ErrorCode.OUTSIDE_READ_ROOTS and canary not in read.content
    assert write.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert not (home / ".ssh" / "authorized_keys").exists()


async def test_settings_and_the_constructor_add_hidden_paths(planted: tuple[Path, str]) -> None:
    home, canary = planted
    rt = Runtime(
        Registry([ReadFile()]),
        root=home / "ws",
        read_roots=[home],
        settings=Settings(hidden_paths=("~/vault",)),
        hidden_paths=["private"],  # relative to the root
        mode="bypass",
    )
    assert {home / "vault", home / "ws" / "private"} <= set(rt.hidden_paths)
    for path in ("~/vault/key.txt", "private/key.txt"):
        r = await rt.call("read_file", {"file_path": path})
        assert r.error is ErrorCode.OUTSIDE_READ_ROOTS and canary not in r.content


async def test_every_tool_sees_the_hidden_set_in_its_context(home: Path) -> None:
    from handrail import ToolContext, tool

    seen: list[tuple[Path, ...]] = []

    @tool(read_only=True)
    def probe(ctx: ToolContext) -> str:
        """Report the context's hidden paths."""
        seen.append(ctx.hidden_paths)
        return "ok"

    rt = Runtime(Registry([probe]), root=home, hidden_paths=["x"])
    assert (await rt.call("probe")).ok
    assert seen == [rt.hidden_paths] and home / "x" in seen[0]


def test_relative_state_folders_are_hidden_where_handrail_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # handrail reads a relative XDG_CONFIG_HOME (and the others) from the current directory:
    # that is where its settings and state are, so that is what is hidden.
    monkeypatch.chdir(tmp_path)
    env = {
        "XDG_CONFIG_HOME": "cfg",
        "XDG_STATE_HOME": "state",
        "XDG_RUNTIME_DIR": "run",
        "HANDRAIL_STATE_DIR": "hs",
    }
    hidden = {str(p) for p in hidden_paths(home=tmp_path / "home", env=env)}
    for path in ("cfg/handrail", "state/handrail", "run/handrail", "hs"):
        assert str(tmp_path / path) in hidden, path
