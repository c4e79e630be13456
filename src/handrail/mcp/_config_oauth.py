"""The `oauth` object of an HTTP server's entry in `mcp.json`: how handrail signs in to it.

```json
"docs": {"url": "https://docs.example.com/mcp",
         "oauth": {"client_id": "handrail-docs", "client_secret": "${DOCS_SECRET}",
                   "scopes": ["docs:read"], "callback_port": 8765}}
```

Every key is optional, and so is the object: a server that answers 401 is signed in to with
OAuth 2.1 as the MCP authorization spec says (discovery, then a client ID metadata document or
dynamic registration, then the authorization code with PKCE in the person's browser). The
object is for what discovery cannot know:

* `client_id` / `client_secret`: a client registered ahead of time.
* `scopes`: asked for on top of what the server names.
* `callback_port`: the loopback port the browser is sent back to (a pre-registered
  `http://127.0.0.1:<port>/callback`); default: a free port, kept with the registration.
* `client_metadata_url`: an https URL of handrail's client ID metadata document, used as the
  client ID where the authorization server accepts one.
* `grant`: `authorization_code` (default, a person signs in), `client_credentials` (a machine
  client: `client_secret`, or `private_key` for `private_key_jwt`) or `jwt_bearer` (enterprise
  cross-app access: an identity provider's ID token is exchanged for an ID-JAG, which the
  authorization server named by `issuer` trades for a token; `identity_provider` says where).
* `issuer`: the authorization server the client belongs to; credentials and tokens go to
  no other. Required for `client_credentials` and `jwt_bearer` (without it the MCP server
  would choose where the secret goes); optional for `authorization_code`, whose sign-in is
  bound to the authorization server it was made at anyway (`_client_auth_code`).
* `token_endpoint_auth_method`, `signing_algorithm`: as in OAuth.

Invariants: unknown keys are refused, as everywhere in `mcp.json`; the keys that do not fit the
grant are refused too (a `private_key` for the authorization code, say), so a typo never means
a different sign-in. Secrets are left out of `repr`. `destinations` names every host a
configuration sends something to, and the `${VAR}` it sends there, for the person deciding
whether to trust a checkout. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from ..errors import ConfigurationError

__all__ = [
    "GRANTS",
    "McpIdentityProvider",
    "McpOAuthConfig",
    "destinations",
    "parse_oauth",
    "variables",
]

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer"]
GRANTS: tuple[Grant, ...] = ("authorization_code", "client_credentials", "jwt_bearer")
_METHODS = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
_KEYS = frozenset(
    "client_id client_secret scopes callback_port client_metadata_url grant "
    "token_endpoint_auth_method private_key signing_algorithm issuer identity_provider".split()
)
_IDP_KEYS = frozenset({"token_endpoint", "client_id", "client_secret", "id_token"})
_VAR = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
_BY_GRANT: dict[str, frozenset[str]] = {
    "authorization_code": frozenset(
        "client_id client_secret scopes callback_port client_metadata_url "
        "token_endpoint_auth_method issuer".split()
    ),
    "client_credentials": frozenset(
        "client_id client_secret scopes token_endpoint_auth_method private_key "
        "signing_algorithm issuer".split()
    ),
    "jwt_bearer": frozenset(
        "client_id client_secret scopes token_endpoint_auth_method issuer identity_provider".split()
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class McpIdentityProvider:
    """Where an ID token is exchanged for an identity assertion grant (`jwt_bearer`)."""

    token_endpoint: str
    """The identity provider's token endpoint (RFC 8693 token exchange)."""
    client_id: str
    """handrail's client at the identity provider."""
    id_token: str = field(repr=False)
    """The person's ID token from the identity provider (usually `${VAR}`)."""
    client_secret: str | None = field(default=None, repr=False)
    """The client's secret at the identity provider, if it has one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpOAuthConfig:
    """How handrail signs in to an HTTP MCP server (the module docstring has the keys)."""

    grant: Grant = "authorization_code"
    """Who signs in: a person in a browser, a machine client, or an enterprise identity."""
    client_id: str | None = None
    """A client registered ahead of time (else: a metadata document, or registration)."""
    client_secret: str | None = field(default=None, repr=False)
    """The pre-registered client's secret."""
    scopes: tuple[str, ...] = ()
    """Scopes asked for on top of what the server names."""
    callback_port: int | None = None
    """The loopback port of the redirect (`http://127.0.0.1:<port>/callback`)."""
    client_metadata_url: str | None = None
    """An https URL of a client ID metadata document, used as the client ID where accepted."""
    token_endpoint_auth_method: str | None = None
    """How the client authenticates at the token endpoint (default: what the server supports)."""
    private_key: str | None = field(default=None, repr=False)
    """A PEM private key: `client_credentials` with `private_key_jwt`."""
    signing_algorithm: str = "RS256"
    """The algorithm of `private_key` (RS256, ES256, ...)."""
    issuer: str | None = None
    """The authorization server's issuer: credentials are only ever sent to it (required for
    `client_credentials` and `jwt_bearer`)."""
    identity_provider: McpIdentityProvider | None = None
    """`jwt_bearer`: where the ID token is exchanged."""

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise ConfigurationError(f"`oauth`: {problem}")

    @property
    def client_key(self) -> str:
        """What tells this client from another one for the same URL (tokens are kept per both)."""
        client = self.client_id or self.client_metadata_url
        return f"{self.grant} {client}" if client else self.grant


