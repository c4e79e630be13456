"""grep_search end to end through `Runtime`: rg's matches, in a stable order, paged.

The oracle is the rg binary itself: for each search, rg runs directly with the equivalent
flags (sorted by path, single-threaded) and the tool's lines must equal what it prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import (
    ErrorCode,
    ReadPath,
    Registry,
    Runtime,
    Session,
    ToolCall,
    ToolContext,
    ToolFailure,
    ToolResult,
)
from handrail.builtin import _list_files
from handrail.builtin._grep_search import GrepSearch, GrepSearchArgs
from handrail.builtin._list_files import ListFiles
from handrail.sandbox import _ripgrep, find_ripgrep

RG = find_ripgrep()
assert RG is not None
VCS = [".git", ".hg", ".svn", ".jj", ".bzr", ".sl"]
NOT_VCS = [arg for name in VCS for arg in ("--glob", "!" + name)]
BASE = ["--hidden", "--crlf", "--no-messages", *NOT_VCS]
CONTENT = ["-n", "-H", "--no-heading", "--max-columns=500", "--max-columns-preview"]

LONG = "x" * 600 + " needle " + "y" * 100

FILES: dict[str, bytes] = {
    ".git/config": b"[core]\n# needle in the repository internals\n",
    ".hg/data": b"needle\n",
    ".gitignore": b"*.log\nbuild/\n",
    ".hidden/secret.py": b"needle = 'hidden'\n",
    "src/app.py": (
        b"import os\n"
        b"\n"
        b"def handler(request):\n"
        b"    # needle one\n"
        b"    value = request.get('-flag')\n"
        b"    return value\n"
        b"\n"
        b"def other():\n"
        b"    return 'Needle two'\n"
    ),
    "src/util.py": b"def util():\n    return 'needle'  # TODO\n",
    "src/notes.md": b"# Notes\nA needle. (a.b(c)\n",
    "src/sub/deep.py": b"deep = 'NEEDLE'\n",
    "build/gen.py": b"needle = 'generated'\n",
    "app.log": b"needle in a log\n",
    "crlf.txt": b"value = 1\r\nneedle crlf\r\nend\r\n",
    "binary.bin": b"needle\x00\x01\x02needle\n",
    "long.txt": LONG.encode() + b"\nshort needle\n",
    "docs/ünïcödé.md": "needle ünïcödé\n".encode(),
    "docs/with space.txt": b"needle with space\n",
    "legacy.txt": b"caf\xe9 needle\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with ignore rules, hidden and VCS folders; mtimes 1000 s apart."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    for i, (name, content) in enumerate(FILES.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        stamp = 1_600_000_000 + 1000 * i
        os.utime(path, (stamp, stamp))
    return root


def newest_tool() -> GrepSearch:
    # Most order checks here use the newest-first option; the default (path order) has its own test.
    tool = GrepSearch()
    tool.newest_first = True
    return tool


def make_runtime(ws: Path, tool: GrepSearch | None = None, **options: Any) -> Runtime:
    return Runtime(Registry([tool or newest_tool()]), root=ws, **options)


async def grep(rt: Runtime, pattern: str, **args: Any) -> ToolResult:
    return await rt.call("grep_search", {"pattern": pattern, **args})


def rg_out(cwd: Path, *args: str) -> list[str]:
    """What rg prints for the same search, sorted by path, CR of CRLF lines dropped."""
    out = subprocess.run(
        [RG, "--no-config", *BASE, "--sort=path", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
    ).stdout
    return [line.removesuffix("\r") for line in out.decode("utf-8", "replace").splitlines()]


def body(r: ToolResult) -> list[str]:
    """The result's lines without the footer."""
    assert r.ok, r.content
    lines = r.content.splitlines()
    while lines and lines[-1].startswith(("(", "Partial results:")):
        lines.pop()
    return lines


def newest_first(cwd: Path, paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (-os.stat(cwd / p).st_mtime_ns, p.replace("/", "\0")))


# -- the tool's face ---------------------------------------------------------------------------


