"""Shell command lines: simple commands, opacity and read-only-ness, via `parse_command`."""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor

import pytest

from handrail.permissions import ShellCommand, is_read_only_command, parse_command

# (line, simple commands, opaque, read-only)
TABLE: list[tuple[str, tuple[str, ...], bool, bool]] = [
    # -- plain commands, quoting, normalisation
    ("ls -la", ("ls -la",), False, True),
    ("  ls    -la  ", ("ls -la",), False, True),
    ("ls 'src'", ("ls src",), False, True),
    ('ls "src" a\\ b', ("ls src 'a b'",), False, True),
    ("cat \"a\"b'c'd", ("cat abcd",), False, True),
    ('echo "it\'s"', ("echo 'it'\"'\"'s'",), False, True),
    ('echo ""', ("echo ''",), False, True),
    ("echo $'\\x41\\tb'", ("echo 'A\tb'",), False, True),
    ("echo café 日本", ("echo café 日本",), False, True),
    ("echo a\\\nb", ("echo ab",), False, True),
    ("cat ~/notes.txt", ("cat ~/notes.txt",), False, True),
    ("cat *.py", ("cat *.py",), False, True),
    ('echo "$HOME"', ('echo "$HOME"',), False, True),
    ("", (), False, True),
    ("# only a comment", (), False, True),
    ("ls # a comment && rm -rf x", ("ls",), False, True),
    # -- operators inside quotes are text, not operators
    ('echo "a && b"', ("echo 'a && b'",), False, True),
    ("echo 'x; rm -rf /'", ("echo 'x; rm -rf /'",), False, True),
    ("echo a\\;b \\&\\& c\\|d", ("echo 'a;b' '&&' 'c|d'",), False, True),
    ('grep -n "a|b" f', ("grep -n 'a|b' f",), False, True),
    # -- lists, pipelines, background, newlines
    ("git status && git diff", ("git status", "git diff"), False, True),
    ("ls || pwd", ("ls", "pwd"), False, True),
    ("ls; pwd;", ("ls", "pwd"), False, True),
    ("ls\npwd\n", ("ls", "pwd"), False, True),
    ("ls -la | grep foo | wc -l", ("ls -la", "grep foo", "wc -l"), False, True),
    ("ls |& cat", ("ls", "cat"), False, True),
    ("ls & pwd", ("ls", "pwd"), False, False),
    ("sleep 100 &", ("sleep 100",), False, False),
    ("npm test && rm -rf x", ("npm test", "rm -rf x"), False, False),
    ("npm test | sh", ("npm test", "sh"), True, False),  # sh runs a script from stdin
    ("! git diff --quiet", ("git diff --quiet",), False, True),
    # -- compound statements and functions
    ("if true; then ls; else pwd; fi", ("true", "ls", "pwd"), False, True),
    ("for f in a b; do cat $f; done", ("cat $f",), False, True),
    ("for f in a; do rm $f; done", ("rm $f",), False, False),
    ("while true; do ls; done", ("true", "ls"), False, False),
    ("case $x in a) ls;; *) rm y;; esac", ("ls", "rm y"), False, False),
    ("{ ls; pwd; }", ("ls", "pwd"), False, True),
    ("f() { rm -rf x; }; f", ("rm -rf x", "f"), False, False),
    ("function g { ls; }", ("ls",), False, True),
    ("[[ -f x ]] && cat x", ("[[ -f x ]]", "cat x"), False, True),
    # -- assignments
    ("FOO=1 ls", ("FOO=1 ls",), False, True),
    ('FOO="a b" ls', ("FOO='a b' ls",), False, True),
    ("PATH=/tmp/x ls", ("PATH=/tmp/x ls",), True, False),
    ("GIT_DIR=/x git status", ("GIT_DIR=/x git status",), False, False),
    ("x=1; echo $x", ("x=1", "echo $x"), False, True),
    ("export A=1 && ls", ("export A=1", "ls"), False, True),
    ("declare -i n=1", ("declare -i n=1",), True, False),  # later values are arithmetic
    # -- redirections
    ("npm test 2>&1", ("npm test",), False, False),
    ("ls >/dev/null 2>&1", ("ls",), False, True),
    ("ls 2>/dev/null >&2", ("ls",), False, True),
    ("cat < in.txt", ("cat",), False, True),
    ("npm test > out", ("npm test",), True, False),
    ("cat a >> b", ("cat a",), True, False),
    ("echo hi > /tmp/x", ("echo hi",), True, False),
    ("ls &> log", ("ls",), True, False),
    ("> empty", (), True, False),
    ("{ ls; } > out", ("ls",), True, False),
    ("cat < /dev/tcp/example.com/80", ("cat",), True, False),
    # -- here-documents and here-strings
    ("cat <<EOF\nhello $USER\nEOF", ("cat",), False, True),
    ("cat <<'EOF'\n$(rm x) `rm y`\nEOF", ("cat",), False, True),
    ("cat <<EOF\n$(rm x)\nEOF", ("cat",), True, False),
    ("cat <<EOF\n`rm x`\nEOF", ("cat",), True, False),
    ("cat <<EOF | sh\nrm -rf x\nEOF", ("cat", "sh"), True, False),
    ("cat <<EOF > out\nx\nEOF", ("cat",), True, False),
    ('grep foo <<< "text"', ("grep foo",), True, False),
    # -- what a prefix rule cannot see through
    ("echo $(date)", ("echo $(date)",), True, False),
    ("ls `pwd`", ("ls `pwd`",), True, False),
    ("$(npm test)", ("$(npm test)",), True, False),
    ("diff <(ls a) <(ls b)", ("diff <(ls a) <(ls b)",), True, False),
    ("(cd x && ls)", ("cd x", "ls"), True, False),
    ('eval "rm x"', ("eval 'rm x'",), True, False),
    ('bash -c "npm test"', ("bash -c 'npm test'",), True, False),
    ("sh -lc 'ls'", ("sh -lc ls",), True, False),
    ("$CMD -rf x", ("$CMD -rf x",), True, False),
    ("./scr* x", ("./scr* x",), True, False),
    ("echo ${x@P}", ("echo ${x@P}",), True, False),
    ("echo $((x + 1))", ("echo $((x + 1))",), True, False),
    ("echo $((1 + 2))", ("echo $((1 + 2))",), False, True),
    ("[[ $n -gt 1 ]]", ("[[ $n -gt 1 ]]",), True, False),
    ("printf -v 'a[$(rm y)]' x", ("printf -v 'a[$(rm y)]' x",), True, False),
    ('trap "rm x" EXIT', ("trap 'rm x' EXIT",), True, False),
    # -- parse errors
    ('echo "unterminated', ("echo",), True, False),
    ("ls &&", ("ls",), True, False),
    ("ls )", ("ls",), True, False),
    ("if true; then ls", ("true",), True, False),
    # -- the read-only list and its flag checks
    ("head -n 5 a.txt", ("head -n 5 a.txt",), False, True),
    ("tail -n 20 log", ("tail -n 20 log",), False, True),
    ("tail -f log", ("tail -f log",), False, False),
    ("tail -5f log", ("tail -5f log",), False, False),
    ("grep -rn TODO src/ | head -20", ("grep -rn TODO src/", "head -20"), False, True),
    ("rg -n foo src", ("rg -n foo src",), False, True),
    ("rg --pre cat foo", ("rg --pre cat foo",), False, False),
    ('find . -name "*.py" -type f', ("find . -name '*.py' -type f",), False, True),
    ("find . -name x -delete", ("find . -name x -delete",), False, False),
    ("find . -exec rm {} \\;", ("find . -exec rm '{}' ';'",), False, False),
    ("find . -fprint out", ("find . -fprint out",), False, False),
    ("find * -name x", ("find * -name x",), True, False),  # a file could be `-delete`
    ("git log --oneline -5", ("git log --oneline -5",), False, True),
    ("git --no-pager diff HEAD~1", ("git --no-pager diff HEAD~1",), False, True),
    ("git show HEAD@{1}", ("git show 'HEAD@{1}'",), False, True),
    ("git branch", ("git branch",), False, True),
    ("git branch -a -v", ("git branch -a -v",), False, True),
    ("git branch new-feature", ("git branch new-feature",), False, False),
    ("git branch -D old", ("git branch -D old",), False, False),
    ("git tag -l 'v*'", ("git tag -l 'v*'",), False, True),
    ("git tag v1.0", ("git tag v1.0",), False, False),
    ("git remote -v", ("git remote -v",), False, True),
    ("git remote add o url", ("git remote add o url",), False, False),
    ("git stash list", ("git stash list",), False, True),
    ("git stash", ("git stash",), False, False),
    ("git config --get user.name", ("git config --get user.name",), False, True),
    ("git config user.name me", ("git config user.name me",), False, False),
    ("git diff --output=patch", ("git diff --output=patch",), False, False),
    ("git log --outp=patch", ("git log --outp=patch",), False, False),
    ("git -c core.pager=sh log", ("git -c core.pager=sh log",), True, False),
    ("git -C other status", ("git -C other status",), False, False),
    ("cd sub && git status", ("cd sub", "git status"), False, False),
    ("cd src && ls", ("cd src", "ls"), False, True),
    ("git commit -m wip", ("git commit -m wip",), False, False),
    ("git push", ("git push",), False, False),
    ("sed -n '1,10p' f", ("sed -n 1,10p f",), False, True),
    ("sed -n '/a/,/b/p; 20q' f", ("sed -n '/a/,/b/p; 20q' f",), False, True),
    ("sed -n -e 's/a/b/gp' f", ("sed -n -e s/a/b/gp f",), False, True),
    ("sed 's/a/b/' f", ("sed s/a/b/ f",), False, False),
    ("sed -n -i 's/a/b/p' f", ("sed -n -i s/a/b/p f",), False, False),
    ("sed -n 's/a/b/w out' f", ("sed -n 's/a/b/w out' f",), False, False),
    ("sed -n '1e rm x' f", ("sed -n '1e rm x' f",), False, False),
    ("sort -u f", ("sort -u f",), False, True),
    ("sort -o out f", ("sort -o out f",), False, False),
    ("sort -rno out f", ("sort -rno out f",), False, False),
    ("sort --outp=x f", ("sort --outp=x f",), False, False),
    ("uniq -c f", ("uniq -c f",), False, True),
    ("uniq in out", ("uniq in out",), False, False),
    ("jq .name package.json", ("jq .name package.json",), False, True),
    ("jq -f prog.jq x", ("jq -f prog.jq x",), False, False),
    ("tree -L 2", ("tree -L 2",), False, True),
    ("tree -o out", ("tree -o out",), False, False),
    ("date +%s", ("date +%s",), False, True),
    ("date -s tomorrow", ("date -s tomorrow",), False, False),
    ("file -C -m x", ("file -C -m x",), False, False),
    ("wc -l $(git ls-files)", ("wc -l $(git ls-files)",), True, False),
    ("env", ("env",), False, True),
    ("printenv HOME", ("printenv HOME",), False, True),
    ("env X=1 ls", ("env X=1 ls",), False, True),
    ("env PATH=/x ls", ("env PATH=/x ls",), True, False),
    ("timeout 5 git status", ("timeout 5 git status",), False, True),
    ("nice -n 5 rm x", ("nice -n 5 rm x",), False, False),
    ("command -v python3", ("command -v python3",), False, True),
    ("which python3 && type ls", ("which python3", "type ls"), False, True),
    ("ls | xargs cat", ("ls", "xargs cat"), False, False),
    ("sudo ls", ("sudo ls",), False, False),
    ("exec ls", ("exec ls",), False, False),
    ("source .venv/bin/activate", ("source .venv/bin/activate",), True, False),
    (". ./env.sh", (". ./env.sh",), True, False),
    ('python -c "print(1)"', ("python -c 'print(1)'",), False, False),
    ("/bin/ls", ("/bin/ls",), False, False),
    ("pytest -q", ("pytest -q",), False, False),
    ("test -f x && cat x", ("test -f x", "cat x"), False, True),
    ("[ -v x ]", ("[ -v x ]",), False, True),
    ("test -v 'a[0]'", ("test -v 'a[0]'",), False, False),
    ('printf "%s\\n" "$x"', ("printf '%s\\n' \"$x\"",), False, True),
]


