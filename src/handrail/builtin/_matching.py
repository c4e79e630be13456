"""The text side of edit_file, as pure functions on strings: find, replace, explain, diff.

Finding climbs a ladder and stops at the first rung where the old text occurs:

1. `exact`;
2. `line_endings`: CRLF and LF read alike (and a lone CR too, in a file whose lines end in CR),
   and U+FEFF (a byte-order mark) is ignored;
3. `typography`: also typographic quotes, dashes and unusual spaces read as `'`, `"`, `-`, ` `;
4. `trailing_whitespace`: also whitespace at the end of lines is ignored.

Rungs 2-4 search normalised copies of the file and of the old text, then map what they found back
to the file's own positions, so no byte outside the matched text is touched. There is no
edit-distance rung: a near miss is reported (`similar_region`), never applied.

Replacing keeps what the model did not change. Old and new text are compared at the rung's
normalisation (never looser than line endings); their common head and tail keep the file's own
characters (its CRLFs, curly quotes, trailing spaces), and only the part in between comes from the
new text, with its line breaks turned into the file's and, on rungs 3-4, its quotes restyled
the way the matched region writes them.

Line numbers follow read_file: CRLF and LF end a line in every file, a lone CR only in a file
whose dominant line ending is CR.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from rapidfuzz import fuzz, process

__all__ = [
    "MAX_LISTED",
    "PARTIAL_SCAN_LINES",
    "RUNGS",
    "Applied",
    "Change",
    "Diff",
    "EditError",
    "EditSpec",
    "Found",
    "Rung",
    "Similar",
    "apply_edits",
    "diff_changes",
    "escaped_twice",
    "find",
    "line_numbers",
    "looks_numbered",
    "restyle_quotes",
    "similar_region",
    "strip_numbers",
]

Rung = Literal["exact", "line_endings", "typography", "trailing_whitespace"]
RUNGS: Final[tuple[Rung, ...]] = ("exact", "line_endings", "typography", "trailing_whitespace")

PARTIAL_SCAN_LINES: Final = 200_000
"""Up to this many lines, a one-line old text is also compared with parts of lines (a slower
scan, about 1.5 us a line); beyond, only with whole lines, to keep a miss in a huge file quick."""
MAX_LISTED: Final = 1000
"""Occurrences counted one by one for an ambiguity report; beyond that it says "at least"."""

_EOL = re.compile("\r\n|\ufeff+")
_EOL_CR = re.compile("\r\n?|\ufeff+")
_BREAK = re.compile("\r\n|\n")
_BREAK_CR = re.compile("\r\n?|\n")
_TRAILING = re.compile(r"[ \t\f\v\r]+(?=\n|\Z)")
_TYPO_TABLE: Final[dict[str, str]] = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys(
        "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
        "\u202f\u205f\u3000",
        " ",
    ),
}
_TYPO = re.compile("[" + "".join(_TYPO_TABLE) + "]")
_CURLY_DOUBLE = "\u201c\u201d"
_CURLY_SINGLE = "\u2018\u2019"
_OPENERS = frozenset("([{<\u2014\u2013-/\u201c\u2018")
_NUMBERED = re.compile(r"^\s*\d+(?:\t|\u2192| \| |: )")


# -- normalisation with a way back ------------------------------------------------------------


class _Map:
    """Positions in a normalised text -> positions in the text it was made from.

    Anchors `(out, in)` mark where lengths differ (a CRLF became one LF, trailing spaces
    vanished); between anchors the two texts advance together. A position next to text that
    vanished has two readings: `lo` (before that text) and `hi` (after it).
    """

    __slots__ = ("ins", "outs")

    def __init__(self) -> None:
        self.outs: list[int] = []
        self.ins: list[int] = []

    def lo(self, p: int) -> int:
        i = bisect.bisect_left(self.outs, p)
        if i < len(self.outs) and self.outs[i] == p:
            return self.ins[i]
        return p if i == 0 else self.ins[i - 1] + (p - self.outs[i - 1])

    def hi(self, p: int) -> int:
        j = bisect.bisect_right(self.outs, p)
        return p if j == 0 else self.ins[j - 1] + (p - self.outs[j - 1])


Side = Literal["lo", "hi"]
_Back = Callable[[int, Side], int]


def _identity(p: int, side: Side) -> int:
    return p


class _CrlfMap:
    """The way back from CRLF -> LF (lone CRs kept, or turned into LF one for one).

    Nothing is built up front: a position `p` of the LF text is `p + k` in the original, where
    `k` counts the CRLFs before it; `k` is found by counting CRLFs (at C speed) up to the
    current estimate until no new ones appear, which takes a handful of rounds.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def lo(self, p: int) -> int:
        text = self.text
        k = text.count("\r\n", 0, p)  # CRLFs ending at or before p
        start, o = p, p + k
        while True:
            # CRLFs ending after `start` and by `o` (one may begin just before `start`).
            more = text.count("\r\n", max(start - 1, 0), o)
            if not more:
                # Right after a CRLF's LF, `o` also solves the count between its CR and LF.
                return o + 1 if text[o - 1 : o + 1] == "\r\n" else o
            k += more
            start, o = o, p + k

    hi = lo


