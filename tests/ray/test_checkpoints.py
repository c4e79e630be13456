"""A `RemoteRuntime` session's checkpoints, kept in its host, on a real local Ray.

The host records the session's changes like a local `Runtime(checkpoints=True)`; listing,
planning and restoring cross the socket as plain data. Nobody can be asked in the host, so files
changed outside the session are overwritten only when the driver says so. The checkpoints live
in the host's directory, hidden from every session's tools, and go with the session.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from handrail import ConfigurationError
from handrail.ray import DirWorkspace, SessionPool
from handrail.sandbox import Checkpoint, Restored, RestorePlan

from .conftest import TOOLS

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_local")]

BLOB = bytes(range(256)) * 2 + b"\r\n\x00"


async def test_a_sessions_checkpoints_are_kept_and_restored_in_its_host(tmp_path: Path) -> None:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "blob.bin").write_bytes(BLOB)
    (source / "notes.txt").write_text("first\n")
    async with SessionPool(TOOLS.coding, hosts=1, mode="accept_edits", allow=["run_shell"]) as pool:
        rt = await pool.open(DirWorkspace(str(source)))
        root = Path(rt.root)
        assert rt.keeps_checkpoints
        assert await rt.checkpoints() == []
        changed = await rt.call(
            "run_shell", {"command": "printf x > blob.bin && echo second >> notes.txt"}
        )
        assert changed.ok, changed.content

        (first,) = await rt.checkpoints()
        assert isinstance(first, Checkpoint)
        assert (first.id, first.tool, first.changed) == (1, "run_shell", ("blob.bin", "notes.txt"))
        kept = Path(tempfile.gettempdir()) / f"handrail-ray-{pool.id}" / "host-0" / "checkpoints"
        assert (kept / rt.session_id).is_dir()
        # No session's tools can see them (the host's other folders may be visible).
        peek = await rt.call("run_shell", {"command": f"ls -a {kept.parent}"})
        assert "checkpoints" not in peek.content.split()

        # A change by hand: the plan names it, and the host, with nobody to ask, refuses.
        (root / "notes.txt").write_text("by hand\n")
        plan = await rt.restore_plan(1)
        assert isinstance(plan, RestorePlan)
        assert plan.paths == ("blob.bin", "notes.txt") and plan.outside == ("notes.txt",)
        refused = await rt.restore(1)
        assert isinstance(refused, Restored) and refused.refused is not None
        assert (root / "blob.bin").read_bytes() == b"x"

        done = await rt.restore(1, overwrite_outside=True)
        assert done.ok and set(done.changed) == {"blob.bin", "notes.txt"}
        assert done.overwritten == ("notes.txt",) and done.undo is not None
        assert (root / "blob.bin").read_bytes() == BLOB
        assert (root / "notes.txt").read_text() == "first\n"
        undone = await rt.restore(done.undo)
        assert undone.ok and (root / "notes.txt").read_text() == "by hand\n"
        assert (root / "blob.bin").read_bytes() == b"x"

        only = await rt.restore(1, ["blob.bin"])
        assert only.changed == ("blob.bin",) and (root / "notes.txt").read_text() == "by hand\n"
        with pytest.raises(KeyError, match="no checkpoint 99"):
            await rt.restore_plan(99)

        await rt.aclose()
        assert not (kept / rt.session_id).exists()
        with pytest.raises(ConfigurationError, match="closed"):
            await rt.checkpoints()

        off = await pool.open(checkpoints=False)
        assert not off.keeps_checkpoints
        with pytest.raises(ConfigurationError, match="keeps no checkpoints"):
            await off.restore(1)
        await off.aclose()
