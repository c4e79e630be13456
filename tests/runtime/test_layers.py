"""Imports inside `handrail.runtime` flow one way, in the order its `__init__` describes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import handrail.runtime

PACKAGE = Path(handrail.runtime.__file__).parent

# Each module may import only modules listed before it (the package docstring draws this).
ORDER = [
    "_messages",
    "_threads",
    "_gate",
    "_shaping",
    "_calls",
    "_results",
    "_result_content",
    "_hooks",
    "_checkpointing",
    "_runner",
    "_pipeline",
    "_executor",
    "_runtime",
]


def sibling_imports(tree: ast.Module) -> list[tuple[str, int]]:
    """(module, line) of every `from ._x import ...` anywhere in the module."""
    return [
        (node.module, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    ]


def test_every_module_has_a_place_in_the_order() -> None:
    modules = {p.stem for p in PACKAGE.glob("_*.py") if p.stem != "__init__"}
    assert modules == set(ORDER)


@pytest.mark.parametrize("module", ORDER)
def test_a_module_imports_only_modules_before_it(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    allowed = set(ORDER[: ORDER.index(module)])
    for name, line in sibling_imports(tree):
        assert name in allowed, f"{module}.py:{line} imports {name}, which comes after it"


@pytest.mark.parametrize("module", ORDER)
def test_imports_sit_at_the_top_and_none_hides_behind_type_checking(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    n = next(
        (i for i, s in enumerate(body) if not isinstance(s, ast.Import | ast.ImportFrom)),
        len(body),
    )
    top = {id(s) for s in body[:n]}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            assert id(node) in top, f"{module}.py:{node.lineno} imports below the top"
        if isinstance(node, ast.Name):
            assert node.id != "TYPE_CHECKING", f"{module}.py:{node.lineno} uses TYPE_CHECKING"
