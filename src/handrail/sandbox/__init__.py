"""The sandbox: the only code that resolves paths for permission checks or spawns processes.

Invariants: paths are resolved (symlinks included) before any containment check, and
containment is decided by path components; a process started here never outlives its time
limit, and neither do its descendants.
"""

from __future__ import annotations

from ._paths import resolve_path as resolve_path
from ._process import CommandResult as CommandResult
from ._process import kill_tree as kill_tree
from ._process import run_command as run_command

__all__ = ["CommandResult", "kill_tree", "resolve_path", "run_command"]
