"""The read-only list: commands that only read, each with a check of its flags.

A command line is read-only (safe to run concurrently, and allowed in plan mode) only when its
command is on this list and its arguments pass the command's check: options that write a file
(`sort -o`, `find -fprint`, `git log --output`), run a program (`rg --pre`, `rg -z`, `sort
--compress-program`, `git log --show-signature`) or never end (`tail -f`, `sleep infinity`)
are refused, and so is any argument whose value is not known (`$x` could smuggle in any flag).
A wrapper on the list (`timeout`, `env`, `nice`...) is read-only exactly when it understands
every option given (`time -o FILE` writes FILE) and the command it runs is read-only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from ._shell_sed import sed_prints_only
from ._shell_wrappers import MAX_DEPTH, READ_WRAPPERS, unwrap

__all__ = ["READ_ONLY_COMMANDS", "read_only_argv", "safe_env_name"]

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


def safe_env_name(name: str) -> bool:
    """May a command be prefixed with this variable (`NAME=x cmd`) and stay read-only?"""
    return _UNSAFE_ENV.fullmatch(name.split("[", 1)[0]) is None


def read_only_argv(argv: Sequence[str | None], names: set[str], depth: int = 0) -> bool:
    """Is the command `argv` read-only? None stands for a word whose value is not known.

    The name of each command run behind a read-only wrapper is added to `names`.
    """
    name = argv[0]
    if name is None or depth > MAX_DEPTH:
        return False
    args = list(argv[1:])
    check = _READ_ONLY.get(name)
    if check is not None:
        return check(args)
    if name not in READ_WRAPPERS or any(a is None for a in args):
        return False
    known = [a for a in args if a is not None]
    inner = unwrap(name, known)
    # An option it does not understand may take a value (`time -o FILE`) or run something.
    if not inner.certain or inner.script is not None:
        return False
    if name == "env" and (
        inner.options.given or not all(_safe_assignment(a) for a in inner.assignments)
    ):
        # `-i`, `-u NAME`, `-C DIR`, `-S` change where and with what the command runs (they
        # can drop the variables that keep git from running a repository's programs).
        return False
    if name == "time" and any(o != "-p" for o, *_ in inner.options.given):
        return False  # `-o FILE` is GNU time's (`\time`, `command time`): it writes FILE
    if not inner.argv:
        return True
    names.add(inner.argv[0])
    return read_only_argv(inner.argv, names, depth + 1)


def _safe_assignment(word: str) -> bool:
    return safe_env_name(word.partition("=")[0])


# -- the checks ----------------------------------------------------------------------------


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


def _finite(args: list[str]) -> bool:
    # `sleep infinity` and `seq inf` never end.
    return not any("inf" in a.lower() for a in args)


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


# -- git -----------------------------------------------------------------------------------

_GIT_GLOBAL_OK = frozenset(
    "--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs"
    " --icase-pathspecs --no-replace-objects --version".split()
)
_GIT_READ = frozenset(
    "status log diff show blame annotate rev-parse ls-files ls-tree grep describe shortlog"
    " rev-list cat-file show-ref merge-base for-each-ref diff-tree diff-files diff-index"
    " count-objects whatchanged name-rev check-ignore check-attr version".split()
)
# Options of read sub-commands that write a file or run a program (`--show-signature` and
# the `%G` formats run gpg).
_GIT_BAD_LONG = (
    "output",
    "ext-diff",
    "open-files-in-pager",
    "exec",
    "show-signature",
    # Into submodules, whose config (filters, external diffs) the git guard does not read.
    "submodule",
    "recurse-submodules",
)
_GIT_SIGNATURE = re.compile(r"%G|%\(signature")


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
    if any(_long_hit(a, ("ignore-submodules",)) and not a.endswith("=all") for a in rest):
        return False  # the guard's diff.ignoreSubmodules=all is what keeps submodules out
    if any(_GIT_SIGNATURE.search(a) for a in rest):
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
        " dirname realpath readlink cut tr diff cmp comm nl tac rev uname whoami id printenv"
        " cd nproc groups".split(),
        _any,
    ),
    "printf": _printf,
    "test": _static(_test),
    "[": _static(_test),
    "tail": _static(_tail),
    "uniq": _static(_uniq),
    "date": _static(_date),
    # `-T DIR` writes temporary files there; a compress program is run.
    "sort": _none_of(
        "oT", ("output", "compress-program", "temporary-directory"), takes_value="kSt"
    ),
    # `-z` runs decompressors (gzip, xz...) found on PATH; `-C` writes a magic file.
    "file": _none_of("CzZ", ("compile", "uncompress", "uncompress-noreport"), "mfFeP"),
    "tree": _none_of("oR", ("output",), takes_value="LPIHT"),
    "jq": _none_of("fL", ("from-file", "library-path")),
    # `--pre` and `--hostname-bin` run a program, `-z` decompressors found on PATH.
    "rg": _none_of(
        "z", ("pre", "pre-glob", "hostname-bin", "search-zip"), takes_value="ABCEMdefgjmrtT"
    ),
    "sleep": _static(_finite),
    "seq": _static(_finite),
    "find": _static(_find),
    "sed": _static(sed_prints_only),
    "git": _static(_git),
}
"""Commands that only read, each with a check of its arguments."""
READ_ONLY_COMMANDS = frozenset(_READ_ONLY)
"""The names on the read-only list (wrappers, `READ_WRAPPERS`, are read-only by what they run)."""
