"""Differential tests of the shell parser: its word values against bash, its verdicts against reality.

* Word values: shell words built from quoting constructs (single and double quotes,
  backslashes, `$'...'` escapes, backslash-newline) are read by `_shell_words` and by bash;
  wherever the parser says a value is static, bash must produce exactly that value.
* Read-only verdicts: lines built from a grammar of bash constructs (read-only commands with
  safe and dangerous options, wrappers, lists, pipes, redirections, expansions hiding
  `touch CANARY`, arithmetic on array subscripts...) that `parse_command` calls read-only are
  run for real, under strace, in a sandbox that CAN write a throwaway workspace: they must
  write nothing there, execute nothing off the read-only list, run no canary program planted on
  PATH, and end.
* Rules against reality: lines that spell a canary `rm` in many ways are run; every one that
  really ran `rm` must be refused by a `run_shell(rm:*)` deny rule.

Examples are derandomized and bounded; `HANDRAIL_SHELL_FUZZ_EXAMPLES=5000` runs a longer fuzz
(see bench/README.md, "Shell parser fuzz").
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail import PermissionMode, RunCommand, ToolKind
from handrail.builtin._run_shell import RunShell, RunShellArgs, _Options
from handrail.permissions import Decision, Policy, parse_command
from handrail.permissions._shell_readonly import READ_ONLY_COMMANDS
from handrail.permissions._shell_walk import bash_tree
from handrail.permissions._shell_words import group_words
from handrail.permissions._shell_wrappers import READ_WRAPPERS
from handrail.sandbox import sandbox_support
from handrail.sandbox._os_confinement import Confinement
from handrail.sandbox._shell_sandbox import command_env

BASH = "/usr/bin/bash"
STRACE = "/usr/bin/strace"
EXAMPLES = int(os.environ.get("HANDRAIL_SHELL_FUZZ_EXAMPLES", "0") or 0)
"""Set to run a longer fuzz; 0 keeps each test's own bounded default."""

SUPPORT = sandbox_support()
needs_sandbox = pytest.mark.skipif(
    not SUPPORT.available or not os.path.exists(STRACE) or not os.path.exists(BASH),
    reason=f"needs an OS sandbox, {STRACE} and {BASH} ({SUPPORT.reason or 'sandbox ok'})",
)


def _examples(default: int) -> int:
    return EXAMPLES or default


# -- words: _shell_words against bash --------------------------------------------------------

_BARE = st.sampled_from([*"aZ09-_./:=@%+,^!#~\r\v\f\x01", "x", "rm", "ls", "\u00a0"])
"""Characters bash leaves as they are in an unquoted word (`#` and `~` only mid-word; bash
reads a carriage return, vertical tab or form feed as part of a word, tree-sitter as a space)."""
_ESCAPABLE = st.sampled_from([*" \t;&|<>()$`\"'\\*?[]{}#~!=,abnt0x", "\u00e9"])
_SQ_CHARS = st.sampled_from([*'ab $`\\"*?;&|#~{},\t', "\n", "\u00e9", "\\n"])
_DQ_PIECES = st.sampled_from(
    [*"a '*?~#;!$\t\n\u00e9", "{a,b}", "\\a", "\\$", "\\`", '\\"', "\\\\", "\\\n", "\\n"]
)
_ANSI_PIECES = st.sampled_from(
    [
        *["a", " ", '"', "$x", "`", "\\n", "\\t", "\\\\", "\\'", '\\"', "\\?", "\\a", "\\b"],
        *["\\e", "\\E", "\\f", "\\r", "\\v", "\\x41", "\\x4", "\\x4g", "\\xc3\\xa9", "\\xff"],
        *["\\101", "\\7", "\\0101", "\\u263a", "\\u00e9x", "\\U0001F600", "\\cA", "\\c?"],
        *["\\q", "\\x", "\\c\\\\x"],
    ]
)


@st.composite
def _piece(draw: st.DrawFn, first: bool) -> str:
    kind = draw(st.sampled_from(["bare", "escape", "single", "double", "ansi", "continue"]))
    if kind == "bare":
        text = "".join(draw(st.lists(_BARE, min_size=1, max_size=4)))
        # `#` starts a comment and `~` a home directory only at the start of a word.
        return text.lstrip("#~") or "a" if first else text
    if kind == "escape":
        return "\\" + draw(_ESCAPABLE)
    if kind == "single":
        return "'" + "".join(draw(st.lists(_SQ_CHARS, max_size=4))).replace("'", "") + "'"
    if kind == "double":
        return '"' + "".join(draw(st.lists(_DQ_PIECES, max_size=4))) + '"'
    if kind == "ansi":
        return "$'" + "".join(draw(st.lists(_ANSI_PIECES, max_size=4))) + "'"
    return "a\\\nb"  # a backslash-newline inside a word joins its two halves


