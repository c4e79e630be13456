"""`handrail tools`: the tools a model would see, as a table or as a provider's exact payload."""

from __future__ import annotations

import argparse
import sys
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING

from .._context import PermissionMode
from .._tool import Tool
from ..display import terminal_text
from ..runtime import Runtime
from ._common import (
    CliError,
    CommonOptions,
    consoles,
    json_text,
    load_tool_set,
    make_runtime,
)

DEFAULT_JSON_PROVIDER = "openai_chat"
DEPENDS = "depends on input"

if TYPE_CHECKING:
    from ._common import SubParsers


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail tools`."""
    parser = sub.add_parser(
        "tools",
        help="list the tools a model would see, with kind and flags",
        description="List the tools a model would see, with their kind and behaviour flags "
        "(deferred tools are marked: the model finds them through tool_search). With --json, "
        "print the exact `tools` payload of a provider's request.",
    )
    parser.add_argument(
        "--provider",
        metavar="NAME",
        help="only the tools offered to this provider (openai_chat, openai_responses, "
        f"anthropic, gemini); the payload format with --json (default {DEFAULT_JSON_PROVIDER})",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the provider's tools payload as JSON"
    )
    return parser


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table."""

    name: str
    kind: str
    read_only: str
    concurrency_safe: str
    destructive: str
    note: str
    description: str


def _flag(tool: Tool, attr: str) -> str:
    value = getattr(tool, attr)
    if callable(value):
        return DEPENDS
    return "yes" if value else "no"


def _first_sentence(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    end = line.find(". ")
    return line[: end + 1] if end >= 0 else line


def rows(rt: Runtime, provider: str | None) -> list[Row]:
    """The visible tools in the model's order, then the deferred ones not yet activated."""
    visible = rt.tools(provider=provider)
    registry = rt.registry
    plan = rt.session.mode is PermissionMode.PLAN
    deferred = [
        t
        for t in registry.deferred_tools()
        if t not in visible
        and registry.available(t, provider)
        and not (plan and not t.may_be_read_only())
    ]
    out: list[Row] = []
    for t in [*visible, *deferred]:
        notes = ["deferred"] if t in deferred else []
        if registry.is_imported(t):
            server = getattr(t, "server", None)  # an MCP tool names its server
            notes.append(f"mcp:{server}" if isinstance(server, str) else "imported")
        out.append(
            Row(
                name=t.name,
                kind=t.kind.value,
                read_only=_flag(t, "read_only"),
                concurrency_safe=_flag(t, "concurrency_safe"),
                destructive=_flag(t, "destructive"),
                note=", ".join(notes),
                description=_first_sentence(t.description),
            )
        )
    return out


def _check_provider(provider: str) -> None:
    from ..providers import PROVIDERS

    if provider not in PROVIDERS:
        raise CliError(f"unknown provider {provider!r}; choose one of: {', '.join(PROVIDERS)}")


async def run(ns: argparse.Namespace, opts: CommonOptions) -> int:
    """Print the table (or the payload); exit status 0."""
    provider: str | None = ns.provider
    if provider is not None:
        _check_provider(provider)
    tools = await load_tool_set(opts)
    try:
        rt = make_runtime(opts, tools.registry)
        if ns.json:
            from ..providers import tools_payload

            provider = provider or DEFAULT_JSON_PROVIDER
            payload = tools_payload(provider, rt.tools(provider=provider))
            sys.stdout.write(json_text(payload, indent=2) + "\n")
            return 0
        _render(rows(rt, provider), mode=rt.session.mode.value)
        return 0
    finally:
        await tools.aclose()


_HEADERS = ("TOOL", "KIND", "READ-ONLY", "CONCURRENCY-SAFE", "DESTRUCTIVE", "NOTE")


def _shown(row: Row) -> Row:
    """`row` with every cell on one line and nothing in it obeyed (an MCP server wrote some)."""
    return Row(*(terminal_text(cell, multiline=False) for cell in astuple(row)))


def plain_table(table: list[Row]) -> str:
    """Aligned columns with a header line, no colours or box drawing (for pipes and scripts)."""
    cells = [_HEADERS] + [
        (r.name, r.kind, r.read_only, r.concurrency_safe, r.destructive, r.note)
        for r in map(_shown, table)
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_HEADERS))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    return "\n".join(lines) + "\n"


def _render(table: list[Row], *, mode: str) -> None:
    out, _ = consoles()
    if not out.is_terminal:
        sys.stdout.write(plain_table(table))
        return
    table = [_shown(r) for r in table]
    from rich import box
    from rich.table import Table
    from rich.text import Text

    def flag(value: str, *, alarming: bool = False) -> Text:
        if value == DEPENDS:
            return Text(value, style="yellow")
        if value == "yes":
            return Text(value, style="red" if alarming else "green")
        return Text(value, style="dim")

    deferred = sum(1 for r in table if "deferred" in r.note)
    grid = Table(
        box=box.SIMPLE_HEAD,
        title=f"{len(table) - deferred} tools visible to the model (mode {mode})",
        caption="deferred tools stay hidden until the model finds them with tool_search"
        if deferred
        else None,
        header_style="bold",
    )
    # Every column but the description keeps its full width; the description gets what is
    # left of the terminal's width (rich would otherwise squeeze every column to a letter).
    columns = [
        ("Tool", [r.name for r in table], "bold cyan"),
        ("Kind", [r.kind for r in table], None),
        ("Read-only", [r.read_only for r in table], None),
        ("Concurrency safe", [r.concurrency_safe for r in table], None),
        ("Destructive", [r.destructive for r in table], None),
        ("Note", [r.note for r in table], "magenta"),
    ]
    widths = [max(len(c) for c in [header, *cells]) for header, cells, _ in columns]
    for (header, _, style), width in zip(columns, widths, strict=True):
        # Names never wrap; flags may ("depends / on input") on a narrow terminal.
        fixed = header in ("Tool", "Kind", "Note")
        grid.add_column(header, style=style, no_wrap=fixed, min_width=width if fixed else None)
    # Each column is padded by one space on each side; the box adds one at each edge.
    room = out.width - sum(w + 2 for w in widths) - 4
    show_description = room >= 20
    if show_description:
        grid.add_column("Description", no_wrap=True, overflow="ellipsis", max_width=room)
    for r in table:
        grid.add_row(
            Text(r.name),  # Text, not a string: no cell is read as rich markup
            r.kind,
            flag(r.read_only),
            flag(r.concurrency_safe),
            flag(r.destructive, alarming=True),
            Text(r.note),
            *([Text(r.description, style="dim")] if show_description else []),
        )
    out.print(grid)
