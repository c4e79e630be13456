"""OAuth 2.1 for HTTP MCP servers: the SDK's providers, with handrail's storage, browser and words.

An HTTP server without an `Authorization` header in its entry gets an `httpx2.Auth` from the
`mcp` SDK, chosen by `oauth.grant` (`_config_oauth`):

* `authorization_code` (default): `_client_auth_code.CodeProvider`, the SDK's
  `OAuthClientProvider` (discovery of the protected resource and authorization server, a
  client ID metadata document or dynamic registration unless `client_id` is configured, PKCE
  in the person's browser, refresh, scope step-up) with handrail's redirect and limits.
* `client_credentials`: `ClientCredentialsOAuthProvider` (a secret) or
  `PrivateKeyJWTOAuthProvider` (a signed assertion). No person is asked. `oauth.issuer` is
  required (`_config_oauth`): the SDK then builds token requests only from that issuer's
  metadata, so the MCP server cannot choose where the secret goes.
* `jwt_bearer`: `IdentityAssertionOAuthProvider`, with the ID-JAG obtained here by RFC 8693
  token exchange at the configured identity provider; the authorization server is
  `oauth.issuer`, never asked of the MCP server.

Sign-ins are kept in private files (`_client_auth_store`, one per URL and client). Requests go
side by side (`_Concurrent`: the providers hold a lock across a whole request, which would
run concurrent calls one after another), and reach a provider's flow only when the server
refuses. A person is asked only inside `signing_in` (`_client_auth_sign_in`); everywhere else
a server that needs one is refused at once. Every refusal and failed sign-in reaches the
caller as a JSON-RPC error for its request (`_ReportingClient`), in words that name the server
and the way out, so it ends as the start failure or the tool result; nothing here raises past
the transport.

This module imports the SDK when imported; only the HTTP transport and the `mcp` CLI import it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, cast

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError
from mcp.client.auth.utils import extract_field_from_www_auth
from mcp.shared.exceptions import MCPError

from ._client_auth_code import CodeProvider, IssuerChanged, insufficient_scope, json_object
from ._client_auth_sign_in import (
    DEFAULT_SIGN_IN_TIMEOUT,
    AuthorizationFailed,
    SignInRequired,
    signing_in,
)
from ._client_auth_store import token_file
from ._config import McpServerConfig
from ._config_oauth import McpOAuthConfig

__all__ = [
    "DEFAULT_SIGN_IN_TIMEOUT",
    "AuthorizationFailed",
    "SignInRequired",
    "authorization_failure",
    "http_client",
    "signing_in",
]

logger = logging.getLogger("handrail.mcp")

_MARK = {"handrail": "authorization"}
"""The `data` of the JSON-RPC errors made here, so the transport knows them for its own."""
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's: a response stream may stay open


class _OwnRefusals(logging.Filter):
    """Drops the SDK's traceback of a refusal raised here: handrail reports it in words."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, AuthorizationFailed)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_OwnRefusals())


def http_client(config: McpServerConfig) -> httpx2.AsyncClient:
    """The HTTP client for one server, with its headers and OAuth.

    OAuth applies unless the entry sends its own `Authorization` header; refusals and failed
    sign-ins come back as JSON-RPC errors that say what to do.
    """
    headers = dict(config.headers)
    provider = None if _has_authorization(headers) else _provider(config)
    return _ReportingClient(
        _Explainer(config.name, provider),
        headers=headers or None,
        timeout=_TIMEOUT,
        auth=None if provider is None else _Concurrent(provider, signed_in=_stored(config)),
    )


def authorization_failure(exc: BaseException) -> str | None:
    """The clause of an authorization error made here, found in `exc` (or a group), or None."""
    stack = [exc]
    for _ in range(100):  # groups nest; the bound keeps a pathological one from looping
        if not stack:
            break
        leaf = stack.pop()
        if isinstance(leaf, MCPError) and leaf.data == _MARK:
            return leaf.message
        stack.extend(cast(tuple[BaseException, ...], getattr(leaf, "exceptions", ())))
    return None


# -- the providers -----------------------------------------------------------------------------


def _has_authorization(headers: Mapping[str, str]) -> bool:
    return any(k.lower() == "authorization" for k in headers)


def _stored(config: McpServerConfig) -> bool:
    return token_file(config).read().get("tokens") is not None


