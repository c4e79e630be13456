"""list_files end to end through `Runtime`: the files rg lists, newest first, paged.

The oracle is the rg binary itself: every listing is compared with `rg --files` run directly
with the equivalent flags.
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

from handrail import ErrorCode, ReadPath, Registry, Runtime, Session, ToolContext, ToolFailure
from handrail.builtin import _list_files
from handrail.builtin._list_files import ListFiles, ListFilesArgs
from handrail.builtin._list_files import newest_first as pick_newest
from handrail.sandbox import _ripgrep, find_ripgrep

RG = find_ripgrep()
assert RG is not None
VCS = [".git", ".hg", ".svn", ".jj", ".bzr", ".sl"]
NOT_VCS = [arg for name in VCS for arg in ("--glob", "!" + name)]

FILES = {
    ".git/HEAD": "ref: refs/heads/main\n",
    ".git/config": "[core]\n",
    ".git/objects/ab/cdef": "blob\n",
    ".hg/store": "x\n",
    ".svn/entries": "x\n",
    ".jj/repo": "x\n",
    ".gitignore": "*.log\nbuild/\n",
    ".ignore": "secret.txt\n",
    ".env": "KEY=1\n",
    ".hidden/h.txt": "hidden\n",
    "README.md": "# readme\n",
    "src/main.py": "print('main')\n",
    "src/util.py": "def util(): pass\n",
    "src/sub/deep.py": "deep = 1\n",
    "src/app.log": "log line\n",
    "build/out.js": "built\n",
    "secret.txt": "secret\n",
    "docs/name with spaces.md": "spaces\n",
    "docs/ünïcödé.txt": "unicode\n",
    "data/blob.bin": "\x00\x01binary\n",
    "crlf.txt": "one\r\ntwo\r\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with ignore files, hidden files, VCS folders; mtimes 1000 s apart."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    for i, (name, content) in enumerate(FILES.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode())
        stamp = 1_600_000_000 + 1000 * i
        os.utime(path, (stamp, stamp))
    return root


def make_runtime(ws: Path, tool: ListFiles | None = None, **options: Any) -> Runtime:
    return Runtime(Registry([tool or ListFiles()]), root=ws, **options)


async def list_files(rt: Runtime, **args: Any) -> Any:
    return await rt.call("list_files", args)


def rg_files(cwd: Path, *args: str) -> list[str]:
    """What `rg --files` prints with the flags list_files stands for (hidden, no VCS)."""
    out = subprocess.run(
        [RG, "--no-config", "--files", "--hidden", *NOT_VCS, *args],
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    return out.stdout.decode().splitlines()


def newest_first(cwd: Path, paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (-os.stat(cwd / p).st_mtime_ns, p.replace("/", "\0")))


def listed(content: str) -> list[str]:
    """The paths of a result (everything but the footer line)."""
    return [line for line in content.splitlines() if not line.startswith("(")]


# -- the tool's face ---------------------------------------------------------------------------


def test_description_flags_and_schema() -> None:
    tool = ListFiles()
    assert tool.name == "list_files"
    assert tool.kind == "search"
    assert tool.is_read_only(None) and tool.is_concurrency_safe(None)
    assert not tool.is_destructive(None)
    assert tool.description == snapshot("""\
