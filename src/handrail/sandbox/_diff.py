"""Unified diffs that stay linear for the usual change (one region of a large file).

Common leading and trailing lines are found with slice comparisons (memcmp speed) first;
only the differing middle goes through difflib, whose matcher is quadratic in the worst case.
"""

from __future__ import annotations

import difflib

__all__ = ["diff_stat", "unified_diff"]


def _common_prefix_lines(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # largest k with a[:k] == b[:k], by bisection over slice comparisons
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix_lines(a: list[str], b: list[str], prefix: int) -> int:
    n = min(len(a), len(b)) - prefix
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _trim(a: list[str], b: list[str], context: int) -> tuple[int, list[str], list[str]]:
    prefix = _common_prefix_lines(a, b)
    suffix = _common_suffix_lines(a, b, prefix)
    start = max(prefix - context, 0)
    end_a = len(a) - max(suffix - context, 0)
    end_b = len(b) - max(suffix - context, 0)
    return start, a[start:end_a], b[start:end_b]


def unified_diff(old: str, new: str, path: str, *, context: int = 3) -> str:
    """A unified diff of two texts (`--- a/path`, `+++ b/path`), empty when they are equal."""
    if old == new:
        return ""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    start, mid_a, mid_b = _trim(a, b, context)
    lines = list(
        difflib.unified_diff(mid_a, mid_b, f"a/{path}", f"b/{path}", n=context, lineterm="\n")
    )
    out: list[str] = []
    for line in lines:
        if line.startswith("@@") and start:
            # Shift the hunk header's line numbers by the lines trimmed above.
            head, _, rest = line.partition(" @@")
            _, old_part, new_part = head.split(" ")
            out.append(f"@@ {_shift(old_part, start)} {_shift(new_part, start)} @@{rest}")
        else:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _shift(part: str, by: int) -> str:
    sign, nums = part[0], part[1:]
    first, _, count = nums.partition(",")
    shifted = int(first) + by  # for an empty range the number is the line before it
    return f"{sign}{shifted}" + (f",{count}" if count else "")


def diff_stat(old: str, new: str, *, context: int = 3) -> tuple[int, int]:
    """(lines added, lines removed): counted from the diff `unified_diff` shows, so they agree."""
    added = removed = 0
    for line in unified_diff(old, new, "x", context=context).splitlines()[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed
