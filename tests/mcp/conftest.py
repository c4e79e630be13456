"""The MCP tests' servers keep their state (checkpoints, token files) in a folder of the run.

`handrail serve` keeps checkpoints of every session in handrail's state folder. This points
`$HANDRAIL_STATE_DIR` at a temporary folder for the whole run, for the servers started with
`subprocess` (they inherit the environment) and for those the SDK client spawns over stdio
(it passes on only a few variables, so this one is added to them), so no test writes to the
user's own state folder. A test that sets its own environment for a server keeps it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

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