Find files by name with a glob pattern; returns paths newest-modified first. Use it instead of running find, ls -R or rg --files in a shell.
- `*.py` finds Python files at any depth; `src/**/*.test.ts` only under src; `**/*` (the default) lists everything.
- Files ignored by .gitignore (in git repositories) or .ignore are left out unless no_ignore=true; hidden files are included; .git and other version-control folders never are.
- Paths are relative to the working directory, ready for read_file. At most `limit` (default 100) are returned; the last line gives the total and the offset of the next page.
- To find text inside files use grep_search; to read a file use read_file.\
""")
    assert tool.parameters == snapshot(
        {
            "additionalProperties": False,
            "properties": {
                "pattern": {
                    "default": "**/*",
                    "description": "Glob matched against paths relative to `path`. `*` and `?` stay within one folder level, `**` spans any number of folders, `{a,b}` and `[abc]` work; case-sensitive. A pattern without `/` matches file names at any depth (`*.py`); one with `/` is anchored at `path` (`src/**/*.ts`). A leading `!` lists everything except the matches (`!**/*.md`).",
                    "type": "string",
                },
                "path": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "Folder to list (default: the working directory). Omit it rather than passing null or an empty string.",
                },
                "limit": {
                    "default": 100,
                    "description": "Most paths to return (default 100).",
                    "maximum": 1000,
                    "minimum": 1,
                    "type": "integer",
                },
                "offset": {
                    "default": 0,
                    "description": "Skip this many paths first, to page (default 0).",
                    "minimum": 0,
                    "type": "integer",
                },
                "no_ignore": {
                    "default": False,
                    "description": "Also list files that .gitignore / .ignore rules leave out (build output, dependencies). Version-control folders stay excluded.",
                    "type": "boolean",
                },
            },
            "type": "object",
        }
    )


def test_permission_request_is_the_folder_read(ws: Path) -> None:
    tool = ListFiles()
    ctx = ToolContext(
        call_id="c",
        tool_name="list_files",
        cwd=ws,
        read_roots=(ws,),
        write_roots=(ws,),
        session=Session(),
    )
    assert tool.permission_requests(ListFilesArgs(path="src"), ctx) == [ReadPath(path="src")]
    assert tool.permission_requests(ListFilesArgs(), ctx) == [ReadPath(path=str(ws))]


# -- what is listed: equal to rg ---------------------------------------------------------------


async def test_default_listing_equals_rg_files_newest_first(ws: Path) -> None:
    r = await list_files(make_runtime(ws))
    assert r.ok, r.content
    expected = rg_files(ws)
    assert listed(r.content) == newest_first(ws, expected)
    paths = set(listed(r.content))
    assert {".env", ".hidden/h.txt", ".gitignore", "docs/name with spaces.md"} <= paths
    assert "docs/ünïcödé.txt" in paths and "data/blob.bin" in paths
    assert not {"src/app.log", "build/out.js", "secret.txt"} & paths  # .gitignore and .ignore
    assert not any(p.split("/")[0] in VCS for p in paths)
    assert r.content.splitlines()[-1] == snapshot("(12 files, newest first.)")
    assert r.metadata["total"] == 12 and not r.metadata["partial"]


async def test_no_ignore_lists_ignored_files_but_never_vcs_folders(ws: Path) -> None:
    r = await list_files(make_runtime(ws), no_ignore=True)
    assert listed(r.content) == newest_first(ws, rg_files(ws, "--no-ignore"))
    paths = set(listed(r.content))
    assert {"src/app.log", "build/out.js", "secret.txt"} <= paths
    assert not any(p.split("/")[0] in VCS for p in paths)


@pytest.mark.parametrize(
    "pattern",
    [
        "*.py",
        "**/*.py",
        "src/**",
        "src/*.py",
        "src/**/*.py",
        "*.{md,txt}",
        "**/sub/*",
        "[a-z]*.py",
        "docs/*",
        "name with spaces.md",
        "ünïcödé.txt",
        "?????.md",
        ".*",
        "*.log",
        "build/**",
    ],
)
async def test_glob_equals_rg_glob_within_the_ignore_rules(ws: Path, pattern: str) -> None:
    """rg --glob overrides ignore rules; list_files lists its matches that rg would list."""
    r = await list_files(make_runtime(ws), pattern=pattern, limit=1000)
    assert r.ok, r.content
    expected = set(rg_files(ws, "--glob", pattern)) & set(rg_files(ws))
    assert listed(r.content) == (
        newest_first(ws, list(expected)) if expected else ["No files found"]
    )


async def test_gitignored_files_stay_out_even_when_the_glob_names_them(ws: Path) -> None:
    assert "src/app.log" in rg_files(ws, "--glob", "*.log")  # what a plain --glob would do
    r = await list_files(make_runtime(ws), pattern="*.log")
    assert r.content == "No files found"
    r = await list_files(make_runtime(ws), pattern="*.log", no_ignore=True)
    assert listed(r.content) == ["src/app.log"]


async def test_exclusion_pattern_equals_rg(ws: Path) -> None:
    r = await list_files(make_runtime(ws), pattern="!**/*.py")
    assert listed(r.content) == newest_first(ws, rg_files(ws, "--glob", "!**/*.py"))
    assert not any(p.endswith(".py") for p in listed(r.content))


async def test_symlinks_are_not_followed(ws: Path, tmp_path: Path) -> None:
    outside = Path(os.path.realpath(tmp_path)) / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("x\n")
    (ws / "link-dir").symlink_to(outside)
    (ws / "link-file.txt").symlink_to(outside / "leak.txt")
    r = await list_files(make_runtime(ws))
    assert not any(p.startswith("link") for p in listed(r.content))
    assert listed(r.content) == newest_first(ws, rg_files(ws))


# -- order, paths and paging -------------------------------------------------------------------


async def test_newest_first_with_a_name_tie_break(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    stamps = {"old.txt": 100, "b/tie.txt": 500, "a.txt": 500, "a/z.txt": 500, "new.txt": 900}
    for name, stamp in stamps.items():
        (ws / name).parent.mkdir(exist_ok=True)
        (ws / name).write_text("x\n")
        os.utime(ws / name, (stamp, stamp))
    r = await list_files(make_runtime(ws))
    # Ties go folder by folder, as rg --sort=path walks: a/z.txt before a.txt.
    assert listed(r.content) == ["new.txt", "a/z.txt", "a.txt", "b/tie.txt", "old.txt"]


async def test_by_path_when_configured(ws: Path) -> None:
    tool = ListFiles()
    tool.newest_first = False
    r = await list_files(make_runtime(ws, tool), limit=3)
    assert listed(r.content) == sorted(rg_files(ws), key=lambda p: p.replace("/", "\0"))[:3]
    assert listed(r.content) == rg_files(ws, "--sort=path")[:3]
    assert r.content.splitlines()[-1] == snapshot(
        "(Showing 1-3 of 12 files, by path. More: call list_files again with offset=3, or narrow the pattern or path.)"
    )


async def test_paging_footers(ws: Path) -> None:
    rt = make_runtime(ws)
    everything = newest_first(ws, rg_files(ws))
    r = await list_files(rt, limit=4)
    assert listed(r.content) == everything[:4]
    assert r.content.splitlines()[-1] == snapshot(
        "(Showing 1-4 of 12 files, newest first. More: call list_files again with offset=4, or narrow the pattern or path.)"
    )
    r = await list_files(rt, limit=4, offset=4)
    assert listed(r.content) == everything[4:8]
    r = await list_files(rt, limit=4, offset=8)
    assert listed(r.content) == everything[8:]
    assert r.content.splitlines()[-1] == snapshot(
        "(Showing 9-12 of 12 files, newest first; this is the last page.)"
    )
    r = await list_files(rt, offset=40)
    assert r.ok and r.content == snapshot(
        "(No files at offset=40: only 12 files match. Call again with a smaller offset, e.g. offset=0.)"
    )
    assert r.metadata == {
        "total": 12,
        "shown": 0,
        "offset": 40,
        "limit": 100,
        "partial": False,
        "stopped": None,
    }


async def test_default_limit_is_100(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    for i in range(130):
        (ws / f"f{i:03d}.txt").write_text("x\n")
        os.utime(ws / f"f{i:03d}.txt", (1000 + i, 1000 + i))
    r = await list_files(make_runtime(ws))
    assert listed(r.content) == [f"f{i:03d}.txt" for i in range(129, 29, -1)]
    assert "offset=100" in r.content.splitlines()[-1]


async def test_no_files_found(ws: Path) -> None:
    r = await list_files(make_runtime(ws), pattern="*.nothing")
    assert r.ok and r.content == "No files found"


async def test_path_narrows_and_paths_stay_relative_to_the_cwd(ws: Path) -> None:
    r = await list_files(make_runtime(ws), path="src")
    expected = ["src/" + p for p in rg_files(ws / "src")]
    assert listed(r.content) == newest_first(ws, expected)
    r = await list_files(make_runtime(ws), path="src", pattern="sub/*.py")
    assert listed(r.content) == ["src/sub/deep.py"]  # the glob is relative to path


async def test_outside_the_cwd_paths_are_absolute(ws: Path) -> None:
    rt = make_runtime(ws, cwd=ws / "src")
    r = await list_files(rt, path=str(ws / "docs"))
    assert set(listed(r.content)) == {str(ws / "docs" / p) for p in rg_files(ws / "docs")}
    r = await list_files(rt)
    assert set(listed(r.content)) == set(rg_files(ws / "src"))


def test_newest_first_sorts_only_what_can_be_shown() -> None:
    paths = ["a", "b", "c", "d", "e", "f/g", "f.txt"]
    mtimes = [5, 9, 9, 1, 9, 7, 7]
    assert pick_newest(paths, mtimes, 3) == [1, 2, 4]  # b, c, e: newest, then by name
    assert pick_newest(paths, mtimes, 5) == [1, 2, 4, 5, 6]  # f/g before f.txt (walk order)
    assert pick_newest(paths, mtimes, 100) == [1, 2, 4, 5, 6, 0, 3]
    assert pick_newest(paths, mtimes, 0) == [] and pick_newest([], [], 5) == []


async def test_an_absolute_pattern_inside_the_folder_works(ws: Path) -> None:
    r = await list_files(make_runtime(ws), pattern=f"{ws}/src/**/*.py")
    assert sorted(listed(r.content)) == ["src/main.py", "src/sub/deep.py", "src/util.py"]


async def test_odd_names(ws: Path) -> None:
    (ws / "-dash.txt").write_text("x\n")
    (ws / os.fsdecode(b"bad\xff.txt")).write_text("x\n")
    r = await list_files(make_runtime(ws), pattern="*.txt")
    assert r.ok
    assert "-dash.txt" in listed(r.content) and "bad\ufffd.txt" in listed(r.content)
    r.content.encode("utf-8")  # valid UTF-8 whatever the file names


# -- refusals ----------------------------------------------------------------------------------


async def test_path_outside_the_roots_is_refused(ws: Path) -> None:
    r = await list_files(make_runtime(ws), path=str(ws.parent))
    assert not r.ok and r.error is ErrorCode.OUTSIDE_READ_ROOTS
    r = await list_files(make_runtime(ws), path="../")
    assert r.error is ErrorCode.OUTSIDE_READ_ROOTS


async def test_the_tool_itself_confines_its_path(ws: Path) -> None:
    """Called without the runtime's policy in front, the tool still refuses (in zh too)."""
    ctx = ToolContext(
        call_id="c",
        tool_name="list_files",
        cwd=ws,
        read_roots=(ws,),
        write_roots=(ws,),
        session=Session(),
        locale="zh",
    )
    with pytest.raises(ToolFailure) as info:
        await ListFiles().run(ListFilesArgs(path=str(ws.parent)), ctx)
    assert info.value.code is ErrorCode.OUTSIDE_READ_ROOTS
    assert info.value.message.replace(str(ws.parent), "OUT").replace(str(ws), "WS") == snapshot(
        "OUT 不在本会话可读取的文件夹(OUT/ws)之内。请传入其中的路径,或省略 path 以搜索工作目录。"
    )