@pytest.mark.parametrize(
    ("line", "read_only"),
    [
        ("env git status", True),
        ("env FOO=1 git status", True),
        # Options that move the command or empty its environment (which would drop the
        # variables that keep git from running a repository's programs).
        ("env -C /elsewhere git diff", False),
        ("env -i git log -p", False),
        ("env -u GIT_CONFIG_COUNT git log -p", False),
        ("env --chdir=/x ls", False),
    ],
)
def test_env_is_read_only_only_without_options(line: str, read_only: bool) -> None:
    assert is_read_only_command(line) is read_only


@pytest.mark.parametrize(("line", "commands", "opaque", "read_only"), TABLE)
def test_table(line: str, commands: tuple[str, ...], opaque: bool, read_only: bool) -> None:
    parsed = parse_command(line)
    assert (parsed.commands, parsed.opaque, parsed.read_only) == (commands, opaque, read_only)
    assert is_read_only_command(line) is read_only
    assert len(parsed.words) == len(parsed.commands)
    assert bool(parsed.reasons) is parsed.opaque


def test_the_table_is_large_and_has_no_duplicates() -> None:
    lines = [row[0] for row in TABLE]
    assert len(lines) >= 60
    assert len(set(lines)) == len(lines)


def test_read_only_implies_not_opaque() -> None:
    for line, *_ in TABLE:
        parsed = parse_command(line)
        assert not (parsed.read_only and parsed.opaque), line


