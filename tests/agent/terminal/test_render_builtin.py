"""Every built-in tool's display in every state, as the terminal draws it, in golden files.

The displays come from real calls (`tests/builtin/display_cases.py`); each is drawn with
`call_block`, the waiting ones also as an approval, the reads, searches and listings also as
a group's line. One file per screen under `snapshots/builtin-<width>-<glyphs>-<colour>.txt`
(80 or 40 columns, Unicode or ASCII, colour or none), compared exactly. When the tools'
displays change on purpose, regenerate and review the diff:

    HANDRAIL_UPDATE_SNAPSHOTS=1 python -m pytest tests/agent/terminal -q -p no:cacheprovider
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from rich.cells import cell_len

from handrail.agent._terminal._render import (
    Glyphs,
    call_block,
    group_block,
    group_line,
)
from handrail.display import CallStatus, Display

from ._cases import approval
from ._golden import SCREENS, Build, Case, Screen, check

CASES_FILE = Path(__file__).parents[2] / "builtin" / "display_cases.py"


def _load_cases() -> ModuleType:
    # The test folders are not packages: load the shared table by its path, under the name
    # tests/builtin/test_displays.py uses, so one module object serves both.
    name = "handrail_tests_display_cases"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CASES_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def displays(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[str, Display]]]:
    """The built-in tools' displays, made once for every screen."""
    tmp = tmp_path_factory.mktemp("display-cases")
    with pytest.MonkeyPatch.context() as mp:
        # Sub-agent definitions, transcripts and settings from this folder only.
        mp.setenv("HANDRAIL_STATE_DIR", str(tmp / "state"))
        mp.setenv("XDG_CONFIG_HOME", str(tmp / "config"))
        yield asyncio.run(_load_cases().display_cases(tmp))


def _block(d: Display) -> Build:
    return lambda g: call_block(d, g)


def _approval(d: Display) -> Build:
    reason = f"{d.tool_name} asks before it runs in default mode"
    return lambda g: approval(d, g, reason=reason, rules=(d.tool_name,), save=False)


def _group(ds: list[Display]) -> Build:
    return lambda g: group_line(ds, g)


def _group_block(ds: list[Display]) -> Build:
    return lambda g: group_block(ds, g, expanded=True)


def builtin_cases(displays: list[tuple[str, Display]]) -> list[Case]:
    """The golden files' cases, in the table's order, then the groups."""
    cases: list[Case] = []
    for case, d in displays:
        cases.append((case, _block(d)))
        if d.status is CallStatus.WAITING:
            cases.append((f"{case}/approval", _approval(d)))
        if d.group.collapsible:
            cases.append((f"{case}/group-line", _group([d])))
    # Runs of reads, searches and listings, one per status, as a line and expanded.
    for status in CallStatus:
        run = [d for _, d in displays if d.group.collapsible and d.status is status]
        if len(run) > 1:
            cases.append((f"group/{status.value}", _group(run)))
            cases.append((f"group/{status.value}/expanded", _group_block(run)))
    return cases


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: s.name)
def test_builtin_displays_match_the_golden_file(
    screen: Screen, displays: list[tuple[str, Display]]
) -> None:
    check("builtin", screen, builtin_cases(displays))


@pytest.mark.parametrize("ascii", [False, True])
def test_builtin_displays_fit_40_columns(ascii: bool, displays: list[tuple[str, Display]]) -> None:
    screen = Screen(40, ascii=ascii, color=False)
    g: Glyphs = screen.glyphs
    for case, build in builtin_cases(displays):
        out = screen.render(build(g))
        for line in out.splitlines():
            assert cell_len(line) <= 40, f"{case}: {line!r}"
        if ascii:
            assert out.isascii(), f"{case}: {sorted({c for c in out if not c.isascii()})}"