def _problem(o: McpOAuthConfig) -> str:
    """What is wrong with `o` as a whole, or an empty string."""
    if o.grant not in GRANTS:
        return f"`grant` must be one of {', '.join(GRANTS)}, got {o.grant!r}"
    method = o.token_endpoint_auth_method
    if method is not None and method not in _METHODS:
        return f"`token_endpoint_auth_method` must be one of {', '.join(_METHODS)}, got {method!r}"
    if o.signing_algorithm not in _ALGORITHMS:
        return f"`signing_algorithm` must be one of {', '.join(_ALGORITHMS)}"
    if o.client_secret is not None and o.client_id is None:
        return "`client_secret` needs the `client_id` it belongs to"
    if o.callback_port is not None and not 0 < o.callback_port < 65536:
        return "`callback_port` must be a port number (1-65535)"
    if any(not s or any(c.isspace() for c in s) for s in o.scopes):
        return "each of `scopes` must be one scope, without spaces"
    if o.grant == "client_credentials":
        if o.client_id is None or (o.client_secret is None) == (o.private_key is None):
            return "`client_credentials` needs `client_id` and `client_secret` or `private_key`"
        if o.private_key is not None and method not in (None, "private_key_jwt"):
            return "a `private_key` signs in with `private_key_jwt` only"
        if o.client_secret is not None and method not in (
            None,
            "client_secret_basic",
            "client_secret_post",
        ):
            return "a `client_secret` is sent with `client_secret_basic` or `client_secret_post`"
        if o.issuer is None:
            return (
                "`client_credentials` needs `issuer`, the authorization server its credentials "
                "belong to (without it, the MCP server would choose where they are sent)"
            )
    if o.grant == "jwt_bearer" and (
        o.client_id is None or o.client_secret is None or o.issuer is None
    ):
        return "`jwt_bearer` needs `client_id`, `client_secret`, `issuer` and `identity_provider`"
    if (o.identity_provider is not None) != (o.grant == "jwt_bearer"):
        return "`identity_provider` goes with `grant: jwt_bearer`, and only with it"
    if o.grant == "authorization_code" and method == "private_key_jwt":
        return "`private_key_jwt` is for `grant: client_credentials` with a `private_key`"
    return ""


def variables(text: str | None) -> list[str]:
    """The `${VAR}` references in `text`, as written."""
    return _VAR.findall(text or "")


def destinations(o: McpOAuthConfig, url: str) -> list[tuple[str, str]]:
    """What `o` sends where, as `(what, where)` pairs, for a person deciding on trust.

    Every secret is named (with the `${VAR}` it is read from), and so is every other value
    that reads a `${VAR}` or names a URL; `where` is the URL the configuration gives, or the
    authorization server the MCP server at `url` names when no `issuer` pins one.
    """
    try:
        host = urlsplit(url).netloc or url
    except ValueError:  # not a URL yet (an untrusted entry, unexpanded): shown as written
        host = url
    server = o.issuer or f"the authorization server that {host} names"
    out: list[tuple[str, str]] = []

    def sends(what: str, value: str | None, where: str, *, always: bool = False) -> None:
        if value is not None and (always or variables(value)):
            out.append((" ".join([what, *variables(value)]), where))

    sends("oauth.client_id", o.client_id, server)
    sends("oauth.client_secret", o.client_secret, server, always=True)
    sends("a signature by oauth.private_key", o.private_key, server, always=True)
    for i, scope in enumerate(o.scopes):
        sends(f"oauth.scopes[{i}]", scope, server)
    if o.client_metadata_url is not None:
        out.append((f"oauth.client_metadata_url {o.client_metadata_url}", server))
    idp = o.identity_provider
    if idp is not None:
        where = idp.token_endpoint
        sends("oauth.identity_provider.client_id", idp.client_id, where)
        sends("oauth.identity_provider.id_token", idp.id_token, where, always=True)
        sends("oauth.identity_provider.client_secret", idp.client_secret, where, always=True)
    return out