# -- words ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('git commit -m "fix: a && b"', (("git", "commit", "-m", "fix: a && b"),)),
        ("FOO=1 ls -la", (("ls", "-la"),)),
        ("echo 'a'\"b\"c", (("echo", "abc"),)),
        ("echo a\\ b", (("echo", "a b"),)),
        ('echo "a\\"b" "\\$x"', (("echo", 'a"b', "$x"),)),
        ("echo $HOME", (("echo", "$HOME"),)),
        ("r''m x", (("rm", "x"),)),
        ("ls | wc", (("ls",), ("wc",))),
    ],
)
def test_words_are_argv_after_quote_removal(line: str, words: tuple[tuple[str, ...]]) -> None:
    assert parse_command(line).words == words


def test_ansi_c_quoting_is_decoded() -> None:
    # `$'\x72m'` is `rm`: a rule must see the command that runs, not its spelling.
    assert parse_command("$'\\x72m' -rf /").commands == ("rm -rf /",)


# -- reasons -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("echo $(date)", "command substitution"),
        ("echo `date`", "command substitution"),
        ("diff <(ls a) b", "process substitution"),
        ("(ls)", "subshell"),
        ("eval ls", "eval"),
        ("bash -c ls", "nested shell (bash -c)"),
        ("sh -c ls", "nested shell (sh -c)"),
        ("npm test > out.txt", "output redirection to out.txt"),
        ("npm test >> 'my log'", "output redirection to 'my log'"),
        ("ls >| f", "output redirection to f"),
        ("ls &>> f", "output redirection to f"),
        ("ls >&f", "output redirection to f"),
        ("ls > $f", "output redirection to $f"),
        ('echo "unterminated', "parse error"),
        ("$cmd arg", "variable expansion in the command name"),
        ("grep x <<< y", "here-string"),
        ("cat < /dev/tcp/h/80", "network redirection"),
        ("echo ${x@P}", "prompt expansion (${x@P})"),
        ("echo ${a[$i]}", "arithmetic on a variable"),
        ("trap 'rm x' EXIT", "trap handler"),
    ],
)
def test_reasons(line: str, reason: str) -> None:
    parsed = parse_command(line)
    assert parsed.opaque
    assert reason in parsed.reasons


def test_reasons_are_listed_once_in_order() -> None:
    parsed = parse_command("echo $(a) $(b) > out; (ls)")
    assert parsed.reasons == ("command substitution", "output redirection to out", "subshell")


# -- commands run indirectly (seen by deny and ask rules) ----------------------------------