@st.composite
def shell_words(draw: st.DrawFn) -> str:
    """One shell word: adjacent pieces of quoting and escaping constructs."""
    count = draw(st.integers(min_value=1, max_value=4))
    return "".join(draw(_piece(first=i == 0)) for i in range(count))


def parser_values(word: str) -> list[str] | None:
    """The argv entries the parser reads from `word` (None unless every one is static)."""
    src, root = bash_tree(f": {word}".encode())
    if root.has_error or root.named_child_count != 1 or root.named_children[0].type != "command":
        return None
    command = root.named_children[0]
    nodes = [
        c for i, c in enumerate(command.children) if command.field_name_for_child(i) == "argument"
    ]
    words = group_words(src, nodes)
    values = [w.static for w in words]
    if not values or any(v is None for v in values):
        return None
    return [v for v in values if v is not None]


def bash_values(words: list[str]) -> list[list[str]]:
    """What bash passes a command for each word (one bash run for all of them)."""
    script = 'w() { printf \'%s\\0\' "$#" "$@"; }\n' + "".join(f"w {w}\n" for w in words)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "HOME": "/home/h"}
    out = subprocess.run(
        [BASH, "-c", script], capture_output=True, env=env, timeout=30, check=True
    ).stdout
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    found: list[list[str]] = []
    i = 0
    while i < len(fields) - 1:
        n = int(fields[i])
        found.append(fields[i + 1 : i + 1 + n])
        i += 1 + n
    return found


