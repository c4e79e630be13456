"""`handrail trust`: show what a folder's own `.handrail/` files would enable, and trust them.

Until then a checkout's settings only narrow and its MCP servers do not start (see
`permissions/_trust.py`). `handrail trust DIR` prints what trusting would add (allow rules, a
wider default mode, hooks and their commands, per-tool settings, features, MCP servers and
their commands or URLs) and records the folder with a hash of exactly the files it showed;
`--show` only prints, `--list` lists the trusted folders, `--revoke` forgets one.

Everything printed comes from the checkout, so it goes out with control and format characters
escaped (a hostile file must not hide a hook from the person deciding), and never through
rich markup.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HandrailError
from ..permissions import (
    FolderConfig,
    TrustedFolder,
    is_trusted,
    read_folder_config,
    revoke_trust,
    trust_folder,
    trusted_folders,
)
from ..permissions._settings import parse_settings, widening_items
from ..permissions._trust import MCP_FILE, TRUST_FILES, printable, quoted_trust_command
from ._common import CliError, warn

if TYPE_CHECKING:
    from ._common import SubParsers


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail trust`."""
    parser = sub.add_parser(
        "trust",
        help="trust a folder's own .handrail settings and MCP servers (or --show, --list, "
        "--revoke)",
        description="A folder's own .handrail/settings.json, settings.local.json and mcp.json\n"
        "may only narrow (deny and ask rules, hidden_paths, disabled_tools, locale) until\n"
        "you trust the folder; until then its allow rules, hooks, per-tool settings,\n"
        "features, a default_mode wider than default, and its MCP servers are left out.\n"
        "This shows what they would enable and trusts exactly these files: when one\n"
        "changes, the folder is untrusted again.",
        epilog="examples:\n"
        "  handrail trust              # the current directory\n"
        "  handrail trust --show ~/src/project\n"
        "  handrail trust --list\n"
        "  handrail trust --revoke ~/src/project",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dir", nargs="?", metavar="DIR", help="the folder (default: the current directory)"
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--show",
        action="store_true",
        help="only show what the folder would enable and whether it is trusted",
    )
    action.add_argument("--list", action="store_true", help="list the trusted folders")
    action.add_argument(
        "--revoke",
        action="store_true",
        help="forget the folder: its files may only narrow again",
    )
    return parser


def run(ns: argparse.Namespace) -> int:
    """Run `handrail trust`; a problem is one line on stderr with exit status 2."""
    try:
        if ns.list:
            if ns.dir is not None:
                raise CliError("--list takes no DIR")
            return _list()
        if ns.revoke:
            return _revoke(Path(ns.dir or ".").expanduser())
        return _trust(_directory(ns.dir), record=not ns.show)
    except CliError as exc:
        warn(f"error: {exc.message}")
        return exc.status
    except HandrailError as exc:  # a malformed settings file, mcp.json or trust store
        warn(f"error: {exc}")
        return 2


def _directory(value: str | None) -> Path:
    path = Path(value).expanduser() if value else Path.cwd()
    if not path.exists():
        raise CliError(f"{value}: no such directory")
    if not path.is_dir():
        raise CliError(f"{value}: not a directory")
    return path


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def notes(folder: FolderConfig) -> list[str]:
    """Where the files really are, when a symlink leads elsewhere."""
    out: list[str] = []
    own = folder.root / ".handrail"
    if own.is_symlink():
        out.append(
            f"note: {printable(str(own), None)} is a symlink to "
            f"{printable(str(own.resolve()), None)}: trusting covers the files there as they are"
        )
    for relative in folder.files:
        path = folder.path(relative)
        if path.is_symlink():
            out.append(
                f"note: {printable(str(path), None)} is a symlink to "
                f"{printable(str(path.resolve()), None)}"
            )
    return out


def needing_trust(folder: FolderConfig) -> dict[Path, list[str]]:
    """What trusting the folder would enable, by file (files that exist, in `TRUST_FILES` order).

    Parsed from the bytes `folder` holds, so what is shown is what trusting records.
    """
    from ..mcp._config import describe_server, parse_mcp_config  # only here: keep --help quick

    out: dict[Path, list[str]] = {}
    for relative in TRUST_FILES:
        data = folder.content(relative)
        if data is None:
            continue
        path = folder.path(relative)
        if relative == MCP_FILE:
            servers = parse_mcp_config(data, path, expand=False).values()
            out[path] = [
                f"MCP server {describe_server(c, limit=None)}" for c in servers if c is not None
            ]
        else:
            out[path] = list(widening_items(parse_settings(data, path), limit=None))
    for relative in folder.files:
        if relative.name == "SKILL.md":
            out[folder.path(relative)] = _skill_items(folder.path(relative))
    return out


def _skill_items(path: Path) -> list[str]:
    """A project skill's allowed tools (allow rules while the skill is active)."""
    from ..builtin._skill import parse_skill_file

    try:
        rules = parse_skill_file(path, "project").allowed_tools
    except Exception as exc:  # a malformed skill grants nothing; say so rather than fail
        return [f"(unreadable skill: {printable(str(exc), None)})"]
    if not rules:
        return []
    return ["allowed tools while active " + ", ".join(printable(r, None) for r in rules)]


def _trust(root: Path, *, record: bool) -> int:
    folder = read_folder_config(root)  # what is shown is what is hashed and recorded
    where = printable(str(folder.root), None)
    found = needing_trust(folder)
    for line in notes(folder):
        _out(line)
    for path, items in found.items():
        _out(printable(str(path), None) + ":")
        for item in items or ["nothing that needs trust"]:
            _out(f"  {item}")
    command = quoted_trust_command(folder.root)
    if not any(found.values()):
        _out(
            f"nothing to trust in {where}: its .handrail files hold only settings that apply "
            "anyway (deny and ask rules, hidden_paths, disabled_tools, locale)"
            if folder.files
            else f"nothing to trust in {where}: it has no .handrail/settings.json, "
            "settings.local.json or mcp.json"
        )
        return 0
    if not record:
        if is_trusted(folder):
            _out(f"{where} is trusted: the settings above apply")
        else:
            known = any(t.root == folder.root for t in trusted_folders())
            why = "its files changed since you trusted it" if known else "not trusted"
            _out(f"{where}: {why}; run {command} to apply the settings above")
        return 0
    trust_folder(folder)
    _out(
        f"trusted {where}: the settings above apply until one of these files changes "
        f"({quoted_trust_command(folder.root, '--revoke')} undoes it)"
    )
    return 0


def _list() -> int:
    folders = trusted_folders()
    if not folders:
        _out("no folder is trusted")
        return 0
    for entry in folders:
        _out(f"{printable(str(entry.root), None)}  {_state(entry)}")
    return 0


def _state(entry: TrustedFolder) -> str:
    since = f"since {entry.trusted_at or 'an unknown time'}"
    if not entry.root.is_dir():
        return f"missing (trusted {since})"
    try:
        current = read_folder_config(entry.root)
    except HandrailError as exc:
        return f"unreadable: {exc}"
    if current.digest == entry.digest:
        return f"trusted {since}"
    return f"changed since trusted: run {quoted_trust_command(entry.root)} to trust it again"


def _revoke(root: Path) -> int:
    resolved = root.resolve()
    where = printable(str(resolved), None)
    if revoke_trust(resolved):
        _out(f"revoked trust in {where}: its .handrail files may only narrow again")
    else:
        _out(f"{where} was not trusted")
    return 0