@pytest.mark.parametrize(
    ("line", "hidden"),
    [
        ("ls | xargs rm -f", "rm -f"),
        ("watch 'rm x'", "rm x"),
        ("flock lock -c 'rm x'", "rm x"),
        ("flock lock rm x", "rm x"),
        ("chroot / rm x", "rm x"),
        ("env -S '-i A=1 rm x'", "rm x"),
        ("timeout --foo 5 rm x", "rm x"),
        ("strace -o trace rm x", "rm x"),
        ("GIT_PAGER='rm x' git log", "rm x"),
        ("git -c core.pager='rm x' log", "rm x"),
        ("git -c alias.p=push p", "git push"),
        ("git -c alias.x='!rm y' x", "rm y"),
        ("git rebase -x 'rm y' HEAD~1", "rm y"),
        ("git submodule foreach 'rm y'", "rm y"),
        ("ls | xargs -n 1 -I{} rm {}", "rm '{}'"),
        ("timeout 5 rm x", "rm x"),
        ("timeout -s KILL 5 rm x", "rm x"),
        ("nice -n 10 rm x", "rm x"),
        ("env -i A=1 rm x", "rm x"),
        ("env -S 'rm x'", "rm x"),
        ("sudo -u root rm x", "rm x"),
        ("command rm x", "rm x"),
        ("exec rm x", "rm x"),
        ("nohup rm x", "rm x"),
        ("time rm x", "rm x"),
        ("FOO=1 rm x", "rm x"),
        ("/bin/rm x", "rm x"),
        ("find . -name '*.o' -exec rm {} +", "rm '{}'"),
        ("bash -c 'ls && rm x'", "rm x"),
        ("sh -c \"sh -c 'rm x'\"", "rm x"),
        ("eval 'rm x'", "rm x"),
        ("echo $(rm x)", "rm x"),
        ("cat <(rm x)", "rm x"),
        ("timeout 5 bash -c 'rm x'", "rm x"),
        ("xargs sh -c 'rm \"$1\"' _", 'rm "$1"'),
        ("trap 'rm x' EXIT", "rm x"),
        ("alias ll='rm -rf x'", "rm -rf x"),
    ],
)
def test_hidden_commands(line: str, hidden: str) -> None:
    parsed = parse_command(line)
    assert hidden in parsed.hidden
    assert hidden not in parsed.commands


# -- robustness ----------------------------------------------------------------------------


def test_ten_thousand_words() -> None:
    line = "echo " + " ".join(f"w{i}" for i in range(10_000))
    parsed = parse_command(line)
    assert len(parsed.words[0]) == 10_001
    assert parsed.read_only


def test_ten_thousand_commands_in_a_list() -> None:
    # Lists nest one level per operator: a recursive walk would exhaust Python's stack.
    parsed = parse_command(" && ".join(["ls"] * 10_000))
    assert parsed.commands == ("ls",) * 10_000
    assert parsed.read_only


def test_deeply_nested_substitutions() -> None:
    parsed = parse_command("echo " + "$(" * 3000 + "rm x" + ")" * 3000)
    assert parsed.opaque
    assert "rm x" in parsed.hidden


def test_deeply_nested_subshells_and_groups() -> None:
    subshells = parse_command("( " * 3000 + "rm x" + " )" * 3000)
    assert (subshells.commands, subshells.reasons) == (("rm x",), ("subshell",))
    groups = parse_command("{ " * 3000 + "ls; " + "}; " * 3000)
    assert (groups.commands, groups.opaque, groups.read_only) == (("ls",), False, True)
    arithmetic = parse_command("((" * 1500 + "x" + "))" * 1500)
    assert arithmetic.opaque
    assert not arithmetic.read_only


def test_deeply_nested_shells_stop_at_a_limit() -> None:
    line = "rm x"
    for _ in range(12):
        line = "bash -c " + shlex.quote(line)
    parsed = parse_command(line)
    assert parsed.opaque
    assert "nesting too deep" in parsed.reasons


def test_a_long_line_is_parsed_even_past_the_cache_limit() -> None:
    line = "ls " + "a" * 50_000 + " && rm x"
    parsed = parse_command(line)
    assert parsed.commands[1] == "rm x"
    assert not parsed.read_only


@pytest.mark.parametrize("line", ["ls\x00rm -rf /", "\x00", "echo a\x00b"])
def test_nul_bytes_are_opaque(line: str) -> None:
    parsed = parse_command(line)
    assert parsed.opaque
    assert "NUL byte" in parsed.reasons
    assert not parsed.read_only


def test_lone_surrogates_do_not_crash() -> None:
    parsed = parse_command("echo \ud800 && ls")
    assert parsed.commands[-1] == "ls"


@pytest.mark.parametrize(
    "line",
    ["'", '"', "`", "$(", "${", "((", "))", "<<", "<<EOF", "|", "&&", ";;", "\\", "$'\\", "{", "}"],
)
def test_fragments_never_raise_and_are_never_read_only(line: str) -> None:
    parsed = parse_command(line)
    assert isinstance(parsed, ShellCommand)
    assert not parsed.read_only


# -- cache and threads ---------------------------------------------------------------------


def test_results_are_cached() -> None:
    assert parse_command("git status && ls") is parse_command("git status && ls")


