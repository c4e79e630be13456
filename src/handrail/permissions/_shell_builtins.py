"""Bash builtins and variables that change what a line's later words run.

Bash decides what a command name runs when it runs it, from tables the line itself can change:
its aliases (`alias`, `BASH_ALIASES`, once `shopt -s expand_aliases` is on), its builtins
(`enable`), its remembered paths (`hash -p`, `BASH_CMDS`), `PATH` and the variables like it,
and its history (`fc`, `history -s`). A line that changes one of them decides what its later
words run by something no rule sees, and so is unreadable. Builtins that run code given as an
option (`mapfile -C`, `compgen -C`/`-F`/`-W`, `bind -x`) are too.

`builtin_hazards` reads a builtin's options as bash's `internal_getopt` does (option letters
anywhere in a `-abc` cluster, a value attached, `-Ccmd`, or in the next word) and says why the
line is unreadable, if it is. `shell_variable` says whether assigning a variable is such a
change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

__all__ = [
    "ARITHMETIC",
    "READ_BUILTINS",
    "builtin_hazards",
    "literal_subscripts",
    "shell_variable",
    "shell_variable_reason",
]

ARITHMETIC = "arithmetic on a variable"
"""Bash evaluates a variable's value as an expression there, and `a[$(cmd)]` in that value
runs cmd: what runs depends on data a rule never sees."""

_SHELL_VARIABLES = frozenset(
    "BASH PATH CDPATH GLOBIGNORE EXECIGNORE BASHOPTS SHELLOPTS POSIXLY_CORRECT ENV"
    " PROMPT_COMMAND PS0 PS1 PS2 PS3 PS4 IFS FUNCNAME FIGNORE HOSTFILE INPUTRC"
    " COMP_WORDBREAKS".split()
)
READ_BUILTINS = frozenset({"read", "mapfile", "readarray"})
"""Builtins whose `IFS=...` prefix only changes how they split their input."""


def shell_variable(name: str) -> bool:
    """Does assigning (or declaring, unsetting, exporting) `name` change what later words run?

    `BASH_CMDS` and `BASH_ALIASES` are bash's command and alias tables, `PATH`, `EXECIGNORE`
    and `CDPATH` decide where names are looked up, `IFS` how words split, `SHELLOPTS`,
    `BASHOPTS` and `POSIXLY_CORRECT` the shell's options, `PS0`-`PS4` and `PROMPT_COMMAND` run
    code; every other `BASH_*` is bash's own too (`BASH_FUNC_f%%` an imported function).
    """
    base = name.partition("[")[0]
    return base in _SHELL_VARIABLES or base.startswith(("BASH_", "HIST"))


def shell_variable_reason(name: str) -> str:
    """The reason given when a line assigns a variable `shell_variable` names."""
    return f"{name.partition('[')[0]} changes what later words run"


_LITERAL_INDEX = re.compile(r"\d+|@|\*")
_SUBSCRIPT = re.compile(r"\[([^\]]*)\]")


def literal_subscripts(name: str) -> bool:
    """Does every `[...]` in this (variable) name hold a literal index?"""
    return all(_LITERAL_INDEX.fullmatch(m.group(1)) for m in _SUBSCRIPT.finditer(name)) and (
        name.count("[") == len(_SUBSCRIPT.findall(name))
    )


# -- option grammars --------------------------------------------------------------------

_GRAMMARS: dict[str, tuple[str, str]] = {
    # builtin: (options without a value, options with one), as in bash's internal_getopt
    "read": ("ersE", "adinNptu"),
    "mapfile": ("t", "dnOsuCc"),
    "readarray": ("t", "dnOsuCc"),
    "printf": ("", "v"),
    "wait": ("fn", "p"),
    "hash": ("dlrt", "p"),
    "enable": ("adnps", "f"),
    "complete": ("abcdefgjkprsuvDEI", "oAGWPSXFC"),
    "compgen": ("abcdefgjksuv", "oAGWPSXFCV"),
    "bind": ("lpsvPSVX", "mfqurx"),
    "history": ("acnrwps", "d"),
    "shopt": ("pqsuo", ""),
    "set": ("abefhkmnptuvxBCEHPT", "o"),
    "alias": ("p", ""),
    "trap": ("lpP", ""),
    "declare": ("aAfFgiIlnrtuxp", ""),
    "typeset": ("aAfFgiIlnrtuxp", ""),
    "local": ("aAfFgiIlnrtuxp", ""),
    "export": ("fnp", ""),
    "readonly": ("aAfp", ""),
    "unset": ("fvn", ""),
    "getopts": ("", ""),
}
_PLUS = frozenset({"set", "shopt", "declare", "typeset", "local", "export", "readonly"})
"""Builtins that also take `+x` options (which turn an option off)."""
_DECLARES = frozenset({"declare", "typeset", "local", "export", "readonly", "unset"})
_SET_HAZARDS = frozenset({"history", "histexpand", "keyword", "posix"})
"""`set -o` options that replay history, move assignments or change how names are found."""
_SHOPT_HAZARDS = frozenset({"expand_aliases", "extdebug"})


class _Options:
    """A builtin's arguments read with its grammar."""

    __slots__ = ("end", "given", "unclear")

    def __init__(self, args: Sequence[str], known: Sequence[bool], name: str) -> None:
        flags, valued = _GRAMMARS[name]
        starts = "-+" if name in _PLUS else "-"
        self.given: list[tuple[str, str | None, int, bool]] = []
        """Each option: its letter, its value, the index of the word holding the value (or
        the option), and whether it was given with `-` (not `+`)."""
        self.unclear = ""
        i = 0
        while i < len(args):
            a = args[i]
            if not known[i]:
                # `$x` could be any option, `-p/bin/rm` as much as a name.
                self.unclear = f"{name} with an option that is not literal"
                break
            if a == "--":
                i += 1
                break
            if len(a) < 2 or a[0] not in starts:
                break
            i += 1
            for j, c in enumerate(a[1:], 1):
                if c in valued:
                    value: str | None = a[j + 1 :]
                    at = i - 1
                    if not value:
                        value, at = (args[i], i) if i < len(args) else (None, i - 1)
                        i += 1 if value is not None else 0
                    self.given.append((c, value, at, a[0] == "-"))
                    break
                if c not in flags:
                    self.unclear = self.unclear or f"{name} with an option it does not understand"
                self.given.append((c, None, i - 1, a[0] == "-"))
        self.end = i

    def letters(self) -> set[str]:
        return {c for c, *_ in self.given}

    def values(self, letter: str) -> list[tuple[str | None, int]]:
        return [(v, at) for c, v, at, _ in self.given if c == letter]


