"""`serve`: a registry as an MCP server, over stdio or streamable HTTP (`handrail serve`).

Nothing here imports the MCP SDK: it is loaded inside `serve`, so `import handrail.mcp` stays
cheap for commands that never start a server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from .. import (
    ConfigurationError,
    PermissionMode,
    Registry,
    Runtime,
    Settings,
)
from ._http_access import HttpSecurity, http_security
from ._mode_ceiling import ModeCeilingPolicy
from ._server_payloads import CHECKPOINT_TOOLS
from ._server_state import DEFAULT_TTL, RequestStates

__all__ = ["serve"]

_SDK_MODULES = frozenset({"mcp", "mcp_types", "uvicorn", "starlette", "sse_starlette"})


async def serve(
    registry: Registry | None = None,
    *,
    root: str | Path | None = None,
    http: tuple[str, int] | None = None,
    mode: str = "accept_edits",
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    ask: Sequence[str] = (),
    load_settings: bool = True,
    settings: Settings | None = None,
    ready: Callable[[str], None] | None = None,
    ask_fallback: Literal["deny", "allow"] = "deny",
    setup: Callable[[Runtime], None] | None = None,
    auth: bool = True,
    token: str | None = None,
    token_file: bool | None = None,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    offer_restore: bool = False,
    stateless: bool = False,
    state_secret: str | None = None,
    state_ttl: float = DEFAULT_TTL,
) -> None:
    """Serve a registry's tools to MCP clients until stopped.

    Every call goes through the whole handrail pipeline (validation, permissions, sandbox).
    Each MCP session gets its own handrail `Session`: files read, approvals and background
    jobs belong to one client and end with its session. A call that needs approval is put to
    the client's user as an elicitation request when the client supports them; otherwise
    `ask_fallback` decides. The server's `mode` is the widest any session may reach: a client
    may enter plan mode, never leave for a wider mode than the server's.

    Each session keeps checkpoints: before every call that can change files, the workspace is
    recorded (in handrail's state folder, one log per session). Restoring one is a person's
    act, so the client is offered it only with `offer_restore`.

    Over HTTP every request needs `Authorization: Bearer <token>` (401 otherwise), a `Host`
    naming this server (421) and, from a browser, an allowed `Origin` (403): all checked before
    any MCP processing. An elicitation answer is such a request too, so only the token holder
    on the session that was asked can approve a call.

    With `stateless` (HTTP only), a 2026-07-28 client is served statelessly, so replicas
    behind a load balancer need no sticky sessions. Each request is self-contained and gets
    a handrail `Session` of its own: nothing a session remembers (files read, and so edits
    of existing files; the mode; background jobs; tool_search's activations; checkpoints;
    "allow always") carries from one request to the next. A call that asks answers
    `InputRequiredResult`: the question, and a `requestState` signed with a key derived from
    `state_secret`, else from the token, that any replica with the same secret or token
    accepts with the user's answer (once per replica, for `state_ttl` seconds, for that exact
    call and question). Without either (`auth=False`) the key is this process's own: an
    approval must come back here. Without `stateless` (and over stdio) a 2026-07-28 request
    is refused, naming the session-based versions (2024-11-05 to 2025-11-25), and the SDK's
    clients fall back to the handshake: a session is what lets the model edit the files it
    read, so it stays the default.

    ```python
    import asyncio, os
    from handrail.mcp import serve

    asyncio.run(serve(root="path/to/project"))  # stdio
    asyncio.run(serve(root="path/to/project", http=("127.0.0.1", 8765), token=os.environ["TOKEN"]))
    ```

    Args:
        registry: The tools to serve. Default: the built-in coding tools for `root`.
        root: The workspace: calls may read and write only inside it. Default: the current
            directory.
        http: `(host, port)` to serve streamable HTTP at `http://host:port/mcp` (port 0 picks
            a free port); None serves one client over stdin/stdout.
        mode: Permission mode of every session. The default, `accept_edits`, runs reads and
            file edits inside the root, refuses anything outside it, and asks before other
            changes (a shell command that is not read-only, a fetch) unless a rule allows them.
        allow: Allow rules, e.g. `run_shell(pytest:*)`.
        deny: Deny rules.
        ask: Ask rules.
        load_settings: Also read `~/.config/handrail/settings.json` and
            `<root>/.handrail/settings.json`.
        settings: More settings (e.g. `handrail serve --settings FILE`), merged over the
            files `load_settings` reads: hooks, per-tool settings, locale and rules included.
        ready: Called once, with the URL (or `"stdio"`), when the server is listening.
        ask_fallback: When a call asks and the client cannot answer an elicitation: `deny`
            (the model is told which allow rule would let it run) or `allow`. A question a
            tool asks while it runs is answered no either way.
        setup: Called with the runtime before serving starts (e.g. to add tools bound to it,
            such as the `agent` tool).
        auth: HTTP: require the bearer token. False (no token) is allowed on a loopback
            address only (`127.0.0.1`, `::1`, `localhost`): then any program on this machine
            can call the tools and answer approvals.
        token: HTTP: the bearer token clients must send (at least 16 visible ASCII
            characters). None generates a random one and, unless `token_file=False`,
            publishes it (see `token_file`).
        token_file: HTTP: write the token to `<state>/serve/<port>.token` while serving
            (folder 0700, file 0600; removed when the server stops), so local clients can
            read it. `<state>` is `$HANDRAIL_STATE_DIR`, else `$XDG_RUNTIME_DIR/handrail`,
            else `~/.local/state/handrail`. Default: only when the token was generated.
        allow_hosts: HTTP: more `Host` values to accept, e.g. a reverse proxy's public name
            (`NAME` for any port, `NAME:PORT` for one). Accepted anyway: the bind address
            with the port; for a loopback bind `127.0.0.1`, `localhost` and `[::1]`; for
            `0.0.0.0` / `::` those plus the address each request arrived on.
        allow_origins: HTTP: more browser origins to accept (`https://app.example.com`);
            `http://` + each accepted Host value is accepted anyway. A request with no
            `Origin` (not from a browser) is not affected.
        offer_restore: Also list `list_checkpoints` (the session's checkpoints: id, what came
            next, when, the files changed after it) and `restore_checkpoint` (put the files
            back as they were at one, or only some paths). Every restore that would change
            something is put to the client's user as an elicitation, whatever the mode, rules
            or earlier answers, and a client that cannot ask is refused; the result says what
            changed, what was left, and the checkpoint that undoes it. Default: not listed.
        stateless: HTTP: also serve 2026-07-28 clients, statelessly (see above).
        state_secret: HTTP: the secret (at least 32 characters) that signs the `requestState`
            of stateless approvals; give every replica the same one. Clients never see it, so
            only a replica can make a state. Default: a key derived from the token.
        state_ttl: HTTP: seconds a stateless approval's state stays good: the time the user
            has to answer (default 600).

    Raises:
        ConfigurationError: A bad root, mode, rule, address, fallback, token, host or
            origin; no auth on a non-loopback address; the port in use or the address not
            this machine's; with `offer_restore`, a served tool named like a checkpoint tool;
            a `state_secret` under 32 characters or a `state_ttl` not a positive number.
        ImportError: The MCP SDK is not installed (`pip install "handrail[mcp]"`).
    """
    if ask_fallback not in ("deny", "allow"):
        raise ConfigurationError(f"ask_fallback must be 'deny' or 'allow', not {ask_fallback!r}")
    try:
        chosen = PermissionMode(mode)
    except ValueError:
        modes = ", ".join(m.value for m in PermissionMode)
        raise ConfigurationError(f"unknown mode {mode!r}; use one of: {modes}") from None
    security: HttpSecurity | None = None
    if http is not None:
        host, port = http
        if not host or not 0 <= port <= 65535:
            raise ConfigurationError(f"http must be (host, port 0-65535), not {http!r}")
        security = http_security(
            host,
            auth=auth,
            token=token,
            token_file=token_file,
            allow_hosts=allow_hosts,
            allow_origins=allow_origins,
        )
    elif token is not None or token_file or allow_hosts or allow_origins or stateless:
        raise ConfigurationError(
            "token, token_file, allow_hosts, allow_origins and stateless apply to http only"
        )
    if state_secret and not stateless:
        raise ConfigurationError("state_secret signs stateless approvals: it needs stateless")
    states = RequestStates.for_server(
        token=security.token if security is not None else None, secret=state_secret, ttl=state_ttl
    )
    workspace = Path(root) if root is not None else Path.cwd()
    if not workspace.is_dir():
        raise ConfigurationError(f"root {str(workspace)!r} is not a directory")
    if registry is None:
        from ..builtin import coding_tools

        registry = Registry(coding_tools(project_dir=workspace))
    runtime = Runtime(
        registry,
        root=workspace,
        mode=chosen,
        allow=allow,
        deny=deny,
        ask=ask,
        settings=settings,
        load_settings=load_settings,
        checkpoints=True,
    )
    # The server's mode is the widest any client session may reach: its policy, bounded by
    # that mode, is set here, where the runtime is made.
    ceiling = ModeCeilingPolicy(runtime.policy, runtime.session.mode)
    runtime.policy = ceiling
    if setup is not None:
        setup(runtime)
    if offer_restore:
        taken = sorted(n for n in CHECKPOINT_TOOLS if runtime.registry.get(n) is not None)
        if taken:
            raise ConfigurationError(
                f"offer_restore adds the tools {sorted(CHECKPOINT_TOOLS)}, and the registry "
                f"has {taken} already"
            )
    try:
        from . import _server_app as app_module
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in _SDK_MODULES:
            raise
        raise ImportError('handrail serve needs the MCP SDK: pip install "handrail[mcp]"') from exc
    app = app_module.McpApp(
        runtime, ceiling, ask_fallback=ask_fallback, offer_restore=offer_restore, states=states
    )
    try:
        if http is None or security is None:
            await app_module.run_stdio(app, ready)
        else:
            await app_module.run_http(app, http[0], http[1], ready, security, stateless=stateless)
    finally:
        await app.aclose()