def _provider(config: McpServerConfig) -> httpx2.Auth:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    assert config.url is not None
    oauth = config.oauth or McpOAuthConfig()
    store = token_file(config)
    scope = " ".join(oauth.scopes) or None
    if oauth.grant == "authorization_code":
        return CodeProvider(config.name, config.url, oauth, store)
    assert oauth.client_id is not None
    if oauth.grant == "jwt_bearer":
        assert oauth.identity_provider is not None and oauth.client_secret and oauth.issuer
        return IdentityAssertionOAuthProvider(
            server_url=config.url,
            storage=store,
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            issuer=oauth.issuer,
            assertion_provider=_IdJagExchange(oauth).__call__,
            scope=scope,
            token_endpoint_auth_method="client_secret_post"
            if oauth.token_endpoint_auth_method == "client_secret_post"
            else "client_secret_basic",
        )
    # Required for this grant (`_config_oauth`): token requests are built only from metadata
    # of this issuer, whichever authorization server the MCP server names.
    assert oauth.issuer is not None
    if oauth.private_key is not None:
        signer = SignedJWTParameters(
            issuer=oauth.client_id,
            subject=oauth.client_id,
            signing_key=oauth.private_key,
            signing_algorithm=oauth.signing_algorithm,
        ).create_assertion_provider()
        return PrivateKeyJWTOAuthProvider(
            server_url=config.url,
            storage=store,
            client_id=oauth.client_id,
            assertion_provider=_Signer(signer).__call__,
            scope=scope,
            issuer=oauth.issuer,
        )
    assert oauth.client_secret is not None
    return ClientCredentialsOAuthProvider(
        server_url=config.url,
        storage=store,
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
        token_endpoint_auth_method="client_secret_post"
        if oauth.token_endpoint_auth_method == "client_secret_post"
        else "client_secret_basic",
        scope=scope,
        issuer=oauth.issuer,
    )


class _Concurrent(httpx2.Auth):
    """Requests sent side by side with the header that last worked; the provider's flow on refusal.

    The SDK's providers hold a lock for the whole exchange, the request included: against a
    server that answers with JSON (headers only once the call is done) concurrent calls would
    run one after another. A refused request (401, or 403 for scope) goes to the provider's
    flow as it is, which sends it again once it has signed in, refreshed or stepped up.
    """

    def __init__(self, provider: httpx2.Auth, *, signed_in: bool) -> None:
        self._provider = provider
        self._header: str | None = None
        self._refused = signed_in
        """Whether requests need the provider: the server refused one, or a sign-in is stored
        (the provider then refreshes it if it expired, before it is ever sent)."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Send `request` with the last header that worked, or through the provider."""
        header = self._header
        if header is not None or not self._refused:
            if header is not None:
                request.headers["Authorization"] = header
            response = yield request
            if not _refused(response):
                return
            self._refused = True
            request.headers.pop("Authorization", None)
        flow = self._provider.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and not _refused(response):
                    self._header = request.headers.get("Authorization")
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


def _refused(response: httpx2.Response) -> bool:
    return response.status_code == 401 or insufficient_scope(response)


class _Signer:
    """A `private_key_jwt` assertion; a key that cannot sign says so in words."""

    def __init__(self, sign: Callable[[str], Awaitable[str]]) -> None:
        self._sign = sign

    async def __call__(self, audience: str) -> str:
        try:
            return await self._sign(audience)
        except Exception as exc:  # PyJWT and cryptography raise several kinds for a bad key
            raise AuthorizationFailed(f"`oauth.private_key` could not sign ({exc})") from exc


class _IdJagExchange:
    """The first leg of cross-app access: the ID token traded for an ID-JAG (RFC 8693)."""

    def __init__(self, oauth: McpOAuthConfig) -> None:
        assert oauth.identity_provider is not None
        self._idp = oauth.identity_provider
        self._scope = " ".join(oauth.scopes) or None

    async def __call__(self, audience: str, resource: str) -> str:
        idp = self._idp
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": _ID_JAG,
            "subject_token": idp.id_token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": audience,
            "resource": resource,
            "client_id": idp.client_id,
        }
        if idp.client_secret is not None:
            form["client_secret"] = idp.client_secret
        if self._scope:
            form["scope"] = self._scope
        try:
            async with httpx2.AsyncClient(timeout=_TIMEOUT) as http:
                answer = await http.post(idp.token_endpoint, data=form)
            body = json_object(answer.content) if answer.content else {}
        except (httpx2.HTTPError, ValueError) as exc:
            raise AuthorizationFailed(f"the identity provider could not be asked ({exc})") from exc
        token = body.get("access_token")
        if answer.status_code != 200 or not isinstance(token, str):
            error = body.get("error") or ""
            raise AuthorizationFailed(
                f"the identity provider refused the token exchange (HTTP {answer.status_code}"
                f"{', ' + str(error) if error else ''})"
            )
        return token


