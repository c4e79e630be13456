"""edit_file's text functions on plain strings: the ladder, replacing, batches, hints, diffs."""

from __future__ import annotations

import difflib
import random

import pytest

from handrail.builtin._matching import _EOL as EOL
from handrail.builtin._matching import (
    Applied,
    Change,
    EditError,
    EditSpec,
    Found,
    apply_edits,
    diff_changes,
    escaped_twice,
    find,
    line_numbers,
    looks_numbered,
    restyle_quotes,
    similar_region,
    strip_numbers,
)
from handrail.builtin._matching import _CrlfMap as CrlfMap
from handrail.builtin._matching import _rewrite as rewrite


def edit(text: str, old: str, new: str, *, replace_all: bool = False, newline: str = "\n") -> str:
    """Apply one edit that must succeed; the new text."""
    out = apply_edits(
        text, [EditSpec(old, new, replace_all)], newline=newline, cr_breaks=newline == "\r"
    )
    assert isinstance(out, Applied), out
    return out.text


def rung_of(text: str, old: str, **kw: bool) -> str | None:
    found = find(text, old, **kw)
    return None if found is None else found.rung


# -- the ladder -------------------------------------------------------------------------------


def test_exact_match_wins_first() -> None:
    found = find("alpha beta gamma", "beta")
    assert found == Found(rung="exact", regions=((6, 10),), inside_earlier=0)


def test_no_match_anywhere_is_none() -> None:
    assert find("alpha beta", "delta") is None
    assert find("alpha", "") is None


def test_lf_old_text_matches_crlf_file_on_rung_two() -> None:
    text = "one\r\ntwo\r\nthree\r\n"
    found = find(text, "one\ntwo\n")
    assert found is not None
    assert found.rung == "line_endings"
    assert found.regions == ((0, 10),)  # the CRLFs are inside the region, whole
    assert text[0:10] == "one\r\ntwo\r\n"


def test_crlf_old_text_matches_lf_file() -> None:
    assert rung_of("a\nb\n", "a\r\nb") == "line_endings"


def test_an_exact_lf_must_not_split_a_crlf() -> None:
    # "\nb" occurs byte for byte inside "a\r\nb", but replacing it would strand the CR.
    found = find("a\r\nb", "\nb")
    assert found is not None
    assert found.rung == "line_endings"
    assert found.regions == ((1, 4),)


def test_bom_in_old_text_is_ignored() -> None:
    assert rung_of("import os\n", "\ufeffimport os") == "line_endings"


def test_lone_cr_is_a_line_break_only_in_a_cr_file() -> None:
    assert rung_of("a\rb\rc\r", "a\nb", cr_breaks=True) == "line_endings"
    assert find("a\rb\rc\r", "a\nb") is None


@pytest.mark.parametrize(
    ("in_file", "sent"),
    [
        ("it\u2019s", "it's"),
        ("\u201cquoted\u201d", '"quoted"'),
        ("\u2018single\u2019", "'single'"),
        ("a \u2013 b \u2014 c", "a - b - c"),
        ("x\u00a0=\u202f1", "x = 1"),
        ("it's", "it\u2019s"),  # the other way: the model sent curly, the file has straight
    ],
)
def test_typography_rung(in_file: str, sent: str) -> None:
    assert rung_of(f"before\n{in_file}\nafter\n", sent) == "typography"


def test_trailing_whitespace_rung() -> None:
    text = "def f():  \n    return 1\t\n"
    found = find(text, "def f():\n    return 1\n")
    assert found is not None
    assert found.rung == "trailing_whitespace"
    assert found.regions == ((0, len(text)),)


def test_trailing_whitespace_in_old_text_is_ignored_too() -> None:
    assert rung_of("a\nb\n", "a   \nb") == "trailing_whitespace"


def test_stripped_end_of_old_text_must_end_a_line_in_the_file() -> None:
    # "foo " is not in "foobar"; dropping its trailing space must not make it match "foo".
    assert find("foobar\n", "foo ") is None
    assert rung_of("foo\nbar\n", "foo ") == "trailing_whitespace"


def test_minimal_region_leaves_neighbouring_whitespace_alone() -> None:
    text = "x = 1   \ny = 2\n"
    found = find(text, "x = 1 \ny")
    assert found is not None
    assert found.regions == ((0, 10),)
    assert text[10:] == " = 2\n"


