"""Commands that run other commands: wrappers (`xargs`, `timeout`, `env`, `sudo`...) and shells.

`unwrap` says which command a wrapper runs, read with the wrapper's own option grammar (GNU
getopt rules: clustered short options, values attached or not, unambiguous abbreviations of
long options), and whether every option was understood: an option it does not know, or a
wrapper whose grammar it does not hold, leaves the command uncertain. Then deny and ask rules
are shown every suffix of the arguments (one of them is the command run) and the line is not
read-only. `shell_script` says which script `bash -c` runs.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "ASSIGNMENT",
    "MAX_DEPTH",
    "READ_WRAPPERS",
    "SHELLS",
    "UNKNOWN_WRAPPERS",
    "WRAPPERS",
    "Grammar",
    "Options",
    "Unwrapped",
    "parse_options",
    "shell_script",
    "unwrap",
]

MAX_DEPTH = 8
"""How deep `bash -c "bash -c '...'"` and wrapper chains are followed."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "su", "rbash"})
"""Shells (and `su`) whose `-c SCRIPT` runs a script given on the command line."""
READ_WRAPPERS = frozenset({"timeout", "nice", "env", "command", "time", "builtin"})
"""Wrappers that only run another command: read-only exactly when that command is."""
UNKNOWN_WRAPPERS = frozenset(
    "coproc chrt numactl unshare nsenter setpriv prlimit fakeroot strace ltrace runuser firejail"
    " systemd-run unbuffer catchsegv valgrind parallel entr caffeinate proxychains"
    " proxychains4 torsocks tsocks dbus-run-session xvfb-run faketime setarch linux32 linux64"
    " bwrap proot sg script gdb rr perf cgexec ip".split()
)
"""Programs that run a command given in their arguments, with a grammar `unwrap` does not
hold: every suffix of their arguments counts as the command for deny and ask rules."""
WRAPPERS = READ_WRAPPERS | set(
    "xargs sudo doas exec nohup setsid stdbuf ionice watch busybox chroot flock taskset".split()
)
"""Every wrapper whose grammar `unwrap` knows: the command behind it is shown to deny and ask
rules."""
ASSIGNMENT = re.compile(r"[^=]+=")
"""A `NAME=` prefix: an environment assignment in `env` and `sudo` argument lists. Any word
with a `=` (not first) is one, whatever its name: `env 'BASH_FUNC_ls%%=() { ...; }' bash`
hands bash a function."""


@dataclass(frozen=True, slots=True)
class Grammar:
    """A program's options, in GNU getopt terms."""

    flags: str = ""
    """Short options without a value."""
    valued: str = ""
    """Short options with a value, attached (`-k5`) or in the next argument (`-k 5`)."""
    optional: str = ""
    """Short options whose value can only be attached (`xargs -i{}`)."""
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()
    """Long options whose value can only be given with `=`."""
    operands: int = 0
    """Operands before the command (`timeout DURATION`, `chroot NEWROOT`, `flock FILE`)."""
    numeric: bool = False
    """`-5` is an option (`nice -5`)."""

    def long_name(self, given: str) -> str | None:
        """The long option `given` names: itself, or the one it unambiguously abbreviates."""
        names = self.long_flags | self.long_valued | self.long_optional
        if given in names:
            return given
        hits = [n for n in names if n.startswith(given)]
        return hits[0] if given and len(hits) == 1 else None


def _g(
    flags: str = "",
    valued: str = "",
    optional: str = "",
    long_flags: str = "",
    long_valued: str = "",
    long_optional: str = "",
    operands: int = 0,
    numeric: bool = False,
) -> Grammar:
    return Grammar(
        flags,
        valued,
        optional,
        frozenset(long_flags.split()),
        frozenset(long_valued.split()),
        frozenset(long_optional.split()),
        operands,
        numeric,
    )