def _compose(*maps: _Map | _CrlfMap | None) -> _Back:
    """Map a position through `maps` (innermost normalisation last) back to the original."""
    chain = [m for m in maps if m is not None]
    if not chain:
        return _identity

    def back(p: int, side: Side) -> int:
        for m in reversed(chain):
            p = m.lo(p) if side == "lo" else m.hi(p)
        return p

    return back


def _rewrite(
    text: str, pattern: re.Pattern[str], repl: Callable[[str], str]
) -> tuple[str, _Map | None]:
    """`pattern.sub` that also records how to map positions back."""
    parts: list[str] = []
    m = _Map()
    last = out = 0
    for found in pattern.finditer(text):
        s, e = found.span()
        parts.append(text[last:s])
        out += s - last
        m.outs.append(out)
        m.ins.append(s)
        rep = repl(found.group())
        parts.append(rep)
        out += len(rep)
        m.outs.append(out)
        m.ins.append(e)
        last = e
    if not m.outs:
        return text, None
    parts.append(text[last:])
    return "".join(parts), m


def _eol_rep(s: str) -> str:
    return "" if s[0] == "\ufeff" else "\n"


def _eol(text: str, cr_breaks: bool) -> tuple[str, _Map | _CrlfMap | None]:
    """Line breaks as LF, U+FEFF dropped."""
    if "\r" not in text and "\ufeff" not in text:
        return text, None
    if "\ufeff" in text:
        return _rewrite(text, _EOL_CR if cr_breaks else _EOL, _eol_rep)
    # The usual case, at C speed: CRLF -> LF (and a lone CR -> LF, one for one).
    flat = text.replace("\r\n", "\n")
    if cr_breaks:
        flat = flat.replace("\r", "\n")
    if len(flat) == len(text):
        return flat, None
    return flat, _CrlfMap(text)


def _typo(text: str) -> str:
    """Typographic quotes, dashes and spaces as ASCII (one character for one)."""
    if text.isascii() or _TYPO.search(text) is None:  # isascii() is O(1) on CPython
        return text
    return _TYPO.sub(lambda m: _TYPO_TABLE[m.group()], text)


_TRAILING_HINTS = (" \n", "\t\n", "\r\n", "\f\n", "\v\n")


def _trailing(text: str) -> tuple[str, _Map | None]:
    """Whitespace before a line break or the end dropped."""
    if not text.endswith((" ", "\t", "\r", "\f", "\v")) and not any(
        h in text for h in _TRAILING_HINTS
    ):
        return text, None  # substring searches are much faster than the regex scan
    return _rewrite(text, _TRAILING, lambda s: "")


def _normalise(text: str, level: int, cr_breaks: bool) -> tuple[str, _Back]:
    """`text` at rung `level` (index into RUNGS), and the way back."""
    if level == 0:
        return text, _identity
    flat, m1 = _eol(text, cr_breaks)
    if level >= 2:
        flat = _typo(flat)
    m2: _Map | None = None
    if level >= 3:
        flat, m2 = _trailing(flat)
    return flat, _compose(m1, m2)