def test_no_fuzzy_rung() -> None:
    assert find("def compute(x):\n", "def compute(y):\n") is None
    assert find("hello world", "helo world") is None


def test_lazy_crlf_map_agrees_with_the_explicit_one() -> None:
    rng = random.Random(1)
    for _ in range(2000):
        text = "".join(
            rng.choice(["a", "\r\n", "\n", "\r", "bb"]) for _ in range(rng.randint(0, 30))
        )
        flat, explicit = rewrite(text, EOL, lambda s: "\n")
        lazy = CrlfMap(text)
        for p in range(len(flat) + 1):
            assert lazy.lo(p) == (p if explicit is None else explicit.lo(p)), (text, p)


def test_big_crlf_file_maps_positions_back() -> None:
    text = "".join(f"line {i}\r\n" for i in range(20_000))
    found = find(text, "line 12345\nline 12346\n")
    assert found is not None
    assert found.rung == "line_endings"
    (a, b) = found.regions[0]
    assert text[a:b] == "line 12345\r\nline 12346\r\n"


# -- counting ---------------------------------------------------------------------------------


def test_overlapping_occurrences_count() -> None:
    found = find("aaa", "aa")
    assert found is not None
    assert found.regions == ((0, 2), (1, 3))


def test_replace_all_takes_non_overlapping_occurrences() -> None:
    found = find("aaaa", "aa", replace_all=True)
    assert found is not None
    assert found.regions == ((0, 2), (2, 4))
    assert edit("aaa", "aa", "b", replace_all=True) == "ba"


def test_counting_stops_at_the_limit() -> None:
    found = find("x" * 50, "x", limit=10)
    assert found is not None
    assert len(found.regions) == 10
    assert found.more


def test_occurrences_touching_avoided_regions_are_left_out() -> None:
    found = find("abc abc abc", "abc", avoid=[(4, 7)])
    assert found is not None
    assert found.regions == ((0, 3), (8, 11))
    assert found.inside_earlier == 1


def test_an_empty_avoided_region_blocks_only_what_spans_it() -> None:
    found = find("ab ab", "ab", avoid=[(1, 1)])
    assert found is not None
    assert found.regions == ((3, 5),)
    found = find("ab ab", "ab", avoid=[(2, 2)])  # at the boundary: not inside
    assert found is not None
    assert len(found.regions) == 2


# -- replacing --------------------------------------------------------------------------------


def test_new_lines_get_the_files_line_ending() -> None:
    text = "one\r\ntwo\r\nthree\r\n"
    assert edit(text, "two", "2a\n2b", newline="\r\n") == "one\r\n2a\r\n2b\r\nthree\r\n"
    assert edit(text, "one\ntwo\n", "one\nTWO\n", newline="\r\n") == "one\r\nTWO\r\nthree\r\n"


def test_mixed_line_endings_keep_each_untouched_lines_ending() -> None:
    text = "l1\r\nl2\nl3\r\nl4\nl5\r\n"
    out = edit(text, "l2\nl3\nl4\n", "l2\nL3\nl4\n", newline="\n")
    assert out == "l1\r\nl2\nL3\r\nl4\nl5\r\n"


def test_curly_quotes_in_file_restyle_new_text() -> None:
    text = "She said \u201chi\u201d and it\u2019s fine.\n"
    out = edit(text, 'She said "hi"', 'She said "hello", then "bye"')
    assert out == "She said \u201chello\u201d, then \u201cbye\u201d and it\u2019s fine.\n"
    out = edit(text, "it's fine", "it's 'really' fine")
    assert out == "She said \u201chi\u201d and it\u2019s \u2018really\u2019 fine.\n"


def test_straight_quotes_in_file_straighten_curly_new_text() -> None:
    text = "msg = 'it''s'\nprint(\"ok\")\n"
    out = edit(text, "print(\u201cok\u201d)", "print(\u201cdone\u201d)")
    assert out == "msg = 'it''s'\nprint(\"done\")\n"


def test_exact_match_keeps_the_models_quotes() -> None:
    text = "x = \u201cfancy\u201d\n"
    assert edit(text, "\u201cfancy\u201d", '"plain"') == 'x = "plain"\n'


def test_unchanged_parts_keep_the_files_characters() -> None:
    # Matched through typography: the dash and the NBSP the model did not touch stay.
    text = "a \u2013 b\u00a0c d\n"
    assert edit(text, "a - b c d", "a - b c D") == "a \u2013 b\u00a0c D\n"


