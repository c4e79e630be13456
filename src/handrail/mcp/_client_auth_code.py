"""The authorization code grant, as handrail does it: the SDK's provider, with a loopback redirect.

`CodeProvider` is the SDK's `OAuthClientProvider` (discovery, CIMD or dynamic registration,
PKCE, refresh, scope step-up) with handrail's pieces:

* The redirect goes to `http://127.0.0.1:<port>/callback` (`_client_auth_redirect`): the
  configured `callback_port`, else the port of the stored registration, else a free one.
  The listener opens just before the browser is shown the URL and closes once it came back
  or `SignIn.timeout` passed; the person is asked only where `_client_auth_sign_in.current()`
  says someone can be, and a connection that gave up does not ask again.
* A pre-registered `client_id` (with its secret) is used as it is; without a configured
  `token_endpoint_auth_method` it authenticates as the authorization server supports.
* Configured `scopes` are asked for on top of what the server names.
* A token read back from disk gets its expiry and the metadata of its sign-in back
  (`_client_auth_store`), so an expired one is refreshed at the right token endpoint.
* The client and its tokens are bound to one authorization server: `oauth.issuer`, else the
  one the stored sign-in was made at (the first sign-in binds it). A server that names
  another is refused (`IssuerChanged`) as soon as its metadata says so, before that server's
  metadata is even read: nothing is registered there, and no token, refresh token or client
  secret is ever sent to it. A sign-in made at another server than the configured
  `oauth.issuer` is dropped, and a registration made at another server than the tokens' is
  not used with them. Token requests are checked once more before they are sent.
* Step-up stops when it cannot help: the scope asked for was granted already, or
  `MAX_STEP_UPS` sign-ins in a row got no request through.
* On the 2025-03-26 path (no protected resource metadata) the metadata at the server's own
  origin may name an issuer with a path on that origin; the 2025-03-26 spec let clients use
  it, and so does handrail. An issuer on another origin is still refused by the SDK.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncGenerator
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import (
    credentials_match_issuer,
    extract_field_from_www_auth,
    issuers_match,
    union_scopes,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl

from .._version import __version__
from ._client_auth_redirect import LoopbackRedirect
from ._client_auth_sign_in import AuthorizationFailed, SignInRequired, current
from ._client_auth_store import TokenFile
from ._config_oauth import McpOAuthConfig

__all__ = ["MAX_STEP_UPS", "CodeProvider", "IssuerChanged", "insufficient_scope", "json_object"]

logger = logging.getLogger("handrail.mcp")

MAX_STEP_UPS = 2
"""Sign-ins for more scope in a row, without a request getting through, before giving up."""
_SHOWN = 200
"""Characters of an authorization server's URL, as the server named it, put in a message."""


class IssuerChanged(AuthorizationFailed):
    """The server names another authorization server than the one the client is bound to.

    The message is the whole clause for the model and the person, the way out included.
    """