# -- finding ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    """Where the old text occurs, on the first rung where it occurs at all."""

    rung: Rung
    regions: tuple[tuple[int, int], ...]
    """Matched regions in the file's own positions: every occurrence, overlapping ones too (at
    most `limit`), or for replace_all the non-overlapping ones, left to right."""
    inside_earlier: int
    """Occurrences left out because they touch text an earlier edit of the batch inserted."""
    more: bool = False
    """Counting stopped at the limit with more occurrences left."""


def _ladder(text: str, old: str, cr_breaks: bool) -> Iterator[tuple[Rung, str, str, _Back, bool]]:
    """The rungs to try, lazily: (rung, file text, old text, way back, must end a line).

    A rung that would search exactly what the rung before it searched is skipped.
    """
    yield "exact", text, old, _identity, False
    f2, m1 = _eol(text, cr_breaks)
    o2, _ = _eol(old, cr_breaks)
    back = _compose(m1)
    if f2 != text or o2 != old:
        yield "line_endings", f2, o2, back, False
    f3, o3 = _typo(f2), _typo(o2)
    if f3 is not f2 or o3 != o2:
        yield "typography", f3, o3, back, False
    f4, m2 = _trailing(f3)
    o4, _ = _trailing(o3)
    if o4 and (m2 is not None or o4 != o3):
        # Whitespace at the very end of the old text was dropped as if a line ended there:
        # then a line must end there in the file too.
        yield "trailing_whitespace", f4, o4, _compose(m1, m2), o3[-1] in " \t\f\v\r"


def _touches(regions: Sequence[tuple[int, int]], starts: Sequence[int], a: int, b: int) -> int:
    """Index of a region that [a, b) overlaps (an empty region: lies strictly inside), or -1.

    `regions` are sorted and never contain one another, so their ends are sorted too.
    """
    i = bisect.bisect_left(starts, b)  # regions[:i] start before b
    if i == 0:
        return -1
    x, y = regions[i - 1]
    if y > x:
        return i - 1 if y > a else -1
    return i - 1 if a < x else -1


def find(
    text: str,
    old: str,
    *,
    cr_breaks: bool = False,
    replace_all: bool = False,
    avoid: Sequence[tuple[int, int]] = (),
    limit: int = MAX_LISTED,
) -> Found | None:
    """Occurrences of `old` in `text` on the first rung with any; None when there are none.

    `avoid` holds sorted, disjoint regions inserted by earlier edits of a batch: occurrences
    touching them are counted in `inside_earlier` but not returned, and the ladder stops at the
    first rung with any occurrence, kept or not.
    """
    if not old:
        return None
    starts = [x for x, _ in avoid]
    for rung, hay, needle, back, at_eol in _ladder(text, old, cr_breaks):
        n = len(needle)
        if not n:
            continue
        regions: list[tuple[int, int]] = []
        earlier = 0
        more = False
        i = hay.find(needle)
        while i != -1:
            j = i + n
            if rung == "exact":
                # An LF old text must not split a CRLF of the file (rung 2 takes the pair).
                skip = (i > 0 and needle[0] == "\n" and text[i - 1] == "\r") or (
                    needle[-1] == "\r" and text[j : j + 1] == "\n"
                )
            else:
                skip = at_eol and j < len(hay) and hay[j] != "\n"
            if skip:
                i = hay.find(needle, i + 1)
                continue
            a, b = back(i, "hi"), back(j, "lo")
            if avoid and _touches(avoid, starts, a, b) >= 0:
                earlier += 1
                i = hay.find(needle, i + 1)
                continue
            regions.append((a, b))
            if not replace_all and len(regions) >= limit:
                more = hay.find(needle, i + 1) != -1
                break
            i = hay.find(needle, j if replace_all else i + 1)
        if regions or earlier:
            return Found(rung=rung, regions=tuple(regions), inside_earlier=earlier, more=more)
    return None


# -- replacing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Replacement:
    start: int
    end: int
    text: str
    region: tuple[int, int]


