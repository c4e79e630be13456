"""Commands that run other commands: wrappers (`xargs`, `timeout`, `env`, `sudo`...) and shells.

`unwrap` says which command a wrapper runs, and `shell_script` which script `bash -c` runs, so
that deny and ask rules can see the command behind them and a read-only wrapper is read-only
exactly when the command it runs is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence

__all__ = [
    "ASSIGNMENT",
    "MAX_DEPTH",
    "READ_WRAPPERS",
    "SHELLS",
    "WRAPPERS",
    "shell_script",
    "unwrap",
]

MAX_DEPTH = 8
"""How deep `bash -c "bash -c '...'"` and wrapper chains are followed."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "su"})
"""Shells (and `su`) whose `-c SCRIPT` runs a script given on the command line."""
READ_WRAPPERS = frozenset({"timeout", "nice", "env", "command", "time", "builtin"})
"""Wrappers that only run another command: read-only exactly when that command is."""
WRAPPERS = READ_WRAPPERS | set(
    "xargs sudo doas exec nohup setsid stdbuf ionice coproc watch busybox".split()
)
"""Every wrapper `unwrap` knows: the command behind it is shown to deny and ask rules."""
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
"""A `NAME=` prefix: an environment assignment in `env` and `sudo` argument lists."""
_SUDO_VALUED = frozenset(
    "user group prompt close-from host role type other-user command-timeout chdir chroot".split()
)


def _after_options(
    args: Sequence[str], short_values: str = "", long_values: Iterable[str] = ()
) -> int:
    """Index of the first argument after the options (GNU style, values attached or not)."""
    long_values = frozenset(long_values)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1
        if a.startswith("--"):
            name = a[2:].split("=", 1)[0]
            i += 2 if "=" not in a and name in long_values else 1
            continue
        if a.startswith("-") and len(a) > 1:
            i += 1
            for j, c in enumerate(a[1:], 1):
                if c in short_values:
                    i += 0 if j + 1 < len(a) else 1
                    break
            continue
        return i
    return i


def unwrap(name: str, args: Sequence[str]) -> list[str] | None:
    """The command a wrapper runs (None when it runs none)."""
    if name == "xargs":
        i = _after_options(
            args,
            "adEILnPs",
            ("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"),
        )
        return list(args[i:]) or ["echo"]
    if name == "timeout":
        i = _after_options(args, "sk", ("signal", "kill-after"))
        return list(args[i + 1 :]) or None
    if name == "nice":
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "--":
            i += 2 if args[i] in ("-n", "--adjustment") else 1
        i += 1 if i < len(args) and args[i] == "--" else 0
        return list(args[i:]) or None
    if name == "env":
        for k, a in enumerate(args):
            # `env -S 'cmd args'` splits its argument into a command line.
            if a in ("-S", "--split-string"):
                text, rest = (args[k + 1] if k + 1 < len(args) else ""), args[k + 2 :]
            elif a.startswith("--split-string="):
                text, rest = a.partition("=")[2], args[k + 1 :]
            elif a.startswith("-S"):
                text, rest = a[2:], args[k + 1 :]
            else:
                continue
            try:
                return [*shlex.split(text), *rest] or None
            except ValueError:
                return [text, *rest]
        i = _after_options(args, "uC", ("unset", "chdir"))
        while i < len(args) and ASSIGNMENT.match(args[i]):
            i += 1
        return list(args[i:]) or None
    if name in ("sudo", "doas"):
        i = _after_options(args, "ugpChrtUTDR", _SUDO_VALUED)
        while i < len(args) and ASSIGNMENT.match(args[i]):
            i += 1
        return list(args[i:]) or None
    if name == "command":
        if any(a in ("-v", "-V") for a in args[:2]):
            return None
        i = _after_options(args)
        return list(args[i:]) or None
    if name == "exec":
        i = _after_options(args, "a")
        return list(args[i:]) or None
    if name == "stdbuf":
        i = _after_options(args, "ioe", ("input", "output", "error"))
        return list(args[i:]) or None
    if name == "ionice":
        if any(a.startswith(("-p", "-P", "-u", "--pid", "--pgid", "--uid")) for a in args):
            return None
        i = _after_options(args, "cn", ("class", "classdata"))
        return list(args[i:]) or None
    if name == "watch":
        i = _after_options(args, "dnq", ("differences", "interval", "equexit"))
        return list(args[i:]) or None
    # nohup, setsid, time, builtin, coproc: options without values.
    i = _after_options(args)
    return list(args[i:]) or None


def shell_script(args: Sequence[str]) -> str | None:
    """The script of `bash -c SCRIPT` (None when the shell reads a file or stdin)."""
    has_c = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a.startswith("--"):
            if a in ("--command", "--rcfile", "--init-file"):
                has_c = has_c or a == "--command"
                i += 2 if a != "--command" else 1
            elif a.startswith("--command="):
                return a.partition("=")[2]
            else:
                i += 1
            continue
        if a.startswith(("-", "+")) and len(a) > 1:
            has_c = has_c or "c" in a[1:]
            i += 2 if a in ("-o", "+o", "-O", "+O") else 1
            continue
        break
    if not has_c:
        return None
    return args[i] if i < len(args) else ""
