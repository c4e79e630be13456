"""The sandbox: the only code that resolves and confines paths, touches files or spawns processes.

Invariants: paths are resolved (symlinks included) before any containment check, and
containment is decided by path components; what is opened is checked again at open time; a
write is atomic and keeps the file's mode; a process started here never outlives its time
limit, and neither do its descendants. A confined command sees only its own session (its own
/proc and /tmp, no other program's sockets), and one nobody approved writes only its $TMPDIR.
Tools (built-in or not) use these helpers rather than `open()`/`subprocess` of their own; the
built-in tools use nothing else of this package, so a third-party tool can do what they do:
* files: `confine_read`/`confine_write` (the path, checked against the call's roots),
  `resolve_path`, `read_file_bytes`/`FileData`, `stat_file`, `file_kind`, `list_dir_names`,
  `atomic_write`, `ensure_parent`;
* text: `decode_text`/`encode_text` (`TextFormat`: encoding, BOM, line endings),
  `sniff_binary`, `split_lines`, `newline_of`; diffs: `unified_diff`, `diff_stat`;
* search: `find_ripgrep`, `search_root`/`SearchRoot`, `compile_glob`/`RipgrepGlob`,
  `run_ripgrep`/`RipgrepRun`, `VCS_DIRS`;
* URLs, for fetch-like tools (an SSRF guard): `parse_url`/`ParsedUrl`, `check_host`,
  `check_url`/`CheckedUrl`/`ResolveFunc`, `parse_allow_hosts`/`AllowList`/`AllowEntry`,
  `MAX_URL_CHARS`; refusals are `UrlRefused` (`InvalidUrl`, `HostNotFound`, `BlockedAddress`
  with its `AddressBlock`);
* commands: `run_command`/`CommandResult` (short-lived, with a time limit), `system_which`;
* a shell tool: `ShellSandbox` (one per session) plans each command's OS sandbox (or raises
  `SandboxUnavailable`) and returns a `ConfinedShell`, which starts it as a `ShellProcess`
  (`SandboxSetupError` when the sandbox cannot be applied) streaming into an `OutputCapture`;
  `read_log` reads a background job's log; `sandbox_support()`/`SandboxSupport` say what the
  machine offers;
* checkpoints (used by the runtime around every call that can change files): `Checkpoints`
  (one session's), `BlobStore` (a workspace's kept contents), `Checkpoint`, `RestorePlan`,
  `Restored`; `clean_checkpoints`/`CheckpointCleanup` remove old logs and unreferenced
  contents; `state_dir`/`workspace_key`/`checkpoint_folder` name handrail's private state.
"""

from __future__ import annotations

from ._capture import OutputCapture as OutputCapture
from ._checkpoint_cleanup import CheckpointCleanup as CheckpointCleanup
from ._checkpoint_cleanup import clean_checkpoints as clean_checkpoints
from ._checkpoint_store import BlobStore as BlobStore
from ._checkpoints import Checkpoint as Checkpoint
from ._checkpoints import Checkpoints as Checkpoints
from ._checkpoints import Restored as Restored
from ._checkpoints import RestorePlan as RestorePlan
from ._containment import confine_read as confine_read
from ._containment import confine_write as confine_write
from ._diff import diff_stat as diff_stat
from ._diff import unified_diff as unified_diff
from ._files import FileData as FileData
from ._files import atomic_write as atomic_write
from ._files import ensure_parent as ensure_parent
from ._files import file_kind as file_kind
from ._files import list_dir_names as list_dir_names
from ._files import read_file_bytes as read_file_bytes
from ._files import stat_file as stat_file
from ._os_confinement import SandboxSupport as SandboxSupport
from ._os_confinement import sandbox_support as sandbox_support
from ._paths import resolve_path as resolve_path
from ._programs import system_which as system_which
from ._ripgrep import VCS_DIRS as VCS_DIRS
from ._ripgrep import RipgrepGlob as RipgrepGlob
from ._ripgrep import RipgrepRun as RipgrepRun
from ._ripgrep import SearchRoot as SearchRoot
from ._ripgrep import compile_glob as compile_glob
from ._ripgrep import find_ripgrep as find_ripgrep
from ._ripgrep import run_ripgrep as run_ripgrep
from ._ripgrep import search_root as search_root
from ._shell_process import SandboxSetupError as SandboxSetupError
from ._shell_process import ShellProcess as ShellProcess
from ._shell_process import read_log as read_log
from ._shell_sandbox import ConfinedShell as ConfinedShell
from ._shell_sandbox import SandboxUnavailable as SandboxUnavailable
from ._shell_sandbox import ShellSandbox as ShellSandbox
from ._state_dir import checkpoint_folder as checkpoint_folder
from ._state_dir import state_dir as state_dir
from ._state_dir import workspace_key as workspace_key
from ._text import TextFormat as TextFormat
from ._text import decode_text as decode_text
from ._text import encode_text as encode_text
from ._text import newline_of as newline_of
from ._text import sniff_binary as sniff_binary
from ._text import split_lines as split_lines
from ._timed_command import CommandResult as CommandResult
from ._timed_command import run_command as run_command
from ._urlguard import MAX_URL_CHARS as MAX_URL_CHARS
from ._urlguard import AddressBlock as AddressBlock
from ._urlguard import AllowEntry as AllowEntry
from ._urlguard import AllowList as AllowList
from ._urlguard import BlockedAddress as BlockedAddress
from ._urlguard import CheckedUrl as CheckedUrl
from ._urlguard import HostNotFound as HostNotFound
from ._urlguard import InvalidUrl as InvalidUrl
from ._urlguard import ParsedUrl as ParsedUrl
from ._urlguard import ResolveFunc as ResolveFunc
from ._urlguard import UrlRefused as UrlRefused
from ._urlguard import check_host as check_host
from ._urlguard import check_url as check_url
from ._urlguard import parse_allow_hosts as parse_allow_hosts
from ._urlguard import parse_url as parse_url

__all__ = [
    "MAX_URL_CHARS",
    "VCS_DIRS",
    "AddressBlock",
    "AllowEntry",
    "AllowList",
    "BlobStore",
    "BlockedAddress",
    "CheckedUrl",
    "Checkpoint",
    "CheckpointCleanup",
    "Checkpoints",
    "CommandResult",
    "ConfinedShell",
    "FileData",
    "HostNotFound",
    "InvalidUrl",
    "OutputCapture",
    "ParsedUrl",
    "ResolveFunc",
    "RestorePlan",
    "Restored",
    "RipgrepGlob",
    "RipgrepRun",
    "SandboxSetupError",
    "SandboxSupport",
    "SandboxUnavailable",
    "SearchRoot",
    "ShellProcess",
    "ShellSandbox",
    "TextFormat",
    "UrlRefused",
    "atomic_write",
    "check_host",
    "check_url",
    "checkpoint_folder",
    "clean_checkpoints",
    "compile_glob",
    "confine_read",
    "confine_write",
    "decode_text",
    "diff_stat",
    "encode_text",
    "ensure_parent",
    "file_kind",
    "find_ripgrep",
    "list_dir_names",
    "newline_of",
    "parse_allow_hosts",
    "parse_url",
    "read_file_bytes",
    "read_log",
    "resolve_path",
    "run_command",
    "run_ripgrep",
    "sandbox_support",
    "search_root",
    "sniff_binary",
    "split_lines",
    "stat_file",
    "state_dir",
    "system_which",
    "unified_diff",
    "workspace_key",
]