def test_description_flags_and_schema() -> None:
    tool = GrepSearch()
    assert tool.name == "grep_search"
    assert tool.kind == "search"
    assert tool.is_read_only(None) and tool.is_concurrency_safe(None)
    assert not tool.is_destructive(None)
    assert tool.description == snapshot("""\
Search file contents with a regular expression (ripgrep). Use it instead of running grep or rg in a shell.
- Rust regex syntax: escape literal braces and parentheses (`interface\\{\\}`, `foo\\(`), or set fixed_strings=true to search for text as written.
- output_mode "files_with_matches" (default) lists matching files by path; "content" shows matching lines as `path:line:text` (add context/before/after for surrounding lines); "count" gives matching lines per file.
- Narrow with path (a folder or one file), glob (`*.py`, `src/**/*.ts`) or type (`py`, `js`, `rust`...). Files ignored by .gitignore are skipped unless no_ignore=true; hidden files are searched; .git is not. Lines over 500 characters are cut.
- Results stop at head_limit (default 250 files or 100 lines); the last line gives the total and the offset for the next page.
- To find files by name use list_files; to read a whole file use read_file.\
""")
    assert tool.usage == snapshot(
        'Use grep_search (not grep/rg in a shell) to search code. Start with the default files_with_matches mode, then look at lines with output_mode="content" on a narrowed path or glob.'
    )
    assert tool.parameters == snapshot(
        {
            "additionalProperties": False,
            "properties": {
                "pattern": {
                    "description": "Regular expression (Rust regex syntax, like PCRE without look-around or backreferences) to search for; with fixed_strings=true, plain text.",
                    "minLength": 1,
                    "type": "string",
                },
                "path": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "File or folder to search (default: the working directory). Omit it rather than passing null or an empty string.",
                },
                "glob": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "Only search files whose path (relative to `path`) matches this glob, e.g. `*.py`, `*.{ts,tsx}`, `src/**/*.rs`; a leading `!` excludes (`!*.min.js`). Not applied when path is a single file.",
                },
                "type": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "Only search files of this ripgrep type, e.g. py, js, ts, rust, go, java, md (more efficient than glob for standard types). Not applied when path is a file.",
                },
                "output_mode": {
                    "default": "files_with_matches",
                    "description": '"files_with_matches" (default): matching file paths, sorted by path; "content": the matching lines as path:line:text; "count": matching lines per file.',
                    "enum": ["files_with_matches", "content", "count"],
                    "type": "string",
                },
                "case_insensitive": {
                    "default": False,
                    "description": "Ignore case (rg -i).",
                    "type": "boolean",
                },
                "line_numbers": {
                    "anyOf": [{"type": "boolean"}, {"type": "null"}],
                    "default": None,
                    "description": 'Show line numbers in "content" mode (default true).',
                },
                "context": {
                    "anyOf": [{"minimum": 0, "type": "integer"}, {"type": "null"}],
                    "default": None,
                    "description": 'Lines to show before and after each match ("content" only).',
                },
                "before": {
                    "anyOf": [{"minimum": 0, "type": "integer"}, {"type": "null"}],
                    "default": None,
                    "description": 'Lines to show before each match ("content" only).',
                },
                "after": {
                    "anyOf": [{"minimum": 0, "type": "integer"}, {"type": "null"}],
                    "default": None,
                    "description": 'Lines to show after each match ("content" only).',
                },
                "multiline": {
                    "default": False,
                    "description": "Let the pattern span lines: `.` also matches newlines (rg -U --multiline-dotall). Slower; use only when needed.",
                    "type": "boolean",
                },
                "fixed_strings": {
                    "default": False,
                    "description": "Treat the pattern as plain text, not a regex (rg -F).",
                    "type": "boolean",
                },
                "head_limit": {
                    "anyOf": [{"minimum": 0, "type": "integer"}, {"type": "null"}],
                    "default": None,
                    "description": 'Most entries to return: paths (default 250) or output lines in "content" mode (default 100); 0 means no limit.',
                },
                "offset": {
                    "default": 0,
                    "description": "Skip this many entries first, to page through results.",
                    "minimum": 0,
                    "type": "integer",
                },
                "no_ignore": {
                    "default": False,
                    "description": "Also search files that .gitignore / .ignore rules leave out. Version-control folders stay excluded.",
                    "type": "boolean",
                },
            },
            "required": ["pattern"],
            "type": "object",
        }
    )