class CodeProvider(OAuthClientProvider):
    """The SDK's authorization-code provider, with handrail's redirect, storage and limits."""

    def __init__(self, server: str, url: str, oauth: McpOAuthConfig, store: TokenFile) -> None:
        self._server = server
        self._oauth = oauth
        self._store = store
        self._port = _redirect_port(oauth, store)
        self._redirect_uri = AnyUrl(f"http://127.0.0.1:{self._port}/callback")
        self._listener: LoopbackRedirect | None = None
        self._step_ups = 0
        self._gave_up: AuthorizationFailed | None = None
        """Why the person's sign-in did not happen: this connection does not ask again (the
        protocol's discover-then-initialize would otherwise show the browser twice)."""
        self._issuer: str | None = oauth.issuer
        """The authorization server the client and its tokens are bound to: `oauth.issuer`,
        else the one of the stored sign-in; None until the first sign-in binds one."""
        metadata = OAuthClientMetadata(
            redirect_uris=[self._redirect_uri],
            client_name="handrail",
            software_id="handrail",
            software_version=__version__,
            scope=" ".join(oauth.scopes) or None,
        )
        super().__init__(
            url,
            metadata,
            store,
            redirect_handler=self._open,
            callback_handler=self._come_back,
            client_metadata_url=oauth.client_metadata_url,
        )

    async def _initialize(self) -> None:
        await super()._initialize()
        context = self.context
        configured, recorded = self._oauth.issuer, self._store.recorded_issuer()
        if configured and recorded and not issuers_match(configured, recorded):
            # Signed in at another authorization server than the one configured now: those
            # tokens go to neither.
            logger.info("MCP server %r: dropping its sign-in at %s", self._server, recorded)
            self._store.forget_issuer()
            context.clear_tokens()
            recorded = None
        issuer = self._issuer = configured or recorded
        if self._oauth.client_id is not None:
            context.client_info = OAuthClientInformationFull(
                client_id=self._oauth.client_id,
                client_secret=self._oauth.client_secret,
                redirect_uris=[self._redirect_uri],
                token_endpoint_auth_method=self._oauth.token_endpoint_auth_method,
                issuer=issuer,
            )
        elif (
            context.client_info is not None
            and issuer is not None
            and not credentials_match_issuer(
                context.client_info, issuer, context.client_metadata_url
            )
        ):
            context.client_info = None  # registered elsewhere: never used with these tokens
        if context.current_tokens is not None:
            # The SDK counts a stored token's life from now; the file knows when it ends.
            context.token_expiry_time = self._store.expires_at()
        if context.oauth_metadata is None:
            resource, server = self._store.saved_metadata()
            if (
                server is not None
                and issuer is not None
                and not issuers_match(str(server.issuer), issuer)
            ):
                resource, server = None, None  # not the bound server's: discovered anew
            context.protected_resource_metadata = resource
            context.oauth_metadata = server
            if resource is not None:
                context.auth_server_url = self._select_authorization_server(
                    [str(a) for a in resource.authorization_servers]
                )

    # -- the binding to one authorization server ---------------------------------------------

    async def _validate_resource_match(self, prm: ProtectedResourceMetadata) -> None:
        await super()._validate_resource_match(prm)
        advertised = [str(a) for a in prm.authorization_servers]
        issuer = self._issuer
        if issuer is not None and not any(issuers_match(a, issuer) for a in advertised):
            raise self._changed(advertised[0])  # before the SDK takes the metadata in

    def _select_authorization_server(self, advertised: list[str]) -> str:
        issuer = self._issuer
        bound = (a for a in advertised if issuer is not None and issuers_match(a, issuer))
        return next(bound, advertised[0])

    def _expected_issuer(self) -> str:
        found = super()._expected_issuer()
        if self._issuer is not None and not issuers_match(found, self._issuer):
            raise self._changed(found)  # the 2025-03-26 path: the server's origin
        return found

    def _check_token_endpoint(self) -> None:
        """Refuse a token request to another authorization server than the bound one."""
        issuer = self._issuer
        if issuer is None:
            return
        metadata = self.context.oauth_metadata
        if metadata is not None:
            found = str(metadata.issuer)
        else:  # the SDK's fallback: `/token` at the server's origin
            parts = urlsplit(self.context.server_url)
            found = f"{parts.scheme}://{parts.netloc}"
        if not issuers_match(found, issuer):
            self.context.clear_tokens()
            raise self._changed(found)

    def _changed(self, found: str) -> IssuerChanged:
        name, bound = self._server, self._issuer
        found = found if len(found) <= _SHOWN else found[: _SHOWN - 1] + "…"
        if self._oauth.issuer is not None:
            return IssuerChanged(
                f"it names the authorization server {found}, not its `oauth.issuer` {bound}; "
                "handrail sent that server no credentials and did not sign in there. If the "
                f"server really moved, the user can change `oauth.issuer` of `{name}` in "
                "mcp.json"
            )
        return IssuerChanged(
            f"it now names the authorization server {found}, not {bound} where the user "
            "signed in to it; handrail sent that server no credentials and kept the sign-in. "
            f"If the server really moved, the user can run `handrail mcp logout {name}`, then "
            f"`handrail mcp login {name}`"
        )

    async def _perform_authorization(self) -> httpx2.Request:
        if self._oauth.scopes:
            wanted = " ".join(self._oauth.scopes)
            scope = self.context.client_metadata.scope
            self.context.client_metadata.scope = union_scopes(scope, wanted)
        return await super()._perform_authorization()

    async def _exchange_token_authorization_code(
        self, auth_code: str, code_verifier: str
    ) -> httpx2.Request:
        self._check_token_endpoint()
        self._settle_method()
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)

    async def _refresh_token(self) -> httpx2.Request:
        self._check_token_endpoint()
        self._settle_method()
        return await super()._refresh_token()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        context = self.context
        metadata = context.oauth_metadata
        # The server that issued these tokens: from now on the only one they, and the client,
        # are used with.
        issuer = str(metadata.issuer) if metadata is not None else super()._expected_issuer()
        self._store.resource_metadata = context.protected_resource_metadata
        self._store.authorization_server = metadata
        self._store.issuer = issuer
        await super()._handle_token_response(response)
        self._issuer = self._oauth.issuer or issuer
        if self._oauth.client_id is not None and context.client_info is not None:
            context.client_info.issuer = self._issuer

    def _settle_method(self) -> None:
        """A pre-registered client without a configured method uses what the server supports."""
        info = self.context.client_info
        if info is None or self._oauth.client_id is None or self._oauth.token_endpoint_auth_method:
            return
        metadata = self.context.oauth_metadata
        supported = (metadata.token_endpoint_auth_methods_supported if metadata else None) or [
            "client_secret_basic"  # RFC 8414's default
        ]
        if info.client_secret is None:
            info.token_endpoint_auth_method = "none"
        elif "client_secret_basic" not in supported and "client_secret_post" in supported:
            info.token_endpoint_auth_method = "client_secret_post"
        else:
            info.token_endpoint_auth_method = "client_secret_basic"

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        inner = super()._auth_flow(request)
        try:
            outgoing = await inner.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request:
                    if insufficient_scope(response):
                        if not self._may_step_up(response):
                            return  # the 403 stands, and the client explains it
                    elif response.status_code < 400:
                        self._step_ups = 0
                else:
                    response = await self._legacy_issuer(outgoing, response)
                outgoing = await inner.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await inner.aclose()

    def _may_step_up(self, response: httpx2.Response) -> bool:
        tokens = self.context.current_tokens
        wanted = set((extract_field_from_www_auth(response, "scope") or "").split())
        granted = set((tokens.scope if tokens and tokens.scope else "").split())
        if wanted and wanted <= granted:
            return False  # granted already: signing in again would get the same refusal
        self._step_ups += 1
        return self._step_ups <= MAX_STEP_UPS

    async def _legacy_issuer(
        self, sent: httpx2.Request, response: httpx2.Response
    ) -> httpx2.Response:
        """The 2025-03-26 metadata at the server's origin, its same-origin issuer accepted."""
        context = self.context
        server = urlsplit(context.server_url)
        origin = f"{server.scheme}://{server.netloc}"
        if (
            context.protected_resource_metadata is not None
            or context.auth_server_url is not None
            or response.status_code != 200
            or str(sent.url) != f"{origin}/.well-known/oauth-authorization-server"
        ):
            return response
        try:
            body = json_object(await response.aread())
        except ValueError:
            return response
        issuer = body.get("issuer")
        if not isinstance(issuer, str) or issuer.rstrip("/") == origin:
            return response
        parts = urlsplit(issuer)
        if (parts.scheme, parts.netloc) != (server.scheme, server.netloc):
            return response  # another origin: the SDK refuses it, as it should
        logger.debug("MCP server %r: legacy metadata names issuer %s", self._server, issuer)
        fixed = {**body, "issuer": origin}
        return httpx2.Response(
            200,
            headers={"content-type": "application/json"},
            content=json.dumps(fixed).encode(),
            request=sent,
        )

    async def _open(self, url: str) -> None:
        if self._gave_up is not None:
            raise type(self._gave_up)(str(self._gave_up))
        try:
            await self._show(url)
        except AuthorizationFailed as exc:
            self._gave_up = exc
            raise

    async def _show(self, url: str) -> None:
        sign_in = current()
        if sign_in is None:
            raise SignInRequired("a person must sign in")
        listener = LoopbackRedirect(self._port)
        try:
            await listener.__aenter__()
        except OSError as exc:
            raise AuthorizationFailed(
                f"the sign-in could not listen on 127.0.0.1:{self._port} for the browser's "
                f"return ({exc.strerror or exc}); set another `oauth.callback_port`"
            ) from exc
        listener.expect(parse_qs(urlsplit(url).query).get("state", [""])[0])
        self._listener = listener
        try:
            await sign_in.browser(url)
        except Exception as exc:
            await self._close_listener()
            raise AuthorizationFailed(f"the browser could not be opened ({exc})") from exc

    async def _come_back(self) -> AuthorizationCodeResult:
        try:
            return await self._returned()
        except AuthorizationFailed as exc:
            self._gave_up = exc
            raise

    async def _returned(self) -> AuthorizationCodeResult:
        listener = self._listener
        sign_in = current()
        if listener is None or sign_in is None:
            raise SignInRequired("a person must sign in")
        try:
            redirect = await listener.wait(sign_in.timeout)
        except TimeoutError:
            raise AuthorizationFailed(
                f"nobody completed the sign-in in the browser within {sign_in.timeout:g} seconds"
            ) from None
        finally:
            await self._close_listener()
        if redirect.error is not None or not redirect.code:
            why = redirect.error or "no code"
            detail = f": {redirect.error_description}" if redirect.error_description else ""
            raise AuthorizationFailed(f"the authorization server did not sign in ({why}{detail})")
        return AuthorizationCodeResult(code=redirect.code, state=redirect.state, iss=redirect.iss)

    async def _close_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()


def _redirect_port(oauth: McpOAuthConfig, store: TokenFile) -> int:
    """The configured port, else the one the stored registration has, else a free one."""
    if oauth.callback_port is not None:
        return oauth.callback_port
    info: Any = store.read().get("client_info")
    uris: Any = cast(dict[str, Any], info).get("redirect_uris") if isinstance(info, dict) else None
    for uri in cast(list[Any], uris) if isinstance(uris, list) else []:
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def insufficient_scope(response: httpx2.Response) -> bool:
    """A 403 that asks for more scope (RFC 6750 `insufficient_scope`)."""
    return (
        response.status_code == 403
        and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


def json_object(data: bytes) -> dict[str, Any]:
    """`data` as a JSON object; ValueError for anything else."""
    found: Any = json.loads(data)
    if not isinstance(found, dict):
        raise ValueError("not a JSON object")
    return cast(dict[str, Any], found)