# -- words for the model and the person ------------------------------------------------------


class _Explainer:
    """What to say when a server refuses, or signing in to it fails."""

    def __init__(self, server: str, provider: httpx2.Auth | None) -> None:
        self.server = server
        self.provider = provider

    def failure(self, exc: Exception) -> str:
        name = self.server
        if isinstance(exc, IssuerChanged):
            return str(exc)
        if isinstance(exc, SignInRequired):
            return (
                "it needs authorization (HTTP 401) and no one has signed in to it yet; ask the "
                f"user to run `handrail mcp login {name}` in a terminal, then try again"
            )
        context = getattr(self.provider, "context", None)
        if (
            isinstance(exc, OAuthRegistrationError)
            and getattr(context, "protected_resource_metadata", None) is None
            and getattr(context, "oauth_metadata", None) is None
        ):
            return (
                "it needs authorization (HTTP 401) but offers no OAuth sign-in; the user can "
                'give it a token in mcp.json ("headers": {"Authorization": "Bearer ..."})'
            )
        detail = " ".join(str(exc).split())[:300].rstrip(".") or type(exc).__name__
        return (
            f"it needs authorization (HTTP 401) and signing in failed: {detail}; the user can "
            f"try `handrail mcp login {name}`, or check the `oauth` settings of `{name}` in "
            "mcp.json"
        )

    def refusal(self, response: httpx2.Response) -> str | None:
        name = self.server
        if response.status_code == 401 and self.provider is None:
            return (
                "it refused the Authorization header configured for it (HTTP 401): the token "
                f"is missing, wrong or expired; the user should update `headers` of `{name}` "
                "in mcp.json"
            )
        if response.status_code == 401:
            return (
                "it still answered HTTP 401 after signing in; the user can sign in again with "
                f"`handrail mcp logout {name}` and `handrail mcp login {name}`"
            )
        if insufficient_scope(response):
            scope = extract_field_from_www_auth(response, "scope")
            needs = f", it wants scope `{scope}`" if scope else ""
            if self.provider is None:
                return (
                    f"it refused for lack of permission (HTTP 403 insufficient_scope{needs}): "
                    f"the token in the Authorization header of `{name}` in mcp.json does not "
                    "allow this; tell the user"
                )
            return (
                f"it refused for lack of permission (HTTP 403 insufficient_scope{needs}) even "
                "after signing in for it; the signed-in account may not be allowed this: tell "
                "the user"
            )
        return None


class _ReportingClient(httpx2.AsyncClient):
    """An HTTP client whose authorization failures come back as JSON-RPC errors in words.

    The SDK's transport turns a 401 into "Server returned an error response", and an error in
    an auth flow into a dead connection; either way the model would not learn what to do. A
    JSON-RPC error body is what the transport passes on to the request as it is.
    """

    def __init__(self, explainer: _Explainer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._explainer = explainer

    async def send(
        self,
        request: httpx2.Request,
        *,
        stream: bool = False,
        auth: Any = httpx2.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx2.USE_CLIENT_DEFAULT,
    ) -> httpx2.Response:
        """Send `request`; a refusal or a failed sign-in is answered with a JSON-RPC error."""
        try:
            response = await super().send(
                request, stream=stream, auth=auth, follow_redirects=follow_redirects
            )
        except (AuthorizationFailed, OAuthFlowError) as exc:
            logger.info("MCP server %r: signing in failed: %s", self._explainer.server, exc)
            return _rpc_error(request, 401, self._explainer.failure(exc))
        clause = self._explainer.refusal(response)
        if clause is None:
            return response
        await response.aclose()
        return _rpc_error(request, response.status_code, clause)


def _rpc_error(request: httpx2.Request, status: int, clause: str) -> httpx2.Response:
    error = {"code": -32600, "message": clause, "data": _MARK}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    headers = {"content-type": "application/json"}
    return httpx2.Response(status, headers=headers, content=body, request=request)
