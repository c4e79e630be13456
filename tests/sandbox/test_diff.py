"""Unified diffs: correct hunks (they apply back), exact stats, linear trimming."""

from __future__ import annotations

import random
import re

from handrail.sandbox import diff_stat, unified_diff

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(old: str, patch: str) -> str:
    """Apply a unified diff produced by `unified_diff` (the test's own, minimal applier)."""
    src = old.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    lines = patch.splitlines(keepends=True)
    i = 2  # skip the ---/+++ header
    while i < len(lines):
        m = HUNK.match(lines[i])
        assert m, lines[i]
        start, count = int(m.group(1)), int(m.group(2) or "1")
        first = start - 1 if count else start  # an empty range names the line before it
        out.extend(src[pos:first])
        pos = first
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            body = line[1:]
            if nxt.startswith("\\ No newline"):
                body = body[:-1]
                i += 1
            if line.startswith(" "):
                assert src[pos] == body
                out.append(body)
                pos += 1
            elif line.startswith("-"):
                assert src[pos] == body
                pos += 1
            elif line.startswith("+"):
                out.append(body)
            i += 1
    out.extend(src[pos:])
    return "".join(out)


def count_changes(patch: str) -> tuple[int, int]:
    added = sum(1 for line in patch.splitlines()[2:] if line.startswith("+"))
    removed = sum(1 for line in patch.splitlines()[2:] if line.startswith("-"))
    return added, removed


def test_identical_texts_have_no_diff() -> None:
    assert unified_diff("a\nb\n", "a\nb\n", "f") == ""
    assert diff_stat("a\n", "a\n") == (0, 0)


def test_header_and_line_numbers_in_a_large_file() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 100_001))
    new = old.replace("line 50000\n", "line 50000 changed\nadded\n")
    patch = unified_diff(old, new, "big.txt")
    assert patch.startswith("--- a/big.txt\n+++ b/big.txt\n@@ -49997,7 +49997,8 @@\n")
    assert apply_patch(old, patch) == new
    assert diff_stat(old, new) == (2, 1)


def test_missing_final_newline_is_marked() -> None:
    patch = unified_diff("a\nb", "a\nc", "f")
    assert "\\ No newline at end of file" in patch
    assert apply_patch("a\nb", patch) == "a\nc"


def test_random_edits_apply_back_and_stats_match() -> None:
    rng = random.Random(1234)
    vocab = [f"w{i}\n" for i in range(6)]  # few distinct lines: many ambiguous alignments
    for _ in range(300):
        old_lines = [rng.choice(vocab) for _ in range(rng.randint(0, 40))]
        new_lines = list(old_lines)
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(["ins", "del", "rep"])
            at = rng.randint(0, len(new_lines))
            if op == "ins" or not new_lines:
                new_lines.insert(at, rng.choice(vocab))
            elif op == "del":
                del new_lines[min(at, len(new_lines) - 1)]
            else:
                new_lines[min(at, len(new_lines) - 1)] = rng.choice(vocab)
        old, new = "".join(old_lines), "".join(new_lines)
        if rng.random() < 0.2 and new:
            new = new[:-1]  # sometimes no final newline
        context = rng.randint(0, 3)
        patch = unified_diff(old, new, "f", context=context)
        assert apply_patch(old, patch) == new
        assert count_changes(patch) == diff_stat(old, new, context=context)