def builtin_hazards(name: str, args: Sequence[str], known: Sequence[bool]) -> Iterator[str]:
    """Why running builtin `name` with `args` makes the line unreadable (nothing: it doesn't).

    `known` says, for each of `args`, whether its value is static (a word that is not is
    given as written).
    """
    if name == "fc":
        yield "fc runs commands from the history"
        return
    if name not in _GRAMMARS:
        return
    opts = _Options(args, known, name)
    if opts.unclear:
        yield opts.unclear
    letters = opts.letters()
    operands = range(opts.end, len(args))
    if name == "hash" and "p" in letters:
        # `hash -p FILE NAME` sets what NAME runs; `hash NAME` only remembers PATH's answer.
        yield "hash changes what a command name runs"
    elif name == "enable" and (letters & {"f", "d"} or opts.end < len(args)):
        # Only a listing (`enable`, `enable -a`, `enable -n`) leaves the builtins alone.
        yield "enable changes what a command name runs"
    elif name in ("declare", "typeset", "local") and letters & {"i", "n"}:
        yield ARITHMETIC  # integer values and name references evaluate what they are given
    elif name in ("mapfile", "readarray") and "C" in letters:
        yield f"{name} -C runs a callback"
    elif name in ("complete", "compgen"):
        for letter in "CF":
            if letter in letters:
                yield f"{name} -{letter} runs a command"
        for value, at in opts.values("W"):
            if value is None or not known[at] or "$" in value or "`" in value:
                yield f"{name} -W expands its word list"
    elif name == "bind" and letters & {"x", "f"}:
        yield "bind -x binds a key to a command"
    elif name == "history" and letters & set("sprn"):
        yield "history changes the history list"
    elif name == "set":
        for c, value, at, minus in opts.given:
            if minus and c in "Hk":
                yield f"set -{c} changes how later words run"
            elif minus and c == "o" and value is not None:
                if not known[at] or value in _SET_HAZARDS:
                    yield f"set -o {value} changes how later words run"
    elif name == "shopt" and "s" in letters:
        for k in operands:
            option = args[k]
            if not known[k]:
                yield "shopt -s of an option that is not literal"
            elif option in (_SET_HAZARDS if "o" in letters else _SHOPT_HAZARDS) or (
                option.startswith("compat")
            ):
                yield f"shopt -s {option} changes how later words run"
    elif name == "alias":
        if any("=" in args[k] for k in operands):
            yield "alias changes what later words run"
    yield from _targets(name, opts, args, known)


def _targets(
    name: str, opts: _Options, args: Sequence[str], known: Sequence[bool]
) -> Iterator[str]:
    """Why the variables the builtin assigns make the line unreadable."""
    letters = opts.letters()
    names: list[tuple[str | None, int]] = []
    if name == "read":
        names = [*opts.values("a"), *((args[k], k) for k in range(opts.end, len(args)))]
    elif name in ("mapfile", "readarray"):
        names = [(args[opts.end], opts.end)] if opts.end < len(args) else []
    elif name == "printf":
        names = opts.values("v")
    elif name == "wait":
        names = opts.values("p")
    elif name == "compgen":
        names = opts.values("V")
    elif name == "getopts":
        names = [(args[opts.end + 1], opts.end + 1)] if opts.end + 1 < len(args) else []
    elif name in _DECLARES and not letters & {"p", "f", "F"}:
        names = [(args[k], k) for k in range(opts.end, len(args))]
    for value, at in names:
        if value is None:
            continue
        if not known[at]:
            yield f"{name} assigns a variable that is not literal"
            continue
        target = value.partition("=")[0].removesuffix("+")
        if shell_variable(target):
            yield shell_variable_reason(target)
        if not literal_subscripts(target):
            yield ARITHMETIC
