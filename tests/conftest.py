"""Shared by every test: the run's own temporary root, and a guard that sessions leave it clean.

The test run gets a private temporary root (`$TMPDIR` and `tempfile.tempdir` point at it, so
subprocesses use it too), which makes what sessions leave there countable exactly even while
other test runs share the machine's /tmp. pytest's own `tmp_path` folders stay where pytest
keeps them. At the end of the run:

- a `handrail-*` entry that no live `Session` owns would outlive this process (a process
  holding a session was killed, or something made a directory outside `Session.temp_path`):
  the run fails and names them (only a note when a test failed already: it may have skipped
  its cleanup);
- sessions still alive that were never closed are only counted in a note: their directories
  go when they are collected or when the process exits (`Session.temp_path`).

The root is removed at the end either way.

handrail's own state (checkpoints, token files, MCP tool lists, OAuth tokens) goes to a folder
of the run too: `$HANDRAIL_STATE_DIR` points there for the whole run, for the servers started
with `subprocess` (they inherit the environment) and for those the MCP SDK spawns over stdio
(it passes on only a few variables, so this one is added to them), so no test writes to the
user's own state folder. A test that sets its own environment for a server keeps it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail import Session

# The official MCP peers from npm (server-everything), for the terminal and CLI tests too.
from .mcp.conftest import mcp_peers as mcp_peers

_VAR = "HANDRAIL_STATE_DIR"


@pytest.fixture(scope="session", autouse=True)
def state_dir_of_the_run() -> Iterator[Path]:
    """`$HANDRAIL_STATE_DIR` for this run's servers; removed at the end."""
    from mcp.client import stdio

    folder = Path(tempfile.mkdtemp(prefix="pytest-handrail-state-"))
    saved = os.environ.get(_VAR)
    inherited = stdio.DEFAULT_INHERITED_ENV_VARS
    added = _VAR not in inherited
    os.environ[_VAR] = str(folder)
    if added:
        inherited.append(_VAR)
    try:
        yield folder
    finally:
        if added:
            inherited.remove(_VAR)
        if saved is None:
            os.environ.pop(_VAR, None)
        else:
            os.environ[_VAR] = saved
        shutil.rmtree(folder, ignore_errors=True)


PREFIX = "handrail-"
"""What a session's temporary directory is called (`Session.temp_path`)."""


@pytest.fixture(scope="session", autouse=True)
def temp_root_left_clean(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """Give the run a private temporary root; fail the run if sessions left anything in it."""
    tmp_path_factory.getbasetemp()  # pytest's folders are placed before the root changes
    root = Path(tempfile.mkdtemp(prefix="pytest-handrail-tmp-"))
    saved_env, saved_tempdir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = str(root)
    tempfile.tempdir = str(root)
    try:
        yield root
    finally:
        gc.collect()  # a session nobody closed removes its directory when collected
        left = {p.name for p in root.iterdir() if p.name.startswith(PREFIX)}
        live = {
            obj.temp_dir.name
            for obj in gc.get_objects()
            if isinstance(obj, Session) and obj.temp_dir is not None
        }
        tempfile.tempdir = saved_tempdir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        shutil.rmtree(root, ignore_errors=True)
        _report(request, sorted(left - live), len(left & live))


def _note(request: pytest.FixtureRequest, text: str) -> None:
    """A line on the terminal (teardown output is captured, and dropped when all passed)."""
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        reporter.write("\n")
        reporter.write_line(f"note: {text}")


def _report(request: pytest.FixtureRequest, orphans: list[str], unclosed: int) -> None:
    if unclosed:
        _note(
            request,
            f"{unclosed} session(s) were never closed (Runtime.aclose / Session.aclose); "
            "their temporary directories go when the process exits",
        )
    if not orphans:
        return
    shown = ", ".join(orphans[:10]) + (", ..." if len(orphans) > 10 else "")
    message = (
        f"this test run left {len(orphans)} session temporary director"
        f"{'y' if len(orphans) == 1 else 'ies'} that no live session owns ({shown}): a "
        "process holding a session was killed, or a directory was made outside "
        "Session.temp_path"
    )
    if request.session.testsfailed:
        _note(request, message)
        return
    pytest.fail(message, pytrace=False)
