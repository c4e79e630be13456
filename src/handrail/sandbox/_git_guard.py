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
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..permissions import parse_command

__all__ = ["git_guard_env"]

# Set whenever a read-only line runs git: no program a repository names runs through them.
_FIXED = (
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.hooksPath", "/dev/null"),
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
_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
_MAX_INCLUDES = 10
_MAX_CONFIG_BYTES = 1 << 20


def git_guard_env(command: str, cwd: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that neutralise repository-configured programs for this line's git.

    Empty when the line runs no git. `base` is the environment the command gets (its own
    `GIT_CONFIG_COUNT` entries are kept and ours come after, so ours win).
    """
    parsed = parse_command(command)
    words = parsed.words
    if not any(w and os.path.basename(w[0]) == "git" for w in words):
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
    env.pop("GIT_EXTERNAL_DIFF", None)
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
    """(section, subsection, key) of every key the repository holding `folder` sets itself."""
    git_dir = _git_dir(folder)
    if git_dir is None:
        return
    files = [git_dir / "config", git_dir / "config.worktree"]
    common = _read_small(git_dir / "commondir")
    if common is not None:
        shared = Path(common.strip())
        shared = shared if shared.is_absolute() else git_dir / shared
        files.insert(0, shared / "config")
    seen: set[Path] = set()
    queue = list(files)
    while queue and len(seen) < _MAX_INCLUDES + len(files):
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        text = _read_small(path)
        if text is None:
            continue
        for section, sub, key, value in _entries(text):
            if key == "path" and (section == "include" or section == "includeif"):
                if value:
                    included = Path(os.path.expanduser(value))
                    queue.append(included if included.is_absolute() else path.parent / included)
                continue
            yield section, sub, key


def _git_dir(folder: Path) -> Path | None:
    """The git directory of the repository `folder` is in (`.git` folder or `gitdir:` file)."""
    try:
        here = folder.resolve()
    except OSError:
        return None
    for candidate in (here, *here.parents):
        dot = candidate / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = _read_small(dot) or ""
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:") :].strip())
                return target if target.is_absolute() else candidate / target
            return None
    return None


def _read_small(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_CONFIG_BYTES)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _entries(text: str) -> Iterator[tuple[str, str | None, str, str]]:
    """(section, subsection, key, value) of each key a git config file sets.

    Names are lower-cased but the subsection, as git compares them. Enough of the syntax to
    find every key that is set; values are only needed for include paths.
    """
    section = ""
    sub: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        while line.startswith("["):
            m = _SECTION.match(line)
            if m is None:
                line = ""
                break
            name = m.group(1).lower()
            if m.group(2) is not None:
                section, sub = name, re.sub(r"\\(.)", r"\1", m.group(2))
            elif "." in name:  # the old `[section.subsection]` form
                section, _, rest = name.partition(".")
                sub = rest
            else:
                section, sub = name, None
            line = line[m.end() :].strip()
        if not line or line[0] in "#;" or not section:
            continue
        m = _KEY.match(line)
        if m is None:
            continue
        value = (m.group(2) or "").split(" #")[0].split(" ;")[0].strip().strip('"')
        yield section, sub, m.group(1).lower(), value
