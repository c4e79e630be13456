"""Shell command lines, parsed with tree-sitter-bash: simple commands, opacity, read-only-ness.

`parse_command(line)` splits a line into the simple commands a permission rule is matched
against, says whether anything in the line escapes such a rule (`opaque`: substitutions,
subshells, `eval`, `bash -c`, output redirection, a dynamic command name, a parse error), and
whether the whole line is read-only (every simple command on a flag-validated read-only list,
nothing opaque). Read-only lines are concurrency-safe and allowed in plan mode.

Invariants: anything the parser does not understand counts against the line (opaque, not
read-only), never for it; `read_only` implies `not opaque`. Commands a line runs indirectly
(behind `xargs`, `timeout`, `env`, `sudo`, `find -exec`, inside `bash -c '...'`, `eval` or a
substitution) are listed in `hidden` so deny and ask rules can see them.
"""

from __future__ import annotations

import functools
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["ShellCommand", "is_read_only_command", "parse_command"]

_MAX_DEPTH = 8
"""How deep `bash -c "bash -c '...'"` and wrapper chains are followed."""
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
    read_only: bool = False
    """True when every simple command is on the read-only list and nothing is opaque."""


def parse_command(line: str) -> ShellCommand:
    """Parse a shell command line (results of short lines are cached in a bounded LRU)."""
    if len(line) > _CACHE_MAX_CHARS:
        return _analyse(line, 0)
    return _cached(line)


def is_read_only_command(line: str) -> bool:
    """Is this command line read-only (safe to run concurrently and in plan mode)?"""
    return parse_command(line).read_only


@functools.lru_cache(maxsize=2048)
def _cached(line: str) -> ShellCommand:
    return _analyse(line, 0)


class _ThreadParser(threading.local):
    # A tree-sitter Parser holds mutable state; each thread gets its own.
    parser: Parser | None = None


_PARSERS = _ThreadParser()


def _parser() -> Parser:
    parser = _PARSERS.parser
    if parser is None:
        # Imported on first use: loading the grammar would add ~20 ms to `import handrail`.
        import tree_sitter
        import tree_sitter_bash

        parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        _PARSERS.parser = parser
    return parser


def _analyse(line: str, depth: int) -> ShellCommand:
    src = line.encode("utf-8", "surrogatepass")
    root = _parser().parse(src).root_node
    walker = _Walker(src, depth)
    if "\x00" in line:
        walker.reason("NUL byte")
    if root.has_error:
        walker.reason("parse error")
        # Belt and braces for deny rules: the naive split of a line the grammar rejects.
        walker.hide(_naive_split(line))
    walker.walk(root)
    return walker.result(line)


_OPERATORS = re.compile(r"&&|\|\||[;&|\n()`]|\$\(")
_RESERVED = frozenset("if then else elif fi do done while until for case esac ! { } time".split())


def _naive_split(line: str) -> Iterable[str]:
    for piece in _OPERATORS.split(line):
        words = piece.split()
        while words and words[0] in _RESERVED:
            words.pop(0)
        if words:
            yield " ".join(words)


# -- words ---------------------------------------------------------------------------------

_SAFE_WORD = re.compile(r"[\w@%+=:,./-][\w@%+=:,./~^-]*")
_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")
_ANSI_SIMPLE = dict(zip("abeEfnrtv\\'\"?", "\a\b\x1b\x1b\f\n\r\t\v\\'\"?", strict=True))


@dataclass(slots=True)
class _Word:
    value: str | None
    """The word after quote removal; None when it depends on an expansion."""
    raw: str
    """The word as written."""
    expands: bool = False
    """Globs or braces: the shell may turn it into other words."""
    tilde: bool = False
    """Starts with an unquoted `~` (a home directory: never an option, but not literal)."""

    @property
    def text(self) -> str:
        if self.value is None or self.expands or self.tilde:
            return self.raw
        return _quote(self.value)

    @property
    def arg(self) -> str:
        return self.raw if self.value is None else self.value

    @property
    def static(self) -> str | None:
        """The value when it is known and the shell will not expand it further."""
        return None if self.expands else self.value


def _quote(value: str) -> str:
    return value if _SAFE_WORD.fullmatch(value) else shlex.quote(value)


def _render(argv: Sequence[str]) -> str:
    return " ".join(_quote(a) for a in argv)


def _unquote_bare(text: str) -> tuple[str, bool]:
    out: list[str] = []
    expands = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if c in "*?[":
            expands = True
        out.append(c)
        i += 1
    return "".join(out), expands


