"""Git without the repository's programs: the environment for a read-only command that runs git.

A repository's own config (`.git/config`, its worktree config and the files it includes) can
name programs that read-only git commands run: `core.fsmonitor` (status, diff), a pager, an
external diff (`diff.external`, `diff.<driver>.command`), textconv filters (diff, log -p, show,
blame), clean/smudge filters (status and diff compare a racy file through its clean filter),
hooks and signature programs (`log.showSignature` with `gpg.program`). That config comes with
the checkout, so it is not the user's: a command that runs without the user's approval because
it only reads must not run it.

`git_guard_env` returns `GIT_CONFIG_COUNT` overrides, which git applies over every config file:
fixed keys always, and for each program-running key the repository itself sets, a harmless
value (`cat` for filters and textconv, an empty long-running filter, `diff -u` for an external
diff, `false` for signature programs). The repositories looked at are the command's working
directory and every literal `cd` target of the line (a line whose targets are not literal is
not read-only in the first place). Keys set only by the user's own (global, system) config
are left alone.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..permissions import parse_command
from ._programs import system_which

__all__ = ["git_guard_env"]

# Set whenever a read-only line runs git: no program a repository names runs through them.
_FIXED = (
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.hooksPath", "/dev/null"),
    # No transport: a partial clone's lazy fetch would run a configured upload-pack or ssh.
    ("protocol.allow", "never"),
    # Submodules have config of their own, which is not read here: leave them out.
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("diff.submodule", "short"),
    ("status.submoduleSummary", "false"),
)
# An external diff that prints a plain unified diff: git passes
# `path old-file old-hex old-mode new-file new-hex new-mode`; diff exits 1 when files differ.
_PLAIN_DIFF = 'f() { diff -u --label "a/$1" --label "b/$1" -- "$2" "$5"; [ $? -le 1 ]; }; f'
_HARMLESS = {
    "textconv": "cat",
    "command": _PLAIN_DIFF,
    "clean": "cat",
    "smudge": "cat",
    "process": "",
}
_DRIVER_SECTIONS = {"diff": ("textconv", "command"), "filter": ("clean", "smudge", "process")}
_PLAIN_KEYS = {
    ("diff", "external"): _PLAIN_DIFF,
    ("gpg", "program"): "false",
    ("log", "showsignature"): "false",
}
_SIGNING_PROGRAMS = {"ssh", "x509", "openpgp"}  # gpg.<format>.program
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})
_CONFIG_TIMEOUT = 10.0


def git_guard_env(command: str, cwd: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that neutralise repository-configured programs for this line's git.

    Empty when the line runs no git. `base` is the environment the command gets (its own
    `GIT_CONFIG_COUNT` entries are kept and ours come after, so ours win).
    """
    parsed = parse_command(command)
    words = parsed.words
    # Anywhere in a command's words: git also runs behind wrappers (`timeout 5 git log`).
    if not any(os.path.basename(word) == "git" for argv in words for word in argv):
        return {}
    overrides = dict(_FIXED)
    for folder in _folders(words, cwd):
        for section, sub, key in _repository_keys(folder):
            value = _harmless(section, sub, key)
            if value is not None:
                name = f"{section}.{sub}.{key}" if sub is not None else f"{section}.{key}"
                overrides[name] = value
    env: dict[str, str] = {}
    start = 0
    if base is not None:
        try:
            start = max(int(base.get("GIT_CONFIG_COUNT", "0")), 0)
        except ValueError:
            start = 0
    for i, (key, value) in enumerate(overrides.items(), start):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    env["GIT_CONFIG_COUNT"] = str(start + len(overrides))
    env["GIT_PAGER"] = "cat"
    env["GIT_NO_LAZY_FETCH"] = "1"  # git 2.45 and later; protocol.allow covers older ones
    return env


def _harmless(section: str, sub: str | None, key: str) -> str | None:
    if sub is not None:
        if key in _DRIVER_SECTIONS.get(section, ()):
            return _HARMLESS[key]
        if section == "gpg" and sub.lower() in _SIGNING_PROGRAMS and key == "program":
            return "false"
        return None
    if section == "pager":  # pager.<command> = program
        return "cat"
    return _PLAIN_KEYS.get((section, key))


def _folders(words: tuple[tuple[str, ...], ...], cwd: Path) -> list[Path]:
    """The working directory and every literal `cd` target, in order, without repeats."""
    out = [cwd]
    here = cwd
    for argv in words:
        if argv and argv[0] == "cd":
            target = next((a for a in argv[1:] if not a.startswith("-")), None)
            here = Path(os.path.expanduser(target)) if target else Path.home()
            here = here if here.is_absolute() else out[-1] / here
            if here not in out:
                out.append(here)
    return out


def _repository_keys(folder: Path) -> Iterator[tuple[str, str | None, str]]:
    """(section, subsection, key) of every key the repository holding `folder` sets itself.

    Asked of git itself (`git config --list --includes --show-scope`), so that what is found is
    what git will read: its own parser, includes and conditional includes, worktree config.
    Reading config runs no configured program. Keys of the user's global and system config
    are not the repository's and are left out.
    """
    git = system_which("git")
    if git is None or not folder.is_dir():
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            [git, "config", "--list", "--includes", "--show-scope", "--name-only", "-z"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_CONFIG_TIMEOUT,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    for scope, name in zip(fields[::2], fields[1::2], strict=False):
        if scope not in _REPOSITORY_SCOPES:
            continue
        section, _, rest = name.partition(".")
        sub, _, key = rest.rpartition(".")
        yield section.lower(), (sub or None), key.lower()