_CHUNK = 4096


def _head(a: str, b: str, n: int) -> int:
    """Length of the common head of `a` and `b`, at most `n` (chunks compare at memcmp speed)."""
    p = 0
    while p < n:
        q = min(p + _CHUNK, n)
        if a[p:q] != b[p:q]:
            while a[p] == b[p]:
                p += 1
            return p
        p = q
    return n


def _tail(a: str, b: str, n: int) -> int:
    """Length of the common tail of `a` and `b`, at most `n`."""
    la, lb = len(a), len(b)
    s = 0
    while s < n:
        t = min(s + _CHUNK, n)
        if a[la - t : la - s] != b[lb - t : lb - s]:
            while a[la - 1 - s] == b[lb - 1 - s]:
                s += 1
            return s
        s = t
    return n


def _common(a: str, b: str) -> tuple[int, int]:
    """Lengths of the common head and (not overlapping it) tail of two strings."""
    p = _head(a, b, min(len(a), len(b)))
    return p, _tail(a, b, min(len(a), len(b)) - p)


def _newlines(s: str, newline: str, cr_breaks: bool) -> str:
    """`s` with every line break written as `newline`."""
    if "\r" not in s and newline == "\n":
        return s
    return (_BREAK_CR if cr_breaks else _BREAK).sub(newline, s)


def _style(region: str, straight: str, curly: str) -> Literal["curly", "straight"] | None:
    has_curly = any(c in region for c in curly)
    has_straight = straight in region
    if has_curly and not has_straight:
        return "curly"
    if has_straight and not has_curly:
        return "straight"
    return None


def _opens(prev: str) -> bool:
    return not prev or prev.isspace() or prev in _OPENERS


def restyle_quotes(s: str, region: str, before: str = "", after: str = "") -> str:
    """`s` with its quotes written the way `region` writes them.

    Curly if `region` uses only curly ones of that kind (double, single), straight if it uses
    only straight ones; a kind `region` mixes or lacks is left alone.
    """
    doubles = _style(region, '"', _CURLY_DOUBLE)
    singles = _style(region, "'", _CURLY_SINGLE)
    if doubles is None and singles is None:
        return s
    out: list[str] = []
    prev = before
    for k, ch in enumerate(s):
        if ch == '"' and doubles == "curly":
            ch = "\u201c" if _opens(prev) else "\u201d"
        elif ch in _CURLY_DOUBLE and doubles == "straight":
            ch = '"'
        elif ch == "'" and singles == "curly":
            nxt = s[k + 1] if k + 1 < len(s) else after
            if prev.isalnum() and nxt.isalpha():
                ch = "\u2019"  # an apostrophe: don't, it's
            else:
                ch = "\u2018" if _opens(prev) else "\u2019"
        elif ch in _CURLY_SINGLE and singles == "straight":
            ch = "'"
        out.append(ch)
        prev = ch
    return "".join(out)


def _plan(
    text: str,
    found: Found,
    old: str,
    new: str,
    *,
    newline: str,
    cr_breaks: bool,
) -> list[_Replacement]:
    """What to put where, for every matched region (see the module docstring)."""
    level = max(RUNGS.index(found.rung), 1)
    o_n, _ = _normalise(old, level, cr_breaks)
    w_n, w_back = _normalise(new, level, cr_breaks)
    p, s = _common(o_n, w_n)
    w0 = w_back(p, "hi")
    w_mid = _newlines(new[w0 : max(w0, w_back(len(w_n) - s, "lo"))], newline, cr_breaks)
    restyle = level >= RUNGS.index("typography")
    out: list[_Replacement] = []
    for rs, re_ in found.regions:
        region = text[rs:re_]
        r_n, r_back = _normalise(region, level, cr_breaks)
        if r_n == o_n:
            a = r_back(p, "lo")
            b = max(a, r_back(len(r_n) - s, "lo"))
            mid = w_mid
        else:  # cannot happen for a region `find` returned; replace it whole rather than guess
            a, b = 0, len(region)
            mid = _newlines(new, newline, cr_breaks)
        if restyle:
            before = text[rs + a - 1] if rs + a > 0 else ""
            mid = restyle_quotes(mid, region, before, text[rs + b : rs + b + 1])
        out.append(_Replacement(start=rs + a, end=rs + b, text=mid, region=(rs, re_)))
    return out