def _ansi_c(body: str) -> str:
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            m = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", body[i:])
            if m is None:
                out.append("\\" + e)
            else:
                out.append(chr(min(int(m.group(), 16), 0x10FFFF)))
                i += m.end()
        elif e in "01234567":
            m = re.match(r"[0-7]{0,2}", body[i:])
            digits = e + (m.group() if m else "")
            out.append(chr(int(digits, 8) & 0xFF))
            i += len(digits) - 1
        elif e == "c" and i < n:
            out.append(chr(ord(body[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)
    return "".join(out)


# -- the read-only list --------------------------------------------------------------------

_Validator = Callable[[list[str | None]], bool]

# Variables that change what a later program runs or loads (a PATH, a pager, git config, a
# preload): a command prefixed with one of these is not read-only, whatever the command.
_UNSAFE_ENV = re.compile(
    r"PATH|IFS|ENV|BASH_ENV|HOME|CDPATH|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|EDITOR|VISUAL"
    r"|BROWSER|TMPDIR|LOCPATH|GCONV_PATH|NLSPATH|MANPATH|HOSTALIASES|POSIXLY_CORRECT"
    r"|RIPGREP_CONFIG_PATH|XDG_\w*|LD_\w*|DYLD_\w*|BASH_\w*|GIT_\w*|\w*PAGER|LESS\w*"
    r"|PYTHON\w*|PERL\w*|RUBY\w*|NODE_\w*|JQ_\w*|MALLOC_\w*|SSH_\w*|GPG\w*|GNUPG\w*"
    r"|TERMINFO\w*|\w*_OPTIONS|\w*OPTS|\w*_CONFIG\w*"
)


def _safe_env_name(name: str) -> bool:
    return _UNSAFE_ENV.fullmatch(name.split("[", 1)[0]) is None


def _any(_: list[str | None]) -> bool:
    return True


def _static(check: Callable[[list[str]], bool]) -> _Validator:
    """A validator that needs every argument known: `$x` could smuggle in any flag."""

    def run(args: list[str | None]) -> bool:
        known = [a for a in args if a is not None]
        return len(known) == len(args) and check(known)

    return run


def _long_hit(arg: str, names: Iterable[str]) -> bool:
    """Is `arg` a long option that is, or abbreviates, one of `names`?

    GNU getopt accepts any unambiguous prefix, so `--outp=x` is `--output=x`.
    """
    if not arg.startswith("--") or arg == "--":
        return False
    given = arg[2:].split("=", 1)[0]
    return any(n.startswith(given) for n in names)


def _short_has(arg: str, letters: str, takes_value: str = "") -> bool:
    """Does the short-option cluster `arg` (`-rno`) contain one of `letters`?"""
    if not arg.startswith("-") or arg.startswith("--"):
        return False
    for c in arg[1:]:
        if c in letters:
            return True
        if c in takes_value:
            return False
    return False


def _none_of(
    letters: str = "", longs: Iterable[str] = (), takes_value: str = "", exact: Iterable[str] = ()
) -> _Validator:
    longs, exact = tuple(longs), frozenset(exact)

    def check(args: list[str]) -> bool:
        return not any(
            a in exact or _long_hit(a, longs) or _short_has(a, letters, takes_value) for a in args
        )

    return _static(check)


def _tail(args: list[str]) -> bool:
    # `tail -f` is read-only but never ends; it must not be auto-run. `-5f`/`+5f` are the
    # obsolete spellings of the same thing.
    for a in args:
        if _long_hit(a, ("follow",)):
            return False
        if (a.startswith("-") and not a.startswith("--")) or a.startswith("+"):
            if "f" in a or "F" in a:
                return False
    return True


def _uniq(args: list[str]) -> bool:
    # `uniq IN OUT` writes OUT.
    positional, i = 0, 0
    while i < len(args):
        a = args[i]
        if a == "--":
            positional += len(args) - i - 1
            break
        if a in ("-f", "-s", "-w") or (
            a.startswith("--")
            and "=" not in a
            and any(_long_hit(a, (n,)) for n in ("skip-fields", "skip-chars", "check-chars"))
        ):
            i += 2
            continue
        if not (a.startswith("-") and a != "-"):
            positional += 1
        i += 1
    return positional <= 1


def _date(args: list[str]) -> bool:
    # `date -s X` and `date MMDDhhmm` set the clock.
    i = 0
    while i < len(args):
        a = args[i]
        if _long_hit(a, ("set",)) or _short_has(a, "s", "dfrI"):
            return False
        if a in ("-d", "-f", "-r") or a in ("--date", "--file", "--reference"):
            i += 2
            continue
        if not a.startswith(("-", "+")):
            return False
        i += 1
    return True


def _printf(args: list[str | None]) -> bool:
    # `printf -v 'a[$(cmd)]'` evaluates the subscript; everything else only prints.
    return not args or (args[0] is not None and not args[0].startswith("-"))


def _test(args: list[str]) -> bool:
    # `test -v 'a[$(cmd)]'` evaluates the subscript.
    return not (any(a in ("-v", "-R") for a in args) and any("[" in a for a in args))


_FIND_ACTIONS = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)


def _find(args: list[str]) -> bool:
    return not any(a in _FIND_ACTIONS for a in args)


def _sed(args: list[str]) -> bool:
    quiet = False
    scripts: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            positional.extend(args[i:])
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in ("quiet", "silent"):
                quiet = True
            elif name == "expression":
                if not eq:
                    if i >= len(args):
                        return False
                    value, i = args[i], i + 1
                scripts.append(value)
            elif name not in (
                "regexp-extended",
                "posix",
                "separate",
                "unbuffered",
                "null-data",
                "debug",
                "sandbox",
                "line-length",
            ):
                return False  # --in-place, --file, and anything unknown
            continue
        if a.startswith("-") and a != "-":
            for j, c in enumerate(a[1:], 1):
                if c == "n":
                    quiet = True
                elif c in "Ersuz":
                    continue
                elif c in "el":
                    value = a[j + 1 :]
                    if not value:
                        if i >= len(args):
                            return False
                        value, i = args[i], i + 1
                    if c == "e":
                        scripts.append(value)
                    break
                else:
                    return False  # -i (in place), -f (script file), anything unknown
            continue
        positional.append(a)
    if not scripts:
        if not positional:
            return False
        scripts.append(positional[0])
    return quiet and all(_sed_script_ok(s) for s in scripts)


def _sed_until(s: str, i: int, delim: str) -> int:
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == delim:
            return i + 1
        i += 1
    return -1


def _sed_address(s: str, i: int) -> int:
    n = len(s)
    if i < n and s[i].isdigit():
        while i < n and s[i].isdigit():
            i += 1
        if i < n and s[i] == "~":
            i += 1
            while i < n and s[i].isdigit():
                i += 1
        return i
    if i < n and s[i] == "$":
        return i + 1
    if i < n and s[i] in "/\\":
        if s[i] == "\\":
            i += 1
            if i >= n or s[i] in "\\\n":
                return -1
        i = _sed_until(s, i + 1, s[i])
        while 0 <= i < n and s[i] in "IM":
            i += 1
    return i


def _sed_delimited(s: str, i: int, parts: int) -> int:
    if i >= len(s) or s[i] in "\\\n":
        return -1
    delim = s[i]
    i += 1
    for _ in range(parts):
        i = _sed_until(s, i, delim)
        if i < 0:
            return -1
    return i


def _sed_script_ok(s: str) -> bool:
    """Does the sed script only print?

    Allowed: addresses, `p P = l q Q d D n N g G h H x z F { }`, and `s` / `y` without the
    `w` / `e` flags. Anything else (`w`, `e`, `r`, labels, text) is refused.
    """
    n, i, depth = len(s), 0, 0

    def skip_blanks(k: int) -> int:
        while k < n and s[k] in " \t":
            k += 1
        return k

    while i < n:
        c = s[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "}":
            depth -= 1
            if depth < 0:
                return False
            i += 1
            continue
        if c == "#":
            while i < n and s[i] != "\n":
                i += 1
            continue
        i = _sed_address(s, i)
        if i < 0:
            return False
        if i < n and s[i] == ",":
            i += 1
            if i < n and s[i] in "+~":
                start = i = i + 1
                while i < n and s[i].isdigit():
                    i += 1
                if i == start:
                    return False
            else:
                start = i
                i = _sed_address(s, i)
                if i <= start:
                    return False
        i = skip_blanks(i)
        if i < n and s[i] == "!":
            i = skip_blanks(i + 1)
        if i >= n:
            return False
        cmd = s[i]
        i += 1
        if cmd == "{":
            depth += 1
            continue
        if cmd in "qQlL":
            i = skip_blanks(i)
            while i < n and s[i].isdigit():
                i += 1
        elif cmd in "s":
            i = _sed_delimited(s, i, 2)
            if i < 0:
                return False
            while i < n and s[i] in "gpiImM0123456789":
                i += 1
        elif cmd == "y":
            i = _sed_delimited(s, i, 2)
            if i < 0:
                return False
        elif cmd not in "pP=dDnNgGhHxzF":
            return False
        i = skip_blanks(i)
        if i < n and s[i] not in ";\n}":
            return False
    return depth == 0


_GIT_GLOBAL_OK = frozenset(
    "--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs"
    " --icase-pathspecs --no-replace-objects --version".split()
)
_GIT_READ = frozenset(
    "status log diff show blame annotate rev-parse ls-files ls-tree grep describe shortlog"
    " rev-list cat-file show-ref merge-base for-each-ref diff-tree diff-files diff-index"
    " count-objects whatchanged name-rev check-ignore check-attr version".split()
)
# Options of read sub-commands that write a file or run a program.
_GIT_BAD_LONG = ("output", "ext-diff", "open-files-in-pager", "exec")


def _git(args: list[str]) -> bool:
    i = 0
    # `-c`, `-C`, `--git-dir`, `--work-tree`, `--exec-path`, `--config-env` can make git run
    # configured programs (fsmonitor, pager, aliases) from another place: not read-only.
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in _GIT_GLOBAL_OK:
            return False
        i += 1
    if i == len(args):
        return True
    sub, rest = args[i], args[i + 1 :]
    if any(_long_hit(a, _GIT_BAD_LONG) or a.startswith("-O") for a in rest):
        return False
    if sub in _GIT_READ:
        return True
    if sub == "branch":
        return _git_listing(
            rest,
            "arvli",
            ("contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format"),
        )
    if sub == "tag":
        return _git_listing(
            rest,
            "lin0123456789",
            ("contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format"),
        )
    if sub == "remote":
        return rest in ([], ["-v"], ["--verbose"]) or (bool(rest) and rest[0] == "get-url")
    if sub == "stash":
        return bool(rest) and rest[0] in ("list", "show")
    if sub == "reflog":
        first = next((a for a in rest if not a.startswith("-")), None)
        return first in (None, "show", "exists")
    if sub == "worktree":
        return rest[:1] == ["list"]
    if sub == "config":
        return _git_config(rest)
    return False


_GIT_LIST_VALUED = frozenset("color column abbrev sort format".split())
_GIT_LIST_FLAGS = frozenset(
    "--all --remotes --verbose --list --show-current --ignore-case --no-color --no-column"
    " --no-abbrev --omit-empty".split()
)


def _git_listing(args: list[str], short: str, valued: tuple[str, ...]) -> bool:
    """Is this `git branch` / `git tag` in list mode?

    A positional argument without `--list` would create a branch or tag.
    """
    listing = False
    positional = False
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a in ("-l", "--list"):
            listing = True
        elif a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            if name in valued:
                if not eq:
                    i += 1
            elif a not in _GIT_LIST_FLAGS and name not in _GIT_LIST_VALUED:
                return False
        elif a.startswith("-") and len(a) > 1:
            if any(c not in short for c in a[1:]):
                return False
            listing = listing or "l" in a
        else:
            positional = True
    return listing or not positional


_GIT_CONFIG_READ = ("get", "get-all", "get-regexp", "get-urlmatch", "list")
_GIT_CONFIG_WRITE = tuple(
    "add unset unset-all replace-all rename-section remove-section edit set".split()
)


def _git_config(args: list[str]) -> bool:
    if args[:1] in (["get"], ["list"]):
        return not any(_long_hit(a, _GIT_CONFIG_WRITE) for a in args)
    reading = any(a in ("-l", *(f"--{n}" for n in _GIT_CONFIG_READ)) for a in args)
    return reading and not any(_long_hit(a, _GIT_CONFIG_WRITE) or a == "-e" for a in args)


_READ_ONLY: dict[str, _Validator] = {
    **dict.fromkeys(
        "ls cat head wc grep egrep fgrep pwd echo true false : which type stat du df basename"
        " dirname realpath readlink cut tr diff cmp comm nl tac rev seq uname whoami id printenv"
        " sleep cd nproc groups".split(),
        _any,
    ),
    "printf": _printf,
    "test": _static(_test),
    "[": _static(_test),
    "tail": _static(_tail),
    "uniq": _static(_uniq),
    "date": _static(_date),
    "sort": _none_of("o", ("output", "compress-program"), takes_value="ktST"),
    "file": _none_of("C", ("compile",), takes_value="mfFeP"),
    "tree": _none_of("oR", ("output",), takes_value="LPIHT"),
    "jq": _none_of("fL", ("from-file", "library-path")),
    "rg": _none_of(longs=("pre", "pre-glob", "hostname-bin")),
    "find": _static(_find),
    "sed": _static(_sed),
    "git": _static(_git),
}
"""Commands that only read, each with a check of its arguments."""

# -- wrappers ------------------------------------------------------------------------------

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "su"})
_READ_WRAPPERS = frozenset({"timeout", "nice", "env", "command", "time", "builtin"})
"""Wrappers that only run another command: read-only exactly when that command is."""
_WRAPPERS = _READ_WRAPPERS | set(
    "xargs sudo doas exec nohup setsid stdbuf ionice coproc watch busybox".split()
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
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


def _unwrap(name: str, args: Sequence[str]) -> list[str] | None:
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
        while i < len(args) and _ASSIGNMENT.match(args[i]):
            i += 1
        return list(args[i:]) or None
    if name in ("sudo", "doas"):
        i = _after_options(args, "ugpChrtUTDR", _SUDO_VALUED)
        while i < len(args) and _ASSIGNMENT.match(args[i]):
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


def _shell_script(args: Sequence[str]) -> str | None:
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


# -- the walk ------------------------------------------------------------------------------

_DUP_TARGET = re.compile(r"\d+-?|-")
_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_DECLARE_OK = frozenset({"export", "local", "readonly", "declare", "typeset"})
_ARITHMETIC = "arithmetic on a variable"
"""Bash evaluates a variable's value as an expression there, and `a[$(cmd)]` in that value
runs cmd: what runs depends on data a rule never sees."""
_SUBSCRIPT_BUILTINS = frozenset(
    "printf read unset declare typeset local export readonly test [ let mapfile readarray wait"
    " getopts".split()
)
"""Builtins that evaluate an array subscript written in a (even quoted) argument."""
_LEAF_KINDS = frozenset(
    "word number raw_string ansi_c_string string_content variable_name comment heredoc_content"
    " heredoc_start heredoc_end file_descriptor test_operator special_variable_name".split()
)
_Handler = Callable[["_Walker", "Node", bool, bool], "tuple[bool, bool] | None"]


class _Walker:
    def __init__(self, src: bytes, depth: int) -> None:
        self.src = src
        self.depth = depth
        self.commands: list[str] = []
        self.words: list[tuple[str, ...]] = []
        self.hidden: list[str] = []
        self.reasons: list[str] = []
        self.read_only = True
        self.names: set[str] = set()

    def result(self, line: str) -> ShellCommand:
        if "git" in self.names and self.names & {"cd", "pushd", "popd"}:
            # `cd repo && git status` runs that repository's configured programs (fsmonitor).
            self.read_only = False
        seen = set(self.commands)
        hidden = tuple(dict.fromkeys(h for h in self.hidden if h and h not in seen))
        return ShellCommand(
            line=line,
            commands=tuple(self.commands),
            words=tuple(self.words),
            hidden=hidden,
            opaque=bool(self.reasons),
            reasons=tuple(self.reasons),
            read_only=self.read_only and not self.reasons,
        )

    def reason(self, why: str) -> None:
        if why not in self.reasons:
            self.reasons.append(why)

    def hide(self, commands: Iterable[str]) -> None:
        self.hidden.extend(commands)

    def text(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def walk(self, root: Node) -> None:
        # Iterative, so 10,000 `&&`s or nested `$(...)`s cannot exhaust Python's stack. Each
        # entry: (node, inside a substitution, part of a command already recorded).
        stack: list[tuple[Node, bool, bool]] = [(root, False, False)]
        handlers = _HANDLERS
        while stack:
            node, inner, part = stack.pop()
            handler = handlers.get(node.type)
            if handler is not None:
                flags = handler(self, node, inner, part)
                if flags is None:
                    continue
                inner, part = flags
            for child in reversed(node.children):
                kind = child.type
                if kind == "&":
                    self.read_only = False  # a background job outlives the call
                elif child.is_named and kind not in _LEAF_KINDS:
                    stack.append((child, inner, part))

    # -- node handlers: return the flags for the children, or None to skip them

    def on_command(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.command(node, inner)
        return inner, True

    def on_assignments(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if not part:
            nodes = node.children if node.type == "variable_assignments" else [node]
            pairs = [self.assignment(n) for n in nodes if n.type == "variable_assignment"]
            if not all(_safe_env_name(name) for name, _ in pairs):
                self.read_only = False
            self.emit(" ".join(t for _, t in pairs), (), inner)
        return inner, True

    def on_declaration(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        keyword = ""
        pieces: list[str] = []
        ok = True
        for child in node.children:
            if not child.is_named:
                keyword = keyword or self.text(child)
                pieces.append(self.text(child))
            elif child.type == "variable_assignment":
                name, text = self.assignment(child)
                ok = ok and _safe_env_name(name) and "[" not in name
                pieces.append(text)
            else:
                w = self.group([child])[0]
                value = w.static
                # Flags (`-i`, `-n`) and subscripts make the shell evaluate code.
                ok = ok and value is not None and "[" not in value
                ok = ok and value is not None and (not value.startswith("-") or value == "-p")
                pieces.append(w.text)
                self.check_subscript(keyword, w)
        if keyword not in _DECLARE_OK and keyword != "unset":
            ok = False
        if not ok:
            self.read_only = False
        self.emit(" ".join(pieces), tuple(pieces), inner)
        return inner, True

    def on_test(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        raw = self.text(node)
        self.emit(" ".join(raw.split()), tuple(raw.split()), inner)
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "test_operator":
                op = self.text(n)
                parent = n.parent
                operands = [c for c in (parent.named_children if parent else ()) if c != n]
                if op in _ARITH_TESTS and any(c.type != "number" for c in operands):
                    self.reason(_ARITHMETIC)  # `[[ $x -eq 1 ]]` evaluates $x
                elif op in ("-v", "-R") and any(
                    "[" in self.text(c) or c.type != "word" for c in operands
                ):
                    self.reason(_ARITHMETIC)
            stack.extend(n.children)
        return inner, True

    def on_compound(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if node.child_count and node.children[0].type == "((":
            words = tuple(self.text(node).split())
            self.emit(" ".join(words), words, inner)
            self.read_only = False
            if not self.literal_arithmetic(node):
                self.reason(_ARITHMETIC)
            return inner, True
        return inner, part

    def on_substitution(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.reason(node.type.replace("_", " "))
        return True, False

    def on_subshell(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.reason("subshell")
        return inner, part

    def on_redirect(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        op = ""
        dest: Node | None = None
        for i, child in enumerate(node.children):
            if node.field_name_for_child(i) == "destination":
                dest = dest or child
            elif not child.is_named:
                op = op or self.text(child)
        target = self.group([dest])[0] if dest is not None else None
        value = target.static if target is not None else None
        if value is not None and value.startswith(("/dev/tcp/", "/dev/udp/")):
            self.reason("network redirection")
        elif op in ("<", "<&", "<&-", ">&-"):
            pass
        elif op in (">&", "<&") and value is not None and _DUP_TARGET.fullmatch(value):
            pass
        elif value not in _SINKS:
            self.reason(f"output redirection to {target.text if target is not None else op}")
        return inner, part

    def on_herestring(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.reason("here-string")
        return inner, part

    def on_heredoc(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        if start is None or not any(q in self.text(start) for q in "'\"\\"):
            for child in node.children:
                # tree-sitter-bash leaves backquotes inside a here-document body unparsed.
                if child.type == "heredoc_body" and "`" in self.text(child):
                    self.reason("command substitution")
        return inner, part

    def on_expansion(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        ops = [self.text(c) for c in node.children if not c.is_named]
        if "@" in ops:
            self.read_only = False
            if "P" in ops:
                self.reason("prompt expansion (${x@P})")  # runs `$(...)` found in the value
        return inner, part

    def on_subscript(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        index = node.child_by_field_name("index")
        if index is None or (index.type != "number" and self.text(index) not in ("@", "*")):
            self.reason(_ARITHMETIC)
        return inner, part

    def on_arithmetic(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if not self.literal_arithmetic(node):
            self.reason(_ARITHMETIC)
        return inner, part

    def on_c_for(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.reason(_ARITHMETIC)
        return inner, part

    def on_while(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.read_only = False  # it may never end
        return inner, part

    def on_for(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        var = node.child_by_field_name("variable")
        if var is not None and not _safe_env_name(self.text(var)):
            self.read_only = False
        return inner, part

    # -- helpers

    def literal_arithmetic(self, node: Node) -> bool:
        stack = list(node.children)
        while stack:
            n = stack.pop()
            if n.type in ("variable_name", "simple_expansion", "expansion", "subscript", "word"):
                return False
            stack.extend(n.children)
        return True

    def check_subscript(self, name: str, word: _Word) -> None:
        # `printf -v 'a[$(cmd)]' x`, `unset 'a[$(cmd)]'`: quoting does not stop the
        # evaluation of the subscript.
        value = word.arg
        if name in _SUBSCRIPT_BUILTINS and "[" in value and ("$" in value or "`" in value):
            self.reason(_ARITHMETIC)

    def emit(self, text: str, argv: tuple[str, ...], inner: bool) -> None:
        if inner:
            self.hidden.append(text)
        else:
            self.commands.append(text)
            self.words.append(argv)

    def word(self, nodes: Sequence[Node]) -> _Word:
        if len(nodes) == 1 and nodes[0].type == "word":
            raw = self.text(nodes[0])
            if _SAFE_WORD.fullmatch(raw):
                return _Word(value=raw, raw=raw)  # the common case: a plain word
        parts: list[Node] = []
        for n in nodes:
            parts.extend(n.children if n.type == "concatenation" else (n,))
        values: list[str] = []
        bare: list[str] = []
        dynamic = expands = tilde = False
        for k, p in enumerate(parts):
            t, raw = p.type, self.text(p)
            value: str | None
            if t == "word":
                value, globbed = _unquote_bare(raw)
                expands = expands or globbed
                tilde = tilde or (k == 0 and raw.startswith("~"))
                bare.append(raw)
            elif t in ("number", "variable_name"):
                value = raw
            elif t == "raw_string":
                value = raw[1:-1]
            elif t == "string":
                static = all(c.type == "string_content" for c in p.named_children)
                value = _DQ_ESCAPE.sub(_dq_unescape, raw[1:-1]) if static else None
            elif t == "ansi_c_string":
                value = _ansi_c(raw[2:-1])
            elif t == "brace_expression":
                value, expands = raw, True
            else:
                value = None
            if value is None:
                dynamic = True
            else:
                values.append(value)
        joined = "".join(bare)
        if "{" in joined and ("," in joined or ".." in joined):
            expands = True
        raw = "".join(self.text(n) for n in nodes)
        value = None if dynamic else "".join(values)
        return _Word(value=value, raw=raw, expands=expands, tilde=tilde)

    def group(self, nodes: Sequence[Node]) -> list[_Word]:
        """Words from argument nodes.

        Nodes that touch (or meet across a backslash-newline, which tree-sitter reads as a
        space but bash removes) are one word.
        """
        groups: list[list[Node]] = []
        prev_end = -1
        for n in nodes:
            start = n.start_byte
            if groups and (start == prev_end or not self.src[prev_end:start].replace(b"\\\n", b"")):
                groups[-1].append(n)
            else:
                groups.append([n])
            prev_end = n.end_byte
        return [self.word(g) for g in groups]

    def assignment(self, node: Node) -> tuple[str, str]:
        """(name, normalised text) of `NAME=value`."""
        name_node = node.child_by_field_name("name")
        name = self.text(name_node) if name_node is not None else ""
        value = node.child_by_field_name("value")
        op = next((self.text(c) for c in node.children if c.type in ("=", "+=")), "=")
        rendered = self.group([value]).pop().text if value is not None else ""
        return name, f"{name}{op}{rendered}"

    def command(self, node: Node, inner: bool) -> None:
        pairs: list[tuple[str, str]] = []
        arg_nodes: list[Node] = []
        for i, child in enumerate(node.children):
            kind = child.type
            if kind == "variable_assignment":
                pairs.append(self.assignment(child))
            elif kind == "command_name":
                arg_nodes.extend(n for n in child.children if not n.is_missing)
            elif kind.endswith("redirect") or child.is_missing:
                continue  # redirections are judged by the walk; `ls &&` is a parse error
            elif node.field_name_for_child(i) == "argument":
                arg_nodes.append(child)
        words = self.group(arg_nodes)
        if not words and not pairs:
            return  # a bare redirection (`> file`); the walk judges the redirection itself
        argv = tuple(w.arg for w in words)
        plain = " ".join(w.text for w in words)
        self.emit(" ".join([*(t for _, t in pairs), plain]).strip(), argv, inner)
        if not all(_safe_env_name(name) for name, _ in pairs):
            self.read_only = False
        if not words:
            return
        if pairs:
            self.hidden.append(plain)
        head = words[0]
        if head.value is None or head.expands:
            self.reason(
                "glob in the command name"
                if head.value is not None
                else "variable expansion in the command name"
            )
            return
        if head.value in _SUBSCRIPT_BUILTINS:
            for w in words[1:]:
                self.check_subscript(head.value, w)
        if not self.read_only_argv(words, 0):
            self.read_only = False
        self.reveal(list(argv), 0)

    def reveal(self, argv: list[str], depth: int) -> None:
        """Record the commands `argv` runs indirectly, for deny and ask rules."""
        name = argv[0].rpartition("/")[2]
        self.names.add(name)
        if name != argv[0] and name:
            self.hidden.append(_render([name, *argv[1:]]))
        if depth > _MAX_DEPTH:
            self.reason("nesting too deep")
            return
        if name in _SHELLS:
            script = _shell_script(argv[1:])
            if script is not None:
                self.reason(f"nested shell ({name} -c)")
                self.nested(script)
        elif name == "eval":
            self.reason("eval")
            self.nested(" ".join(argv[1:]))
        elif name == "alias":
            for definition in argv[1:]:
                if "=" in definition:
                    self.nested(definition.partition("=")[2])
        elif name == "trap":
            handler = next((a for a in argv[1:] if not a.startswith("-")), None)
            if handler is not None and len(argv) > 2:
                self.reason("trap handler")
                self.nested(handler)
        elif name in _WRAPPERS:
            inner = _unwrap(name, argv[1:])
            if inner:
                self.hidden.append(_render(inner))
                self.reveal(inner, depth + 1)
        elif name == "find":
            i = 0
            while i < len(argv):
                if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                    end = next(
                        (k for k in range(i + 1, len(argv)) if argv[k] in (";", "+")), len(argv)
                    )
                    inner = argv[i + 1 : end]
                    if inner:
                        self.hidden.append(_render(inner))
                        self.reveal(inner, depth + 1)
                    i = end
                i += 1

    def nested(self, script: str) -> None:
        if self.depth >= _MAX_DEPTH:
            self.reason("nesting too deep")
            return
        sub = _analyse(script, self.depth + 1)
        for why in sub.reasons:
            self.reason(why)
        self.hidden.extend(sub.commands)
        self.hidden.extend(sub.hidden)
        self.names.update(w[0] for w in sub.words if w)

    def read_only_argv(self, words: Sequence[_Word], depth: int) -> bool:
        name = words[0].static
        if name is None or depth > _MAX_DEPTH:
            return False
        args = [w.static for w in words[1:]]
        check = _READ_ONLY.get(name)
        if check is not None:
            return check(args)
        if name not in _READ_WRAPPERS or any(a is None for a in args):
            return False
        known = [a for a in args if a is not None]
        if name == "env":
            if any(a.startswith(("-S", "--split-string")) for a in known):
                return False
            names = [a.split("=", 1)[0] for a in known if _ASSIGNMENT.match(a)]
            if not all(_safe_env_name(n) for n in names):
                return False
        inner = _unwrap(name, known)
        if inner is None:
            return True
        self.names.add(inner[0])
        return self.read_only_argv([_Word(value=a, raw=a) for a in inner], depth + 1)


_HANDLERS: dict[str, _Handler] = {
    "command": _Walker.on_command,
    "variable_assignment": _Walker.on_assignments,
    "variable_assignments": _Walker.on_assignments,
    "declaration_command": _Walker.on_declaration,
    "unset_command": _Walker.on_declaration,
    "test_command": _Walker.on_test,
    "compound_statement": _Walker.on_compound,
    "command_substitution": _Walker.on_substitution,
    "process_substitution": _Walker.on_substitution,
    "subshell": _Walker.on_subshell,
    "file_redirect": _Walker.on_redirect,
    "herestring_redirect": _Walker.on_herestring,
    "heredoc_redirect": _Walker.on_heredoc,
    "expansion": _Walker.on_expansion,
    "subscript": _Walker.on_subscript,
    "arithmetic_expansion": _Walker.on_arithmetic,
    "c_style_for_statement": _Walker.on_c_for,
    "while_statement": _Walker.on_while,
    "for_statement": _Walker.on_for,
}


def _dq_unescape(m: re.Match[str]) -> str:
    return "" if m.group(1) == "\n" else m.group(1)