def test_trailing_whitespace_of_untouched_lines_survives() -> None:
    text = "keep  \nchange\nkeep too\t\n"
    out = edit(text, "keep\nchange\nkeep too\n", "keep\nchanged\nkeep too\n")
    assert out == "keep  \nchanged\nkeep too\t\n"


def test_bytes_outside_the_region_never_change() -> None:
    rng = random.Random(7)
    pieces = ["a", "b", " ", "\t", "\r\n", "\n", "\u2019", "'", "x y", "\u00a0"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(5, 40)))
        i = rng.randint(0, len(text) - 1)
        j = rng.randint(i + 1, len(text))
        if text[i - 1 : i + 1] == "\r\n" or text[j - 1 : j + 1] == "\r\n":
            continue
        old = text[i:j].replace("\r\n", "\n").replace("\u2019", "'").rstrip(" \t")
        if not old or not old.strip(" \t\u00a0\n"):
            continue
        found = find(text, old)
        if found is None or len(found.regions) != 1:
            continue
        (a, b) = found.regions[0]
        out = edit(text, old, "<NEW>")
        assert out.startswith(text[:a]), (text, old)
        assert out.endswith(text[b:]), (text, old)


# -- batches ----------------------------------------------------------------------------------


def test_batch_applies_in_order() -> None:
    out = apply_edits(
        "a = 1\nb = 2\nc = 3\n",
        [EditSpec("b = 2", "b = 20"), EditSpec("a = 1", "a = 10"), EditSpec("= 3", "= 30")],
    )
    assert isinstance(out, Applied)
    assert out.text == "a = 10\nb = 20\nc = 30\n"
    assert out.rungs == ("exact", "exact", "exact")
    assert out.counts == (1, 1, 1)
    assert [(c.old_start, c.old_end) for c in out.changes] == [(5, 5), (11, 11), (17, 17)]


def test_batch_stops_at_the_first_failing_edit() -> None:
    out = apply_edits("a\nb\n", [EditSpec("a", "A"), EditSpec("zzz", "Z")])
    assert out == EditError(index=1, kind="not_found")


def test_batch_refuses_old_text_only_inside_an_earlier_new_text() -> None:
    out = apply_edits(
        "import a\nx = 1\n", [EditSpec("import a", "import a\nimport b"), EditSpec("b", "c")]
    )
    assert isinstance(out, EditError)
    assert (out.index, out.kind, out.earlier) == (1, "inside_earlier", 0)
    assert out.positions == (8,)  # inside the first edit's change: where that change starts


def test_batch_ignores_copies_made_by_earlier_edits() -> None:
    out = apply_edits("x = 1\ny = 2\n", [EditSpec("x = 1", "y = 2\nx = 1"), EditSpec("y = 2", "Y")])
    assert isinstance(out, Applied)
    assert out.text == "y = 2\nx = 1\nY\n"


def test_batch_ambiguity_is_reported_in_original_positions() -> None:
    out = apply_edits("hello\nxx\nxx\n", [EditSpec("hello", "hello world"), EditSpec("xx", "y")])
    assert isinstance(out, EditError)
    assert out.kind == "ambiguous"
    assert out.positions == (6, 9)


def test_replacement_writing_back_the_same_text_is_no_change() -> None:
    out = apply_edits("a\r\nb\r\n", [EditSpec("a\r\nb", "a\nb")], newline="\r\n")
    assert isinstance(out, Applied)
    assert out.changes == ()
    assert out.text == "a\r\nb\r\n"


# -- hints ------------------------------------------------------------------------------------


def test_line_numbers() -> None:
    text = "a\r\nb\nc\rd\n"
    assert line_numbers(text, [0, 3, 5, 7, 8]) == [1, 2, 3, 3, 3]
    assert line_numbers(text, [0, 3, 5, 7, 8], cr_breaks=True) == [1, 2, 3, 4, 4]


def test_similar_region_finds_the_closest_lines() -> None:
    text = "def foo():\n    return 1\n\ndef bar():\n    return 2\n"
    similar = similar_region(text, "def bar():\n    return 3\n")
    assert similar is not None
    assert (similar.first_line, similar.lines) == (4, ("def bar():", "    return 2"))
    assert similar.score > 80
    assert not similar.whitespace_only


