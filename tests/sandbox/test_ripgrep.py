"""The ripgrep runner: locating rg, running it safely, stopping it, globs with rg's semantics."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from handrail import ErrorCode, Session, ToolContext, ToolFailure
from handrail.sandbox import (
    VCS_DIRS,
    compile_glob,
    find_ripgrep,
    run_ripgrep,
    search_root,
)
from handrail.sandbox import _ripgrep as ripgrep_module

RG = find_ripgrep()
assert RG is not None, "the ripgrep wheel is a dependency: rg must be installed"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


def make_ctx(
    ws: Path, cwd: Path | None = None, roots: tuple[Path, ...] | None = None
) -> ToolContext:
    return ToolContext(
        call_id="c1",
        tool_name="test",
        cwd=cwd or ws,
        read_roots=roots or (ws,),
        write_roots=roots or (ws,),
        session=Session(),
    )


def rg_lines(cwd: Path, *args: str) -> list[str]:
    out = subprocess.run(
        [RG, "--no-config", *args], cwd=cwd, capture_output=True, check=False
    ).stdout
    return out.decode().splitlines()


@pytest.fixture
def fake_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in `rg` (a Python script) that run_ripgrep will start; write its body first."""
    script = tmp_path / "fake-rg"
    monkeypatch.setattr(ripgrep_module, "find_ripgrep", lambda: str(script))
    return script


def write_fake(script: Path, body: str) -> None:
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(0o755)


def gone(pid: int) -> bool:
    """True once `pid` no longer runs (checked for a bounded number of times)."""
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True  # a zombie: dead, waiting for its parent
        except OSError:
            return True
        time.sleep(0.02)
    return False


# -- locating rg -------------------------------------------------------------------------------


def test_rg_comes_from_the_interpreters_scripts_dir() -> None:
    assert RG == os.path.join(sysconfig.get_path("scripts"), "rg")


def test_rg_falls_back_to_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    on_path = tmp_path / "bin"
    on_path.mkdir()
    (on_path / "rg").write_text("#!/bin/sh\n")
    (on_path / "rg").chmod(0o755)
    monkeypatch.setattr(sysconfig, "get_path", lambda *a, **k: str(empty))
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    monkeypatch.setenv("PATH", str(on_path))
    find_ripgrep.cache_clear()
    try:
        assert find_ripgrep() == str(on_path / "rg")
    finally:
        find_ripgrep.cache_clear()


async def test_missing_rg_is_an_execution_error(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ripgrep_module, "find_ripgrep", lambda: None)
    with pytest.raises(ToolFailure) as info:
        await run_ripgrep(["--files"], cwd=str(ws))
    assert info.value.code is ErrorCode.EXECUTION_ERROR
    assert "ripgrep (rg) was not found" in info.value.message


# -- running it --------------------------------------------------------------------------------


async def test_records_mtimes_and_keep(ws: Path) -> None:
    for i, name in enumerate(["a.txt", "b.py", "sub/c.py"]):
        (ws / name).parent.mkdir(exist_ok=True)
        (ws / name).write_text("x\n")
        os.utime(ws / name, ns=(1_000_000_000 * (i + 1), 1_000_000_000 * (i + 1)))
    run = await run_ripgrep(["--files", "--null"], cwd=str(ws), nul_separated=True, with_mtime=True)
    assert sorted(run.records) == ["a.txt", "b.py", "sub/c.py"]
    assert dict(zip(run.records, run.mtimes, strict=True)) == {
        "a.txt": 1_000_000_000,
        "b.py": 2_000_000_000,
        "sub/c.py": 3_000_000_000,
    }
    assert run.exit_code == 0 and not run.partial and not run.failed
    kept = await run_ripgrep(
        ["--files", "--null"], cwd=str(ws), nul_separated=True, keep=lambda p: p.endswith(".py")
    )
    assert sorted(kept.records) == ["b.py", "sub/c.py"]


