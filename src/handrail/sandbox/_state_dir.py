"""handrail's private state folder, and the folder of one workspace's state inside it.

`$HANDRAIL_STATE_DIR`, else `$XDG_STATE_HOME/handrail`, else `~/.local/state/handrail`. Every
tool is refused these folders (`permissions._hidden`), and the shell's sandbox hides them.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

__all__ = ["checkpoint_folder", "state_dir", "workspace_key"]


def state_dir() -> Path:
    """The user's handrail state folder (see the module docstring)."""
    explicit = os.environ.get("HANDRAIL_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "handrail"


def workspace_key(root: Path) -> str:
    """A folder name for the workspace at `root`: its last part and a hash of the whole path."""
    resolved = str(root.resolve())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name or "root").strip("-")[:40]
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    return f"{slug or 'root'}-{digest}"


def checkpoint_folder(root: Path, base: Path | None = None) -> Path:
    """The folder of the checkpoints of the workspace at `root` (its store, its sessions' logs)."""
    return (base or state_dir()) / "checkpoints" / workspace_key(root)
