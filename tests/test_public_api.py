"""The public import surface: complete, sorted, and named by its public path."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

import handrail

NAMESPACES = [
    "handrail",
    "handrail.validation",
    "handrail.permissions",
    "handrail.sandbox",
    "handrail.runtime",
    "handrail.agent",
    "handrail.testing",
]


@pytest.mark.parametrize("name", NAMESPACES)
def test_all_is_importable_and_has_no_duplicates(name: str) -> None:
    # (Its order is ruff's RUF022 isort-style sort, checked by the linter.)
    mod = importlib.import_module(name)
    exported = list(mod.__all__)
    assert len(exported) == len(set(exported))
    for attr in exported:
        assert hasattr(mod, attr), f"{name}.{attr} is listed in __all__ but missing"


def test_top_level_names_report_the_public_module() -> None:
    for attr in handrail.__all__:
        obj = getattr(handrail, attr)
        if isinstance(obj, type) or inspect.isfunction(obj):  # not type aliases
            module = getattr(obj, "__module__", "handrail")
            assert module == "handrail", f"{attr} reports {module}"


def test_the_issue_api_example_names_exist() -> None:
    from handrail import (
        ErrorCode,
        Registry,
        Runtime,
        Tool,
        ToolCall,
        ToolResult,
        ValidationIssue,
        tool,
    )

    assert all([ErrorCode, Registry, Runtime, Tool, ToolCall, ToolResult, ValidationIssue, tool])


def test_importing_handrail_pulls_no_heavy_optional_modules() -> None:
    code = (
        "import sys, handrail; "
        "print(','.join(m for m in ('mcp', 'httpx', 'anyio') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("name", ["handrail.agent", "handrail.testing"])
def test_namespace_names_report_their_public_module(name: str) -> None:
    mod = importlib.import_module(name)
    for attr in mod.__all__:
        obj = getattr(mod, attr)
        if isinstance(obj, type) or inspect.isfunction(obj):
            assert obj.__module__ in (name, "handrail.errors"), (
                f"{name}.{attr} reports {obj.__module__}"
            )


def test_the_agent_layer_loads_no_vendor_sdk_and_no_mcp() -> None:
    # `handrail run` starts fast because the agent layer speaks HTTP itself.
    code = (
        "import sys, handrail.agent, handrail._cli._run; "
        "print(','.join(m for m in ('mcp', 'openai', 'anthropic', 'google.genai', 'litellm') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
