"""`write_file_atomic`: handrail's own files (settings, the trust store) replaced in one step."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from handrail._atomic import temp_name, write_file_atomic


def test_a_new_file_gets_the_umask_mode_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    new = tmp_path / "settings.json"
    write_file_atomic(new, b"{}\n")
    umask = os.umask(0)
    os.umask(umask)
    assert (new.read_bytes(), stat.S_IMODE(new.stat().st_mode)) == (b"{}\n", 0o666 & ~umask)
    new.chmod(0o640)
    write_file_atomic(new, b'{"a": 1}\n')
    assert (new.read_bytes(), stat.S_IMODE(new.stat().st_mode)) == (b'{"a": 1}\n', 0o640)
    write_file_atomic(new, b"{}\n", mode=0o600)
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_a_dead_writers_leftover_beside_it_is_swept(tmp_path: Path) -> None:
    target = tmp_path / "trusted.json"
    target.write_text("old")
    leftover = tmp_path / temp_name("trusted.json").replace(str(os.getpid()), "999999999", 1)
    leftover.write_text("half")
    write_file_atomic(target, b"new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trusted.json"]