def test_parsing_from_many_threads_gives_the_same_results() -> None:
    # Fresh (uncached) lines, so the threads really parse at the same time.
    lines = [f"{row[0]} #{k}" for k in range(4) for row in TABLE]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(parse_command, lines))
    expected = [parse_command(line + " ") for line in lines]
    assert [(g.commands, g.opaque, g.read_only) for g in got] == [
        (e.commands, e.opaque, e.read_only) for e in expected
    ]


# -- failing closed: what the parser does not fully read ----------------------------------

UNREADABLE = [
    # substitutions tree-sitter leaves as plain text inside an expansion
    ("echo ${x:-`touch f`}", "an expansion the parser did not read"),
    ("echo ${x#$(touch f)}", "an expansion the parser did not read"),
    ("echo ${x%%`touch f`}", "an expansion the parser did not read"),
    ("echo \"${x:-'`touch f`'}\"", "an expansion the parser did not read"),
    ("echo ${x:-${y:-`touch f`}}", "an expansion the parser did not read"),
    ("cat <<EOF\n${x:-`touch f`}\nEOF", "an expansion the parser did not read"),
    ("cat <<EOF\nx $[v]\nEOF", "an expansion the parser did not read"),
    # indirect expansion: the value names a variable, `a[$(cmd)]` runs cmd
    ("echo ${!x}", "indirect expansion (${!name})"),
    ("echo ${!x[@]}", "indirect expansion (${!name})"),
    ("echo ${!prefix*}", "indirect expansion (${!name})"),
    ("echo ${!x:-y}", "indirect expansion (${!name})"),
    # every context that evaluates arithmetic, and with it array subscripts
    ("echo ${PWD:y}", "arithmetic on a variable"),
    ("echo ${PWD:1:y}", "arithmetic on a variable"),
    ("echo ${x[$i]}", "arithmetic on a variable"),
    ("echo ${x[i]}", "arithmetic on a variable"),
    ("echo $((y))", "arithmetic on a variable"),
    ("echo $[y + 1]", "arithmetic on a variable"),
    ("[[ a -eq b ]]", "arithmetic on a variable"),
    ('[[ "1" -eq 1 ]]', "arithmetic on a variable"),
    ("[[ -v a[i] ]]", "arithmetic on a variable"),
    ("(( y ))", "arithmetic on a variable"),
    ("for ((i = 0; i < 3; i++)); do :; done", "arithmetic on a variable"),
    ("let y", "arithmetic on a variable"),
    ("declare -i n=y", "arithmetic on a variable"),
    ("local -n ref=y", "arithmetic on a variable"),
    ("printf -v 'a[y]' x", "arithmetic on a variable"),
    ("test -v 'a[y]'", "arithmetic on a variable"),
    ("[ -v 'a[y]' ]", "arithmetic on a variable"),
    ("read -a 'a[y]'", "arithmetic on a variable"),
    ("mapfile -t 'a[y]'", "arithmetic on a variable"),
    ("unset 'a[y]'", "arithmetic on a variable"),
    ("a[y]=1", "arithmetic on a variable"),
    ("a=([y]=1)", "arithmetic on a variable"),
    ("echo ${x@P}", "prompt expansion (${x@P})"),
    # code no rule can read
    ("$c x", "variable expansion in the command name"),
    ("${c} x", "variable expansion in the command name"),
    ('"$c" x', "variable expansion in the command name"),
    ("$(echo rm) x", "command substitution in the command name"),
    ("`echo rm` x", "command substitution in the command name"),
    ("r? x", "glob in the command name"),
    ("/bin/r[m] x", "glob in the command name"),
    ('eval "$x"', "eval of words that are not literal"),
    ('bash -c "$x"', "bash -c with a script that is not literal"),
    ("echo rm x | bash", "bash runs a script from a file or stdin"),
    ("sh script.sh", "sh runs a script from a file or stdin"),
    ("source ./env.sh", "source runs a script from a file"),
    (". ./env.sh", ". runs a script from a file"),
    ("exec $c x", "exec runs a command that is not literal"),
    ("timeout 5 $c x", "timeout runs a command that is not literal"),
    ("nice $opts rm x", "nice runs a command that is not literal"),
    ("xargs -I{} {} < list", "xargs builds the command name from its input"),
    ("find . -exec {} ';'", "find runs a command named by a file name"),
    ("find $dir -name x", "find with an argument that is not literal"),
    ('trap "$x" EXIT', "trap handler that is not literal"),
    ('mapfile -C "rm x" -c 1 a < f', "mapfile -C runs a callback"),
    ("hash -p /bin/rm ls; ls x", "hash changes what a command name runs"),
    ("BASH_ENV=x.sh bash -c ls", "BASH_ENV makes programs run code the line does not show"),
    ("PS4='$(rm x)' bash -xc ls", "PS4 with an expansion in it"),
    ('GIT_PAGER="$p" git log', "GIT_PAGER holds a command that is not literal"),
    ("git -c alias.x=$v x", "git -c with a value that is not literal"),
    ("git --config-env=alias.x=V x", "git --config-env takes config from a variable"),
    # where tree-sitter and bash read a line differently
    ("echo $'\\\\'; rm x; echo '", "parse error"),
    ("{rm,x} y", "parse error"),
]


@pytest.mark.parametrize(("line", "reason"), UNREADABLE)
def test_what_the_parser_cannot_read_is_unreadable_opaque_and_not_read_only(
    line: str, reason: str
) -> None:
    parsed = parse_command(line)
    assert reason in parsed.dynamic_reasons, parsed.reasons
    assert parsed.dynamic and parsed.opaque and not parsed.read_only
    assert set(parsed.dynamic_reasons) <= set(parsed.reasons)


