"""Golden files for the terminal's rendering: what users see, compared exactly.

Each suite writes one file per screen (80 or 40 columns, Unicode or ASCII glyphs, colour or
none) under `snapshots/`, its cases one after another under `=== case ===` headers. Colour
files hold the ANSI codes: `cat` them in a terminal to see them as users do.

After an intended change, regenerate and review the diff like code:

    HANDRAIL_UPDATE_SNAPSHOTS=1 python -m pytest tests/agent/terminal -q -p no:cacheprovider
"""

from __future__ import annotations

import difflib
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, RenderableType

from handrail.agent._terminal._render import Glyphs, glyphs

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("HANDRAIL_UPDATE_SNAPSHOTS") == "1"

Build = Callable[[Glyphs], RenderableType]
"""How to build a case's renderable with a glyph set."""
Case = tuple[str, Build]
"""A case's id and its builder."""


@dataclass(frozen=True)
class Screen:
    """A terminal to render on."""

    width: int
    ascii: bool
    color: bool

    @property
    def name(self) -> str:
        glyph_set = "ascii" if self.ascii else "unicode"
        return f"{self.width}-{glyph_set}-{'color' if self.color else 'plain'}"

    @property
    def glyphs(self) -> Glyphs:
        return glyphs(self.ascii)

    def console(self, environ: dict[str, str] | None = None) -> Console:
        # _environ: NO_COLOR, COLUMNS or FORCE_COLOR in the test's own environment must not
        # change what is rendered.
        return Console(
            file=io.StringIO(),
            width=self.width,
            height=25,
            record=True,
            force_terminal=True,
            color_system="standard" if self.color else None,
            legacy_windows=False,
            _environ=environ or {},
        )

    def render(self, renderable: RenderableType) -> str:
        """The text a recording console exports (with ANSI codes when `color`)."""
        console = self.console()
        console.print(renderable)
        return console.export_text(styles=self.color)

    def written(self, renderable: RenderableType, environ: dict[str, str]) -> str:
        """The bytes the terminal receives, under `environ` (where `NO_COLOR` takes effect)."""
        console = self.console(environ)
        console.print(renderable)
        file = console.file
        assert isinstance(file, io.StringIO)
        return file.getvalue()


SCREENS = [Screen(w, a, c) for w in (80, 40) for a in (False, True) for c in (False, True)]


def check(suite: str, screen: Screen, cases: Sequence[Case]) -> None:
    """Render `cases` on `screen` and compare with (or, when updating, write) the golden file."""
    actual = {case: screen.render(build(screen.glyphs)) for case, build in cases}
    path = SNAPSHOTS / f"{suite}-{screen.name}.txt"
    text = "".join(f"=== {case} ===\n{out}\n" for case, out in actual.items())
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as f:
            f.write(text)
        return
    assert path.exists(), f"{path} is missing: run with HANDRAIL_UPDATE_SNAPSHOTS=1"
    with path.open(encoding="utf-8", newline="") as f:
        expected = parse(f.read())
    assert list(actual) == list(expected), f"{path.name}: cases differ; regenerate and review"
    for case, out in actual.items():
        if out != expected[case]:
            diff = difflib.unified_diff(
                expected[case].splitlines(), out.splitlines(), "golden", "now", lineterm=""
            )
            raise AssertionError(
                f"{path.name}: case {case!r} renders differently:\n" + "\n".join(diff)
            )


def parse(text: str) -> dict[str, str]:
    """A golden file's cases by id."""
    cases: dict[str, str] = {}
    case: str | None = None
    lines: list[str] = []
    for line in text.split("\n"):
        if line.startswith("=== ") and line.endswith(" ==="):
            if case is not None:
                cases[case] = "\n".join(lines[:-1]) + "\n"  # the blank line between cases
            case, lines = line[4:-4], []
        else:
            lines.append(line)
    if case is not None:
        cases[case] = "\n".join(lines[:-2]) + "\n"  # the blank line and the file's last "\n"
    return cases
