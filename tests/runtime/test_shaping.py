"""Stage 8's text: an oversized result cut to head + marker + tail, and non-text values."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.runtime._shaping import to_text, truncate


@pytest.mark.parametrize(
    ("content", "omitted"),
    [
        ("x" * 5_000, "(0 lines)"),  # one long line
        ("a" * 3_000 + "\n" + "b" * 3_000, "(1 line)"),  # the one newline is in the middle
        ("line\n" * 1_000, "({n} lines)"),
    ],
    ids=["no-line", "one-line", "many-lines"],
)
def test_the_marker_counts_in_words_that_agree_and_fits_the_limit(
    tmp_path: Path, content: str, omitted: str
) -> None:
    limit = 1_000
    shaped, meta = truncate(content, limit, tool="t", call_id="c1", results_dir=tmp_path)
    assert len(shaped) <= limit
    marker = shaped[shaped.index("[...") : shaped.index("...]") + 4]
    words = omitted.format(n=meta["omitted_lines"])
    assert f"[... {meta['omitted_chars']} characters {words} omitted." in marker
    assert (tmp_path / "t-c1.txt").read_text() == content


def test_binary_data_is_described_with_its_size() -> None:
    assert to_text(b"\xff") == "(1 byte of binary data)"
    assert to_text(b"\xff\xfe") == "(2 bytes of binary data)"