# -- a batch of edits -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EditSpec:
    """One replacement: `old` -> `new`, once or everywhere."""

    old: str
    new: str
    replace_all: bool = False


@dataclass(frozen=True, slots=True)
class Change:
    """One changed span: `old[old_start:old_end]` became `new[new_start:new_end]`."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int


@dataclass(frozen=True, slots=True)
class Applied:
    """A batch applied in memory."""

    text: str
    rungs: tuple[Rung, ...]
    """The rung each edit matched on."""
    counts: tuple[int, ...]
    """Occurrences each edit replaced."""
    changes: tuple[Change, ...]
    """Every changed span, sorted and disjoint, in both texts' positions."""


@dataclass(frozen=True, slots=True)
class EditError:
    """Why edit `index` of a batch cannot be applied (nothing is applied then)."""

    index: int
    kind: Literal["not_found", "ambiguous", "inside_earlier"]
    rung: Rung | None = None
    positions: tuple[int, ...] = ()
    """Start of each occurrence, in the original text's positions."""
    more: bool = False
    """More occurrences than `positions` lists."""
    earlier: int = -1
    """For `inside_earlier`: the edit whose new text holds the old text."""


def _back_to_original(changes: Sequence[Change], pos: int) -> int:
    """A position of the edited text, in the original (inside a change: where it starts)."""
    delta = 0
    for c in changes:
        if pos < c.new_start:
            break
        if pos < c.new_end:
            return c.old_start
        delta = c.new_end - c.old_end
    return pos - delta


def _fold(
    changes: list[Change], reps: Sequence[_Replacement]
) -> tuple[list[Change], list[tuple[int, int]]]:
    """Fold one edit's replacements (in current positions) into the batch's changes.

    Also returns where that edit's matched regions lie once it is applied.
    """
    out: list[Change] = []
    regions: list[tuple[int, int]] = []
    shift = 0  # growth of the current text from this edit, so far
    back = 0  # current minus original position, from earlier edits, at the cursor
    k = 0
    for r in reps:
        while k < len(changes) and changes[k].new_end <= r.start:
            c = changes[k]
            out.append(Change(c.old_start, c.old_end, c.new_start + shift, c.new_end + shift))
            back = c.new_end - c.old_end
            k += 1
        grow = len(r.text) - (r.end - r.start)
        rs, re_ = r.region
        regions.append((rs + shift, re_ + shift + grow))
        out.append(
            Change(r.start - back, r.end - back, r.start + shift, r.start + shift + len(r.text))
        )
        shift += grow
    for c in changes[k:]:
        out.append(Change(c.old_start, c.old_end, c.new_start + shift, c.new_end + shift))
    return out, regions


def _shift(
    inserted: list[tuple[int, int, int]], reps: Sequence[_Replacement]
) -> list[tuple[int, int, int]]:
    """Move earlier edits' regions past this edit's replacements (they never overlap)."""
    ends = [r.end for r in reps]
    grows: list[int] = []
    total = 0
    for r in reps:
        total += len(r.text) - (r.end - r.start)
        grows.append(total)
    out: list[tuple[int, int, int]] = []
    for x, y, owner in inserted:
        i = bisect.bisect_right(ends, x)
        d = grows[i - 1] if i else 0
        out.append((x + d, y + d, owner))
    return out


