"""Shared by the integration tests: the README's examples, which the tests run as written."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"


@pytest.fixture
def readme_block() -> Callable[[str], str]:
    """The README's one Python block that contains `marker` (the README is the source)."""

    def find(marker: str) -> str:
        text = README.read_text(encoding="utf-8")
        blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
        found = [b for b in blocks if marker in b]
        assert len(found) == 1, f"README.md has {len(found)} Python blocks with {marker!r}"
        return found[0]

    return find
