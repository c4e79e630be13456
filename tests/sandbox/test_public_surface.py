"""`handrail.sandbox`'s public surface: what the built-in tools use, and nothing they cannot.

The built-in tools are written against the public API only (`handrail.builtin`'s docstring), so
a third-party tool can do whatever they do. These tests read the built-in modules with `ast`:
each takes from the sandbox only names in its `__all__`, never a private `handrail.sandbox._x`
module; and `__all__` holds nothing that neither a built-in tool nor the documented surface
(the package docstring) needs. `__all__` is compared with a snapshot, so that a change to the
surface is a deliberate one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import handrail.builtin
import handrail.sandbox

BUILTIN = Path(handrail.builtin.__file__).parent
BUILTIN_MODULES = sorted(BUILTIN.glob("*.py"))

EXPECTED = [
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
    "state_dir",
    "stat_file",
    "system_which",
    "unified_diff",
    "workspace_key",
]

NOT_IN_BUILTIN = {
    # Public, though no built-in tool names them: other floors use them, or they are the
    # types a public function returns or raises, which a tool author needs to name.
    "AddressBlock": "why `BlockedAddress` refused an address (its `block`)",
    "CommandResult": "what `run_command` returns",
    "ConfinedShell": "what `ShellSandbox.confine` returns",
    "RipgrepGlob": "what `compile_glob` returns",
    "resolve_path": "the runtime resolves declared paths with it",
    "run_command": "the runtime runs hooks with it",
    "sandbox_support": "what the machine offers, for a shell tool to say or check",
    "system_which": "ray's git helper finds git with it",
    "BlobStore": "the runtime keeps checkpoint contents in it",
    "Checkpoint": "what `Checkpoints.list` (and `Runtime.checkpoints`) returns",
    "Checkpoints": "the runtime records each session's changes with it",
    "RestorePlan": "what `Checkpoints.plan` returns",
    "Restored": "what `Checkpoints.restore` returns",
    "state_dir": "the runtime and the agent keep their state under it",
    "workspace_key": "names a workspace's folder in the state folder",
    "checkpoint_folder": "where a workspace's checkpoints are kept",
    "clean_checkpoints": "the agent's session clean-up removes checkpoints with it",
    "CheckpointCleanup": "what `clean_checkpoints` returns",
}


def _sandbox_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import in a built-in module that reaches the sandbox.

    `module` is absolute (`handrail.sandbox`, `handrail.sandbox._files`); `names` are the
    names taken from it (empty for a plain `import`).
    """
    out: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("handrail.sandbox"):
                    out.append((node.lineno, alias.name, []))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # Relative to handrail.builtin (level 1) or to handrail (level 2).
                base = ["handrail", "builtin"][: 3 - node.level]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names = [alias.name for alias in node.names]
            if module == "handrail" and "sandbox" in names:
                out.append((node.lineno, "handrail.sandbox", []))
            elif module.startswith("handrail.sandbox"):
                out.append((node.lineno, module, names))
    return out


def _names_used_by_builtin() -> set[str]:
    return {
        name for path in BUILTIN_MODULES for _, _, names in _sandbox_imports(path) for name in names
    }


def test_the_reader_finds_the_sandbox_imports_of_the_built_in_tools() -> None:
    # The check below is only as good as this: every spelling of an import is seen.
    found = _names_used_by_builtin()
    assert {"confine_read", "ShellSandbox", "run_ripgrep", "check_url"} <= found


@pytest.mark.parametrize("path", BUILTIN_MODULES, ids=lambda p: p.name)
def test_a_built_in_tool_imports_only_public_sandbox_names(path: Path) -> None:
    public = set(handrail.sandbox.__all__)
    for line, module, names in _sandbox_imports(path):
        where = f"{path.name}:{line}"
        assert module == "handrail.sandbox", f"{where} imports the private module {module}"
        private = [n for n in names if n not in public]
        assert not private, f"{where} imports {private}, not in handrail.sandbox.__all__"


def test_the_public_surface_is_the_snapshot() -> None:
    assert sorted(handrail.sandbox.__all__) == sorted(EXPECTED)


def test_every_public_name_is_used_by_a_built_in_tool_or_said_why_not() -> None:
    unused = set(handrail.sandbox.__all__) - _names_used_by_builtin()
    assert unused == set(NOT_IN_BUILTIN)


def test_every_public_name_is_documented_in_the_package_docstring() -> None:
    doc = handrail.sandbox.__doc__ or ""
    missing = [
        name
        for name in handrail.sandbox.__all__
        if f"`{name}`" not in doc and f"`{name}()`" not in doc
    ]
    assert not missing, f"not in handrail.sandbox's docstring: {missing}"