# -- bash's run-time tables: what a later word runs is decided when it runs ------------------

TABLES = [
    # the command table (`hash`) and the alias table, written as variables
    ("BASH_CMDS[1]=/bin/rm; 1 canary", "BASH_CMDS changes what later words run"),
    ("BASH_CMDS+=([0]=/bin/rm); 0 canary", "BASH_CMDS changes what later words run"),
    ("BASH_CMDS=([1]=/bin/rm)", "BASH_CMDS changes what later words run"),
    ("declare -A BASH_CMDS=([1]=/bin/rm)", "BASH_CMDS changes what later words run"),
    ("declare 'BASH_CMDS[1]=/bin/rm'", "BASH_CMDS changes what later words run"),
    ("declare BASH_CMDS", "BASH_CMDS changes what later words run"),
    ("local -A BASH_CMDS", "BASH_CMDS changes what later words run"),
    ("printf -v 'BASH_CMDS[1]' /bin/rm; 1 canary", "BASH_CMDS changes what later words run"),
    ("printf '-vBASH_CMDS[1]' /bin/rm", "BASH_CMDS changes what later words run"),
    ("read 'BASH_CMDS[x]' < f", "BASH_CMDS changes what later words run"),
    ("read -raBASH_CMDS < f", "BASH_CMDS changes what later words run"),
    ("read -r -a BASH_CMDS < f", "BASH_CMDS changes what later words run"),
    ("mapfile BASH_CMDS < f", "BASH_CMDS changes what later words run"),
    ("readarray -t BASH_ALIASES < f", "BASH_ALIASES changes what later words run"),
    ("getopts ab BASH_CMDS", "BASH_CMDS changes what later words run"),
    ("wait -p BASH_CMDS", "BASH_CMDS changes what later words run"),
    ("coproc BASH_CMDS { cat; }", "BASH_CMDS changes what later words run"),
    ("unset BASH_CMDS", "BASH_CMDS changes what later words run"),
    ("export BASH_ALIASES", "BASH_ALIASES changes what later words run"),
    ('BASH_ALIASES[1]=eval; 1 "rm canary"', "BASH_ALIASES changes what later words run"),
    (": ${BASH_CMDS[x]:=/bin/rm}", "BASH_CMDS changes what later words run"),
    ("builtin read BASH_CMDS < f", "BASH_CMDS changes what later words run"),
    ("command printf -v BASH_CMDS /bin/rm", "BASH_CMDS changes what later words run"),
    ("env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", "BASH_FUNC_ls%% changes what later words run"),
    # variables bash looks names up by, or reads lines with
    ("PATH=/tmp/evil ls", "PATH changes what later words run"),
    ('export PATH="$HOME/bin:$PATH"; ls', "PATH changes what later words run"),
    ("env PATH=/tmp ls", "PATH changes what later words run"),
    ("sudo PATH=/tmp ls", "PATH changes what later words run"),
    ("unset PATH", "PATH changes what later words run"),
    (": ${PATH:=/tmp}", "PATH changes what later words run"),
    ("for PATH in /tmp; do ls; done", "PATH changes what later words run"),
    ("select PATH in /tmp; do ls; done", "PATH changes what later words run"),
    ("read PATH < f; ls", "PATH changes what later words run"),
    ("EXECIGNORE='/usr/bin/*' ls", "EXECIGNORE changes what later words run"),
    ("CDPATH=/tmp cd x", "CDPATH changes what later words run"),
    ("GLOBIGNORE='*' ls", "GLOBIGNORE changes what later words run"),
    ("IFS=/; ls", "IFS changes what later words run"),
    ("local IFS=,", "IFS changes what later words run"),
    ("FUNCNAME=x", "FUNCNAME changes what later words run"),
    ("POSIXLY_CORRECT=1 ls", "POSIXLY_CORRECT changes what later words run"),
    ("HISTFILE=f", "HISTFILE changes what later words run"),
    ("declare PS4", "PS4 changes what later words run"),
    ("read PROMPT_COMMAND < f", "PROMPT_COMMAND changes what later words run"),
    ("SHELLOPTS=x ls", "SHELLOPTS makes programs run code the line does not show"),
    # aliases: once expanded, a later word is whatever the alias says
    ("shopt -s expand_aliases", "shopt -s expand_aliases changes how later words run"),
    ("shopt -qs expand_aliases", "shopt -s expand_aliases changes how later words run"),
    ("shopt -s nullglob expand_aliases", "shopt -s expand_aliases changes how later words run"),
    ("shopt -s $opt", "shopt with an option that is not literal"),
    ("alias e=eval", "alias changes what later words run"),
    ("alias t='timeout 9'", "alias changes what later words run"),
    ("alias g=git", "alias changes what later words run"),
    ("alias -p ll='ls -l'", "alias changes what later words run"),
    ("builtin alias e=eval", "alias changes what later words run"),
    # builtin options read as clusters, values attached or not
    ("hash -rp /bin/rm x; x canary", "hash changes what a command name runs"),
    ("hash -p/bin/rm x", "hash changes what a command name runs"),
    ("hash -tp /bin/rm x", "hash changes what a command name runs"),
    ("hash $opts x", "hash with an option that is not literal"),
    ('mapfile -tC "rm canary #" -c 1 arr < in', "mapfile -C runs a callback"),
    ('readarray -c1 -C"rm x" arr < in', "readarray -C runs a callback"),
    ("enable -nf lib.so x", "enable changes what a command name runs"),
    ("enable -f lib.so x", "enable changes what a command name runs"),
    ("enable -n echo", "enable changes what a command name runs"),
    ("enable x", "enable changes what a command name runs"),
    ("enable -d x", "enable changes what a command name runs"),
    ("compgen -C 'rm x' w", "compgen -C runs a command"),
    ("compgen -aC'rm x' w", "compgen -C runs a command"),
    ("compgen -F f w", "compgen -F runs a command"),
    ("compgen -W '$(rm x)' w", "compgen -W expands its word list"),
    ("complete -C 'rm x' git", "complete -C runs a command"),
    ("complete -F _f git", "complete -F runs a command"),
    ("bind -x '\"\\C-x\": rm x'", "bind -x binds a key to a command"),
    ("declare -ai n=y", "arithmetic on a variable"),
    ("builtin declare -n r=PATH", "arithmetic on a variable"),
    ('printf "$fmt" x', "printf with an option that is not literal"),
    ("set $opts", "set with an option that is not literal"),
    ("set -o $opt", "set -o $opt changes how later words run"),
    # history replay
    ("set -o history; fc -s echo=", "fc runs commands from the history"),
    ("fc -s echo=", "fc runs commands from the history"),
    ("fc -l", "fc runs commands from the history"),
    ("set -o history", "set -o history changes how later words run"),
    ("set -eo history", "set -o history changes how later words run"),
    ("set -H", "set -H changes how later words run"),
    ("set -eH", "set -H changes how later words run"),
    ("set -o histexpand", "set -o histexpand changes how later words run"),
    ("shopt -so history", "shopt -s history changes how later words run"),
    ("set -k", "set -k changes how later words run"),
    ("set -o posix", "set -o posix changes how later words run"),
    ("history -s 'rm x'", "history changes the history list"),
    ("history -p '!!'", "history changes the history list"),
    ("history -r f", "history changes the history list"),
    ("history -an", "history changes the history list"),
]


