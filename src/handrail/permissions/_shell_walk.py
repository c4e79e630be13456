r"""The walk over a tree-sitter-bash syntax tree: simple commands, hidden commands, opacity.

`walk_line` parses a line and visits every node once, with an explicit stack (so 10,000
`&&`s or nested `$(...)`s cannot exhaust Python's stack). Each simple command is recorded as
normalised text and argv; each construct a prefix rule cannot see through (substitutions,
subshells, output redirections, arithmetic on variables, `eval`, `bash -c`...) adds a reason;
commands run indirectly are collected for deny and ask rules; and anything off the read-only
list clears `read_only`.

Where what runs is decided by something no rule can read (a command name that is not literal
text, an expansion tree-sitter left unparsed, arithmetic that can run array subscripts, `eval
$x`, `source`), or by a table the line itself changes (`BASH_CMDS[x]=...`, `PATH=...`,
`alias`, `hash -p`: see `_shell_builtins`), the line is also *unreadable* (`Walker.dynamic`):
deny and ask rules treat it as matching.

Tree-sitter and bash do not read every line alike, so the walk checks the tree against bash's
rules where they differ: carriage returns and form feeds are word characters, backslash-newline
is removed before anything else is read (`$\<newline>(cmd)` is a substitution), `$'\\'`
ends at its second quote, and text tree-sitter left as a plain word but bash expands
(`${x:-`cmd`}`) makes the line unreadable.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ._shell_builtins import (
    ARITHMETIC,
    READ_BUILTINS,
    literal_subscripts,
    shell_variable,
    shell_variable_reason,
)
from ._shell_readonly import read_only_argv, safe_env_name
from ._shell_reveal import BUDGET, CODE_VARIABLES, FILE_CODE_VARIABLES, Revealer
from ._shell_words import Word, assignment, group_words, node_text
from ._shell_wrappers import MAX_DEPTH

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["Walker", "bash_tree", "syntax_tree", "walk_line"]


def walk_line(line: str, depth: int, budget: list[int] | None = None) -> Walker:
    """Parse `line` and walk its tree; `depth` counts the nested shells (`bash -c`) around it.

    `budget` is shared by the nested shells of one line (see `Revealer.spend`).
    """
    src, root = bash_tree(line.encode("utf-8", "surrogatepass"))
    walker = Walker(src, depth, [BUDGET] if budget is None else budget)
    if "\x00" in line:
        walker.unreadable("NUL byte")
    if root.has_error:
        # Belt and braces for deny rules: the naive split of a line the grammar rejects.
        walker.misparsed()
    walker.walk(root)
    if "git" in walker.names and walker.names & {"cd", "pushd", "popd"}:
        # `cd repo && git status` runs that repository's configured programs (fsmonitor).
        walker.read_only = False
    return walker


_NOT_BLANKS = bytes.maketrans(b"\r\v\f", b"\x01\x01\x01")
_ESCAPED_BLANK = re.compile(rb"(\\+)([ \t])")


def _word_blank(m: re.Match[bytes]) -> bytes:
    slashes = m.group(1)
    return slashes[:-1] + b"\x01\x01" if len(slashes) % 2 else m.group()


def syntax_tree(src: bytes) -> Node:
    r"""The root of the tree-sitter-bash syntax tree of `src` (byte offsets into `src`).

    Tree-sitter separates words at a carriage return, vertical tab or form feed, and at an
    escaped blank (`\ `); bash does not (`ls \r#; rm x` and `echo \ #; rm x` run `rm`). The
    parser is given control characters that both read as part of a word in their place (as
    many bytes), so the tree's words are bash's; their text is read from `src`.
    """
    return _parser().parse(_ESCAPED_BLANK.sub(_word_blank, src.translate(_NOT_BLANKS))).root_node


def bash_tree(src: bytes) -> tuple[bytes, Node]:
    """The line as bash reads it (backslash-newlines removed) and its syntax tree."""
    root = syntax_tree(src)
    for _ in range(4):
        joined = _join_continuations(src, root)
        if joined is None:
            break
        src, root = joined, syntax_tree(joined)
    return src, root


_KEEPS_CONTINUATIONS = frozenset({"raw_string", "ansi_c_string", "comment"})


def _join_continuations(src: bytes, root: Node) -> bytes | None:
    """`src` without the backslash-newlines bash removes (None if there are none).

    Bash removes them before it reads anything else, except inside single quotes, `$'...'`,
    comments and quoted here-documents.
    """
    if b"\\\n" not in src:
        return None
    kept: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _KEEPS_CONTINUATIONS or (
            node.type == "heredoc_body" and node.id in _quoted_bodies(src, node)
        ):
            kept.append((node.start_byte, node.end_byte))
            continue
        stack.extend(node.children)
    cut: list[int] = []
    at = src.find(b"\\\n")
    while at >= 0:
        run = at
        while run > 0 and src[run - 1] == 0x5C:
            run -= 1
        # An odd run of backslashes ends in one that escapes the newline.
        if (at - run) % 2 == 0 and not any(a <= at < b for a, b in kept):
            cut.append(at)
        at = src.find(b"\\\n", at + 1)
    if not cut:
        return None
    pieces: list[bytes] = []
    prev = 0
    for at in cut:
        pieces.append(src[prev:at])
        prev = at + 2
    pieces.append(src[prev:])
    return b"".join(pieces)


def _quoted_bodies(src: bytes, body: Node) -> set[int]:
    """The body node's id when its here-document's delimiter is quoted (no expansions)."""
    parent = body.parent
    start = (
        next((c for c in parent.children if c.type == "heredoc_start"), None) if parent else None
    )
    if start is None or any(
        q in src[start.start_byte : start.end_byte] for q in (b"'", b'"', b"\\")
    ):
        return {body.id}
    return set()


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


_OPERATORS = re.compile(r"&&|\|\||[;&|\n()`]|\$\(")
_RESERVED = frozenset("if then else elif fi do done while until for case esac ! { } time".split())


def _naive_split(line: str) -> Iterable[str]:
    for piece in _OPERATORS.split(line):
        words = piece.split()
        while words and words[0] in _RESERVED:
            words.pop(0)
        if words:
            yield " ".join(words)


# -- text tree-sitter did not parse ------------------------------------------------------

_UNPARSED_BARE = re.compile(r"\\.|`|\$[({\[]|[<>]\(", re.DOTALL)
_UNPARSED_QUOTED = re.compile(r"\\.|`|\$[({\[]", re.DOTALL)
_LITERAL_LEAVES = frozenset(
    "raw_string ansi_c_string comment heredoc_start heredoc_end file_descriptor test_operator"
    " special_variable_name variable_name".split()
)
_QUOTED_LEAVES = frozenset({"string_content", "heredoc_content", "heredoc_body"})
_NOT_PARSED = "an expansion the parser did not read"


def _unparsed(text: str, quoted: bool) -> bool:
    """Is there a substitution or expansion in this leaf's text (tree-sitter saw none)?"""
    pattern = _UNPARSED_QUOTED if quoted else _UNPARSED_BARE
    return any(not m.group().startswith("\\") for m in pattern.finditer(text))