def test_similar_region_notices_whitespace_only_differences() -> None:
    similar = similar_region("if x:\n\treturn y\n", "if x:\n    return y")
    assert similar is not None
    assert similar.whitespace_only
    assert similar.lines == ("if x:", "\treturn y")


def test_similar_region_single_line_fragment() -> None:
    similar = similar_region(
        "alpha\nresult = compute(alpha, beta)\nomega\n", "compute(alpha, gamma)"
    )
    assert similar is not None
    assert similar.first_line == 2


def test_similar_region_none_when_nothing_is_close() -> None:
    assert similar_region("alpha\nbeta\n", "zzzzzzzzzzzzzzzzzz") is None
    assert similar_region("", "x") is None


def test_line_number_prefixes_are_noticed() -> None:
    assert looks_numbered("12\tdef f():\n13\t    pass")
    assert looks_numbered("   7\u2192x = 1")
    assert not looks_numbered("x = 1\n2\tb")
    assert strip_numbers("12\tdef f():\n13\t    pass") == "def f():\n    pass"


def test_escaped_twice() -> None:
    assert escaped_twice("a\nb\n", "a\\nb")
    assert escaped_twice('say("hi")\n', 'say(\\"hi\\")')
    assert not escaped_twice("a\\nb\n", "x\\ny")
    assert not escaped_twice("a\nb\n", "a b")


def test_restyle_quotes_opening_closing_and_apostrophes() -> None:
    curly = "\u201cx\u201d \u2019"
    assert restyle_quotes("\"a\" and 'b' don't", curly) == (
        "\u201ca\u201d and \u2018b\u2019 don\u2019t"
    )
    assert restyle_quotes('"a"', "no quotes here") == '"a"'
    assert restyle_quotes('"a"', 'mixed " and \u201d') == '"a"'


# -- diffs ------------------------------------------------------------------------------------


def _reference(old: str, new: str) -> list[str]:
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), n=3, lineterm="\n")
    return [line.rstrip("\n") for line in list(lines)[2:]]


def test_diff_matches_difflib_on_random_edits() -> None:
    rng = random.Random(3)
    base = [f"line {i}\n" for i in range(60)]
    for _ in range(100):
        lines = list(base)
        edits: list[EditSpec] = []
        for k in sorted(rng.sample(range(60), rng.randint(1, 4)), reverse=True):
            choice = rng.randint(0, 2)
            if choice == 0:
                edits.append(EditSpec(lines[k], f"changed {k}\n"))
            elif choice == 1:
                edits.append(EditSpec(lines[k], lines[k] + f"inserted {k}\n"))
            else:
                edits.append(EditSpec(lines[k], ""))
        old = "".join(lines)
        out = apply_edits(old, edits)
        assert isinstance(out, Applied)
        diff = diff_changes(old, out.text, out.changes)
        assert list(diff.hunks) == _reference(old, out.text)


def test_diff_counts_first_line_and_missing_newline() -> None:
    old = "a\nb\nc"
    out = apply_edits(old, [EditSpec("c", "C\nD")])
    assert isinstance(out, Applied)
    diff = diff_changes(old, out.text, out.changes)
    assert diff.hunks == (
        "@@ -1,3 +1,4 @@",
        " a",
        " b",
        "-c",
        "\\ No newline at end of file",
        "+C",
        "+D",
        "\\ No newline at end of file",
    )
    assert (diff.added, diff.removed, diff.first_line) == (2, 1, 3)


def test_diff_shows_crlf_files_as_read_file_does() -> None:
    old = "a\r\nb\r\nc\r\n"
    out = apply_edits(old, [EditSpec("b", "B")], newline="\r\n")
    assert isinstance(out, Applied)
    assert diff_changes(old, out.text, out.changes).hunks == (
        "@@ -1,3 +1,3 @@",
        " a",
        "-b",
        "+B",
        " c",
    )


def test_diff_of_a_change_that_joins_lines() -> None:
    old = "a\nb\nc\n"
    out = apply_edits(old, [EditSpec("a\n", "a ")])
    assert isinstance(out, Applied)
    assert out.text == "a b\nc\n"
    diff = diff_changes(old, out.text, out.changes)
    assert diff.hunks == ("@@ -1,3 +1,2 @@", "-a", "-b", "+a b", " c")


def test_diff_of_nothing() -> None:
    assert diff_changes("a", "a", ()).hunks == ()
    assert diff_changes("a\n", "b\n", (Change(0, 1, 0, 1),)).first_line == 1