_GRAMMARS: dict[str, Grammar] = {
    "timeout": _g(
        "v",
        "ks",
        "",
        "preserve-status foreground verbose help version",
        "kill-after signal",
        operands=1,
    ),
    "nice": _g("", "n", "", "help version", "adjustment", numeric=True),
    "env": _g(
        "i0v",
        "uCS",
        "",
        "ignore-environment null debug list-signal-handling help version",
        "unset chdir split-string",
        "block-signal default-signal ignore-signal",
    ),
    "command": _g("pvV"),
    "builtin": _g(),
    # bash's `time` keyword takes `-p`; GNU time (`\time`, `command time`) the rest.
    "time": _g("apqvV", "fo", "", "append portability quiet verbose help version", "format output"),
    "xargs": _g(
        "0oprtx",
        "adEILnPs",
        "eil",
        "null no-run-if-empty interactive open-tty show-limits verbose exit help version",
        "arg-file delimiter max-args max-procs max-chars process-slot-var",
        "eof replace max-lines",
    ),
    "sudo": _g(
        "AbBEeHiKklnPSsVv",
        "CghpRrTtUuD",
        "",
        "askpass background bell preserve-env edit set-home login remove-timestamp"
        " reset-timestamp list non-interactive preserve-groups stdin shell version validate"
        " help",
        "close-from group host prompt chroot role type command-timeout other-user user chdir",
    ),
    "doas": _g("Lns", "uC"),
    "exec": _g("cl", "a"),
    "nohup": _g("", "", "", "help version"),
    "setsid": _g("cfw", "", "", "ctty fork wait help version"),
    "stdbuf": _g("", "ioe", "", "help version", "input output error"),
    "ionice": _g("t", "cn", "", "ignore help version", "class classdata"),
    "watch": _g(
        "bcegptwx",
        "dnq",
        "",
        "beep color no-color errexit chgexit no-title no-wrap exec precise help version",
        "interval equexit",
        "differences",
    ),
    "busybox": _g(),
    "chroot": _g("", "", "", "skip-chdir help version", "userspec groups", operands=1),
    "flock": _g(
        "sexunoFhV",
        "wE",
        "",
        "shared exclusive unlock nonblock no-fork close verbose help version",
        "timeout conflict-exit-code",
        operands=1,
    ),
    "taskset": _g("acphV", "", "", "all-tasks cpu-list pid help version", operands=1),
}


@dataclass(frozen=True, slots=True)
class Options:
    """A wrapper's arguments read with its grammar."""

    given: tuple[tuple[str, str | None, int, int], ...] = ()
    """Each option: `-x` or `--long` (unabbreviated), its value or None, and the indexes of
    the arguments that hold the option and its value."""
    end: int = 0
    """Index of the first argument after the options."""
    certain: bool = True
    """Every option was understood."""

    def has(self, *names: str) -> bool:
        """Was any of these options given?"""
        return any(o in names for o, *_ in self.given)

    def value(self, *names: str) -> str | None:
        """The value of the last of these options given, if any."""
        found = [v for o, v, *_ in self.given if o in names]
        return found[-1] if found else None


def parse_options(args: Sequence[str], grammar: Grammar) -> Options:
    """Read the options at the start of `args` (they end at `--` or the first operand)."""
    given: list[tuple[str, str | None, int, int]] = []
    certain = True
    i = 0
    while i < len(args):
        a, at = args[i], i
        if a == "--":
            i += 1
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            full = grammar.long_name(name)
            i += 1
            if full is None or (eq and full in grammar.long_flags):
                certain = False
            elif full in grammar.long_valued and not eq:
                certain = certain and i < len(args)
                value, i = (args[i] if i < len(args) else ""), i + 1
            has_value = bool(eq) or full in grammar.long_valued
            given.append((f"--{full or name}", value if has_value else None, at, i - 1))
            continue
        if not a.startswith("-") or a == "-":
            break
        i += 1
        if grammar.numeric and a[1:].isdigit():
            given.append(("-n", a[1:], at, at))
            continue
        for j, c in enumerate(a[1:], 1):
            if c in grammar.valued:
                value = a[j + 1 :]
                if not value:
                    certain = certain and i < len(args)
                    value, i = (args[i] if i < len(args) else ""), i + 1
                given.append((f"-{c}", value, at, i - 1))
                break
            if c in grammar.optional:
                given.append((f"-{c}", a[j + 1 :] or None, at, at))
                break
            given.append((f"-{c}", None, at, at))
            certain = certain and c in grammar.flags
    return Options(tuple(given), i, certain)


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """The command a wrapper runs, as far as its arguments tell."""

    argv: tuple[str, ...] = ()
    """The command run (empty: none)."""
    decided_by: int = 0
    """How many of the wrapper's leading arguments decide which command runs (its options,
    operands and the command's name): a word among them that is not literal hides the
    command."""
    certain: bool = True
    """Every option was understood: `argv` is the command, not a guess."""
    options: Options = field(default_factory=Options)
    script: str | None = None
    """A shell script the wrapper runs as well or instead (`watch 'a; b'`, `flock -c`)."""
    assignments: tuple[str, ...] = ()
    """`NAME=VALUE` words given to the command's environment (`env`, `sudo`)."""