@pytest.mark.skipif(not os.path.exists(BASH), reason=f"needs {BASH}")
@settings(
    derandomize=True,
    max_examples=_examples(300),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(words=st.lists(shell_words(), min_size=1, max_size=40))
def test_static_word_values_are_what_bash_passes(words: list[str]) -> None:
    got = bash_values(words)
    assert len(got) == len(words), f"bash read {len(got)} commands from {len(words)} words"
    for word, actual in zip(words, got, strict=True):
        expected = parser_values(word)
        if expected is not None:
            assert expected == actual, f"word {word!r}: parser says {expected!r}, bash {actual!r}"


# -- lines: read-only verdicts against reality ----------------------------------------------

CANARY = "touch CANARY"
CANARY_PROGRAMS = (
    "touch rm mv cp mkdir python3 perl gzip gunzip xz bzip2 zstd lz4 gpg less more vi vim nano"
    " ssh curl wget make fsmonitor textconv clean smudge extdiff pager"
).split()
"""Programs shadowed on PATH (and named in the repository's config) by a script that leaves a
marker: none of them is read-only, so a read-only line must never start one."""
ALLOWED_EXECS = frozenset({"bash", "sh", "strace", *READ_ONLY_COMMANDS, *READ_WRAPPERS})
WRITE_CALLS = frozenset(
    "creat unlink unlinkat rename renameat renameat2 mkdir mkdirat rmdir link linkat symlink"
    " symlinkat truncate chmod fchmodat".split()
)
TRACE_CALLS = ",".join(["execve", "openat", *sorted(WRITE_CALLS)])
_WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")
_SINK_PATHS = ("/dev/null", "/dev/zero", "/dev/full", "/dev/stdout", "/dev/stderr", "/dev/fd/")


def _pick(*options: str) -> st.SearchStrategy[str]:
    return st.sampled_from(options)


_SUB = _pick(f"$({CANARY})", f"`{CANARY}`")
_PAYLOAD = "v='a[$(touch CANARY)]'; "
"""A variable whose value runs `touch CANARY` wherever bash evaluates it as arithmetic."""
_FILE = _pick("a.txt", "b.txt", "'a b.txt'", "*.txt", "sub", "data.json", "a.gz", ".", "-")


@st.composite
def _expansion(draw: st.DrawFn) -> str:
    """A word with an expansion that runs `touch CANARY` (directly or through $v)."""
    sub = draw(_SUB)
    return draw(
        _pick(
            f"${{x:-{sub}}}",
            f'"${{x:-{sub}}}"',
            f"${{x#{sub}}}",
            f"${{x%%{sub}}}",
            f"${{x/{sub}/b}}",
            f"${{x:+{sub}}}",
            f"${{x-{sub}}}",
            f"${{x:-${{y:-{sub}}}}}",
            f'"${{x:-"${{y:-{sub}}}"}}"',
            f"${{x:=a{sub}}}",
            "${!v}",
            "${!v:-x}",
            "${!v[@]}",
            "${v@P}",
            "${PWD:v}",
            "${PWD:1:v}",
            "${PWD:$v:1}",
            "${arr[v]}",
            "${arr[$v]}",
            '"${arr[v]}"',
            "$((v))",
            "$((1+v))",
            "$[v]",
            "$((arr[1]))",
            "${#arr[v]}",
            "${x:-$v}",
            "$v",
            '"$v"',
        )
    )


@st.composite
def _read_command(draw: st.DrawFn) -> str:
    """A command on the read-only list, with safe or dangerous options."""
    f = draw(_FILE)
    return draw(
        _pick(
            f"ls -la {f}",
            "ls --color=never -R sub",
            f"cat {f}",
            "head -n 1 a.txt",
            "wc -l a.txt",
            "grep -rn hello .",
            "grep -f a.txt b.txt",
            f"sort {f}",
            "sort -o out a.txt",
            "sort -so out a.txt",
            "sort --output=out a.txt",
            "sort --outp=out a.txt",
            "sort -T sub a.txt",
            "sort --temporary-directory=sub a.txt",
            "sort --compress-program=gzip a.txt",
            "sort --compress-prog=touch -S 1 a.txt",
            "uniq a.txt",
            "uniq a.txt out",
            "uniq -f 1 a.txt out",
            "tail -n 1 a.txt",
            "tail -f a.txt",
            "tail -5f a.txt",
            "tail --fol a.txt",
            "date +%s",
            "date -f a.txt",
            "date -s 2001-01-01",
            "date 0101010101",
            "find . -name '*.txt'",
            "find . -fprint out",
            "find . -fprint0 out",
            "find . -fls out",
            "find . -fprintf out %p",
            "find . -delete",
            f"find . -exec {CANARY} ';'",
            "find sub -execdir touch CANARY +",
            "sed -n p a.txt",
            "sed -n 'w out' a.txt",
            "sed -n '1e touch CANARY' a.txt",
            "sed -n 's/a/b/w out' a.txt",
            "sed -i s/a/b/ a.txt",
            "sed -n -i p a.txt",
            "jq . data.json",
            "jq -n --rawfile a a.txt '$a'",
            "jq -n 'input' data.json",
            "rg hello",
            "rg -z hello",
            "rg --search-zip hello",
            "rg --pre touch hello",
            "rg --pre=gzip hello",
            "rg --hostname-bin=touch hello",
            "file a.txt",
            "file -z a.gz",
            "file --uncompress a.gz",
            "file -C -m sub/magic",
            "tree -o out",
            "diff a.txt b.txt",
            "diff --to-file=b.txt a.txt",
            "cmp a.txt b.txt",
            "comm a.txt b.txt",
            "cut -c1 a.txt",
            "tr a b",
            "nl a.txt",
            "tac a.txt",
            "rev a.txt",
            "seq 3",
            "stat a.txt",
            "du -s .",
            "df .",
            "basename a/b",
            "dirname a/b",
            "readlink -f a.txt",
            "realpath a.txt",
            "which ls",
            "type ls",
            "uname -a",
            "printenv PATH",
            "id",
            "pwd",
            "true",
            "echo hi",
            "printf '%s' x",
            "printf -v y x",
            "printf -v 'arr[v]' x",
            "test -f a.txt",
            "test -v 'arr[$(touch CANARY)]'",
            "[ -v 'arr[v]' ]",
            "sleep 0",
            "cd sub",
            "git status",
            "git status --short",
            "git diff",
            "git diff --stat",
            "git log --oneline",
            "git log -p",
            "git log --output=out",
            "git log --outp=out",
            "git diff --output=out",
            "git diff --ext-diff",
            "git log --show-signature",
            "git log --format=%G?",
            "git show HEAD",
            "git blame a.txt",
            "git grep hello",
            "git grep -O hello",
            "git grep --open-files-in-pager=touch hello",
            "git ls-files",
            "git rev-parse HEAD",
            "git branch",
            "git branch newb",
            "git tag newt",
            "git tag -l",
            "git config --get user.name",
            "git config user.name x",
            "git config --list",
            "git stash list",
            "git -c core.pager=touch log",
            "git -c alias.x=!touch x",
            "git --no-pager log -1",
            "git -P diff",
            "git cat-file -p HEAD",
            "git cat-file --textconv HEAD:a.txt",
            "git cat-file --filters HEAD:a.txt",
            "git diff --textconv a.txt",
            "git check-attr -a a.txt",
            "git describe --always --dirty",
            "git -c alias.st=status st",
            "git stash show -p",
            "git reflog",
            "git worktree list",
            "git remote -v",
            "git remote show origin",
            "git for-each-ref --format='%(signature)'",
            "git log --pretty=format:%GS",
            "git shortlog -sn HEAD",
            "git rev-list --all",
            "git name-rev HEAD",
            "git count-objects -v",
            "git diff --no-index a.txt b.txt",
            "git diff --output-indicator-new=x",
            "sleep infinity",
            "seq inf",
            "date -d @0",
            "du --files0-from=a.txt",
            "wc --files0-from=a.txt",
            "tail -c +1 a.txt",
            "head -c 3 a.txt",
            "grep -r --include='*.txt' hello .",
            "cat -A a.txt",
            "realpath -e a.txt",
            "ls --hyperlink=always",
            "stat --printf='%n' a.txt",
            "uniq --group a.txt out",
            "uniq - out",
            "sort -m a.txt b.txt -o out",
            "sort a.txt --output out",
        )
    )


@st.composite
def _wrapped(draw: st.DrawFn) -> str:
    """A read-only command, maybe behind a wrapper with (possibly unknown) options."""
    inner = draw(_read_command())
    wrapper = draw(
        _pick(
            "",
            "",
            "timeout 5 ",
            "timeout -s KILL 5 ",
            "timeout -k 1 5 ",
            "timeout --kill-after=1 5 ",
            "timeout --foo 5 ",
            "timeout --preserve-status 5 ",
            "nice ",
            "nice -n 5 ",
            "nice --adjustment=5 ",
            "nice -5 ",
            "env ",
            "env A=1 ",
            "env -i ",
            "env -u HOME ",
            "env -C sub ",
            f"env -S '{CANARY}' ",
            f"env --split-string='{CANARY}' ",
            "command ",
            "command -p ",
            "command -v ",
            "time ",
            "time -p ",
            "time -o out ",
            "time --output=out ",
            "time -a -o out ",
            "command time -o out ",
            "command time -f %e -o out ",
            "command time --output=out ",
            "\\time -o out ",
            "'time' --output=out ",
            "env time -a -o out ",
            "builtin ",
            "xargs ",
            "xargs -0 ",
            "nohup ",
            "stdbuf -o0 ",
        )
    )
    return wrapper + inner


@st.composite
def _trick(draw: st.DrawFn) -> str:
    """Spellings tree-sitter and bash read differently, each hiding `touch CANARY`."""
    return draw(
        _pick(
            f"ls \r#; {CANARY}",
            f"ls \x0b#; {CANARY}",
            f"echo \\ #; {CANARY}",
            f"echo $'\\\\'; {CANARY}; echo '",
            f'echo "$\\\n({CANARY})"',
            f"echo $\\\n({CANARY})",
            f"echo `\\\n{CANARY}`",
            f"cat <<EOF\n$\\\n({CANARY})\nEOF",
            f"cat <<EOF\n${{x:-`{CANARY}`}}\nEOF",
            f"echo ${{x:-\\\n`{CANARY}`}}",
            f"echo ''\\ ;{CANARY}",
            f"echo a\\\n;{CANARY}",
            f"ls # \\\n{CANARY}",
            f"echo '\\\n'; {CANARY}",
            f"echo \"${{x:-'`{CANARY}`'}}\"",
            f"echo ${{x:-'`{CANARY}`'}}",
        )
    )


@st.composite
def _spelled(draw: st.DrawFn) -> str:
    """A command word spelled with quotes and escapes (the same command for bash)."""
    name = draw(_pick("ls", "cat", "touch"))
    spelled = draw(
        _pick(name, f"'{name}'", f'"{name}"', f"\\{name}", f"{name[0]}''{name[1:]}", f"$'{name}'")
    )
    return f"{spelled} a.txt"


@st.composite
def _arith_command(draw: st.DrawFn) -> str:
    """A command that evaluates arithmetic (and with it, array subscripts in $v)."""
    return draw(
        _pick(
            "[[ v -eq 1 ]]",
            "[[ 1 -lt v ]]",
            "[[ $v -eq 1 ]]",
            '[[ "$v" -ge 0 ]]',
            "[[ -v arr[v] ]]",
            "[[ -v 'arr[v]' ]]",
            "(( v ))",
            "let v",
            "let 'x = v'",
            "declare -i z=v",
            "declare -i z; z=v",
            "local z=v",
            "typeset -i z=v",
            "read 'arr[v]' < a.txt",
            "read -a 'arr[v]' < a.txt",
            "mapfile -t arr < a.txt",
            "unset 'arr[v]'",
            "arr[v]=1",
            "arr=([v]=1)",
            "declare arr[v]=1",
            "for ((i=v; i<1; i++)); do :; done",
            "test -v 'arr[v]'",
            "printf -v 'arr[v]' x",
            "getopts a 'arr[v]'",
            "wait -p 'arr[v]'",
            "export 'arr[v]'=1",
        )
    )


@st.composite
def _simple(draw: st.DrawFn) -> str:
    kind = draw(
        _pick(*["read"] * 5, "spelled", "expansion", "expansion", "arith", "assign", "trick")
    )
    if kind == "read":
        command = draw(_wrapped())
    elif kind == "spelled":
        command = draw(_spelled())
    elif kind == "expansion":
        command = f"{draw(_pick('echo', 'ls', 'cat', 'printf %s'))} {draw(_expansion())}"
    elif kind == "arith":
        command = draw(_arith_command())
    elif kind == "trick":
        return draw(_trick())
    else:
        command = draw(_pick("x=1", "x=$PWD", "A=1 ls", "HOME=sub ls", "BASH_ENV=a.txt ls"))
    redirect = draw(
        _pick(
            *[""] * 8,
            " > /dev/null",
            " 2>&1",
            " 2>/dev/null",
            " < a.txt",
            " > out",
            " >> out",
            " &> out",
            " >| out",
            " <> out",
            " <<< hi",
            " >& out",
            " 3> out",
        )
    )
    return command + redirect


@st.composite
def _statement(draw: st.DrawFn) -> str:
    kind = draw(_pick(*["simple"] * 8, "group", "subshell", "not", "for", "if", "heredoc", "bg"))
    simple = draw(_simple())
    if kind == "group":
        return f"{{ {simple}; }}"
    if kind == "subshell":
        return f"( {simple} )"
    if kind == "not":
        return f"! {simple}"
    if kind == "for":
        return f"for f in a.txt b.txt; do {simple}; done"
    if kind == "if":
        return f"if {simple}; then {draw(_simple())}; fi"
    if kind == "heredoc":
        body = draw(
            _pick(
                f"${{x:-`{CANARY}`}}", "$[v]", "$((v))", "${!v}", f"`{CANARY}`", "${PWD:v}", "plain"
            )
        )
        quote = draw(_pick("EOF", "'EOF'"))
        return f"cat <<{quote}\n{body}\nEOF"
    if kind == "bg":
        return f"{simple} &"
    return simple


@st.composite
def shell_lines(draw: st.DrawFn) -> str:
    """A command line: statements joined by lists and pipes, maybe after payload variables."""
    count = draw(st.sampled_from([1, 1, 1, 2, 2, 3]))
    line = draw(_statement())
    for _ in range(count - 1):
        line += draw(_pick(" && ", " || ", "; ", " | ", " |& ")) + draw(_statement())
    prefix = draw(_pick("", _PAYLOAD, _PAYLOAD + "arr=(1 2); ", "arr=(1 2); "))
    return prefix + line


@dataclass
class Sandbox:
    """A throwaway workspace (files and a git repository) and what watches a command in it."""

    base: Path
    template: Path
    canaries: Path
    path: str

    def fresh(self) -> tuple[Path, Path]:
        """A new copy of the workspace and a new $TMPDIR."""
        run = Path(tempfile.mkdtemp(dir=self.base, prefix="run-"))
        ws, tmp = run / "ws", run / "tmp"
        shutil.copytree(self.template, ws, symlinks=True)
        tmp.mkdir()
        return ws, tmp


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)


