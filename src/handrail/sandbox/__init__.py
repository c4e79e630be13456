"""The sandbox: the only code that resolves and confines paths, touches files or spawns processes.

Invariants: paths are resolved (symlinks included) before any containment check, and
containment is decided by path components; what is opened is checked again at open time; a
write is atomic and keeps the file's mode; a process started here never outlives its time
limit, and neither do its descendants. Tools (built-in or not) use these helpers rather than
`open()`/`subprocess` of their own.
"""

from __future__ import annotations

from ._confine import PROTECTED_DIRS as PROTECTED_DIRS
from ._confine import confine_read as confine_read
from ._confine import confine_write as confine_write
from ._confine import inside as inside
from ._confine import protected_part as protected_part
from ._diff import diff_stat as diff_stat
from ._diff import unified_diff as unified_diff
from ._files import FileData as FileData
from ._files import atomic_write as atomic_write
from ._files import ensure_parent as ensure_parent
from ._files import read_file_bytes as read_file_bytes
from ._files import stat_file as stat_file
from ._paths import resolve_path as resolve_path
from ._process import CommandResult as CommandResult
from ._process import kill_tree as kill_tree
from ._process import run_command as run_command
from ._text import TextFormat as TextFormat
from ._text import decode_text as decode_text
from ._text import encode_text as encode_text
from ._text import newline_of as newline_of
from ._text import sniff_binary as sniff_binary

__all__ = [
    "PROTECTED_DIRS",
    "CommandResult",
    "FileData",
    "TextFormat",
    "atomic_write",
    "confine_read",
    "confine_write",
    "decode_text",
    "diff_stat",
    "encode_text",
    "ensure_parent",
    "inside",
    "kill_tree",
    "newline_of",
    "protected_part",
    "read_file_bytes",
    "resolve_path",
    "run_command",
    "sniff_binary",
    "stat_file",
    "unified_diff",
]
