"""Shell command lines, parsed with tree-sitter-bash: simple commands, opacity, read-only-ness.

`parse_command(line)` splits a line into the simple commands a permission rule is matched
against, says whether anything in the line escapes such a rule (`opaque`: substitutions,
subshells, `eval`, `bash -c`, output redirection, a dynamic command name, a parse error),
whether no rule can tell what it runs at all (`dynamic`: `$c x`, `eval "$x"`, an expansion the
parser did not read), and whether the whole line is read-only (every simple command on a
flag-validated read-only list, nothing opaque). Read-only lines are concurrency-safe and
allowed in plan mode.

Invariants: anything the parser does not understand counts against the line (opaque, not
read-only, and dynamic where what runs is unknown), never for it; `read_only` implies `not
opaque`, and `dynamic` implies `opaque`. Commands a line runs indirectly (behind `xargs`,
`timeout`, `env`, `sudo`, `find -exec`, inside `bash -c '...'`, `eval` or a substitution) are
listed in `hidden` so deny and ask rules can see them.

The work is shared out: `_shell_walk` walks the syntax tree, `_shell_words` turns word nodes
into argv entries, `_shell_reveal` (with `_shell_wrappers`) sees through `xargs`, `sudo`,
`bash -c`, `git -c` and the like, and `_shell_readonly` (with `_shell_sed`) holds the
read-only list and its flag checks, and `_shell_builtins` the builtins and variables that change
what later words run (`alias`, `hash -p`, `BASH_CMDS`, `PATH`, `fc`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ._shell_walk import walk_line

__all__ = ["ShellCommand", "is_read_only_command", "parse_command"]

_CACHE_MAX_CHARS = 16_384
"""Longer lines are parsed every time, so the cache's memory stays bounded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellCommand:
    """A shell command line split into simple commands, with what a permission rule can't see."""

    line: str
    """The line as given."""
    commands: tuple[str, ...] = ()
    """The simple commands in source order, as normalised text: words joined by single spaces,
    quotes removed where the value is static (a word that needs them is re-quoted), leading
    variable assignments kept, redirections left out. Includes those in pipelines, lists,
    `!`, `if`/`while`/`for`/`case` bodies, brace groups, subshells and function bodies."""
    words: tuple[tuple[str, ...], ...] = ()
    """The argv of each of `commands` (leading assignments not included); a word whose value
    is not static (`$x`, `$(...)`) is given as written."""
    hidden: tuple[str, ...] = ()
    """Commands run indirectly: inside substitutions, behind wrappers (`xargs rm`, `timeout 5
    rm`, `env X=1 rm`, `sudo rm`, `find -exec rm`), in nested shells (`bash -c`, `eval`), and
    each command without its leading assignments or directory (`FOO=1 /bin/rm` gives `rm`).
    Deny and ask rules match these too; allow rules never do."""
    opaque: bool = False
    """True when a prefix rule cannot see everything the line does; no allow rule covers it."""
    reasons: tuple[str, ...] = ()
    """Why the line is opaque, e.g. `command substitution`, `output redirection to out.txt`."""
    dynamic: bool = False
    """True when no rule can tell which commands the line runs: a command name that is not
    literal text (`$c x`, `{rm,x}`, `r? x`, `$(echo rm) x`), or code the parser cannot read
    (an expansion it did not parse, arithmetic that can run array subscripts, `eval $x`,
    `bash -c "$x"`, `source file`, a wrapper option it does not understand), or a change to
    what bash looks later words up in (`BASH_CMDS[x]=...`, `alias`, `hash -p`, `enable`,
    `PATH=...`, `shopt -s expand_aliases`, `fc`). Every deny and ask rule matches such a line;
    implies `opaque`."""
    dynamic_reasons: tuple[str, ...] = ()
    """Why the line is dynamic (a subset of `reasons`), e.g. `variable expansion in the
    command name`."""
    read_only: bool = False
    """True when every simple command is on the read-only list and nothing is opaque."""


def parse_command(line: str) -> ShellCommand:
    """Parse a shell command line (results of short lines are cached in a bounded LRU)."""
    if len(line) > _CACHE_MAX_CHARS:
        return _analyse(line)
    return _cached(line)


def is_read_only_command(line: str) -> bool:
    """Is this command line read-only (safe to run concurrently and in plan mode)?"""
    return parse_command(line).read_only


@functools.lru_cache(maxsize=2048)
def _cached(line: str) -> ShellCommand:
    return _analyse(line)


def _analyse(line: str) -> ShellCommand:
    walk = walk_line(line, 0)
    return ShellCommand(
        line=line,
        commands=tuple(walk.commands),
        words=tuple(walk.words),
        hidden=walk.hidden_commands(),
        opaque=bool(walk.reasons),
        reasons=tuple(walk.reasons),
        dynamic=bool(walk.dynamic),
        dynamic_reasons=tuple(walk.dynamic),
        read_only=walk.read_only and not walk.reasons,
    )
