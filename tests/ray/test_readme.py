"""The README's Ray example, run as written in a fresh Python with its own local Ray."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

README = Path(__file__).parents[2] / "README.md"


def test_the_rl_example_runs_64_rollouts_and_gathers_their_rewards(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    found = [b for b in blocks if "SessionPool(mode=" in b]
    assert len(found) == 1
    script = tmp_path / "rollouts.py"
    script.write_text(found[0] + "\nassert None not in rewards, rewards\nray.shutdown()\n")
    short = Path(tempfile.mkdtemp(prefix="hrr", dir="/tmp"))  # Ray's socket paths must fit
    env = {
        **os.environ,
        # Ray takes loopback as the node's address where it does not cluster (macOS, Windows):
        # the example's plain ray.init() then never leaves 127.0.0.1.
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "TMPDIR": str(short),
    }
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "48 of 64 rollouts passed" in done.stdout
        assert not list(short.glob("handrail-ray-*")), "the pool left its directory behind"
    finally:
        shutil.rmtree(short, ignore_errors=True)
