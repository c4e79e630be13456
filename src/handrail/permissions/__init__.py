"""Permissions: rules, modes, the central policy, settings files and hooks.

Invariants: every call is decided here, from data the tool declares (`permission_requests`),
never by code inside the tool. A deny rule always wins; sandbox limits (roots, protected
folders) cannot be lifted by any rule, mode or hook; hooks may tighten but never loosen past a
deny.
"""

from __future__ import annotations

from .._context import PermissionMode as PermissionMode
from ._hooks import Hook as Hook
from ._hooks import HookEvent as HookEvent
from ._hooks import HookEventName as HookEventName
from ._hooks import HookFunc as HookFunc
from ._hooks import HookResponse as HookResponse
from ._policy import PROTECTED_DIRS as PROTECTED_DIRS
from ._policy import Decision as Decision
from ._policy import Policy as Policy
from ._policy import covering_rules as covering_rules
from ._policy import is_within as is_within
from ._policy import protected_part as protected_part
from ._policy import rules_to_allow as rules_to_allow
from ._policy import suggest_rules as suggest_rules
from ._rules import Rule as Rule
from ._rules import parse_rule as parse_rule
from ._settings import Settings as Settings
from ._settings import load_settings as load_settings
from ._settings import read_settings_file as read_settings_file
from ._settings import user_settings_path as user_settings_path
from ._shell import ShellCommand as ShellCommand
from ._shell import is_read_only_command as is_read_only_command
from ._shell import parse_command as parse_command

__all__ = [
    "PROTECTED_DIRS",
    "Decision",
    "Hook",
    "HookEvent",
    "HookEventName",
    "HookFunc",
    "HookResponse",
    "PermissionMode",
    "Policy",
    "Rule",
    "Settings",
    "ShellCommand",
    "covering_rules",
    "is_read_only_command",
    "is_within",
    "load_settings",
    "parse_command",
    "parse_rule",
    "protected_part",
    "read_settings_file",
    "rules_to_allow",
    "suggest_rules",
    "user_settings_path",
]