def unwrap(name: str, args: Sequence[str], depth: int = 0) -> Unwrapped:
    """The command a wrapper runs (`argv` empty when it runs none)."""
    grammar = _GRAMMARS.get(name)
    if grammar is None:
        return Unwrapped(decided_by=len(args), certain=False)
    opts = parse_options(args, grammar)
    every = len(args)
    if name == "env":
        return _env(args, opts, depth)
    if name == "command" and opts.has("-v", "-V"):
        return Unwrapped(certain=opts.certain, options=opts)  # says what a name is
    if name in ("sudo", "doas") and opts.has(
        "-e", "--edit", "-l", "--list", "-v", "--validate", "-k", "-K"
    ):
        return Unwrapped(decided_by=every, certain=False, options=opts)
    if (name == "ionice" and opts.has("-p", "-P", "-u")) or (
        name == "taskset" and opts.has("-p", "--pid")
    ):
        return Unwrapped(decided_by=every, certain=opts.certain, options=opts)  # a process
    i = opts.end + grammar.operands
    script = None
    if name == "flock" and args[i : i + 1] in (["-c"], ["--command"]):
        # `flock FILE -c COMMAND` runs COMMAND through `sh -c`.
        return Unwrapped(
            decided_by=every, certain=opts.certain, options=opts, script=" ".join(args[i + 1 :])
        )
    assignments: list[str] = []
    if name in ("sudo", "doas"):
        while i < len(args) and ASSIGNMENT.match(args[i]):
            assignments.append(args[i])
            i += 1
        if opts.has("-s", "--shell", "-i", "--login") and args[i:]:
            script = " ".join(args[i:])  # run by the target user's shell
    if name == "watch" and not opts.has("-x", "--exec") and args[i:]:
        # watch hands its arguments, joined by spaces, to `sh -c`.
        return Unwrapped(
            decided_by=every, certain=opts.certain, options=opts, script=" ".join(args[i:])
        )
    argv = tuple(args[i:])
    if name == "xargs" and not argv:
        argv = ("echo",)  # the default command
    if name == "chroot" and not argv:
        return Unwrapped(decided_by=every, certain=False, options=opts)  # the root's shell
    return Unwrapped(
        argv,
        min(i + 1, every),
        opts.certain and i <= every,
        opts,
        script=script,
        assignments=tuple(assignments),
    )


def _env(args: Sequence[str], opts: Options, depth: int) -> Unwrapped:
    split = next(
        ((v, at, to) for o, v, at, to in opts.given if o in ("-S", "--split-string")), None
    )
    if split is not None:
        # `env -S 'ARGS'` splits its value into arguments (options, assignments and the
        # command among them) and reads them, then the rest, as if given that way.
        text, at, to = split[0] or "", split[1], split[2]
        # Its escapes and `${VAR}` are not shlex's, and `-iS` hides a flag: not certain then.
        certain = opts.certain and depth < MAX_DEPTH and not any(c in text for c in "\\$")
        certain = certain and args[at].startswith(("-S", "--"))
        try:
            words = shlex.split(text)
        except ValueError:
            words, certain = [text], False
        inner = unwrap("env", [*args[:at], *words, *args[to + 1 :]], depth + 1)
        return Unwrapped(
            inner.argv,
            len(args),
            certain and inner.certain,
            opts,
            assignments=inner.assignments,
        )
    i = opts.end
    while i < len(args) and args[i] == "-":
        i += 1  # `env -` is `env -i`
    certain = opts.certain and i == opts.end
    assignments: list[str] = []
    while i < len(args) and ASSIGNMENT.match(args[i]):
        assignments.append(args[i])
        i += 1
    argv = tuple(args[i:])
    return Unwrapped(argv, min(i + 1, len(args)), certain, opts, assignments=tuple(assignments))


def shell_script(args: Sequence[str]) -> tuple[str, int] | None:
    """The script of `bash -c SCRIPT` and its index in `args` (None: a file or stdin)."""
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
                return a.partition("=")[2], i
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
    return (args[i], i) if i < len(args) else ("", -1)