def _build_workspace(base: Path, canaries: Path) -> Path:
    ws = base / "template"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("hello\nworld\n")
    (ws / "b.txt").write_text("hello\nthere\n")
    (ws / "a b.txt").write_text("spaced\n")
    (ws / "sub" / "c.txt").write_text("c\n")
    (ws / "data.json").write_text('{"a": [1, 2]}\n')
    (ws / "a.gz").write_bytes(gzip.compress(b"hello\n"))
    (ws / ".gitattributes").write_text("*.txt diff=canary filter=canary\n")
    _git(ws, "init", "-q")
    _git(ws, "add", ".")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init")
    # Keys that run programs: a guard that fails lets a read-only git line start a canary.
    for key, program in [
        ("core.fsmonitor", "fsmonitor"),
        ("core.pager", "pager"),
        ("diff.external", "extdiff"),
        ("diff.canary.textconv", "textconv"),
        ("filter.canary.clean", "clean"),
        ("filter.canary.smudge", "smudge"),
        ("gpg.program", "gpg"),
        ("user.name", "t"),
        ("user.email", "t@example.com"),
    ]:
        value = program if key.startswith("user.") else str(canaries / program)
        _git(ws, "config", key, value)
    (ws / "a.txt").write_text("hello\nchanged\n")  # a diff to show, a file to clean
    return ws


