"""The MCP client's config files: merged user and project servers, and strict errors.

These tests are about reading the files, so they pass `trust=True`; what an untrusted
project's file may do is in tests/permissions/test_trust.py and tests/test_cli_trust.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ConfigurationError
from handrail.mcp import McpServerConfig, McpTools, load_mcp_config


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "xdg" / "handrail" / "mcp.json"
    path.parent.mkdir(parents=True)
    return path


def project_file(root: Path, content: Any) -> Path:
    path = root / ".handrail" / "mcp.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_project_servers_win_over_the_users(tmp_path: Path, user: Path) -> None:
    user.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "github": {"command": "user-github"},
                    "notes": {"url": "https://notes.example/mcp"},
                    "old": {"command": "old-server"},
                }
            }
        )
    )
    project = project_file(
        tmp_path,
        {
            "mcpServers": {
                "github": {"command": "npx", "args": ["-y", "server-github"], "timeout": 20},
                "old": {"command": "old-server", "disabled": True},
            }
        },
    )
    servers = load_mcp_config(tmp_path, trust=True)
    assert list(servers) == ["notes", "github"]
    assert servers["github"] == McpServerConfig(
        name="github", command="npx", args=("-y", "server-github"), timeout=20.0, source=project
    )
    assert servers["notes"].transport == "http" and servers["notes"].source == user


def test_environment_variables_are_expanded(
    tmp_path: Path, user: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_TOKEN", "t0k")
    monkeypatch.delenv("HANDRAIL_TEST_UNSET", raising=False)
    project_file(
        tmp_path,
        {
            "mcpServers": {
                "api": {
                    "type": "http",
                    "url": "https://${HANDRAIL_TEST_UNSET:-api.example}/mcp",
                    "headers": {"Authorization": "Bearer ${HANDRAIL_TEST_TOKEN}"},
                },
                "local": {"command": "srv", "env": {"TOKEN": "${HANDRAIL_TEST_TOKEN}"}},
            }
        },
    )
    servers = load_mcp_config(tmp_path, trust=True)
    assert servers["api"].url == "https://api.example/mcp"
    assert servers["api"].headers == {"Authorization": "Bearer t0k"}
    assert servers["local"].env == {"TOKEN": "t0k"}


def test_no_files_means_no_servers(tmp_path: Path, user: Path) -> None:
    assert load_mcp_config(tmp_path, trust=True) == {}


BAD_FILES: list[tuple[str, Any]] = [
    ("not json", '{"mcpServers": {"a": {"command": "x",}}}'),
    ("a list", []),
    ("unknown top key", {"servers": {}}),
    ("servers not an object", {"mcpServers": ["a"]}),
    ("entry not an object", {"mcpServers": {"a": "npx server"}}),
    ("neither", {"mcpServers": {"a": {"args": ["x"]}}}),
    ("both", {"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}),
    ("typo", {"mcpServers": {"a": {"comand": "x"}}}),
    ("args not a list", {"mcpServers": {"a": {"command": "x", "args": "--flag"}}}),
    ("env not strings", {"mcpServers": {"a": {"command": "x", "env": {"N": 1}}}}),
    ("empty command", {"mcpServers": {"a": {"command": " "}}}),
    ("headers on stdio", {"mcpServers": {"a": {"command": "x", "headers": {}}}}),
    ("bad scheme", {"mcpServers": {"a": {"url": "file:///etc/passwd"}}}),
    ("sse", {"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}),
    ("type mismatch", {"mcpServers": {"a": {"type": "stdio", "url": "http://h/mcp"}}}),
    ("bad timeout", {"mcpServers": {"a": {"command": "x", "timeout": 0}}}),
    ("unset variable", {"mcpServers": {"a": {"url": "http://h/mcp?k=${HANDRAIL_TEST_UNSET}"}}}),
]


@pytest.mark.parametrize("content", [c for _, c in BAD_FILES], ids=[i for i, _ in BAD_FILES])
def test_a_malformed_file_is_a_clear_error(
    tmp_path: Path, user: Path, monkeypatch: pytest.MonkeyPatch, content: Any
) -> None:
    monkeypatch.delenv("HANDRAIL_TEST_UNSET", raising=False)
    path = project_file(tmp_path, content)
    with pytest.raises(ConfigurationError) as info:
        load_mcp_config(tmp_path, trust=True)
    assert str(info.value).startswith(f"MCP config {path}")


def test_error_messages(tmp_path: Path, user: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANDRAIL_TEST_UNSET", raising=False)
    messages: dict[str, str] = {}
    for name, content in BAD_FILES:
        path = project_file(tmp_path, content)
        with pytest.raises(ConfigurationError) as info:
            load_mcp_config(tmp_path, trust=True)
        messages[name] = str(info.value).replace(str(path), "<file>")
    assert messages == snapshot(
        {
            "not json": "MCP config <file> is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 38",
            "a list": 'MCP config <file>: expected an object like {"mcpServers": {...}}, got a list',
            "unknown top key": "MCP config <file>: unknown key 'servers' (the file holds only `mcpServers`)",
            "servers not an object": "MCP config <file>: `mcpServers` must be an object mapping names to servers, got a list",
            "entry not an object": "MCP config <file>: server 'a' must be an object, got a string",
            "neither": "MCP config <file>: server 'a': give `command` (a program to run over stdio) or `url` (an HTTP endpoint)",
            "both": "MCP config <file>: server 'a': give either `command` or `url`, not both",
            "typo": "MCP config <file>: server 'a': unknown key 'comand' (allowed: args, command, cwd, disabled, env, headers, timeout, type, url)",
            "args not a list": "MCP config <file>: server 'a': `args` must be a list of strings, got a string",
            "env not strings": "MCP config <file>: server 'a': `env.N` must be a string, got a number",
            "empty command": "MCP config <file>: server 'a': `command` is empty",
            "headers on stdio": "MCP config <file>: server 'a': `headers` does not apply to a command (stdio) server",
            "bad scheme": "MCP config <file>: server 'a': `url` must be an http:// or https:// URL with a host, got 'file:///etc/passwd'",
            "sse": "MCP config <file>: server 'a': the legacy SSE transport is not supported; use the server's streamable HTTP endpoint (`url`) or run it over stdio (`command`)",
            "type mismatch": "MCP config <file>: server 'a': `type` is 'stdio' but the entry has `url`",
            "bad timeout": "MCP config <file>: server 'a': `timeout` must be a positive number of seconds",
            "unset variable": "MCP config <file>: server 'a': `url` uses ${HANDRAIL_TEST_UNSET}, which is not set in the environment (set it, or write ${HANDRAIL_TEST_UNSET:-default})",
        }
    )


def test_a_malformed_user_file_is_an_error_too(tmp_path: Path, user: Path) -> None:
    user.write_text('{"mcpServers": {"a": {"url": 42}}}')
    project_file(tmp_path, {"mcpServers": {}})
    with pytest.raises(ConfigurationError, match="`url` must be a string, got a number"):
        McpTools.from_config(tmp_path)


def test_servers_whose_names_clash_once_sanitised_are_refused(tmp_path: Path) -> None:
    servers = [
        McpServerConfig(name="my.server", command="a"),
        McpServerConfig(name="my_server", command="b"),
    ]
    with pytest.raises(ConfigurationError) as info:
        McpTools(servers, root=tmp_path)
    assert str(info.value) == snapshot(
        "MCP servers 'my.server' and 'my_server' both make tool names start with mcp__my_server__; rename one of them"
    )