@pytest.mark.parametrize(("line", "reason"), TABLES)
def test_changing_what_bash_looks_names_up_in_is_unreadable(line: str, reason: str) -> None:
    parsed = parse_command(line)
    assert reason in parsed.dynamic_reasons, parsed.reasons
    assert parsed.dynamic and parsed.opaque and not parsed.read_only


@pytest.mark.parametrize(
    "line",
    [
        "hash ls",
        "hash -r",
        "hash -t ls",
        "hash -d ls",
        "enable",
        "enable -a",
        "enable -n",
        "alias",
        "alias ll",
        "alias -p",
        "unalias ll",
        "set -euo pipefail",
        "set -Eeuxo pipefail",
        "set +o history",
        "set -o",
        "set -- a b",
        "shopt -s globstar nullglob",
        "shopt -u expand_aliases",
        "shopt expand_aliases",
        "history",
        "history 5",
        "IFS= read -r line < f",
        "IFS=, read -ra parts <<< x",
        "read -r -p 'name? ' name",
        "mapfile -t lines < f",
        "printf -v out '%s' x",
        "printf '%s\\n' x",
        "export FOO=1",
        "declare -p PATH",
        "trap - EXIT",
        "trap -p",
        "compgen -c",
        "compgen -W 'a b' a",
        "f() { ls; }; f",
        'echo "$PATH" ${PATH:-x} ${BASH_VERSION}',
        "x=${y:=z}",
    ],
)
def test_listing_or_reading_bash_tables_is_not_unreadable(line: str) -> None:
    parsed = parse_command(line)
    assert not parsed.dynamic, parsed.dynamic_reasons


def test_a_trap_handler_after_double_dash_is_a_script() -> None:
    parsed = parse_command("trap -- -rm EXIT")
    assert "-rm" in parsed.hidden and "trap handler" in parsed.reasons
    assert "rm x" in parse_command("trap -- 'rm x' EXIT").hidden
    assert not parse_command("trap -p EXIT").hidden


def test_a_function_body_is_read_where_it_is_defined() -> None:
    for line in ("f() { rm x; }; f", "command_not_found_handle() { rm x; }; zzz"):
        parsed = parse_command(line)
        assert "rm x" in parsed.commands and not parsed.read_only


def test_an_assignment_in_a_quoted_declaration_word_is_followed() -> None:
    parsed = parse_command("export 'GIT_PAGER=rm x'; git log")
    assert "rm x" in parsed.hidden and not parsed.read_only


@pytest.mark.parametrize(
    "line",
    [
        "ls -la",
        "git status && git diff",
        'for f in *.py; do echo "$f"; done',
        'echo "${HOME}/x" ${x:-default} ${#x} ${x//a/b} ${x:1:2} ${arr[@]} ${arr[1]}',
        "echo $((1 + 2))",
        'x=$(cat f); echo "$x"',
        "echo ${x:-$(date)}",
        "bash -c 'npm test'",
        "eval 'ls -la'",
        "timeout 5 npm test",
        "FOO=1 GIT_PAGER=cat git log",
        "git -c user.name=me commit -m wip",
        "find . -name '*.o' -exec rm {} +",
        "ls | xargs -0 rm",
        "[[ $x =~ ^[0-9]+$ ]] && [[ -f x ]]",
        'docker run --rm -v "$PWD":/w img',
        "cat <<'EOF'\n${x:-`rm x`} $[v]\nEOF",
        "echo '`rm x`' \"\\`rm x\\`\" \\$\\(rm x\\)",
        "bash --version",
    ],
)
def test_lines_whose_commands_are_all_literal_are_not_unreadable(line: str) -> None:
    assert not parse_command(line).dynamic