@contextlib.contextmanager
def make_sandbox() -> Iterator[Sandbox]:
    """The workspace template, canary programs and PATH, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="shell-diff-"))
    try:
        canaries = base / "canary-bin"
        canaries.mkdir()
        for name in CANARY_PROGRAMS:
            script = canaries / name
            # Markers in $TMPDIR and in the folder it runs in (a workspace copy, mostly).
            script.write_text(
                f'#!/bin/sh\nprintf \'%s\\n\' "$0 $*" >> "$TMPDIR/CANARY-HIT" 2>/dev/null\n'
                f'printf \'%s\\n\' "$0" > "$PWD/CANARY-HIT-{name}" 2>/dev/null\nexit 0\n'
            )
            script.chmod(0o755)
        dirs = [d for d in os.environ.get("PATH", "").split(":") if d and not d.endswith("shims")]
        # The interpreter's own bin first: a tool installed there (rg) is not a version shim.
        path = ":".join([str(canaries), os.path.dirname(sys.executable), *dirs])
        yield Sandbox(base, _build_workspace(base, canaries), canaries, path)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with make_sandbox() as made:
        yield made


def workspace_state(root: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every entry under `root`: mode, size, mtime and a hash of its bytes."""
    found: dict[str, tuple[int, int, int, str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(folder, name)
            st_ = p.lstat()
            digest = (
                hashlib.sha256(p.read_bytes()).hexdigest()
                if p.is_file() and not p.is_symlink()
                else ""
            )
            found[str(p.relative_to(root))] = (st_.st_mode, st_.st_size, st_.st_mtime_ns, digest)
    return found


_CALL = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)")
_UNFINISHED = re.compile(r"^(\d+)\s+(\w+)\((.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(-?\d+|\?)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def syscalls(trace: str) -> Iterator[tuple[str, str, int]]:
    """(syscall, arguments, result) of each call in an `strace -f` log, split calls joined."""
    pending: dict[str, tuple[str, str]] = {}
    for line in trace.splitlines():
        if m := _UNFINISHED.match(line):
            pending[m.group(1)] = (m.group(2), m.group(3))
        elif m := _RESUMED.match(line):
            name, args = pending.pop(m.group(1), (m.group(2), ""))
            yield name, args + m.group(3), int(m.group(4)) if m.group(4) != "?" else -1
        elif m := _CALL.match(line):
            yield m.group(2), m.group(3), int(m.group(4)) if m.group(4) != "?" else -1


def violations(trace: str, tmp: Path) -> list[str]:
    """Successful writes outside $TMPDIR and programs run that are not read-only."""
    found: list[str] = []
    for name, args, result in syscalls(trace):
        paths = [p.encode().decode("unicode_escape") for p in _STRING.findall(args)]
        if name == "execve":
            program = os.path.basename(paths[0]) if paths else "?"
            if result == 0 and program not in ALLOWED_EXECS:
                found.append(f"ran {paths[0] if paths else args}")
            continue
        writes = name in WRITE_CALLS or (name == "openat" and _WRITE_FLAGS.search(args))
        if not writes or result < 0:
            continue
        for p in (
            paths[:2]
            if name in ("rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat")
            else paths[:1]
        ):
            if not (p.startswith(str(tmp) + "/") or p == str(tmp) or p.startswith(_SINK_PATHS)):
                found.append(f"{name}({p!r}) succeeded")
    return found


@dataclass
class Outcome:
    """What running a line did."""

    timed_out: bool
    changed: list[str]
    problems: list[str]
    canary_hits: list[str]
    output: str


def run_shell_env(line: str, ws: Path, tmp: Path) -> dict[str, str]:
    """The environment run_shell gives `line` (git guarded when it runs unasked)."""
    tool = RunShell()
    unasked = parse_command(line).read_only
    guard_git = unasked or tool.read_only(RunShellArgs(command=line))
    return command_env(tool._env(_Options(tool._base, {})), str(tmp), line, ws, guard_git)


def run_traced(box: Sandbox, line: str) -> Outcome:
    """Run `line` as run_shell would (its environment and sandbox), under strace."""
    ws, tmp = box.fresh()
    trace = tmp / ".trace"
    wrapper = tmp.parent / "traced-bash"
    wrapper.write_text(
        f"#!/bin/sh\nexec {STRACE} -f -qq -s 4096 -e trace={TRACE_CALLS} "
        f'-o {shlex.quote(str(trace))} {BASH} "$@"\n'
    )
    wrapper.chmod(0o755)
    env = run_shell_env(line, ws, tmp)
    env["PATH"] = box.path
    before = workspace_state(ws)
    timed_out = False
    with Confinement(write_roots=[ws], temp_dir=tmp) as conf:
        proc = subprocess.Popen(
            conf.argv(str(wrapper), line),
            cwd=ws,
            env=env,
            preexec_fn=conf.setup,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()  # the namespace's PID 1 follows its supervisor, and the rest with it
            out, _ = proc.communicate()
    after = workspace_state(ws)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    text = trace.read_text(errors="replace") if trace.exists() else ""
    hits = sorted(p.name for p in [*tmp.glob("CANARY-HIT*"), *ws.rglob("CANARY-HIT*")])
    shutil.rmtree(ws.parent, ignore_errors=True)
    return Outcome(
        timed_out, changed, violations(text, tmp), hits, out.decode(errors="replace")[-600:]
    )


@needs_sandbox
@settings(
    derandomize=True,
    max_examples=_examples(800),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(line=shell_lines())
def test_a_line_judged_read_only_writes_nothing_and_runs_nothing_else(
    box: Sandbox, line: str
) -> None:
    if not parse_command(line).read_only:
        return
    got = run_traced(box, line)
    assert not got.timed_out, f"judged read-only but never ended: {line!r}"
    assert not got.changed, f"judged read-only but changed {got.changed}: {line!r}\n{got.output}"
    assert not got.canary_hits, f"judged read-only but ran {got.canary_hits}: {line!r}"
    assert not got.problems, f"judged read-only but {got.problems}: {line!r}\n{got.output}"


# -- rules against reality ----------------------------------------------------------------

_RM_SPELLINGS = _pick(
    "rm",
    "/bin/rm",
    "\\rm",
    "r''m",
    '"rm"',
    "$'\\x72m'",
    "$'rm'",
    "r\\m",
    "'r'm",
    "$c",
    "${c}",
    '"$c"',
    "${c:-rm}",
    "$(echo rm)",
    "`echo rm`",
    "{rm,x}",
    "r?",
    "/bin/r[m]",
    "${c%x}",
    "${c#x}",
    "$c$d",
    "$d$c",
    "command rm",
    "builtin rm",
    "nice -n 5 rm",
    "time -p rm",
    "timeout 5 rm",
    "env rm",
    "env -i rm",
    "env -u X rm",
    "env A=1 rm",
    "exec rm",
    "nohup rm",
    "command -p rm",
    "sudo rm",
    "stdbuf -o0 rm",
    "setsid rm",
    "nice --adjustment=1 rm",
    "timeout -k 1 5 rm",
    "timeout --foreground 5 rm",
    "env -S rm",
    "env --split-string=rm",
    "env - rm",
    "coproc rm",
    "flock /tmp/lock rm",
    "chroot / rm",
    "strace -o /dev/null rm",
    "\\command rm",
    "'exec' rm",
)


_NOISE = st.sampled_from(
    [*" \t\\'\"`$#;&|(){}[]<>!~*?=,.:-_abrm0\n\r", "$'", '$"', "${", "$(", "<<", "\\\n", "(("]
)
"""Bits of shell syntax, in any order: what tree-sitter and bash may end differently."""


@st.composite
def rm_lines(draw: st.DrawFn) -> str:
    """A line that may run the canary `rm` through one of many spellings.

    Some put a word of odd quoting before `rm`: where tree-sitter and bash end that word
    differently, one of them sees `rm` as an argument or a comment and the other runs it.
    """
    if draw(st.integers(0, 3)) == 0:
        word = draw(st.one_of(shell_words(), st.lists(_NOISE, max_size=6).map("".join)))
        sep = draw(_pick(" ", " ; ", "\n", " && ", " # x\n", " | ", ""))
        return f"echo {word}{sep}rm a.txt"
    head = draw(_RM_SPELLINGS)
    setup = draw(_pick("c=rm; ", "c=rm d=; ", "c=rmx; ", "d=; c=rm; ", "", "set -- rm; "))
    form = draw(
        _pick(
            f"{setup}{head} a.txt",
            f"{setup}ls | {head} a.txt",
            f"{setup}true && {head} a.txt",
            f"{setup}echo a.txt | xargs {head}",
            f"{setup}echo a.txt | xargs -0 {head}",
            f"{setup}find . -name a.txt -exec {head} {{}} ';'",
            f"{setup}bash -c '{head} a.txt'",
            f"{setup}eval '{head} a.txt'",
            f'{setup}eval "$c a.txt"',
            f"{setup}echo ${{x:-`{head} a.txt`}}",
            f"{setup}echo ${{x#$({head} a.txt)}}",
            f"{setup}( {head} a.txt )",
            f"{setup}$@ a.txt",
            f'{setup}"$@" a.txt',
            f"{setup}echo {head} a.txt | bash",
            f"{setup}f() {{ {head} a.txt; }}; f",
            f"{setup}echo {head} a.txt | xargs sh -c",
            f"{setup}echo a.txt | xargs -I{{}} sh -c '{head} {{}}'",
            f"{setup}echo '{head} a.txt' | xargs -I% sh -c %",
            f"{setup}coproc N {{ {head} a.txt; }}; wait",
            f"{setup}echo `echo \\`{head} a.txt\\``",
            f"{setup}echo `echo \\$({head} a.txt)`",
            f"{setup}ls \r#; {head} a.txt",
            f"{setup}echo $'\\\\'; {head} a.txt; echo '",
            f'{setup}echo "$\\\n({head} a.txt)"',
            # mentions that run no rm: the runner must see them through
            f"{setup}echo {head} a.txt",
            f"{setup}printf '%s\\n' {head} | grep -c r",
        )
    )
    return form


DENY_RM = Policy(deny=["run_shell(rm:*)"])


def rm_decision(line: str) -> Decision:
    """What a policy with only `run_shell(rm:*)` denied decides for `line`, in bypass mode."""
    return DENY_RM.decide(
        names=("run_shell",),
        kind=ToolKind.EXECUTE,
        read_only=parse_command(line).read_only,
        requests=[RunCommand(command=line)],
        mode=PermissionMode.BYPASS,
        read_roots=(),
        write_roots=(),
    )


def ran_rm(got: Outcome) -> bool:
    """Did the line run `rm` (the canary, or the real one by its path)?"""
    return "CANARY-HIT-rm" in got.canary_hits or any(
        p.startswith("ran ") and os.path.basename(p[4:]) == "rm" for p in got.problems
    )


@needs_sandbox
@settings(
    derandomize=True,
    max_examples=_examples(300),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(line=rm_lines())
def test_every_line_that_runs_rm_is_refused_by_a_deny_rule_for_rm(box: Sandbox, line: str) -> None:
    decision = rm_decision(line)
    if decision.behavior == "deny":
        return  # refused: whether it would have run rm does not matter
    assert not ran_rm(run_traced(box, line)), (
        f"ran rm past `run_shell(rm:*)`: {line!r} ({decision.behavior}: {decision.reason})"
    )
