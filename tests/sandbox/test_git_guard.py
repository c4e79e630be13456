"""Read-only git commands run none of the programs a repository's own config names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from handrail.sandbox._git_guard import git_guard_env

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

# Each entry runs a program that leaves a canary named after the key.
HOSTILE = """
[core]
    fsmonitor = "touch {c}/fsmonitor; false"
    pager = "touch {c}/pager; cat"
    hooksPath = {c}/hooks
[pager]
    status = "touch {c}/pager-status; cat"
[diff]
    external = "touch {c}/diff-external; true"
[diff "evil"]
    textconv = "touch {c}/textconv; cat"
    command = "touch {c}/diff-command; true"
[filter "evil"]
    clean = "touch {c}/clean; cat"
    smudge = "touch {c}/smudge; cat"
[log]
    showSignature = true
[gpg]
    program = "touch {c}/gpg; false"
[include]
    path = more.config
"""
INCLUDED = """
[diff "other"]
    textconv = "touch {c}/included-textconv; cat"
"""


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose .git/config would run a canary program from every read command."""
    repo, canaries = _committed(
        tmp_path, "*.txt diff=evil filter=evil\n*.md diff=other\n", ("a.txt", "b.md")
    )
    hooks = canaries / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "post-checkout", "reference-transaction"):
        script = hooks / hook
        script.write_text(f"#!/bin/sh\ntouch {canaries}/hook-{hook}\n")
        script.chmod(0o755)
    with (repo / ".git" / "config").open("a") as f:
        f.write(HOSTILE.format(c=canaries))
    (repo / ".git" / "more.config").write_text(INCLUDED.format(c=canaries))
    (repo / "a.txt").write_text("one\ntwo\n")
    (repo / "b.md").write_text("one\ntwo\n")
    return repo, canaries


def _committed(tmp_path: Path, attributes: str, names: tuple[str, ...]) -> tuple[Path, Path]:
    """A repository with `attributes` and one committed line in each file; a canary folder."""
    repo, canaries = tmp_path / "repo", tmp_path / "canaries"
    repo.mkdir()
    canaries.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env, timeout=30)
    (repo / ".gitattributes").write_text(attributes)
    for name in names:
        (repo / name).write_text("one\n")
    for args in (["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, timeout=30)
    return repo, canaries


READS = [
    ["status"],
    ["status", "--short"],
    ["diff"],
    ["diff", "HEAD"],
    ["log", "-p"],
    ["show"],
    ["blame", "a.txt"],
    ["blame", "b.md"],
]


def test_without_the_guard_the_planted_programs_do_run(hostile: tuple[Path, Path]) -> None:
    # The probe is real: plain git runs what the repository names.
    repo, canaries = hostile
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in READS:
        _git(repo, *args, env=env)
    ran = {p.name for p in canaries.iterdir()} - {"hooks"}
    # (gpg.program runs only for signed commits, which this history has none of.)
    assert {"fsmonitor", "textconv", "diff-command", "clean", "included-textconv"} <= ran


def test_with_the_guard_nothing_the_repository_names_runs(hostile: tuple[Path, Path]) -> None:
    repo, canaries = hostile
    base = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in READS:
        line = "git " + " ".join(args)
        env = {**base, **git_guard_env(line, repo, base)}
        _git(repo, *args, env=env)
    assert sorted(p.name for p in canaries.iterdir()) == ["hooks"]


def test_the_guarded_diff_still_shows_the_change(hostile: tuple[Path, Path]) -> None:
    repo, _ = hostile
    base = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env = {**base, **git_guard_env("git diff", repo, base)}
    out = _git(repo, "diff", env=env)
    assert "+two" in out and "a/a.txt" in out
    status = _git(repo, "status", "--short", env=env)
    assert status.split() == ["M", "a.txt", "M", "b.md"]


def test_a_literal_cd_target_is_guarded_too(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    repo, _ = hostile
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = git_guard_env(f"cd {repo} && git diff", elsewhere)
    keys = {env[k] for k in env if k.startswith("GIT_CONFIG_KEY_")}
    assert {"diff.evil.textconv", "diff.other.textconv", "filter.evil.clean"} <= keys


def test_lines_without_git_get_nothing_and_others_keys_are_kept(tmp_path: Path) -> None:
    assert git_guard_env("ls -la && cat x", tmp_path) == {}
    env = git_guard_env("git status", tmp_path, {"GIT_CONFIG_COUNT": "2"})
    # The caller's own two entries stay; ours follow and win.
    assert env["GIT_CONFIG_KEY_2"] == "core.fsmonitor"
    assert int(env["GIT_CONFIG_COUNT"]) > 2
    assert env[f"GIT_CONFIG_KEY_{int(env['GIT_CONFIG_COUNT']) - 1}"]


@pytest.mark.parametrize("mode", ["plan", "default"])
async def test_read_only_git_through_run_shell_runs_nothing_the_repo_names(
    hostile: tuple[Path, Path], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handrail import Interrupted, Runtime
    from handrail.builtin import RunShell

    repo, canaries = hostile
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    rt = Runtime([RunShell()], root=repo, mode=mode)
    try:
        for args in READS:
            result = await rt.call("run_shell", {"command": "git " + " ".join(args)})
            assert result.ok, (args, result.content)
        # git behind a read-only wrapper is guarded too.
        for line in ("env git log -p -1", "timeout 20 git log -p -1", "nice git show"):
            result = await rt.call("run_shell", {"command": line})
            assert result.ok, (line, result.content)
        # A wrapper option that moves or empties the environment is not read-only: refused
        # in plan mode, and in default mode it would ask (nobody answers here).
        moved = await rt.call("run_shell", {"command": f"env -C {repo} git log -p -1"})
        assert not moved.ok or isinstance(moved, Interrupted)
        shown = await rt.call("run_shell", {"command": "git diff"})
        assert "+two" in shown.content
    finally:
        await rt.aclose()
    assert sorted(p.name for p in canaries.iterdir()) == ["hooks"]


@pytest.mark.parametrize(
    "trick",
    [
        # A form feed in a comment: Python's splitlines() would end the line there, git not.
        '[diff "evil"]\n# note \x0c[other]\n\ttextconv = "touch {c}/trick; cat"\n',
        # A byte-order mark before the first section.
        '\ufeff[diff "evil"]\n\ttextconv = "touch {c}/trick; cat"\n',
        # An include path with quotes git drops, and a comment with no space before it.
        '[include]\n\tpath = ev""il.cfg#note\n',
    ],
)
def test_what_git_reads_is_what_the_guard_reads(tmp_path: Path, trick: str) -> None:
    repo, canaries = _committed(tmp_path, "*.txt diff=evil\n", ("a.txt",))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    (repo / "a.txt").write_text("one\ntwo\n")
    config = repo / ".git" / "config"
    planted = trick.format(c=canaries)
    if planted.startswith("\ufeff"):  # a byte-order mark counts only at the very start
        config.write_text(planted + config.read_text(), encoding="utf-8")
    else:
        with config.open("a", encoding="utf-8") as f:
            f.write(planted)
    (repo / ".git" / "evil.cfg").write_text(
        f'[diff "evil"]\n\ttextconv = "touch {canaries}/trick; cat"\n'
    )
    _git(repo, "diff", env=env)  # the probe is real: plain git runs it
    assert (canaries / "trick").exists()
    (canaries / "trick").unlink()
    _git(repo, "diff", env={**env, **git_guard_env("git diff", repo, env)})
    _git(repo, "log", "-p", env={**env, **git_guard_env("git log -p", repo, env)})
    assert not (canaries / "trick").exists()
