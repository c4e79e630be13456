"""The exception validators raise internally; the runtime turns it into INVALID_ARGS."""

from __future__ import annotations

from .._contract import ValidationIssue


class InvalidArguments(Exception):
    """Arguments did not validate; `issues` lists every problem."""

    def __init__(self, issues: tuple[ValidationIssue, ...]) -> None:
        super().__init__()
        self.issues = issues

    def __str__(self) -> str:
        return "; ".join(f"{i.path or '/'}: {i.message}" for i in self.issues)