def test_permission_request_is_the_path_searched(ws: Path) -> None:
    ctx = ToolContext(
        call_id="c",
        tool_name="grep_search",
        cwd=ws,
        read_roots=(ws,),
        write_roots=(ws,),
        session=Session(),
    )
    tool = GrepSearch()
    assert tool.permission_requests(GrepSearchArgs(pattern="x", path="src"), ctx) == [
        ReadPath(path="src")
    ]
    assert tool.permission_requests(GrepSearchArgs(pattern="x"), ctx) == [ReadPath(path=str(ws))]


# -- the matches are rg's ----------------------------------------------------------------------


async def test_files_with_matches_default_to_path_order(ws: Path) -> None:
    rt = make_runtime(ws, GrepSearch())
    expected = rg_out(ws, "-l", "needle")
    r = await grep(rt, "needle", head_limit=0)
    assert body(r) == sorted(expected, key=lambda p: p.replace("/", "\0"))
    assert "by path" in r.content.splitlines()[-1]


async def test_files_with_matches_equal_rg_newest_first(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle")
    expected = rg_out(ws, "--files-with-matches", "needle")
    assert body(r) == newest_first(ws, expected)
    paths = set(body(r))
    assert {".hidden/secret.py", "docs/ünïcödé.md", "docs/with space.txt"} <= paths
    assert not {"build/gen.py", "app.log", ".git/config", ".hg/data"} & paths  # ignored, VCS
    assert "binary.bin" not in paths  # rg skips binary files in a recursive search
    assert r.content.splitlines()[-1] == snapshot("(Found 9 files, newest first.)")
    assert r.summary == "grep_search: 9 files"


async def test_files_by_path_when_configured(ws: Path) -> None:
    tool = GrepSearch()
    tool.newest_first = False
    r = await grep(make_runtime(ws, tool), "needle", head_limit=3)
    assert body(r) == rg_out(ws, "--files-with-matches", "needle")[:3]
    assert r.content.splitlines()[-1] == snapshot(
        "(Found 9 files; showing 1-3 (head_limit=3, offset=0), by path. Next page: call grep_search again with offset=3.)"
    )


async def test_content_equals_rg(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", output_mode="content")
    assert body(r) == rg_out(ws, *CONTENT, "needle")
    assert "crlf.txt:2:needle crlf" in body(r)  # shown with LF
    assert "legacy.txt:1:caf\ufffd needle" in body(r)  # a cp1252 byte becomes U+FFFD
    assert r.content.splitlines()[-1] == snapshot("(Found 10 matching lines in 9 files.)")


@pytest.mark.parametrize(
    ("args", "flags"),
    [
        ({"context": 1}, ["-C1"]),
        ({"before": 2}, ["-B2"]),
        ({"after": 1}, ["-A1"]),
        ({"context": 3, "after": 0}, ["-C3", "-A0"]),
    ],
)
async def test_context_lines_equal_rg(ws: Path, args: dict[str, Any], flags: list[str]) -> None:
    r = await grep(make_runtime(ws), "needle|return", output_mode="content", **args)
    assert body(r) == rg_out(ws, *CONTENT, *flags, "needle|return")
    assert "--" in body(r)


async def test_count_equals_rg(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle|def", output_mode="count")
    assert body(r) == [line.replace("\0", ":") for line in rg_out(ws, "-c", "needle|def")]
    assert r.content.splitlines()[-1] == snapshot("(Found 13 matching lines in 9 files.)")


@pytest.mark.parametrize(
    ("mode", "summary", "footer"),
    [
        ("files_with_matches", "1 file", "(Found 1 file, newest first.)"),
        ("content", "1 matching line in 1 file", "(Found 1 matching line in 1 file.)"),
        ("count", "1 matching line in 1 file", "(Found 1 matching line in 1 file.)"),
    ],
)
async def test_one_match_in_one_file_is_singular(
    ws: Path, mode: str, summary: str, footer: str
) -> None:
    r = await grep(make_runtime(ws), "deep = ", output_mode=mode)
    assert r.ok, r.content
    assert r.summary == f"grep_search: {summary}"
    assert r.content.splitlines()[-1] == footer


async def test_two_matches_in_one_file_count_lines_and_files_apart(ws: Path) -> None:
    r = await grep(make_runtime(ws), "def handler|def other", output_mode="count")
    assert r.summary == "grep_search: 2 matching lines in 1 file"
    assert r.content.splitlines()[-1] == "(Found 2 matching lines in 1 file.)"


@pytest.mark.parametrize(
    ("args", "flags", "pattern"),
    [
        ({"case_insensitive": True}, ["-i"], "needle"),
        ({"fixed_strings": True}, ["-F"], "(a.b(c)"),
        ({"multiline": True}, ["-U", "--multiline-dotall"], "def handler.*?return"),
        ({"type": "py"}, ["-t", "py"], "needle"),
        ({"type": "md", "case_insensitive": True}, ["-t", "md", "-i"], "needle"),
        ({}, [], "-flag"),
        ({}, [], "^value = 1$"),
        ({"line_numbers": True}, [], "Needle|NEEDLE"),
    ],
)
async def test_options_equal_rg(
    ws: Path, args: dict[str, Any], flags: list[str], pattern: str
) -> None:
    r = await grep(make_runtime(ws), pattern, output_mode="content", **args)
    assert body(r) == rg_out(ws, *CONTENT, *flags, "--regexp", pattern)
    assert body(r) != ["No matches found."]


async def test_a_pattern_starting_with_a_dash_is_a_pattern(ws: Path) -> None:
    r = await grep(make_runtime(ws), "-flag", output_mode="content")
    assert body(r) == ["src/app.py:5:    value = request.get('-flag')"]


async def test_crlf_lines_match_like_lf_lines(ws: Path) -> None:
    r = await grep(make_runtime(ws), "^value = 1$", output_mode="content")
    assert body(r) == ["crlf.txt:1:value = 1"]


async def test_line_numbers_off(ws: Path) -> None:
    r = await grep(make_runtime(ws), "return", output_mode="content", line_numbers=False, after=1)
    assert body(r) == rg_out(ws, "-N", "-H", "--no-heading", "-A1", "return")


@pytest.mark.parametrize("glob", ["*.py", "**/*.md", "src/**/*.py", "src/*", "*.{md,txt}", "!*.py"])
async def test_glob_equals_rg_glob_within_the_ignore_rules(ws: Path, glob: str) -> None:
    r = await grep(make_runtime(ws), "needle", glob=glob, output_mode="content")
    expected = set(rg_out(ws, "-l", "--glob", glob, "needle")) & set(rg_out(ws, "-l", "needle"))
    lines = rg_out(ws, *CONTENT, "--glob", glob, "needle")
    assert body(r) == [line for line in lines if line.split(":", 1)[0] in expected]
    assert {line.split(":", 1)[0] for line in body(r)} == expected


async def test_glob_and_type_together(ws: Path) -> None:
    """Both filters apply (rg's --glob would even override --type: it lists src/notes.md)."""
    r = await grep(make_runtime(ws), "needle|def", glob="src/**", type="py")
    assert "src/notes.md" in rg_out(ws, "-l", "-t", "py", "--glob", "src/**", "needle|def")
    expected = (
        set(rg_out(ws, "-l", "-t", "py", "needle|def"))
        & set(rg_out(ws, "-l", "--glob", "src/**", "needle|def"))
        & set(rg_out(ws, "-l", "needle|def"))
    )
    assert set(body(r)) == expected == {"src/app.py", "src/util.py"}


async def test_gitignored_files_stay_out_even_when_the_glob_names_them(ws: Path) -> None:
    assert "app.log" in rg_out(ws, "-l", "--glob", "*.log", "needle")  # a plain --glob would
    r = await grep(make_runtime(ws), "needle", glob="*.log")
    assert r.content == "No matches found."
    r = await grep(make_runtime(ws), "needle", glob="*.log", no_ignore=True)
    assert body(r) == ["app.log"]


async def test_no_ignore_searches_ignored_files_never_vcs(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", no_ignore=True)
    assert set(body(r)) == set(rg_out(ws, "-l", "--no-ignore", "needle"))
    assert {"build/gen.py", "app.log"} <= set(body(r))
    assert not any(p.startswith((".git/", ".hg/")) for p in body(r))


async def test_long_lines_are_cut_at_500_columns_with_a_marker(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", path="long.txt", output_mode="content")
    first = body(r)[0]
    assert first == "long.txt:1:" + "x" * 500 + " [... omitted end of long line]"
    assert body(r) == rg_out(ws, *CONTENT, "needle", "long.txt")


async def test_a_single_file(ws: Path) -> None:
    r = await grep(make_runtime(ws), "def", path="src/app.py", output_mode="content")
    assert body(r) == ["src/app.py:3:def handler(request):", "src/app.py:8:def other():"]
    r = await grep(make_runtime(ws), "needle", path="binary.bin", output_mode="content")
    assert (
        body(r)
        == ['binary.bin: binary file matches (found "\\0" byte around offset 6)']
        == rg_out(ws, *CONTENT, "needle", "binary.bin")
    )


async def test_a_file_named_like_an_option(ws: Path) -> None:
    (ws / "-dash.txt").write_text("needle\n")
    r = await grep(make_runtime(ws), "needle", path="-dash.txt", output_mode="content")
    assert body(r) == ["-dash.txt:1:needle"]


async def test_a_fifo_is_refused_without_being_opened(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    r = await grep(make_runtime(ws), "needle", path="pipe")
    assert r.error is ErrorCode.INVALID_ARGS
    r = await grep(make_runtime(ws), "needle")  # in a folder, rg skips it
    assert r.ok and "pipe" not in body(r)


async def test_an_absolute_glob_inside_the_folder_works(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", glob=f"{ws}/src/*.py")
    assert body(r) == ["src/util.py", "src/app.py"]


async def test_path_narrows_and_paths_stay_relative_to_the_cwd(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", path="src", output_mode="content")
    assert body(r) == ["src/" + line for line in rg_out(ws / "src", *CONTENT, "needle")]
    rt = make_runtime(ws, cwd=ws / "src")
    r = await grep(rt, "needle", path=str(ws / "docs"))
    assert set(body(r)) == {str(ws / "docs" / p) for p in rg_out(ws / "docs", "-l", "needle")}


async def test_no_matches_is_a_success(ws: Path) -> None:
    for mode in ("files_with_matches", "content", "count"):
        r = await grep(make_runtime(ws), "zzz-not-there", output_mode=mode)
        assert r.ok and r.content == "No matches found."


async def test_both_tools_in_one_parallel_batch(ws: Path) -> None:
    """Read-only and concurrency-safe: a batch of searches runs together, results in order."""
    rt = Runtime(Registry([ListFiles(), GrepSearch()]), root=ws)
    calls = [
        ToolCall(id="1", name="list_files", arguments='{"pattern": "*.md"}'),
        ToolCall(id="2", name="grep_search", arguments='{"pattern": "needle", "type": "md"}'),
        ToolCall(
            id="3", name="grep_search", arguments='{"pattern": "def", "output_mode": "count"}'
        ),
    ]
    batch = await rt.call_many(calls)
    assert [r.call_id for r in batch] == ["1", "2", "3"] and all(r.ok for r in batch)
    assert sorted(body(batch[0])) == ["docs/ünïcödé.md", "src/notes.md"]
    assert set(body(batch[1])) == {"docs/ünïcödé.md", "src/notes.md"}
    assert body(batch[2]) == [line.replace("\0", ":") for line in rg_out(ws, "-c", "def")]


# -- paging ------------------------------------------------------------------------------------


async def test_files_paging(ws: Path) -> None:
    rt = make_runtime(ws)
    everything = newest_first(ws, rg_out(ws, "-l", "needle"))
    r = await grep(rt, "needle", head_limit=4)
    assert body(r) == everything[:4]
    assert r.content.splitlines()[-1] == snapshot(
        "(Found 9 files; showing 1-4 (head_limit=4, offset=0), newest first. Next page: call grep_search again with offset=4.)"
    )
    r = await grep(rt, "needle", head_limit=4, offset=8)
    assert body(r) == everything[8:]
    assert r.content.splitlines()[-1] == snapshot(
        "(Found 9 files; showing 9-9 (head_limit=4, offset=8), newest first; this is the last page.)"
    )
    r = await grep(rt, "needle", offset=50)
    assert r.ok and r.content == snapshot(
        "(Nothing at offset=50: the search found 9 files. Call again with a smaller offset, e.g. offset=0.)"
    )
    r = await grep(rt, "needle", head_limit=0)
    assert body(r) == everything


async def test_content_paging(ws: Path) -> None:
    rt = make_runtime(ws)
    lines = rg_out(ws, *CONTENT, "-C1", "needle")
    r = await grep(rt, "needle", output_mode="content", context=1, head_limit=5, offset=3)
    assert body(r) == lines[3:8]
    assert r.content.splitlines()[-1] == snapshot(
        "(Found 10 matching lines in 9 files; showing output lines 4-8 of 24 (head_limit=5, offset=3). Next page: call grep_search again with offset=8.)"
    )
    r = await grep(rt, "needle", output_mode="content", context=1, offset=len(lines) - 2)
    assert body(r) == lines[-2:]
    assert r.metadata["total"] == len(lines)


async def test_count_paging(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", output_mode="count", head_limit=3, offset=1)
    assert body(r) == [line.replace("\0", ":") for line in rg_out(ws, "-c", "needle")][1:4]
    assert r.content.splitlines()[-1] == snapshot(
        "(Found 10 matching lines in 9 files; showing files 2-4 (head_limit=3, offset=1). Next page: call grep_search again with offset=4.)"
    )


async def test_default_limits(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    for i in range(260):
        (ws / f"f{i:03d}.txt").write_text("hit\n")
    (ws / "many.txt").write_text("hit\n" * 120)
    r = await grep(make_runtime(ws), "hit")
    assert len(body(r)) == 250
    assert r.content.splitlines()[-1] == snapshot(
        "(Found 261 files; showing 1-250 (head_limit=250, offset=0), newest first. Next page: call grep_search again with offset=250.)"
    )
    r = await grep(make_runtime(ws), "hit", output_mode="content")
    assert len(body(r)) == 100
    assert r.content.splitlines()[-1] == snapshot(
        "(Found 380 matching lines in 261 files; showing output lines 1-100 of 380 (head_limit=100, offset=0). Next page: call grep_search again with offset=100.)"
    )


# -- refusals ----------------------------------------------------------------------------------


async def test_bad_regex_is_invalid_args_with_rgs_message(ws: Path) -> None:
    r = await grep(make_runtime(ws), "handler(")
    assert not r.ok and r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot("""\
The pattern is not a valid regular expression. ripgrep says:
regex parse error:
    (?:handler()
    ^
error: unclosed group
Fix the pattern (Rust regex syntax: escape ( ) [ ] { } . * + ? | ^ $ \\ with a backslash to match them literally), or pass fixed_strings=true to search for the text exactly as written.\
""")
    assert "unclosed group" in r.metadata["rg_error"]


async def test_unknown_type_suggests_a_known_one(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", type="pyton")
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        "Unknown file type 'pyton' (ripgrep says: unrecognized file type: pyton). Did you mean `python`, `cython`, `py`? Pass one of ripgrep's type names (py, js, ts, rust, go, java, cpp, md, ...), or filter by name with glob instead, e.g. glob=\"*.ext\"."
    )


async def test_context_needs_content_mode(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", context=2)
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot("""\
context, before and after only apply to output_mode="content". Add output_mode="content" to see the lines around each match, or drop them.
Call `grep_search` again with corrected arguments.\
""")


async def test_empty_pattern_and_nul(ws: Path) -> None:
    r = await grep(make_runtime(ws), "")
    assert r.error is ErrorCode.INVALID_ARGS
    r = await grep(make_runtime(ws), "a\x00b")
    assert r.error is ErrorCode.INVALID_ARGS
    assert "NUL" in r.content


async def test_path_outside_the_roots_is_refused(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", path=str(ws.parent))
    assert not r.ok and r.error is ErrorCode.OUTSIDE_READ_ROOTS
    ctx = ToolContext(
        call_id="c",
        tool_name="grep_search",
        cwd=ws,
        read_roots=(ws,),
        write_roots=(ws,),
        session=Session(),
    )
    with pytest.raises(ToolFailure) as info:
        await GrepSearch().run(GrepSearchArgs(pattern="x", path="../"), ctx)
    assert info.value.code is ErrorCode.OUTSIDE_READ_ROOTS


async def test_missing_path(ws: Path) -> None:
    r = await grep(make_runtime(ws), "needle", path="src/ap.py")
    assert r.error is ErrorCode.FILE_NOT_FOUND
    assert r.content.replace(str(ws), "WS") == snapshot(
        "WS/src/ap.py does not exist. Did you mean `app.py`? Relative paths resolve against WS. Find the right path with list_files, or leave path out to search the whole working directory."
    )


async def test_chinese_messages(ws: Path) -> None:
    rt = make_runtime(ws, locale="zh")
    r = await grep(rt, "zzz-not-there")
    assert r.content == snapshot("未找到匹配。")
    r = await grep(rt, "needle", head_limit=2)
    assert r.content.splitlines()[-1] == snapshot(
        "(找到 9 个文件;显示第 1-2 个(head_limit=2,offset=0),最新修改的在前。下一页:再次调用 grep_search 并传入 offset=2。)"
    )
    r = await grep(rt, "handler(")
    assert r.content == snapshot("""\
模式不是有效的正则表达式。ripgrep 的报错:
regex parse error:
    (?:handler()
    ^
error: unclosed group
请修正模式(Rust 正则语法:要按字面匹配 ( ) [ ] { } . * + ? | ^ $ \\ 时请用反斜杠转义),或传入 fixed_strings=true 按原文搜索。\
""")


# -- stopping ----------------------------------------------------------------------------------


async def test_timeout_returns_partial_results_flagged(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake-rg"
    fake.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            """
            import sys, time
            sys.stdout.write("src/app.py\\x00src/util.py\\x00")
            sys.stdout.flush()
            time.sleep(60)
            """
        )
    )
    fake.chmod(0o755)
    monkeypatch.setattr(_ripgrep, "find_ripgrep", lambda: str(fake))
    monkeypatch.setattr(_list_files, "find_ripgrep", lambda: str(fake))
    tool = newest_tool()
    tool.search_timeout = 0.3
    r = await grep(make_runtime(ws, tool), "needle")
    assert r.ok
    assert body(r)[:2] == ["src/util.py", "src/app.py"]
    assert r.metadata["partial"] is True and r.metadata["stopped"] == "timeout"
    assert r.content.splitlines()[-1] == snapshot(
        "Partial results: the search was stopped after 0.3 s, so totals count only what was found by then. Narrow the path or the pattern for complete results."
    )
    assert r.summary == "grep_search: 2 files (partial)"


async def test_the_runtime_deadline_shortens_the_search(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a call timeout shorter than 30 s, the partial results still come back."""
    fake = tmp_path / "fake-rg"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys, time\n"
        "sys.stdout.write('src/app.py\\x00'); sys.stdout.flush(); time.sleep(60)\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(_ripgrep, "find_ripgrep", lambda: str(fake))
    monkeypatch.setattr(_list_files, "find_ripgrep", lambda: str(fake))
    r = await grep(make_runtime(ws, default_timeout=1.0), "needle")
    assert r.ok and r.metadata["partial"] is True
    assert body(r) == ["src/app.py"]


async def test_a_pattern_too_long_for_ripgrep_is_invalid_args(tmp_path: Path) -> None:
    rt = Runtime(Registry([GrepSearch()]), root=tmp_path)
    for args in ({"pattern": "a" * 200_000}, {"pattern": "a", "type": "b" * 20_000}):
        r = await rt.call("grep_search", args)
        assert r.error is ErrorCode.INVALID_ARGS  # was EXECUTION_ERROR "Could not start ripgrep"
    assert r.content.splitlines()[0] == (
        "The type is 20000 characters long; at most 16384 are accepted. Search for a shorter, "
        "distinctive part of the text instead."
    )