def apply_edits(
    text: str, edits: Sequence[EditSpec], *, newline: str = "\n", cr_breaks: bool = False
) -> Applied | EditError:
    """Apply `edits` in order, in memory: all of them, or an error for the first that fails.

    Each old text must occur in the text as the earlier edits left it, but not in text one of
    them put there (its whole matched region): an old text found only there is refused
    (`inside_earlier`), and occurrences there do not count.
    """
    current = text
    changes: list[Change] = []
    inserted: list[tuple[int, int, int]] = []  # (start, end, edit index), sorted
    rungs: list[Rung] = []
    counts: list[int] = []
    for index, edit in enumerate(edits):
        avoid = [(x, y) for x, y, _ in inserted]
        found = find(
            current, edit.old, cr_breaks=cr_breaks, replace_all=edit.replace_all, avoid=avoid
        )
        if found is None:
            return EditError(index=index, kind="not_found")
        if not found.regions:
            return _inside_earlier(index, current, edit.old, cr_breaks, changes, inserted)
        if len(found.regions) > 1 and not edit.replace_all:
            return EditError(
                index=index,
                kind="ambiguous",
                rung=found.rung,
                positions=tuple(_back_to_original(changes, a) for a, _ in found.regions),
                more=found.more,
            )
        reps = _plan(current, found, edit.old, edit.new, newline=newline, cr_breaks=cr_breaks)
        pieces: list[str] = []
        last = 0
        for r in reps:
            pieces.append(current[last : r.start])
            pieces.append(r.text)
            last = r.end
        pieces.append(current[last:])
        current = "".join(pieces)
        changes, regions = _fold(changes, reps)
        inserted = sorted([*_shift(inserted, reps), *((x, y, index) for x, y in regions)])
        rungs.append(found.rung)
        counts.append(len(found.regions))
    # A replacement that wrote back what was there changed nothing.
    real = tuple(
        c for c in changes if text[c.old_start : c.old_end] != current[c.new_start : c.new_end]
    )
    return Applied(text=current, rungs=tuple(rungs), counts=tuple(counts), changes=real)


def _inside_earlier(
    index: int,
    current: str,
    old: str,
    cr_breaks: bool,
    changes: Sequence[Change],
    inserted: Sequence[tuple[int, int, int]],
) -> EditError:
    found = find(current, old, cr_breaks=cr_breaks, limit=20)
    regions = found.regions if found is not None else ()
    owner = -1
    if regions:
        avoid = [(x, y) for x, y, _ in inserted]
        hit = _touches(avoid, [x for x, _ in avoid], *regions[0])
        owner = inserted[hit][2] if hit >= 0 else -1
    return EditError(
        index=index,
        kind="inside_earlier",
        rung=found.rung if found is not None else None,
        positions=tuple(_back_to_original(changes, a) for a, _ in regions),
        earlier=owner,
    )


# -- explaining -------------------------------------------------------------------------------


def _breaks(text: str, start: int, end: int, cr_breaks: bool) -> int:
    n = text.count("\n", start, end)
    if cr_breaks:
        n += text.count("\r", start, end) - text.count("\r\n", start, end)
    return n


def line_numbers(text: str, positions: Sequence[int], *, cr_breaks: bool = False) -> list[int]:
    """The 1-based line of each position (sorted ascending), as read_file numbers lines."""
    out: list[int] = []
    line, last = 1, 0
    for pos in positions:
        if cr_breaks and 0 < pos < len(text) and text[pos - 1] == "\r" and text[pos] == "\n":
            pos += 1  # inside a CRLF: the pair counts once, as a whole
        line += _breaks(text, last, pos, cr_breaks)
        last = pos
        out.append(line)
    return out


def _lines(text: str, cr_breaks: bool) -> list[str]:
    flat = text.replace("\r\n", "\n")
    if cr_breaks:
        flat = flat.replace("\r", "\n")
    lines = flat.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass(frozen=True, slots=True)
class Similar:
    """The part of a file most like an old text that was not found."""

    first_line: int
    lines: tuple[str, ...]
    """The file's lines there, as read_file shows them."""
    total_lines: int
    """How many lines the similar part spans (`lines` may show fewer)."""
    score: float
    """Similarity, 0-100."""
    whitespace_only: bool
    """Identical once each line's leading and trailing whitespace is ignored."""