def _in_double_quotes(node: Node, limit: int = 64) -> bool:
    """Is `node` inside a double-quoted string (or too deep to tell)?

    A substitution starts afresh: `"$(echo 'x')"` has its single quotes.
    """
    parent = node.parent
    for _ in range(limit):
        if parent is None or parent.type in ("command_substitution", "process_substitution"):
            return False
        if parent.type == "string":
            return True
        parent = parent.parent
    return True


def _quote_end_ok(kind: str, text: str) -> bool:
    """Does bash end this quoted string where tree-sitter does?"""
    if kind == "raw_string":
        return text.endswith("'") and "'" not in text[1:-1]
    i = 2  # after `$'`; a backslash escapes the next character, even another backslash
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == "'":
            return i == len(text) - 1
        else:
            i += 1
    return False


# -- the walk -------------------------------------------------------------------------------

_DUP_TARGET = re.compile(r"\d+-?|-")
_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_DECLARE_OK = frozenset({"export", "local", "readonly", "declare", "typeset"})
_TYPED = frozenset({"local", "declare", "typeset"})
"""Where `-i` (integer: every later value is arithmetic) and `-n` (a name reference) mean so."""
_LITERAL_INDEX = re.compile(r"\d+|@|\*")
_BACKQUOTE_ESCAPE = re.compile(r"\\([\\`$])")
_BACKQUOTE_DQ_ESCAPE = re.compile(r'\\([\\`$"])')
_NAME_BUILTINS = frozenset("read unset mapfile readarray wait getopts export".split())
"""Builtins whose arguments name variables: `a[i]` evaluates its subscript `i`."""
_LEAF_KINDS = frozenset(
    "word number raw_string ansi_c_string string_content variable_name comment heredoc_content"
    " heredoc_start heredoc_end file_descriptor test_operator special_variable_name regex"
    " extglob_pattern".split()
)
_Handler = Callable[["Walker", "Node", bool, bool], "tuple[bool, bool] | None"]


