"""Permissions: rules, modes, the central policy, settings files, folder trust and hooks.

Invariants: every call is decided here, from data the tool declares (`permission_requests`),
never by code inside the tool. A deny rule always wins; sandbox limits (roots, protected
folders) cannot be lifted by any rule, mode or hook; hooks may tighten but never loosen past a
deny. A project's own `.handrail/` files may only narrow until the user trusts the folder.
"""

from __future__ import annotations

from .._context import PermissionMode as PermissionMode
from ._hooks import Hook as Hook
from ._hooks import HookEvent as HookEvent
from ._hooks import HookEventName as HookEventName
from ._hooks import HookFunc as HookFunc
from ._hooks import HookResponse as HookResponse
from ._policy import ALLOW as ALLOW
from ._policy import BYPASS as BYPASS
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
from ._trust import FolderConfig as FolderConfig
from ._trust import TrustedFolder as TrustedFolder
from ._trust import is_trusted as is_trusted
from ._trust import read_folder_config as read_folder_config
from ._trust import revoke_trust as revoke_trust
from ._trust import trust_folder as trust_folder
from ._trust import trust_store_path as trust_store_path
from ._trust import trusted_folders as trusted_folders

__all__ = [
    "ALLOW",
    "BYPASS",
    "PROTECTED_DIRS",
    "Decision",
    "FolderConfig",
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
    "TrustedFolder",
    "covering_rules",
    "is_read_only_command",
    "is_trusted",
    "is_within",
    "load_settings",
    "parse_command",
    "parse_rule",
    "protected_part",
    "read_folder_config",
    "read_settings_file",
    "revoke_trust",
    "rules_to_allow",
    "suggest_rules",
    "trust_folder",
    "trust_store_path",
    "trusted_folders",
    "user_settings_path",
]