def parse_oauth(
    where: str, value: Any, string: Callable[[str, str, Any], str], kind: Callable[[Any], str]
) -> McpOAuthConfig:
    """The `oauth` object of the entry `where`, checked strictly.

    `string(where, key, value)` reads one string (expanding `${VAR}` where the file is
    trusted); a URL that still holds `${` was not expanded and is checked once it is.
    """
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: `oauth` must be an object, got {kind(value)}")
    data = cast(dict[str, Any], value)
    unknown = sorted(k for k in data if k not in _KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key 'oauth.{unknown[0]}' (allowed: {', '.join(sorted(_KEYS))})"
        )
    grant = data.get("grant", "authorization_code")
    if grant not in GRANTS:
        raise ConfigurationError(
            f"{where}: `oauth.grant` must be one of {', '.join(GRANTS)}, got {grant!r}"
        )
    misplaced = sorted(k for k in data if k not in _BY_GRANT[grant] | {"grant"})
    if misplaced:
        raise ConfigurationError(f"{where}: `oauth.{misplaced[0]}` does not apply to {grant}")

    def text(key: str) -> str | None:
        found = data.get(key)
        return None if found is None else string(where, f"oauth.{key}", found)

    port = data.get("callback_port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise ConfigurationError(f"{where}: `oauth.callback_port` must be a port number")
    scopes = data.get("scopes", [])
    if not isinstance(scopes, list):
        raise ConfigurationError(
            f"{where}: `oauth.scopes` must be a list of strings, got {kind(scopes)}"
        )
    metadata_url, issuer = text("client_metadata_url"), text("issuer")
    if metadata_url is not None and "${" not in metadata_url:
        parts = urlsplit(metadata_url)
        if parts.scheme != "https" or not parts.hostname or parts.path in ("", "/"):
            raise ConfigurationError(
                f"{where}: `oauth.client_metadata_url` must be an https:// URL with a path, "
                f"got {metadata_url!r}"
            )
    if issuer is not None:
        _http_url(where, "oauth.issuer", issuer)
    idp = data.get("identity_provider")
    fields: dict[str, Any] = {
        "grant": grant,
        "client_id": text("client_id"),
        "client_secret": text("client_secret"),
        "scopes": tuple(
            string(where, f"oauth.scopes[{i}]", s) for i, s in enumerate(cast(list[Any], scopes))
        ),
        "callback_port": port,
        "client_metadata_url": metadata_url,
        "token_endpoint_auth_method": text("token_endpoint_auth_method"),
        "private_key": text("private_key"),
        "signing_algorithm": text("signing_algorithm") or "RS256",
        "issuer": issuer,
        "identity_provider": None if idp is None else _identity(where, idp, string, kind),
    }
    try:
        return McpOAuthConfig(**fields)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from exc


def _identity(
    where: str, value: Any, string: Callable[[str, str, Any], str], kind: Callable[[Any], str]
) -> McpIdentityProvider:
    key = "oauth.identity_provider"
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: `{key}` must be an object, got {kind(value)}")
    data = cast(dict[str, Any], value)
    unknown = sorted(k for k in data if k not in _IDP_KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key '{key}.{unknown[0]}' (allowed: {', '.join(sorted(_IDP_KEYS))})"
        )
    missing = sorted(k for k in ("token_endpoint", "client_id", "id_token") if k not in data)
    if missing:
        raise ConfigurationError(f"{where}: `{key}` needs `{missing[0]}`")
    endpoint = string(where, f"{key}.token_endpoint", data["token_endpoint"])
    _http_url(where, f"{key}.token_endpoint", endpoint)
    secret = data.get("client_secret")
    return McpIdentityProvider(
        token_endpoint=endpoint,
        client_id=string(where, f"{key}.client_id", data["client_id"]),
        id_token=string(where, f"{key}.id_token", data["id_token"]),
        client_secret=None if secret is None else string(where, f"{key}.client_secret", secret),
    )


def _http_url(where: str, key: str, url: str) -> None:
    if "${" in url:
        return  # not expanded (an untrusted file being shown): checked once it is
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"{where}: `{key}` must be an http(s):// URL, got {url!r}")