class Walker(Revealer):
    """A walk over one line's syntax tree, and what it found.

    Attributes:
        src: The line as bash reads it, UTF-8 encoded (tree-sitter works in byte offsets).
        depth: How many nested shells (`bash -c`, `eval`) the line is inside.
        commands: The simple commands run directly, as normalised text.
        words: The argv of each of `commands`.
        hidden: Commands run indirectly, in the order found, repeats included.
        reasons: Why the line is opaque, each once; empty when it is not.
        dynamic: Why no rule can tell what the line runs, each once (a subset of `reasons`).
        read_only: False once anything is found that is not read-only.
        names: The command names seen, through wrappers and nested shells too.
        budget: What is left of the line's budget of revealed commands (shared when nested).
    """

    def __init__(self, src: bytes, depth: int, budget: list[int]) -> None:
        self.src = src
        self.depth = depth
        self.commands: list[str] = []
        self.words: list[tuple[str, ...]] = []
        self.hidden: list[str] = []
        self.reasons: list[str] = []
        self.dynamic: list[str] = []
        self.read_only = True
        self.names: set[str] = set()
        self.budget = budget
        self.literal: set[int] = set()
        """Ids of nodes whose text bash takes literally (quoted here-document bodies)."""

    def hidden_commands(self) -> tuple[str, ...]:
        """The commands run indirectly, each once, leaving out those run directly."""
        seen = set(self.commands)
        return tuple(dict.fromkeys(h for h in self.hidden if h and h not in seen))

    def reason(self, why: str) -> None:
        """Mark the line opaque, for this reason (each reason is kept once)."""
        if why not in self.reasons:
            self.reasons.append(why)

    def unreadable(self, why: str) -> None:
        """Mark the line opaque and unreadable: no rule can tell what it runs."""
        self.reason(why)
        if why not in self.dynamic:
            self.dynamic.append(why)

    def hide(self, commands: Iterable[str]) -> None:
        """Record commands the line runs indirectly."""
        self.hidden.extend(commands)

    def text(self, node: Node) -> str:
        """The source text of `node`."""
        return node_text(self.src, node)

    def walk(self, root: Node) -> None:
        """Visit every node under `root`, recording commands and judging each construct."""
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
                elif not child.is_named or child.id in self.literal:
                    continue
                elif child.child_count == 0:
                    self.check_leaf(child)
                if child.is_named and kind not in _LEAF_KINDS:
                    stack.append((child, inner, part))

    def check_leaf(self, leaf: Node) -> None:
        """Fail closed on text bash would read differently from tree-sitter."""
        kind = leaf.type
        if kind in ("raw_string", "ansi_c_string"):
            if _in_double_quotes(leaf):
                # `"${x:-'`cmd`'}"`: inside double quotes these quotes quote nothing.
                if _unparsed(self.text(leaf), quoted=True):
                    self.unreadable(_NOT_PARSED)
            elif not _quote_end_ok(kind, self.text(leaf)):
                self.unreadable("parse error")  # `$'\\'`: bash's string ends earlier
        elif kind not in _LITERAL_LEAVES and _unparsed(self.text(leaf), kind in _QUOTED_LEAVES):
            self.unreadable(_NOT_PARSED)

    # -- node handlers: return the flags for the children, or None to skip them

    def on_command(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.command(node, inner)
        return inner, True

    def on_assignments(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if not part:
            nodes = node.children if node.type == "variable_assignments" else [node]
            nodes = [n for n in nodes if n.type == "variable_assignment"]
            pairs = [assignment(self.src, n) for n in nodes]
            if not all(safe_env_name(name) for name, _ in pairs):
                self.read_only = False
            for n in nodes:
                self.check_variable(n)
            self.emit(" ".join(t for _, t in pairs), (), inner)
        return inner, True

    def on_declaration(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        keyword = ""
        pieces: list[str] = []
        ok = True
        # `-p` prints and `-f`/`-F` name functions: no variable is set then.
        names = not any(
            c.type == "word"
            and self.text(c).startswith(("-", "+"))
            and set(self.text(c)[1:]) & set("pfF")
            for c in node.children
        )
        for child in node.children:
            if not child.is_named:
                keyword = keyword or self.text(child)
                pieces.append(self.text(child))
            elif child.type == "variable_assignment":
                name, text = assignment(self.src, child)
                ok = ok and safe_env_name(name) and "[" not in name
                pieces.append(text)
                self.check_variable(child)
            else:
                w = group_words(self.src, [child])[0]
                value = w.static
                # Flags (`-i`, `-n`) and subscripts make the shell evaluate code.
                ok = ok and value is not None and "[" not in value
                ok = ok and value is not None and (not value.startswith("-") or value == "-p")
                ok = ok and safe_env_name((value or "").partition("=")[0])
                pieces.append(w.text)
                self.check_declaration_word(keyword, w, names=names)
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
                    self.unreadable(ARITHMETIC)  # `[[ $x -eq 1 ]]` evaluates $x
                elif op in ("-v", "-R") and any(
                    "[" in self.text(c) or c.type != "word" for c in operands
                ):
                    self.unreadable(ARITHMETIC)
            stack.extend(n.children)
        return inner, True

    def on_compound(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if node.child_count and node.children[0].type == "((":
            words = tuple(self.text(node).split())
            self.emit(" ".join(words), words, inner)
            self.read_only = False
            if not self.literal_arithmetic(node):
                self.unreadable(ARITHMETIC)
            return inner, True
        return inner, part

    def on_substitution(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool] | None:
        self.reason(node.type.replace("_", " "))
        text = self.text(node)
        if text.startswith("`") and text.endswith("`") and len(text) > 1:
            # Inside backquotes bash first turns `\``, `\$` and `\\` (and `\"` in double
            # quotes) into the plain character: `\`cmd\`` is a nested substitution, which
            # tree-sitter reads as words. Walk the script bash runs instead.
            escaped = _BACKQUOTE_DQ_ESCAPE if _in_double_quotes(node) else _BACKQUOTE_ESCAPE
            script = escaped.sub(r"\1", text[1:-1])
            if script != text[1:-1]:
                self.nested(script)
                return None
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
        target = group_words(self.src, [dest])[0] if dest is not None else None
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
        for child in node.children:
            if child.type == "heredoc_body":
                self.literal |= _quoted_bodies(self.src, child)
        return inner, part

    def on_expansion(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        children = node.children
        ops = [self.text(c) for c in children if not c.is_named]
        if len(children) > 1 and self.text(children[1]) == "!":
            # `${!x}` names the variable to expand by x's value, which may be `a[$(cmd)]`.
            self.unreadable("indirect expansion (${!name})")
        if "=" in ops or ":=" in ops:
            # `${PATH:=/tmp}`, `${BASH_CMDS[x]=/bin/rm}` assign, as `NAME=value` does.
            self.check_expansion_assignment(children)
        if "@" in ops:
            self.read_only = False
            if "P" in ops:
                self.unreadable("prompt expansion (${x@P})")  # runs `$(...)` in the value
        # `${x:offset:length}`: both are arithmetic, so a variable there runs subscripts.
        after_colon = False
        for c in children:
            if not c.is_named:
                after_colon = after_colon or self.text(c) == ":"
            elif after_colon and c.type != "number":
                self.unreadable(ARITHMETIC)
        return inner, part

    def on_subscript(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        index = node.child_by_field_name("index")
        if index is None or (index.type != "number" and self.text(index) not in ("@", "*")):
            self.unreadable(ARITHMETIC)
        return inner, part

    def on_array(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        for element in node.named_children:
            text = self.text(element)
            # `a=([i]=x)`: the index of an indexed array is arithmetic.
            if text.startswith("[") and not _LITERAL_INDEX.fullmatch(text[1:].partition("]")[0]):
                self.unreadable(ARITHMETIC)
        return inner, part

    def on_arithmetic(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if not self.literal_arithmetic(node):
            self.unreadable(ARITHMETIC)
        return inner, part

    def on_c_for(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.unreadable(ARITHMETIC)
        return inner, part

    def on_while(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.read_only = False  # it may never end
        return inner, part

    def on_for(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        var = node.child_by_field_name("variable")
        if var is not None and not safe_env_name(self.text(var)):
            self.read_only = False
        if var is not None and shell_variable(self.text(var)):
            self.unreadable(shell_variable_reason(self.text(var)))  # `for PATH in /tmp`
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

    def check_variable(self, node: Node, command: str | None = None) -> None:
        """An assignment: code-carrying variables are followed or make the line unreadable.

        `command` is the name of the command it prefixes, if any (`IFS=, read -ra a` only
        changes how `read` splits).
        """
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is not None and name_node.type == "subscript":
            name_node = name_node.child_by_field_name("name")  # `BASH_CMDS[x]=/bin/rm`
        if name_node is None or name_node.type != "variable_name":
            return
        name = self.text(name_node)
        if name == "IFS" and command in READ_BUILTINS:
            return
        word = group_words(self.src, [value_node])[0] if value_node is not None else None
        value = word.static if word is not None else ""
        self.variable(name, value or "", known=value is not None)

    def check_expansion_assignment(self, children: Sequence[Node]) -> None:
        """`${NAME=value}` or `${NAME:=value}`: an assignment to NAME."""
        node = next((c for c in children if c.type in ("variable_name", "subscript")), None)
        if node is not None and node.type == "subscript":
            node = node.child_by_field_name("name")
        name = self.text(node) if node is not None else ""
        if shell_variable(name):
            self.unreadable(shell_variable_reason(name))
        elif name in CODE_VARIABLES or FILE_CODE_VARIABLES.fullmatch(name):
            self.unreadable(f"{name} assigned in an expansion")

    def check_declaration_word(self, keyword: str, word: Word, *, names: bool = True) -> None:
        """`declare -i`/`-n` make later values arithmetic; `declare 'a[i]'` evaluates i.

        With `names`, a word that is not an option names a variable declared (or unset,
        exported): bash's own variables (`BASH_CMDS`, `PATH`) change what later words run, and
        `export 'GIT_PAGER=rm x'` is an assignment like any other.
        """
        value = word.static
        if value is None:
            self.unreadable("declaration with a word that is not literal")
        elif value.startswith("-") and keyword in _TYPED and ("i" in value or "n" in value):
            self.unreadable(ARITHMETIC)
        elif not literal_subscripts(value):
            self.unreadable(ARITHMETIC)
        if value is None or not names or value[:1] in ("-", "+"):
            return
        name, eq, rhs = value.partition("=")
        name = name.removesuffix("+").partition("[")[0]
        if shell_variable(name):
            self.unreadable(shell_variable_reason(name))
        elif eq:
            self.variable(name, rhs, known=True)

    def check_names(self, name: str, args: Sequence[Word]) -> None:
        """Builtins that evaluate a subscript written in an argument (even a quoted one)."""
        values = [w.arg for w in args]
        if name == "let":
            if any(not _LITERAL_LET.fullmatch(v) for v in values):
                self.unreadable(ARITHMETIC)
            return
        if name == "printf":
            # Only `-v NAME` names a variable; the rest is a format and its arguments.
            targets = [values[k + 1] for k, v in enumerate(values[:-1]) if v == "-v"]
            targets += [v[2:] for v in values if v.startswith("-v") and len(v) > 2]
        elif name in ("test", "["):
            targets = [values[k + 1] for k, v in enumerate(values[:-1]) if v in ("-v", "-R")]
        else:
            targets = values
        if any(not literal_subscripts(t) for t in targets):
            self.unreadable(ARITHMETIC)

    def check_gaps(self, node: Node) -> None:
        """Between a command's parts there is only blank space.

        Anything else means tree-sitter joined what bash keeps apart (`echo ==<newline>rm x`
        is one command to tree-sitter, two to bash).
        """
        prev = node.start_byte
        for child in node.children:
            if self.src[prev : child.start_byte].strip(b" \t"):
                self.misparsed()
                return
            prev = child.end_byte

    def misparsed(self) -> None:
        """Tree-sitter read the line differently from bash: fail closed, as on a parse error."""
        if "parse error" not in self.dynamic:
            self.unreadable("parse error")
            self.hide(_naive_split(self.src.decode("utf-8", "replace")))

    def on_simple_expansion(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if not _SIMPLE_EXPANSION.fullmatch(self.text(node)):
            self.misparsed()  # `>$ rm x`: tree-sitter reads `$ rm` as one expansion
        return inner, part

    def emit(self, text: str, argv: tuple[str, ...], inner: bool) -> None:
        if inner:
            self.hidden.append(text)
        else:
            self.commands.append(text)
            self.words.append(argv)

    def command(self, node: Node, inner: bool) -> None:
        pairs: list[tuple[str, str]] = []
        arg_nodes: list[Node] = []
        prefixes: list[Node] = []
        for i, child in enumerate(node.children):
            kind = child.type
            if kind == "variable_assignment":
                pairs.append(assignment(self.src, child))
                prefixes.append(child)
            elif kind == "command_name":
                arg_nodes.extend(n for n in child.children if not n.is_missing)
            elif kind.endswith("redirect") or child.is_missing:
                continue  # redirections are judged by the walk; `ls &&` is a parse error
            elif node.field_name_for_child(i) == "argument":
                arg_nodes.append(child)
        self.check_gaps(node)
        words = group_words(self.src, arg_nodes)
        for child in prefixes:
            self.check_variable(child, words[0].static if words else None)
        while words and (m := _UNDERSCORE_ASSIGNMENT.match(words[0].raw)):
            # tree-sitter reads `_=x cmd` as a command named `_=x`; bash assigns `_`.
            pairs.append(("_", words.pop(0).raw))
            if not literal_subscripts(m.group()):
                self.unreadable(ARITHMETIC)
        if not words and not pairs:
            return  # a bare redirection (`> file`); the walk judges the redirection itself
        argv = tuple(w.arg for w in words)
        plain = " ".join(w.text for w in words)
        self.emit(" ".join([*(t for _, t in pairs), plain]).strip(), argv, inner)
        if not all(safe_env_name(name) for name, _ in pairs):
            self.read_only = False
        if not words:
            return
        if pairs:
            self.hidden.append(plain)
        head = words[0]
        if head.value is None or head.expands:
            self.unreadable(_dynamic_name(head))
            return
        if head.value in _NAME_BUILTINS or head.value in ("printf", "test", "[", "let"):
            self.check_names(head.value, words[1:])
        # A `~` word is known enough: it becomes one path, never an option or a command line.
        known = [w.value if not w.expands else None for w in words]
        if not read_only_argv(known, self.names):
            self.read_only = False
        self.reveal(list(argv), [k is not None for k in known], 0)

    def nested(self, script: str) -> None:
        """Walk a script the line runs (`bash -c`, `eval`): its commands are hidden ones."""
        if self.depth >= MAX_DEPTH:
            self.unreadable("nesting too deep")
            return
        if not self.spend():
            return
        sub = walk_line(script, self.depth + 1, self.budget)
        for why in sub.reasons:
            self.reason(why)
        for why in sub.dynamic:
            self.unreadable(why)
        self.hidden.extend(sub.commands)
        self.hidden.extend(sub.hidden_commands())
        self.names.update(w[0] for w in sub.words if w)


_SIMPLE_EXPANSION = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])")
_UNDERSCORE_ASSIGNMENT = re.compile(r"_(\[[^\]]*\])?\+?=")
_LITERAL_LET = re.compile(r"[\d\s+\-*/%()<>=!&|^~?:,]*")


def _dynamic_name(head: Word) -> str:
    """Why a command name is not literal, as a reason."""
    raw = head.raw.lstrip("\"'")
    if head.value is not None:
        return "brace expansion in the command name" if "{" in raw else "glob in the command name"
    if raw.startswith(("$(", "`")):
        return "command substitution in the command name"
    return "variable expansion in the command name"


_HANDLERS: dict[str, _Handler] = {
    "command": Walker.on_command,
    "variable_assignment": Walker.on_assignments,
    "variable_assignments": Walker.on_assignments,
    "declaration_command": Walker.on_declaration,
    "unset_command": Walker.on_declaration,
    "test_command": Walker.on_test,
    "compound_statement": Walker.on_compound,
    "command_substitution": Walker.on_substitution,
    "process_substitution": Walker.on_substitution,
    "subshell": Walker.on_subshell,
    "file_redirect": Walker.on_redirect,
    "herestring_redirect": Walker.on_herestring,
    "heredoc_redirect": Walker.on_heredoc,
    "expansion": Walker.on_expansion,
    "simple_expansion": Walker.on_simple_expansion,
    "subscript": Walker.on_subscript,
    "array": Walker.on_array,
    "arithmetic_expansion": Walker.on_arithmetic,
    "c_style_for_statement": Walker.on_c_for,
    "while_statement": Walker.on_while,
    "for_statement": Walker.on_for,
}