def similar_region(
    text: str, old: str, *, cr_breaks: bool = False, max_lines: int = 12, cutoff: float = 50
) -> Similar | None:
    """The lines of `text` most like `old` (as many lines as `old` has), if any come close.

    Candidates come from the most distinctive lines of `old` (rapidfuzz over every line of the
    file, so a large file costs one linear pass per candidate line); each candidate window is
    then scored as a whole.
    """
    file_lines = _lines(text, cr_breaks)
    if not file_lines:
        return None
    typo = _typo(text)
    plain = [line.strip() for line in (file_lines if typo is text else _lines(typo, cr_breaks))]
    wanted = [line.strip() for line in _lines(_typo(old), cr_breaks)]
    while wanted and not wanted[0]:
        wanted.pop(0)
    while wanted and not wanted[-1]:
        wanted.pop()
    if not wanted:
        return None
    m = len(wanted)
    # One line may be a fragment of a longer line: score it against its best-aligned part, but
    # never let a short line score by being a fragment of the old text.
    score_of = _fragment_score if m == 1 else fuzz.ratio
    anchors = sorted(range(m), key=lambda k: -len(wanted[k]))[:3]
    starts: set[int] = set()
    for k in anchors:
        if not wanted[k]:
            continue
        found = process.extract(wanted[k], plain, scorer=fuzz.ratio, limit=5)
        if m == 1 and len(plain) <= PARTIAL_SCAN_LINES:
            found += process.extract(wanted[k], plain, scorer=fuzz.partial_ratio, limit=20)
        for _, _, idx in found:
            starts.add(min(max(idx - k, 0), max(len(plain) - m, 0)))
    target = "\n".join(wanted)
    best: tuple[float, int] | None = None
    for s in sorted(starts):
        score = score_of(target, "\n".join(plain[s : s + m]))
        if best is None or score > best[0]:
            best = (score, s)
    if best is None or best[0] < cutoff:
        return None
    score, s = best
    window = file_lines[s : s + m]
    return Similar(
        first_line=s + 1,
        lines=tuple(window[:max_lines]),
        total_lines=len(window),
        score=score,
        whitespace_only=plain[s : s + m] == wanted,
    )


def _fragment_score(query: str, line: str) -> float:
    if len(line) >= len(query):
        return fuzz.partial_ratio(query, line)
    return fuzz.ratio(query, line)


def looks_numbered(old: str) -> bool:
    """Does every non-blank line start like read_file's `N<TAB>` prefix (or a similar one)?"""
    lines = [line for line in old.splitlines() if line.strip()]
    return bool(lines) and all(_NUMBERED.match(line) for line in lines)


def strip_numbers(old: str) -> str:
    """`old` without line-number prefixes."""
    return "\n".join(_NUMBERED.sub("", line, count=1) for line in old.split("\n"))


def escaped_twice(text: str, old: str, *, cr_breaks: bool = False) -> bool:
    r"""Would `old` occur with its literal `\n`, `\t`, `\"` turned into the characters?

    A model that escaped its JSON twice sends a backslash and an `n` for a line break.
    """
    if "\\" not in old:
        return False
    plain = old.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"').replace("\\'", "'")
    return plain != old and find(text, plain, cr_breaks=cr_breaks, limit=1) is not None


# -- the diff of a change ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Diff:
    """Unified-diff hunks of a change, with its line counts."""

    hunks: tuple[str, ...]
    """Lines of the hunks (`@@ ... @@`, ` `, `-`, `+`, `\\ No newline at end of file`)."""
    added: int
    removed: int
    first_line: int
    """Line (in the new text) where the first change starts; 0 when nothing changed."""


def _line_start(text: str, pos: int, cr_breaks: bool) -> int:
    """Start of the line `pos` is on."""
    start = text.rfind("\n", 0, pos) + 1
    if cr_breaks:
        start = max(start, text.rfind("\r", 0, pos) + 1)
        if 0 < start < len(text) and text[start - 1] == "\r" and text[start] == "\n":
            start += 1  # never between the two halves of a CRLF
    return start


def _next_line(text: str, pos: int, cr_breaks: bool) -> int:
    """Start of the line after the one `pos` is on (the text's length on the last line)."""
    lf = text.find("\n", pos)
    end = len(text) if lf == -1 else lf + 1
    if cr_breaks:
        cr = text.find("\r", pos)
        if cr != -1 and cr + 1 < end:
            end = cr + 1
    return end


