"""The renderer's golden files: every status and body kind, groups and approvals, as users see them.

Rendered on 80 and 40 columns, with Unicode and ASCII glyphs, with colour (ANSI codes kept in
the file) and without, into `snapshots/render-<width>-<glyphs>-<colour>.txt`, compared exactly.
After an intended change, regenerate and review the diff:

    HANDRAIL_UPDATE_SNAPSHOTS=1 python -m pytest tests/agent/terminal -q -p no:cacheprovider
"""

from __future__ import annotations

import pytest

from ._cases import synthetic_cases
from ._golden import SCREENS, Screen, check


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: s.name)
def test_rendering_matches_the_golden_file(screen: Screen) -> None:
    check("render", screen, synthetic_cases())
