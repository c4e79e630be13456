"""The shape of the code a newcomer relies on: no import cycles, one owner per approver.

The layers themselves are import-linter's contract (pyproject.toml); these are the rules it
cannot state.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

from handrail import Runtime

ROOT = Path(__file__).resolve().parents[1]
SCANNED = [ROOT / "src" / "handrail", ROOT / "tests", ROOT / "bench"]


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iteratively)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in modules:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_no_module_of_handrail_imports_one_that_imports_it_back() -> None:
    # Imports inside functions count too: a lazy import only hides a cycle.
    graph = grimp.build_graph("handrail", exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "cyclic_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from . import b\n")
    (package / "b.py").write_text("from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic_pkg", cache_dir=None)
    assert _cycles(graph) == [["cyclic_pkg.a", "cyclic_pkg.b"]]


def _assignments(tree: ast.AST) -> list[tuple[int, str, str | None]]:
    """(line, target text, enclosing function) of every assignment to an `.approver`."""
    out: list[tuple[int, str, str | None]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                else function
            )
            targets: list[ast.expr] = []
            if isinstance(child, ast.Assign):
                targets = list(child.targets)
            elif isinstance(child, ast.AugAssign | ast.AnnAssign):
                targets = [child.target]
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Attribute) and t.attr == "approver":
                        out.append((child.lineno, ast.unparse(t), function))
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Name)
                and child.func.id == "setattr"
                and len(child.args) >= 2
                and isinstance(child.args[1], ast.Constant)
                and child.args[1].value == "approver"
            ):
                out.append((child.lineno, ast.unparse(child), function))
            visit(child, inner)

    visit(tree, None)
    return out


def _offenders(path: Path) -> list[str]:
    """Assignments to an approver other than the one allowed form: an object setting its
    own approver as it is made (`self.approver = ...` in `__init__`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return [
        f"{where}:{line}: {target}"
        for line, target, function in _assignments(tree)
        if not (target == "self.approver" and function == "__init__")
    ]


def test_an_approver_is_set_only_by_its_owner_as_it_is_made() -> None:
    files = [p for folder in SCANNED for p in sorted(folder.rglob("*.py"))]
    assert len(files) > 100
    assert [bad for path in files for bad in _offenders(path)] == []


def test_the_owner_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    source = tmp_path / "glue.py"
    source.write_text(
        "class Ok:\n"
        "    def __init__(self, a):\n"
        "        self.approver = a\n"
        "def glue(agent, runtime, f):\n"
        "    agent.approver = f\n"
        "    runtime._pipeline.approver = f\n"
        "    setattr(runtime, 'approver', f)\n"
        "class Late:\n"
        "    def later(self, f):\n"
        "        self.approver = f\n"
    )
    found = [line.split(": ", 1)[1] for line in _offenders(source)]
    assert found == [
        "agent.approver",
        "runtime._pipeline.approver",
        "setattr(runtime, 'approver', f)",
        "self.approver",
    ]


def test_a_runtime_approver_cannot_be_replaced_after_the_runtime_is_made() -> None:
    shown = Runtime.__dict__["approver"]
    assert isinstance(shown, property)
    assert shown.fset is None  # read-only: whoever wants other answers wraps it per call


def test_there_is_one_approver_type() -> None:
    # The aliases it replaced are gone from every public namespace.
    import handrail.agent
    import handrail.mcp
    import handrail.runtime

    assert handrail.Approver is not None
    for module, name in [
        (handrail.runtime, "ApproverFunc"),
        (handrail.agent, "ApprovalFunc"),
        (handrail.mcp, "current_asker"),
    ]:
        assert not hasattr(module, name), f"{module.__name__}.{name} still exists"
