"""The sandbox: the only code that resolves and confines paths, touches files or spawns processes.

Invariants: paths are resolved (symlinks included) before any containment check, and
containment is decided by path components; what is opened is checked again at open time; a
write is atomic and keeps the file's mode; a process started here never outlives its time
limit, and neither do its descendants. A confined command sees only its own session (its own
/proc and /tmp, no other program's sockets), and one nobody approved writes only its $TMPDIR.
Tools (built-in or not) use these helpers rather than `open()`/`subprocess` of their own.
"""

from __future__ import annotations

from ._capture import OutputCapture as OutputCapture
from ._child import Isolation as Isolation
from ._confine import PROTECTED_DIRS as PROTECTED_DIRS
from ._confine import confine_read as confine_read
from ._confine import confine_write as confine_write
from ._confine import inside as inside
from ._confine import protected_part as protected_part
from ._confinement import Confinement as Confinement
from ._confinement import SandboxSupport as SandboxSupport
from ._confinement import namespace_members as namespace_members
from ._confinement import sandbox_support as sandbox_support
from ._diff import diff_stat as diff_stat
from ._diff import unified_diff as unified_diff
from ._files import FileData as FileData
from ._files import atomic_write as atomic_write
from ._files import ensure_parent as ensure_parent
from ._files import file_kind as file_kind
from ._files import list_dir_names as list_dir_names
from ._files import read_file_bytes as read_file_bytes
from ._files import stat_file as stat_file
from ._git_guard import git_guard_env as git_guard_env
from ._isolation import plan_isolation as plan_isolation
from ._isolation import prepare_tmp as prepare_tmp
from ._paths import resolve_path as resolve_path
from ._process import CommandResult as CommandResult
from ._process import kill_tree as kill_tree
from ._process import run_command as run_command
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
from ._shell_process import find_shell as find_shell
from ._shell_process import read_log as read_log
from ._text import TextFormat as TextFormat
from ._text import count_lines as count_lines
from ._text import decode_text as decode_text
from ._text import encode_text as encode_text
from ._text import newline_of as newline_of
from ._text import sniff_binary as sniff_binary
from ._text import split_lines as split_lines
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
from ._urlguard import allowed_entry as allowed_entry
from ._urlguard import check_host as check_host
from ._urlguard import check_url as check_url
from ._urlguard import classify_address as classify_address
from ._urlguard import parse_allow_hosts as parse_allow_hosts
from ._urlguard import parse_url as parse_url
from ._urlguard import system_resolve as system_resolve
from ._write_guard import GitScan as GitScan
from ._write_guard import WriteGuard as WriteGuard
from ._write_guard import plan_write_guard as plan_write_guard

__all__ = [
    "MAX_URL_CHARS",
    "PROTECTED_DIRS",
    "VCS_DIRS",
    "AddressBlock",
    "AllowEntry",
    "AllowList",
    "BlockedAddress",
    "CheckedUrl",
    "CommandResult",
    "Confinement",
    "FileData",
    "GitScan",
    "HostNotFound",
    "InvalidUrl",
    "Isolation",
    "OutputCapture",
    "ParsedUrl",
    "ResolveFunc",
    "RipgrepGlob",
    "RipgrepRun",
    "SandboxSetupError",
    "SandboxSupport",
    "SearchRoot",
    "ShellProcess",
    "TextFormat",
    "UrlRefused",
    "WriteGuard",
    "allowed_entry",
    "atomic_write",
    "check_host",
    "check_url",
    "classify_address",
    "compile_glob",
    "confine_read",
    "confine_write",
    "count_lines",
    "decode_text",
    "diff_stat",
    "encode_text",
    "ensure_parent",
    "file_kind",
    "find_ripgrep",
    "find_shell",
    "git_guard_env",
    "inside",
    "kill_tree",
    "list_dir_names",
    "namespace_members",
    "newline_of",
    "parse_allow_hosts",
    "parse_url",
    "plan_isolation",
    "plan_write_guard",
    "prepare_tmp",
    "protected_part",
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
    "system_resolve",
    "system_which",
    "unified_diff",
]
