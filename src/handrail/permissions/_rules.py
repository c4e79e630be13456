"""Permission rules: `Tool(specifier)` strings in allow / ask / deny lists.

* `run_shell(npm test:*)`   command prefix (word boundary); without `:*` the exact command
* `edit_file(src/**)`       gitignore-style glob on the resolved path, relative to a root;
                            `/abs/**` is absolute and `~/x/**` is under the home directory
* `web_fetch(domain:example.com)`  the URL's host (`*.example.com` for subdomains)
* `read_file`               a bare tool name: every call to that tool

A rule names a tool by its name or any alias.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pathspec

from .._contract import FetchUrl, PermissionRequest, ReadPath, RunCommand, WritePath
from ..errors import ConfigurationError
from ._shell import parse_command

__all__ = ["Rule", "parse_rule", "rule_matches_request", "unreadable_reasons"]

_RULE_RE = re.compile(r"^\s*([A-Za-z0-9_-]{1,64})\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """A parsed permission rule."""

    text: str
    """The rule as written."""
    tool: str
    """The tool name (or alias) it applies to."""
    specifier: str | None = None
    """What inside the call it matches; None matches every call to the tool."""
    _spec: pathspec.GitIgnoreSpec | None = field(default=None, repr=False, compare=False)

    def matches_path(self, path: str, roots: Sequence[Path]) -> bool:
        """Does the glob match this absolute, resolved path?"""
        if self._spec is None or self.specifier is None:
            return False
        pattern = self.specifier
        if pattern.startswith("~/"):
            candidates = [_relative(path, Path.home())]
        elif pattern.startswith("/"):
            candidates = [path.lstrip("/")]
        else:
            candidates = [_relative(path, r) for r in roots]
        return any(c is not None and self._spec.match_file(c) for c in candidates)

    def matches_command(self, command: str) -> bool:
        """Does the command rule match one simple command?"""
        if self.specifier is None:
            return True
        spec = self.specifier.strip()
        cmd = " ".join(command.split())
        if spec.endswith(":*"):
            prefix = " ".join(spec[:-2].split())
            return cmd == prefix or cmd.startswith(prefix + " ")
        return cmd == " ".join(spec.split())

    def matches_url(self, url: str) -> bool:
        """Does the `domain:` rule match the URL's host?"""
        if self.specifier is None or not self.specifier.startswith("domain:"):
            return False
        wanted = self.specifier[len("domain:") :].strip().lower().rstrip(".")
        try:
            host = (urlsplit(url).hostname or "").lower().rstrip(".")
        except ValueError:
            return False
        if wanted.startswith("*."):
            base = wanted[2:]
            return host == base or host.endswith("." + base)
        return host == wanted


def _relative(path: str, root: Path) -> str | None:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return None
    if rel == ".":
        return ""
    if rel == ".." or rel.startswith(".." + os.sep):
        return None
    return rel.replace(os.sep, "/")


def parse_rule(text: str) -> Rule:
    """Parse `Tool` or `Tool(specifier)`; a malformed rule is a `ConfigurationError`."""
    m = _RULE_RE.match(text) if isinstance(text, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
    if m is None:
        raise ConfigurationError(
            f"invalid permission rule {text!r}: write `tool_name` or `tool_name(specifier)`, "
            "e.g. `run_shell(npm test:*)`, `edit_file(src/**)`, `web_fetch(domain:example.com)`"
        )
    tool, spec = m.group(1), m.group(2)
    if spec is not None:
        spec = spec.strip()
        if not spec:
            raise ConfigurationError(f"invalid permission rule {text!r}: empty parentheses")
        if spec == "*":
            spec = None
    compiled: pathspec.GitIgnoreSpec | None = None
    if spec is not None and not spec.startswith("domain:"):
        # `/x` and `~/x` keep a leading slash: in gitignore syntax that anchors the pattern at
        # the base it is matched against (the filesystem root, or the home directory).
        pattern = "/" + spec[2:] if spec.startswith("~/") else spec
        try:
            compiled = pathspec.GitIgnoreSpec.from_lines([pattern])
        except Exception as exc:  # pathspec raises several types for bad patterns
            raise ConfigurationError(f"invalid path pattern in rule {text!r}: {exc}") from exc
    return Rule(text=text.strip(), tool=tool, specifier=spec, _spec=compiled)


def simple_commands(request: RunCommand) -> tuple[tuple[str, ...], bool]:
    """The simple commands of a request, and whether the line hides anything a rule can't see.

    A tool that parsed its command line itself passes `commands` (never opaque). Otherwise the
    line is parsed with a real shell grammar (`parse_command`): `a && b | c` gives three
    commands, and a substitution, subshell, `eval`, `bash -c`, output redirection or parse
    error makes it opaque, so no allow rule covers it.
    """
    if request.commands:
        return request.commands, False
    parsed = parse_command(request.command)
    return parsed.commands or (request.command,), parsed.opaque


def _commands_seen_by_any_match(request: RunCommand) -> tuple[str, ...]:
    # Deny and ask rules fire when any command matches, so they also see what the line runs
    # indirectly: `ls | xargs rm`, `timeout 5 rm x`, `FOO=1 /bin/rm x`, `bash -c 'rm x'`.
    if request.commands:
        return request.commands
    parsed = parse_command(request.command)
    return (*parsed.commands, *parsed.hidden) or (request.command,)


def unreadable_reasons(request: PermissionRequest) -> tuple[str, ...]:
    """Why no rule can tell which commands a shell request runs; empty when a rule can.

    A line whose command name is not literal text (`$c x`, `{rm,x}`, `$(echo rm) x`) or that
    runs code the parser cannot read (`eval "$x"`, `source f`, an expansion it did not parse)
    could run any command at all (`ShellCommand.dynamic`).
    """
    if not isinstance(request, RunCommand) or request.commands:
        return ()
    return parse_command(request.command).dynamic_reasons


def rule_matches_request(rule: Rule, request: PermissionRequest, roots: Sequence[Path]) -> bool:
    """Does the rule match this request?

    For a shell command: does it match any simple command, or any command the line runs
    indirectly (behind `xargs`, `timeout`, `env`, `sudo`, `find -exec`, in `bash -c`)? A line
    no rule can read (`unreadable_reasons`) matches every command rule. That is the test for
    deny and ask rules; an allow rule must cover every simple command (see `simple_commands`,
    which never lets one cover such a line), and the policy checks that one command at a time.
    """
    if rule.specifier is None:
        return True
    if isinstance(request, RunCommand):
        if rule.specifier.startswith("domain:"):
            return False
        if unreadable_reasons(request):
            return True
        return any(rule.matches_command(c) for c in _commands_seen_by_any_match(request))
    if isinstance(request, ReadPath | WritePath):
        return rule.matches_path(request.path, roots)
    if isinstance(request, FetchUrl):
        return rule.matches_url(request.url)
    return False
