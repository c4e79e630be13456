"""The walk over a tree-sitter-bash syntax tree: simple commands, hidden commands, opacity.

`walk_line` parses a line and visits every node once, with an explicit stack (so 10,000
`&&`s or nested `$(...)`s cannot exhaust Python's stack). Each simple command is recorded as
normalised text and argv; each construct a prefix rule cannot see through (substitutions,
subshells, output redirections, arithmetic on variables, `eval`, `bash -c`...) adds a reason;
commands run indirectly are collected for deny and ask rules; and anything off the read-only
list clears `read_only`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ._shell_readonly import read_only_argv, safe_env_name
from ._shell_words import Word, assignment, group_words, node_text, render
from ._shell_wrappers import MAX_DEPTH, SHELLS, WRAPPERS, shell_script, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["Walker", "walk_line"]


def walk_line(line: str, depth: int) -> Walker:
    """Parse `line` and walk its tree; `depth` counts the nested shells (`bash -c`) around it."""
    src = line.encode("utf-8", "surrogatepass")
    root = _parser().parse(src).root_node
    walker = Walker(src, depth)
    if "\x00" in line:
        walker.reason("NUL byte")
    if root.has_error:
        walker.reason("parse error")
        # Belt and braces for deny rules: the naive split of a line the grammar rejects.
        walker.hide(_naive_split(line))
    walker.walk(root)
    if "git" in walker.names and walker.names & {"cd", "pushd", "popd"}:
        # `cd repo && git status` runs that repository's configured programs (fsmonitor).
        walker.read_only = False
    return walker


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


# -- the walk -------------------------------------------------------------------------------

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
_Handler = Callable[["Walker", "Node", bool, bool], "tuple[bool, bool] | None"]


class Walker:
    """A walk over one line's syntax tree, and what it found.

    Attributes:
        src: The line, UTF-8 encoded (tree-sitter works in byte offsets).
        depth: How many nested shells (`bash -c`, `eval`) the line is inside.
        commands: The simple commands run directly, as normalised text.
        words: The argv of each of `commands`.
        hidden: Commands run indirectly, in the order found, repeats included.
        reasons: Why the line is opaque, each once; empty when it is not.
        read_only: False once anything is found that is not read-only.
        names: The command names seen, through wrappers and nested shells too.
    """

    def __init__(self, src: bytes, depth: int) -> None:
        self.src = src
        self.depth = depth
        self.commands: list[str] = []
        self.words: list[tuple[str, ...]] = []
        self.hidden: list[str] = []
        self.reasons: list[str] = []
        self.read_only = True
        self.names: set[str] = set()

    def hidden_commands(self) -> tuple[str, ...]:
        """The commands run indirectly, each once, leaving out those run directly."""
        seen = set(self.commands)
        return tuple(dict.fromkeys(h for h in self.hidden if h and h not in seen))

    def reason(self, why: str) -> None:
        """Mark the line opaque, for this reason (each reason is kept once)."""
        if why not in self.reasons:
            self.reasons.append(why)

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
                elif child.is_named and kind not in _LEAF_KINDS:
                    stack.append((child, inner, part))

    # -- node handlers: return the flags for the children, or None to skip them

    def on_command(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        self.command(node, inner)
        return inner, True

    def on_assignments(self, node: Node, inner: bool, part: bool) -> tuple[bool, bool]:
        if not part:
            nodes = node.children if node.type == "variable_assignments" else [node]
            pairs = [assignment(self.src, n) for n in nodes if n.type == "variable_assignment"]
            if not all(safe_env_name(name) for name, _ in pairs):
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
                name, text = assignment(self.src, child)
                ok = ok and safe_env_name(name) and "[" not in name
                pieces.append(text)
            else:
                w = group_words(self.src, [child])[0]
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
        if var is not None and not safe_env_name(self.text(var)):
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

    def check_subscript(self, name: str, word: Word) -> None:
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

    def command(self, node: Node, inner: bool) -> None:
        pairs: list[tuple[str, str]] = []
        arg_nodes: list[Node] = []
        for i, child in enumerate(node.children):
            kind = child.type
            if kind == "variable_assignment":
                pairs.append(assignment(self.src, child))
            elif kind == "command_name":
                arg_nodes.extend(n for n in child.children if not n.is_missing)
            elif kind.endswith("redirect") or child.is_missing:
                continue  # redirections are judged by the walk; `ls &&` is a parse error
            elif node.field_name_for_child(i) == "argument":
                arg_nodes.append(child)
        words = group_words(self.src, arg_nodes)
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
            self.reason(
                "glob in the command name"
                if head.value is not None
                else "variable expansion in the command name"
            )
            return
        if head.value in _SUBSCRIPT_BUILTINS:
            for w in words[1:]:
                self.check_subscript(head.value, w)
        if not read_only_argv([w.static for w in words], self.names):
            self.read_only = False
        self.reveal(list(argv), 0)

    def reveal(self, argv: list[str], depth: int) -> None:
        """Record the commands `argv` runs indirectly, for deny and ask rules."""
        name = argv[0].rpartition("/")[2]
        self.names.add(name)
        if name != argv[0] and name:
            self.hidden.append(render([name, *argv[1:]]))
        if depth > MAX_DEPTH:
            self.reason("nesting too deep")
            return
        if name in SHELLS:
            script = shell_script(argv[1:])
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
        elif name in WRAPPERS:
            inner = unwrap(name, argv[1:])
            if inner:
                self.hidden.append(render(inner))
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
                        self.hidden.append(render(inner))
                        self.reveal(inner, depth + 1)
                    i = end
                i += 1

    def nested(self, script: str) -> None:
        if self.depth >= MAX_DEPTH:
            self.reason("nesting too deep")
            return
        sub = walk_line(script, self.depth + 1)
        for why in sub.reasons:
            self.reason(why)
        self.hidden.extend(sub.commands)
        self.hidden.extend(sub.hidden_commands())
        self.names.update(w[0] for w in sub.words if w)


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
    "subscript": Walker.on_subscript,
    "arithmetic_expansion": Walker.on_arithmetic,
    "c_style_for_statement": Walker.on_c_for,
    "while_statement": Walker.on_while,
    "for_statement": Walker.on_for,
}