@pytest.mark.parametrize(
    "line",
    [
        # options that write a file, run a program or never end
        "rg --pre cat foo",
        "rg --pre=gzip foo",
        "rg -z foo",
        "rg -uz foo",
        "rg --search-zip foo",
        "rg --hostname-bin=touch foo",
        "sort -T tmpdir f",
        "sort --temporary-directory=d f",
        "sort --compress-program=gzip f",
        "sort --compress-prog=gzip f",
        "file -z a.gz",
        "file --uncompress a.gz",
        "git log --show-signature",
        "git log --format=%G?",
        "git log --pretty=format:%GS",
        "git for-each-ref --format='%(signature)'",
        "sleep infinity",
        "seq inf",
        # wrappers whose options are not all understood, or take values
        "time -o out ls",
        "time --output=out ls",
        "time -a -o out ls",
        "command time --output=out ls",
        "\\time -o out ls",
        "env -S 'ls -la'",
        "env --split-string=ls",
        "timeout --foo 5 ls",
        "timeout -x 5 ls",
        "nice --foo ls",
        "command -x ls",
    ],
)
def test_options_that_write_run_or_never_end_are_not_read_only(line: str) -> None:
    assert not is_read_only_command(line)


@pytest.mark.parametrize(
    "line",
    [
        "nice --adjustment=5 ls",
        "nice -n 5 ls",
        "nice -5 ls",
        "timeout --kill-after=1 5 ls",
        "timeout -k1 -s KILL 5 ls",
        "timeout --preserve-status 5 git status",
        "time -p ls",
        "command -p ls",
        "date -f dates.txt",
        "diff --to-file=b a",
        "sleep 0.5",
        "seq 3",
        "rg -n --pretty foo",
        "sort -t o -k 2 f",
    ],
)
def test_wrappers_and_options_that_only_read_stay_read_only(line: str) -> None:
    assert is_read_only_command(line)


# -- lines tree-sitter reads differently from bash ----------------------------------------


def test_a_carriage_return_is_part_of_a_word_as_in_bash() -> None:
    # tree-sitter alone reads `\r#` as a comment and never sees the `rm`.
    parsed = parse_command("ls \r#; rm x")
    assert "rm x" in parsed.commands
    assert not parsed.read_only


def test_an_escaped_blank_is_part_of_a_word_as_in_bash() -> None:
    # tree-sitter alone reads `\ ` as a space, so `#` would start a comment hiding the `rm`.
    parsed = parse_command("echo \\ #; rm x")
    assert parsed.commands == ("echo ' #'", "rm x")
    assert not parsed.read_only


def test_a_backslash_newline_is_removed_before_anything_else_as_in_bash() -> None:
    for line in ['echo "$\\\n(rm x)"', "echo $\\\n(rm x)", "cat <<EOF\n$\\\n(rm x)\nEOF"]:
        parsed = parse_command(line)
        assert "rm x" in parsed.hidden, line
        assert parsed.opaque and not parsed.read_only, line
    # ...but not inside single quotes or a quoted here-document.
    assert parse_command("echo 'a\\\nb'").words == (("echo", "a\\\nb"),)
    assert parse_command("cat <<'EOF'\n$\\\n(rm x)\nEOF").read_only


def test_an_ansi_c_string_ends_where_bash_ends_it() -> None:
    # `$'\\'` is one backslash; tree-sitter would run the string on to the next quote.
    parsed = parse_command("echo $'\\\\'; rm x; echo '")
    assert parsed.dynamic and not parsed.read_only


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("echo ''\\ x", ("echo", " x")),
        ("echo \\ a", ("echo", " a")),
        ("echo ''\\ ;", ("echo", " ")),
        ("echo $'\\xc3\\xa9'", ("echo", "é")),
        ("echo $'\\c?'", ("echo", "\x7f")),
        ("echo $'\\c\\\\x'", ("echo", "\x1cx")),
        ("echo $'\\0101'", ("echo", "\x081")),
    ],
)
def test_word_values_are_bash_values(line: str, argv: tuple[str, ...]) -> None:
    assert parse_command(line).words == (argv,)


@pytest.mark.parametrize("word", ["$'\\xff'", "$'\\u263a'", "$'a\\0b'", "a=~/x", "~/x", "x=a:~/b"])
def test_words_whose_value_depends_on_the_locale_or_home_are_not_static(word: str) -> None:
    # Given as written: the value in bash depends on the locale, the home folder, or is not
    # text at all.
    assert parse_command(f"echo {word}").words == (("echo", word),)


@pytest.mark.parametrize(
    "line",
    [
        "git status --ignore-submodules=none",
        "git status --ignore-submodules",
        "git diff --ignore-sub=dirty",
        "git diff --submodule=diff",
        "git diff --submodule",
        "git log -p --submodule=log",
        "git grep --recurse-submodules x",
        "git ls-files --recurse-submodules",
    ],
)
def test_git_into_submodules_is_not_read_only(line: str) -> None:
    # A submodule's own config (.git/modules/*/config) may name a clean filter or an external
    # diff, which the git guard does not neutralise: going into submodules asks.
    assert parse_command(line).read_only is False


def test_git_that_keeps_out_of_submodules_stays_read_only() -> None:
    assert parse_command("git status --ignore-submodules=all").read_only is True