async def test_missing_folder_suggests_a_near_name(ws: Path) -> None:
    r = await list_files(make_runtime(ws), path="scr")
    assert r.error is ErrorCode.FILE_NOT_FOUND
    assert r.content.replace(str(ws), "WS") == snapshot(
        "WS/scr does not exist. Did you mean `src`? Relative paths resolve against WS. Find the right path with list_files, or leave path out to search the whole working directory."
    )


async def test_a_file_is_not_a_folder(ws: Path) -> None:
    r = await list_files(make_runtime(ws), path="README.md")
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content.replace(str(ws), "WS") == snapshot(
        "WS/README.md is a file, not a folder. Call read_file to read it, or pass its folder as path to list files there."
    )


async def test_a_fifo_is_refused_without_being_opened(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    r = await list_files(make_runtime(ws), path="pipe")
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content.replace(str(ws), "WS") == snapshot(
        "WS/pipe is not a folder or a regular file. Pass a folder as path."
    )


async def test_bad_glob_is_invalid_args(ws: Path) -> None:
    r = await list_files(make_runtime(ws), pattern="src/{a,{b}}")
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot("""\
Invalid glob 'src/{a,{b}}': nested alternate groups are not allowed. Write a glob such as `*.py`, `src/**/*.ts` or `*.{js,jsx}`; escape a literal `*`, `?`, `[`, `{` or `}` with a backslash.
Call `list_files` again with corrected arguments.\
""")


async def test_a_glob_too_long_for_rg_is_invalid_args(ws: Path) -> None:
    # Found by tests/reliability/test_fuzz_tools.py: a 200k-character glob reached rg as one
    # argument, and Linux's E2BIG came back as EXECUTION_ERROR "Could not start ripgrep".
    r = await list_files(make_runtime(ws), pattern="a" * 200_000)
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot("""\
The glob is 200000 characters long; at most 4096 are accepted. Write a shorter pattern such as `*.py` or `src/**/*.ts`, or search a narrower path.
Call `list_files` again with corrected arguments.\
""")
    assert (await list_files(make_runtime(ws), pattern="*" * 4096)).ok


async def test_a_symlink_loop_as_path_is_named_as_one(ws: Path) -> None:
    # Found by the fuzz test: "loop1 does not exist. Did you mean `loop1`, `loop2`?"
    os.symlink("loop2", ws / "loop1")
    os.symlink("loop1", ws / "loop2")
    r = await list_files(make_runtime(ws), path="loop1")
    assert r.error is ErrorCode.FILE_NOT_FOUND
    assert r.content.replace(str(ws), "WS") == snapshot(
        "WS/loop1 is a symbolic link that never reaches a file or folder (the links form a loop). Pass the real folder as path, or leave path out to search the whole working directory."
    )


async def test_a_suggested_name_that_is_not_utf8_is_sent_as_utf8(ws: Path) -> None:
    # Found by the fuzz test: "Did you mean `latin\udce9`" could not be encoded to send.
    (ws / os.fsdecode(b"latin\xe9")).mkdir()
    r = await list_files(make_runtime(ws), path="latin")
    assert r.error is ErrorCode.FILE_NOT_FOUND
    assert "Did you mean `latin\ufffd`?" in r.content
    r.content.encode("utf-8")


async def test_chinese_messages(ws: Path) -> None:
    rt = make_runtime(ws, locale="zh")
    r = await list_files(rt, limit=2)
    assert r.content.splitlines()[-1] == snapshot(
        "(显示第 1-2 个,共 12 个文件,最新修改的在前。查看更多:再次调用 list_files 并传入 offset=2,或缩小模式或路径的范围。)"
    )
    r = await list_files(rt, path="nope")
    assert r.content.replace(str(ws), "WS") == snapshot(
        "WS/nope 不存在。相对路径基于 WS 解析。请用 list_files 找到正确的路径,或省略 path 以搜索整个工作目录。"
    )
    r = await list_files(rt, pattern="*.nothing")
    assert r.content == snapshot("未找到文件")


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
            sys.stdout.write("README.md\\x00src/main.py\\x00")
            sys.stdout.flush()
            time.sleep(60)
            """
        )
    )
    fake.chmod(0o755)
    monkeypatch.setattr(_ripgrep, "find_ripgrep", lambda: str(fake))
    monkeypatch.setattr(_list_files, "find_ripgrep", lambda: str(fake))
    tool = ListFiles()
    tool.search_timeout = 0.3
    r = await list_files(make_runtime(ws, tool))
    assert r.ok
    assert set(listed(r.content)) >= {"README.md", "src/main.py"}
    assert r.metadata["partial"] is True and r.metadata["stopped"] == "timeout"
    assert r.content.splitlines()[-1] == snapshot(
        "Partial results: the search was stopped after 0.3 s, so totals count only what was found by then. Narrow the path or the pattern for complete results."
    )
    assert r.summary == "list_files: 2 of 2 files (partial)"