async def test_lines_match_what_rg_prints(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo one\nthree\n")
    run = await run_ripgrep(["-n", "one", "a.txt"], cwd=str(ws))
    assert run.records == rg_lines(ws, "-n", "one", "a.txt") == ["1:one", "2:two one"]


async def test_rg_error_is_reported(ws: Path) -> None:
    run = await run_ripgrep(["--regexp=foo("], cwd=str(ws))
    assert run.failed and run.exit_code == 2
    assert "unclosed group" in run.error
    assert not run.error.startswith("rg: ")


async def test_config_file_is_never_read(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / "a.txt").write_text("x\n")
    config = ws.parent / "rgrc"
    config.write_text("--glob=!*.txt\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    run = await run_ripgrep(["--files"], cwd=str(ws))
    assert run.records == ["a.txt"]


async def test_stdin_is_dev_null_and_own_process_group(ws: Path, fake_rg: Path) -> None:
    write_fake(
        fake_rg,
        """
        import os, sys
        data = sys.stdin.read()  # would hang if stdin were a pipe left open
        print(f"stdin={len(data)}")
        print(f"pgid_is_pid={os.getpgid(0) == os.getpid()}")
        print(f"same_session={os.getsid(0) == int(sys.argv[-1])}")
        print(" ".join(sys.argv[1:-1]))
        """,
    )
    run = await run_ripgrep(["--files", "-- x", str(os.getsid(0))], cwd=str(ws), timeout=30)
    assert run.records == [
        "stdin=0",
        "pgid_is_pid=True",
        "same_session=True",
        "--no-config --files -- x",  # an argument list: no shell, no word splitting
    ]


async def test_timeout_returns_partial_records_and_kills_the_tree(ws: Path, fake_rg: Path) -> None:
    pid_file = ws / "child.pid"
    write_fake(
        fake_rg,
        f"""
        import subprocess, sys, time
        child = subprocess.Popen(["sleep", "60"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        sys.stdout.write("a.txt\\x00b.txt\\x00c.t")  # the last record is cut short
        sys.stdout.flush()
        time.sleep(60)
        """,
    )
    run = await run_ripgrep(["--files"], cwd=str(ws), timeout=0.5, nul_separated=True)
    assert run.stopped == "timeout" and run.partial
    assert run.exit_code is None
    assert run.records == ["a.txt", "b.txt"]
    assert gone(int(pid_file.read_text()))


async def test_context_cancellation_stops_rg(ws: Path, fake_rg: Path) -> None:
    write_fake(
        fake_rg,
        """
        import sys, time
        print("first", flush=True)
        time.sleep(60)
        """,
    )
    ctx = make_ctx(ws)
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, ctx.cancel)
    run = await run_ripgrep(["x"], cwd=str(ws), timeout=30, ctx=ctx)
    assert run.stopped == "cancelled"
    assert run.records == ["first"]


async def test_task_cancellation_kills_rg_and_propagates(ws: Path, fake_rg: Path) -> None:
    pid_file = ws / "rg.pid"
    write_fake(
        fake_rg,
        f"""
        import os, time
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(60)
        """,
    )
    task = asyncio.ensure_future(run_ripgrep(["x"], cwd=str(ws), timeout=30))
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(int(pid_file.read_text()))


async def test_output_cap_stops_rg(ws: Path) -> None:
    for i in range(200):
        (ws / f"file{i:03d}.txt").write_text("x\n")
    run = await run_ripgrep(["--files", "--null"], cwd=str(ws), nul_separated=True, max_output=100)
    assert run.stopped == "output_limit"
    assert 0 < len(run.records) < 200


# -- search roots ------------------------------------------------------------------------------


def test_search_root_folder_file_missing(ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "a.py").write_text("x\n")
    ctx = make_ctx(ws)
    root = search_root(None, ctx)
    assert (root.kind, root.cwd, root.name, root.prefix) == ("dir", str(ws), None, "")
    root = search_root("src", ctx)
    assert (root.kind, root.cwd, root.prefix) == ("dir", str(ws / "src"), "src/")
    root = search_root("src/pkg/a.py", ctx)
    assert (root.kind, root.cwd, root.name, root.prefix) == (
        "file",
        str(ws / "src" / "pkg"),
        "a.py",
        "src/pkg/",
    )
    root = search_root("src/pkgg/x", ctx)
    assert root.kind == "missing"
    assert "pkg" in root.nearby


def test_search_root_outside_cwd_prints_absolute_paths(ws: Path) -> None:
    (ws / "a").mkdir()
    (ws / "b").mkdir()
    root = search_root(str(ws / "b"), make_ctx(ws, cwd=ws / "a"))
    assert root.prefix == str(ws / "b") + "/"


def test_search_root_outside_the_roots_is_refused(ws: Path) -> None:
    with pytest.raises(ToolFailure) as info:
        search_root("..", make_ctx(ws))
    assert info.value.code is ErrorCode.OUTSIDE_READ_ROOTS
    sibling = ws.parent / (ws.name + "-evil")
    sibling.mkdir()
    with pytest.raises(ToolFailure):
        search_root(str(sibling), make_ctx(ws))


# -- globs: rg's own semantics, without un-ignoring anything ----------------------------------

GLOB_TREE = [
    "a.py",
    "b.txt",
    "c.PY",
    "src/c.py",
    "src/sub.py",
    "src/deep/d.py",
    "src/deep/er/e.ts",
    "lib/f.py",
    "lib/src/g.py",
    "sub/g.md",
    "sp ace.txt",
    "[x].txt",
    "x-y",
    "a,b.py",
    ".hidden/h.py",
    "ünï/cödé.txt",
]

PATTERNS = [
    "*.py",
    "**/*.py",
    "*",
    "**",
    "**/*",
    "src/**",
    "src/*.py",
    "/src/*.py",
    "/*.py",
    "src/**/*.py",
    "**/deep/**",
    "**/src/*.py",
    "{src,lib}/*.py",
    "*.{py,ts}",
    "[!a]*.py",
    "[a-c].*",
    "src/**.py",
    "src/d**/d.py",
    "deep/d.py",
    "\\[x\\].txt",
    "sp ace.txt",
    "?.py",
    "src/deep/**/*",
    "**/**/*.ts",
    "src[/]c.py",
    "a,b.py",
    "{src/*.py,*.md}",
    ".hidden/*",
    "*.txt",
    "cödé.txt",
    "ünï/*",
    "x-[x-z]",
    "su**",
]


@pytest.fixture
def glob_tree(ws: Path) -> Path:
    for name in GLOB_TREE:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("x\n")
    return ws


@pytest.mark.parametrize("pattern", PATTERNS)
async def test_glob_matches_what_rg_glob_matches(glob_tree: Path, pattern: str) -> None:
    glob = compile_glob(pattern)
    run = await run_ripgrep(
        ["--files", "--hidden", "--null", *glob.args],
        cwd=str(glob_tree),
        nul_separated=True,
        keep=glob.match,
    )
    expected = set(rg_lines(glob_tree, "--files", "--hidden", "--glob", pattern))
    assert set(run.records) == expected
    untyped = compile_glob(pattern, type_filter=False)
    assert not any(a.startswith("--type") for a in untyped.args)
    everything = rg_lines(glob_tree, "--files", "--hidden")
    assert {p for p in everything if untyped.match is None or untyped.match(p)} == expected


def test_glob_forms_and_what_goes_to_rg() -> None:
    assert compile_glob("**/*") == compile_glob("*") == compile_glob("./**")
    assert compile_glob("**/*").args == () and compile_glob("**/*").match is None
    py = compile_glob("*.py")  # the file name only: rg's own type filter, exact
    assert py.args == ("--type-add=handrail:*.py", "--type=handrail") and py.match is None
    nested = compile_glob("src/**/*.py")  # folders: rg pre-filters the name, Python the rest
    assert nested.args == ("--type-add=handrail:*.py", "--type=handrail")
    assert nested.match is not None and nested.match("src/a/b.py") and not nested.match("b.py")
    excluded = compile_glob("!**/*.md")
    assert excluded.args == ("--glob", "!**/*.md") and excluded.match is None
    folder = compile_glob("src/")  # a folder pattern: everything inside such folders
    assert folder.match is not None
    assert folder.match("src/a.py") and folder.match("lib/src/x/y") and not folder.match("src")
    colon = compile_glob("a:b*")  # rg's --type-add cannot take a ':'; Python matches instead
    assert colon.args == () and colon.match is not None and colon.match("x/a:bc")


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("[ab", "unclosed character class; missing ']'"),
        ("{a,{b,c}}", "nested alternate groups are not allowed"),
        ("{a,b", "unclosed alternate group; missing '}'"),
        ("a}", "unopened alternate group; missing '{' (escape it as '\\}')"),
        ("a\\", "dangling '\\'"),
        ("", "it is empty"),
        ("/", "it is empty"),
        ("!", "nothing follows the '!'"),
        ("a\nb", "it contains a NUL byte or a newline"),
    ],
)
def test_malformed_globs(pattern: str, reason: str) -> None:
    with pytest.raises(ValueError, match="^" + __import__("re").escape(reason) + "$"):
        compile_glob(pattern)


async def test_a_glob_never_un_ignores(ws: Path) -> None:
    """rg's --glob would list gitignored files; compile_glob's filters never do."""
    (ws / ".git").mkdir()
    (ws / ".gitignore").write_text("*.log\n!keep.md\n")
    for name in ["a.log", "b.py", "keep.md", "other.md", "sub/c.log"]:
        (ws / name).parent.mkdir(exist_ok=True)
        (ws / name).write_text("x\n")
    assert "a.log" in rg_lines(ws, "--files", "--glob", "*.log")  # the override leak
    for pattern, expected in [
        ("*.log", set()),
        ("**/*.log", set()),
        ("*.md", {"keep.md", "other.md"}),
    ]:
        glob = compile_glob(pattern)
        run = await run_ripgrep(["--files", "--null", *glob.args], cwd=str(ws), nul_separated=True)
        assert set(run.records) == expected


def test_vcs_folders() -> None:
    assert set(VCS_DIRS) >= {".git", ".hg", ".svn", ".jj"}
