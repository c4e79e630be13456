"""The built-in coding tools, written only against handrail's public API.

Invariants: no tool resolves, confines or opens a path itself (the sandbox does, at open
time, after the policy has decided from the tool's declared requests); writes are atomic and
keep a file's encoding, BOM and line endings; a file is changed only after this session read it
in full, unchanged since; every failure is a `ToolResult` with a stable code and text that says
what to do next, in English or Chinese.
"""

from __future__ import annotations

__all__: list[str] = []