def _is_break(text: str, pos: int, cr_breaks: bool) -> bool:
    """Does a line end just before `pos`?"""
    if pos <= 0 or pos >= len(text):
        return True
    ch = text[pos - 1]
    return ch == "\n" or (cr_breaks and ch == "\r" and text[pos : pos + 1] != "\n")


def _window(text: str, start: int, end: int, context: int, cr_breaks: bool) -> tuple[int, int]:
    """Whole lines around [start, end), `context` more on each side."""
    a = _line_start(text, start, cr_breaks)
    for _ in range(context):
        if a == 0:
            break
        a = _line_start(text, a - 1, cr_breaks)
    b = end if end > start and _is_break(text, end, cr_breaks) else _next_line(text, end, cr_breaks)
    for _ in range(context):
        if b >= len(text):
            break
        b = _next_line(text, b, cr_breaks)
    return a, b


def _display(text: str, cr_breaks: bool) -> list[str]:
    """Lines with their ending shown as LF (read_file's view); the last may have none."""
    flat = text.replace("\r\n", "\n")
    if cr_breaks:
        flat = flat.replace("\r", "\n")
    parts = flat.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _range(start: int, count: int) -> str:
    if count == 1:
        return str(start)
    return f"{start - 1 if count == 0 else start},{count}"


def diff_changes(
    old: str,
    new: str,
    changes: Sequence[Change],
    *,
    cr_breaks: bool = False,
    context: int = 3,
) -> Diff:
    """Unified-diff hunks for known changes, looking only at the lines around them.

    Text outside `changes` is the same in `old` and `new`, so each group of nearby changes is
    diffed on its own window of lines: the cost follows the size of the change, not of the file.
    """
    groups: list[list[int]] = []  # [old start, old end, first change, last change]
    for k, c in enumerate(changes):
        a, b = _window(old, c.old_start, c.old_end, context, cr_breaks)
        if groups and a <= groups[-1][1]:
            g = groups[-1]
            g[1], g[3] = max(g[1], b), k
        else:
            g = [a, b, k, k]
            groups.append(g)
        shift = c.new_end - c.old_end
        while g[1] < len(old) and not _is_break(new, g[1] + shift, cr_breaks):
            g[1] = _next_line(old, g[1], cr_breaks)  # the change joined lines: show all of it
    hunks: list[str] = []
    added = removed = first_line = 0
    old_line = new_line = 1
    old_pos = new_pos = 0
    for n, (a, b, first, last) in enumerate(groups):
        na = a + changes[first].new_start - changes[first].old_start
        nb = b + changes[last].new_end - changes[last].old_end
        old_line += _breaks(old, old_pos, a, cr_breaks)
        # Before the first window both texts are the same: count their lines once.
        new_line = new_line + _breaks(new, new_pos, na, cr_breaks) if n else old_line
        old_pos, new_pos = a, na
        x = _display(old[a:b], cr_breaks)
        y = _display(new[na:nb], cr_breaks)
        matcher = difflib.SequenceMatcher(None, x, y, autojunk=False)
        for group in matcher.get_grouped_opcodes(context):
            i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
            hunks.append(
                f"@@ -{_range(old_line + i1, i2 - i1)} +{_range(new_line + j1, j2 - j1)} @@"
            )
            for tag, p1, p2, q1, q2 in group:
                if tag == "equal":
                    hunks.extend(_marked(" ", x[p1:p2]))
                    continue
                if not first_line:
                    first_line = new_line + q1
                if tag in ("replace", "delete"):
                    removed += p2 - p1
                    hunks.extend(_marked("-", x[p1:p2]))
                if tag in ("replace", "insert"):
                    added += q2 - q1
                    hunks.extend(_marked("+", y[q1:q2]))
    return Diff(hunks=tuple(hunks), added=added, removed=removed, first_line=first_line)


def _marked(mark: str, lines: Sequence[str]) -> Iterator[str]:
    for line in lines:
        if line.endswith("\n"):
            yield mark + line[:-1]
        else:
            yield mark + line
            yield "\\ No newline at end of file"
