"""The shared inotify watch: one instance for the whole process, each event to the right session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handrail.sandbox import BlobStore, Checkpoints
from handrail.sandbox._change_watch import ChangeWatch


def inotify_handles() -> int:
    """How many inotify instances this process holds open."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                found += 1
        except OSError:
            continue
    return found


@pytest.mark.skipif(not ChangeWatch().active, reason="no inotify on this machine")
def test_many_sessions_share_one_inotify_instance_and_see_only_their_own_roots(
    tmp_path: Path,
) -> None:
    store = BlobStore(tmp_path / "state", max_bytes=1 << 30)
    roots = []
    for n in range(6):
        root = tmp_path / f"ws{n}"
        root.mkdir()
        (root / "a.txt").write_text(f"{n}\n")
        roots.append(root)
    before = inotify_handles()
    sessions = [Checkpoints([r], store=store) for r in roots]
    for cp in sessions:
        cp.begin("x")
    # A user has 128 instances for every program they run: sessions must not take one each.
    assert inotify_handles() - before <= 1
    (roots[2] / "a.txt").write_text("changed\n")
    changed = [cp.end() for cp in sessions]
    assert changed[2] == ("a.txt",)
    assert all(c == () for i, c in enumerate(changed) if i != 2)
    for cp in sessions:
        cp.close()
