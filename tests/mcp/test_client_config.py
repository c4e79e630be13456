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
from handrail.mcp._config_oauth import McpOAuthConfig


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
    ("oauth on stdio", {"mcpServers": {"a": {"command": "x", "oauth": {}}}}),
    ("oauth not an object", {"mcpServers": {"a": {"url": "http://h/mcp", "oauth": "yes"}}}),
    ("oauth typo", {"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"client": "c"}}}}),
    (
        "oauth key of another grant",
        {"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"private_key": "k"}}}},
    ),
    (
        "oauth secret without id",
        {"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"client_secret": "s"}}}},
    ),
    (
        "oauth port",
        {"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"callback_port": "8080"}}}},
    ),
    (
        "oauth metadata url",
        {
            "mcpServers": {
                "a": {"url": "http://h/mcp", "oauth": {"client_metadata_url": "http://c/"}}
            }
        },
    ),
    (
        "oauth machine without secret",
        {
            "mcpServers": {
                "a": {
                    "url": "http://h/mcp",
                    "oauth": {"grant": "client_credentials", "client_id": "c"},
                }
            }
        },
    ),
    (
        "oauth machine without issuer",
        {
            "mcpServers": {
                "a": {
                    "url": "http://h/mcp",
                    "oauth": {
                        "grant": "client_credentials",
                        "client_id": "c",
                        "client_secret": "s",
                    },
                }
            }
        },
    ),
    (
        "oauth unknown grant",
        {"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"grant": "password"}}}},
    ),
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
            "typo": "MCP config <file>: server 'a': unknown key 'comand' (allowed: args, command, cwd, disabled, env, headers, oauth, timeout, type, url)",
            "args not a list": "MCP config <file>: server 'a': `args` must be a list of strings, got a string",
            "env not strings": "MCP config <file>: server 'a': `env.N` must be a string, got a number",
            "empty command": "MCP config <file>: server 'a': `command` is empty",
            "headers on stdio": "MCP config <file>: server 'a': `headers` does not apply to a command (stdio) server",
            "bad scheme": "MCP config <file>: server 'a': `url` must be an http:// or https:// URL with a host, got 'file:///etc/passwd'",
            "sse": "MCP config <file>: server 'a': the legacy SSE transport is not supported; use the server's streamable HTTP endpoint (`url`) or run it over stdio (`command`)",
            "type mismatch": "MCP config <file>: server 'a': `type` is 'stdio' but the entry has `url`",
            "bad timeout": "MCP config <file>: server 'a': `timeout` must be a positive number of seconds",
            "unset variable": "MCP config <file>: server 'a': `url` uses ${HANDRAIL_TEST_UNSET}, which is not set in the environment (set it, or write ${HANDRAIL_TEST_UNSET:-default})",
            "oauth on stdio": "MCP config <file>: server 'a': `oauth` does not apply to a command (stdio) server",
            "oauth not an object": "MCP config <file>: server 'a': `oauth` must be an object, got a string",
            "oauth typo": "MCP config <file>: server 'a': unknown key 'oauth.client' (allowed: callback_port, client_id, client_metadata_url, client_secret, grant, identity_provider, issuer, private_key, scopes, signing_algorithm, token_endpoint_auth_method)",
            "oauth key of another grant": "MCP config <file>: server 'a': `oauth.private_key` does not apply to authorization_code",
            "oauth secret without id": "MCP config <file>: server 'a': `oauth`: `client_secret` needs the `client_id` it belongs to",
            "oauth port": "MCP config <file>: server 'a': `oauth.callback_port` must be a port number",
            "oauth metadata url": "MCP config <file>: server 'a': `oauth.client_metadata_url` must be an https:// URL with a path, got 'http://c/'",
            "oauth machine without secret": "MCP config <file>: server 'a': `oauth`: `client_credentials` needs `client_id` and `client_secret` or `private_key`",
            "oauth machine without issuer": "MCP config <file>: server 'a': `oauth`: `client_credentials` needs `issuer`, the authorization server its credentials belong to (without it, the MCP server would choose where they are sent)",
            "oauth unknown grant": "MCP config <file>: server 'a': `oauth.grant` must be one of authorization_code, client_credentials, jwt_bearer, got 'password'",
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


async def test_a_missing_root_is_an_error_naming_it(tmp_path: Path, user: Path) -> None:
    from handrail.mcp import load_mcp_tools

    missing = tmp_path / "no-such-project"
    with pytest.raises(ConfigurationError) as info:
        await load_mcp_tools(missing)
    assert str(info.value) == f"MCP project folder {missing} does not exist"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    with pytest.raises(ConfigurationError) as info:
        await load_mcp_tools(a_file)
    assert str(info.value) == f"MCP project folder {a_file} is not a folder"


async def test_no_servers_configured_is_a_warning_naming_the_files(
    tmp_path: Path, user: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from handrail.mcp import load_mcp_tools

    project = tmp_path / "project"
    project.mkdir()
    with caplog.at_level("WARNING", logger="handrail.mcp"):
        mcp = await load_mcp_tools(project)
    assert mcp.tools == [] and mcp.servers == ()
    assert [r.getMessage() for r in caplog.records] == [
        f"no MCP servers configured: looked at {user} (not found) and "
        f"{project / '.handrail' / 'mcp.json'} (not found)"
    ]
    caplog.clear()
    user.write_text(json.dumps({"mcpServers": {"old": {"command": "x", "disabled": True}}}))
    with caplog.at_level("WARNING", logger="handrail.mcp"):
        await load_mcp_tools(project)
    assert [r.getMessage() for r in caplog.records] == [
        f"no MCP servers configured: looked at {user} (no server to start in it) and "
        f"{project / '.handrail' / 'mcp.json'} (not found)"
    ]


def test_an_oauth_object_is_read_with_its_variables_and_its_secrets_kept_out_of_repr(
    tmp_path: Path, user: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_SECRET", "s3cret-value")
    project_file(
        tmp_path,
        {
            "mcpServers": {
                "docs": {
                    "url": "https://docs.example/mcp",
                    "oauth": {
                        "client_id": "handrail-docs",
                        "client_secret": "${HANDRAIL_TEST_SECRET}",
                        "scopes": ["docs:read", "offline_access"],
                        "callback_port": 8765,
                        "issuer": "https://as.docs.example",
                    },
                },
                "jobs": {
                    "url": "https://jobs.example/mcp",
                    "oauth": {
                        "grant": "jwt_bearer",
                        "client_id": "c",
                        "client_secret": "${HANDRAIL_TEST_SECRET}",
                        "issuer": "https://as.example",
                        "identity_provider": {
                            "token_endpoint": "https://idp.example/token",
                            "client_id": "idp-c",
                            "id_token": "${HANDRAIL_TEST_SECRET}",
                        },
                    },
                },
            }
        },
    )
    servers = load_mcp_config(tmp_path, trust=True)
    docs = servers["docs"].oauth
    assert docs == McpOAuthConfig(
        client_id="handrail-docs",
        client_secret="s3cret-value",
        scopes=("docs:read", "offline_access"),
        callback_port=8765,
        issuer="https://as.docs.example",
    )
    jobs = servers["jobs"].oauth
    assert jobs is not None and jobs.identity_provider is not None
    assert (jobs.grant, jobs.identity_provider.id_token) == ("jwt_bearer", "s3cret-value")
    # Logged or shown, an entry never prints its secrets.
    assert "s3cret-value" not in repr(servers["docs"]) + repr(servers["jobs"])
    # Built in code, the same rules hold.
    with pytest.raises(ConfigurationError, match="`oauth` applies to a `url` only"):
        McpServerConfig(name="x", command="srv", oauth=McpOAuthConfig())
