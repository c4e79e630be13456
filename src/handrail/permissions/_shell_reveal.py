"""What a simple command runs besides itself: wrappers, nested shells, `find -exec`, git.

`Revealer.reveal(argv, known, depth)` records, for deny and ask rules, the commands an argv
runs indirectly (`xargs rm`, `timeout 5 rm`, `bash -c 'rm x'`, `git -c core.pager='rm x'
log`), and marks the line unreadable (`Revealer.unreadable`) when what runs is decided by
something no rule can read: a command word that is not literal behind a wrapper, a script
read from a file or stdin, `eval` of a variable, a wrapper option it does not understand.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ._shell_builtins import builtin_hazards, shell_variable, shell_variable_reason
from ._shell_words import render
from ._shell_wrappers import (
    MAX_DEPTH,
    SHELLS,
    UNKNOWN_WRAPPERS,
    WRAPPERS,
    Options,
    shell_script,
    unwrap,
)

__all__ = ["BUDGET", "CODE_VARIABLES", "FILE_CODE_VARIABLES", "Revealer"]

CODE_VARIABLES = frozenset(
    "PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER BAT_PAGER EDITOR VISUAL GIT_EDITOR"
    " GIT_SEQUENCE_EDITOR SUDO_EDITOR FCEDIT GIT_SSH_COMMAND GIT_SSH GIT_ASKPASS SSH_ASKPASS"
    " SUDO_ASKPASS GIT_EXTERNAL_DIFF GIT_PROXY_COMMAND BROWSER LESSOPEN LESSCLOSE"
    " PROMPT_COMMAND".split()
)
"""Variables whose value is a command line some program runs (`GIT_PAGER='rm x' git log`)."""
FILE_CODE_VARIABLES = re.compile(
    r"BASH_ENV|ENV|LD_PRELOAD|LD_AUDIT|GIT_CONFIG\w*|GIT_EXEC_PATH|BASH_LOADABLES_PATH"
    r"|SHELLOPTS|BASHOPTS"
)
"""Variables that make a shell, git or the loader run code from elsewhere (`BASH_ENV=x.sh`,
`LD_PRELOAD=x.so`, `GIT_CONFIG_KEY_0=alias.x`): what runs is not in the line."""
_PROMPTS = frozenset({"PS0", "PS1", "PS2", "PS4"})
"""Prompt strings: `$(cmd)` in them runs (PS4 with `set -x`)."""
_SHELL_ONLY = frozenset({"--version", "--help"})
_GIT_CODE_KEY = re.compile(
    r"(?i)alias\..*|pager\..*|include.*|.*\.(pager|editor|sshcommand|fsmonitor|askpass"
    r"|textconv|command|clean|smudge|process|external|program|helper|uploadpack|receivepack"
    r"|packobjectshook|driver|cmd|difffilter|browser|gitproxy|hookspath|path)"
)
"""git config keys whose value is a program, a command line, an alias or a file of config."""
_GIT_RUNS = {
    # subcommand: options whose value is a shell command it runs
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "filter-branch": tuple(
        f"--{k}-filter" for k in "env tree index parent msg commit tag-name".split()
    ),
}
_MAX_SUFFIXES = 256
BUDGET = 4_000
"""Indirect commands and nested scripts a line may reveal in all (the suffixes of unknown
wrappers grow fast)."""


def _replacement(options: Options) -> str | None:
    """The string `xargs -I R` (or `-i`, `--replace`) replaces with its input, if any."""
    replace = options.value("-I", "-i", "--replace")
    if replace is None and options.has("-i", "--replace"):
        replace = "{}"
    return replace or None


def _completed_by_input(run: Sequence[str]) -> bool:
    """Would the words xargs appends from its input be a command or a script?

    As in `xargs env`, `xargs sh -c`, `xargs timeout 5`.
    """
    name = run[0].rpartition("/")[2]
    if name in SHELLS:
        found = shell_script(run[1:])
        return found is None or found[1] < 0
    if name in WRAPPERS or name in UNKNOWN_WRAPPERS:
        inner = unwrap(name, run[1:])
        return not inner.argv and inner.script is None
    return name in ("eval", "find")


class Revealer:
    """The part of the walk that looks behind wrappers; `Walker` provides the state."""

    names: set[str]
    hidden: list[str]
    budget: list[int]

    def reason(self, why: str) -> None:
        """Mark the line opaque (see `Walker.reason`)."""
        raise NotImplementedError

    def unreadable(self, why: str) -> None:
        """Mark the line as running what no rule can read (see `Walker.unreadable`)."""
        raise NotImplementedError

    def nested(self, script: str) -> None:
        """Walk a script the line runs (see `Walker.nested`)."""
        raise NotImplementedError

    def spend(self) -> bool:
        """Take one unit of the line's budget; False (and unreadable) once it is used up."""
        self.budget[0] -= 1
        if self.budget[0] < 0:
            self.unreadable("too many nested commands to follow")
            return False
        return True

    def reveal(self, argv: Sequence[str], known: Sequence[bool], depth: int) -> None:
        """Record the commands `argv` runs indirectly, for deny and ask rules.

        Args:
            argv: The words, as their values (or as written, when not static).
            known: For each word, whether its value is static.
            depth: How many wrappers `argv` is behind.
        """
        if not argv or (depth and not self.spend()):
            return
        name = argv[0].rpartition("/")[2]
        self.names.add(name)
        if name != argv[0] and name:
            self.hidden.append(render([name, *argv[1:]]))
        if depth > MAX_DEPTH:
            self.unreadable("nesting too deep")
            return
        if name in SHELLS:
            self.reveal_shell(name, argv, known)
        elif name in WRAPPERS or name in UNKNOWN_WRAPPERS:
            self.reveal_wrapper(name, argv, known, depth)
        elif name == "find":
            self.reveal_find(argv, known, depth)
        elif name == "git":
            self.reveal_git(argv, known)
        else:
            self.reveal_builtin(name, argv, known)

    def reveal_shell(self, name: str, argv: Sequence[str], known: Sequence[bool]) -> None:
        found = shell_script(argv[1:])
        if found is None:
            if not argv[1:] or not set(argv[1:]) <= _SHELL_ONLY:
                self.unreadable(f"{name} runs a script from a file or stdin")
            return
        script, at = found
        self.reason(f"nested shell ({name} -c)")
        if at >= 0 and not known[1 + at]:
            self.unreadable(f"{name} -c with a script that is not literal")
        else:
            self.nested(script)

    def reveal_wrapper(
        self, name: str, argv: Sequence[str], known: Sequence[bool], depth: int
    ) -> None:
        args = argv[1:]
        if name == "coproc" and args and shell_variable(args[0]):
            # `coproc NAME { ...; }` sets the array NAME to two file descriptors.
            self.unreadable(shell_variable_reason(args[0]))
        inner = unwrap(name, args)
        if not all(known[1 : 1 + inner.decided_by]):
            self.unreadable(f"{name} runs a command that is not literal")
        if not inner.certain:
            self.reveal_suffixes(argv, known, depth)
        if inner.script is not None:
            self.reason(f"nested shell ({name})")
            self.nested(inner.script)
        for assignment in inner.assignments:
            self.variable(*assignment.split("=", 1), known=True)
        run = list(inner.argv)
        if not run:
            return
        at = len(argv) - len(run)
        suffix = at > 0 and list(argv[at:]) == run
        run_known = list(known[at:]) if suffix else [True] * len(run)
        if name == "xargs":
            replace = _replacement(inner.options)
            if replace is not None:
                # Each `{}` becomes a line of input: what a word holding one runs is unknown.
                run_known = [k and replace not in w for w, k in zip(run, run_known, strict=True)]
            elif _completed_by_input(run):
                self.unreadable("xargs takes the command or script from its input")
            if not run_known[0]:
                self.unreadable("xargs builds the command name from its input")
        self.hidden.append(render(run))
        self.reveal(run, run_known, depth + 1)

    def reveal_suffixes(self, argv: Sequence[str], known: Sequence[bool], depth: int) -> None:
        """An option not understood: any later word may start the command that runs."""
        if len(argv) > _MAX_SUFFIXES:
            self.unreadable("too many words after an option it does not understand")
        for i in range(1, min(len(argv), _MAX_SUFFIXES)):
            word = argv[i]
            if known[i] and any(c in word for c in " \t\n;&|"):
                self.nested(word)  # a script given as one argument (`-c 'a; b'`)
            if not word.startswith("-") and self.spend():
                # A rule is a prefix: the first words of a suffix are all it can match.
                self.hidden.append(render(argv[i : i + _MAX_SUFFIXES]))
                self.reveal(argv[i:], known[i:], depth + 1)

    def reveal_find(self, argv: Sequence[str], known: Sequence[bool], depth: int) -> None:
        if not all(known):
            # One word could be `-exec`, `-delete` or the command itself.
            self.unreadable("find with an argument that is not literal")
        i = 0
        while i < len(argv):
            if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((k for k in range(i + 1, len(argv)) if argv[k] in (";", "+")), len(argv))
                run = list(argv[i + 1 : end])
                if run:
                    if "{}" in run[0]:
                        self.unreadable("find runs a command named by a file name")
                    # `{}` becomes a file name, which can be anything (`sh -c '{}'`).
                    run_known = [
                        k and "{}" not in w for w, k in zip(run, known[i + 1 : end], strict=True)
                    ]
                    self.hidden.append(render(run))
                    self.reveal(run, run_known, depth + 1)
                i = end
            i += 1

    def reveal_git(self, argv: Sequence[str], known: Sequence[bool]) -> None:
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            a = argv[i]
            value: str | None = None
            if a == "-c" and i + 1 < len(argv):
                i += 1
                value = argv[i]
            elif a.startswith("-c") and a != "-c":
                value = a[2:]
            elif a.startswith("--config-env"):
                self.unreadable("git --config-env takes config from a variable")
            elif a in ("-C", "--git-dir", "--work-tree", "--namespace", "--exec-path"):
                i += 1
            if value is not None:
                if not known[i]:
                    self.unreadable("git -c with a value that is not literal")
                else:
                    self.git_config(*value.partition("=")[::2])
            i += 1
        if i < len(argv) and not all(known[: i + 1]):
            self.unreadable("git with an option that is not literal")
        if i >= len(argv):
            return
        sub, rest = argv[i], list(argv[i + 1 :])
        if sub == "config":
            plain = [a for a in rest if not a.startswith("-")]
            if plain[:1] in (["set"], ["add"]):
                plain = plain[1:]  # `git config set KEY VALUE` (git 2.46)
            if len(plain) >= 2:
                self.git_config(plain[0], plain[1])
        elif sub == "submodule" and rest[:1] == ["foreach"]:
            self.reason("nested shell (git submodule foreach)")
            self.nested(" ".join(a for a in rest[1:] if not a.startswith("-")))
        elif sub == "bisect" and rest[:1] == ["run"]:
            self.hidden.append(render(rest[1:]))
        for k, a in enumerate(rest):
            for option in _GIT_RUNS.get(sub, ()):
                if a == option and k + 1 < len(rest):
                    self.nested(rest[k + 1])
                elif a.startswith(option + "="):
                    self.nested(a.partition("=")[2])

    def git_config(self, key: str, value: str) -> None:
        """A config value git may run: an alias, a program, a command line, a file."""
        if not _GIT_CODE_KEY.fullmatch(key):
            return
        low = key.lower()
        if low.startswith("include") or low.endswith((".hookspath", ".path")):
            self.unreadable(f"git config {key} loads code from a file")
        elif low.startswith("alias.") and not value.startswith("!"):
            try:
                self.hidden.append(render(["git", *shlex.split(value)]))
            except ValueError:
                self.unreadable(f"git alias {key} cannot be read")
        else:
            self.reason(f"git config {key} runs a command")
            self.nested(value.removeprefix("!"))

    def variable(self, name: str, value: str, *, known: bool) -> None:
        """An assignment for the environment of what runs next."""
        if FILE_CODE_VARIABLES.fullmatch(name):
            self.unreadable(f"{name} makes programs run code the line does not show")
        elif shell_variable(name) and name not in _PROMPTS and name != "PROMPT_COMMAND":
            # The prompts and PROMPT_COMMAND only run their value, which is read below.
            self.unreadable(shell_variable_reason(name))
        elif name in _PROMPTS:
            if not known or "$" in value or "`" in value:
                self.unreadable(f"{name} with an expansion in it")
        elif name in CODE_VARIABLES:
            if not known:
                self.unreadable(f"{name} holds a command that is not literal")
            elif value:
                self.nested(value)

    def reveal_builtin(self, name: str, argv: Sequence[str], known: Sequence[bool]) -> None:
        args, args_known = argv[1:], known[1:]
        if name in ("source", "."):
            self.unreadable(f"{name} runs a script from a file")
        elif name == "eval":
            self.reason("eval")
            if not all(args_known):
                self.unreadable("eval of words that are not literal")
            self.nested(" ".join(args))
        elif name == "alias":
            for definition, is_known in zip(args, args_known, strict=True):
                if not is_known:
                    self.unreadable("alias that is not literal")
                elif "=" in definition:
                    self.nested(definition.partition("=")[2])
        elif name == "trap":
            self.reveal_trap(args, args_known)
        for why in builtin_hazards(name, args, args_known):
            self.unreadable(why)

    def reveal_trap(self, args: Sequence[str], known: Sequence[bool]) -> None:
        """`trap HANDLER SIGNAL...`: the handler is a script the shell runs."""
        at = 0
        while at < len(args) and len(args[at]) > 1 and args[at].startswith("-"):
            if args[at] == "--":
                at += 1
                break
            if set(args[at][1:]) & set("lpP"):
                return  # lists handlers
            at += 1
        if len(args) - at < 2 or args[at] == "-":
            return  # one signal (or `-`): the handlers are reset
        self.reason("trap handler")
        if not known[at]:
            self.unreadable("trap handler that is not literal")
        self.nested(args[at])
