"""Sign-ins to MCP servers, kept between sessions: one private file per server and client.

`<state>/mcp-oauth/<host>-<key>.json`, where `<state>` is handrail's private state folder
(`handrail.sandbox.state_dir()`) and `<key>` a hash of the server's URL and the client
(`McpOAuthConfig.client_key`):

```json
{"format": 1, "url": "https://docs.example.com/mcp", "client": "authorization_code",
 "tokens": {"access_token": "...", "refresh_token": "...", "expires_in": 3600},
 "expires_at": 1767229200.0, "issuer": "https://auth.example.com/",
 "client_info": {"client_id": "...", "issuer": "https://auth.example.com/"},
 "resource_metadata": {...}, "authorization_server": {...}}
```

Invariants:

* The folder is 0700 and each file 0600, written atomically (`_atomic.write_file_atomic`):
  a reader sees the old sign-in or the new one, never half of one. The whole state folder is
  a hidden path (`permissions._hidden`): no tool reads, lists or searches it, and the shell's
  sandbox hides it, so a model never sees a token.
* `expires_at` is absolute: a token read back in a later process is known to be expired and
  is refreshed, instead of being sent until the server says 401. The server's and the
  authorization server's metadata are kept with it so a refresh goes to the right token
  endpoint without discovering again.
* `issuer` is the authorization server that issued the tokens (files written before it was
  kept: the issuer of `authorization_server`). The tokens, and the registration in
  `client_info`, are bound to it (`_client_auth_code`): nothing in this file is ever sent to
  another authorization server, and a registration elsewhere never sits beside its tokens.
* A file that is not a regular file of this user, or not in this shape, reads as no sign-in
  (the person signs in again); it is never an error and never followed through a symlink.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

from .._atomic import read_private_file, write_file_atomic
from ..sandbox import state_dir
from ._config import McpServerConfig
from ._config_oauth import McpOAuthConfig

if TYPE_CHECKING:
    from mcp.shared.auth import (
        OAuthClientInformationFull,
        OAuthMetadata,
        OAuthToken,
        ProtectedResourceMetadata,
    )

__all__ = ["FOLDER", "TokenFile", "token_file", "token_path"]

logger = logging.getLogger("handrail.mcp")

FOLDER = "mcp-oauth"
"""The folder of the sign-ins, inside handrail's state folder."""
FORMAT = 1
_MAX_BYTES = 1024 * 1024
_M = TypeVar("_M")


def token_path(url: str, client_key: str, base: Path | None = None) -> Path:
    """The file of the sign-in to `url` as `client_key` (see the module docstring)."""
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", urlsplit(url).hostname or "server")[:40]
    digest = hashlib.sha256(f"{url}\n{client_key}".encode()).hexdigest()[:24]
    return (base or state_dir()) / FOLDER / f"{host}-{digest}.json"


def token_file(config: McpServerConfig) -> TokenFile:
    """The file that keeps the sign-in to this HTTP server (as its configured client)."""
    assert config.url is not None
    key = (config.oauth or McpOAuthConfig()).client_key
    return TokenFile(token_path(config.url, key), url=config.url, client_key=key)


class TokenFile:
    """One server's sign-in on disk: the SDK's `TokenStorage`, plus what handrail keeps with it.

    Args:
        path: The file (`token_path`).
        url: The server's URL, recorded in the file for `handrail mcp logout` to name.
        client_key: The client, recorded likewise.
    """

    def __init__(self, path: Path, *, url: str, client_key: str) -> None:
        self.path = path
        self.url = url
        self.client_key = client_key
        self.resource_metadata: ProtectedResourceMetadata | None = None
        """The server's protected resource metadata, saved with the next tokens."""
        self.authorization_server: OAuthMetadata | None = None
        """The authorization server's metadata, saved with the next tokens."""
        self.issuer: str | None = None
        """The authorization server the next tokens come from, saved with them."""

    # -- the SDK's TokenStorage --------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens, if any."""
        from mcp.shared.auth import OAuthToken

        return _model(OAuthToken, self.read().get("tokens"))

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens, with when they expire and the metadata they came with."""
        data = self.read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = None if tokens.expires_in is None else time.time() + tokens.expires_in
        if self.resource_metadata is not None:
            data["resource_metadata"] = self.resource_metadata.model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
        if self.authorization_server is not None:
            data["authorization_server"] = self.authorization_server.model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
        if self.issuer is not None:
            data["issuer"] = self.issuer
        self.write(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The client registered earlier (dynamically, or from a metadata document)."""
        from mcp.shared.auth import OAuthClientInformationFull

        return _model(OAuthClientInformationFull, self.read().get("client_info"))

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a new registration."""
        data = self.read()
        data["client_info"] = client_info.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.write(data)

    # -- what handrail keeps beside it -------------------------------------------------------

    def expires_at(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if it said."""
        found = self.read().get("expires_at")
        return float(found) if isinstance(found, int | float) else None

    def saved_metadata(self) -> tuple[ProtectedResourceMetadata | None, OAuthMetadata | None]:
        """The server's and the authorization server's metadata from the last sign-in."""
        from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

        data = self.read()
        return (
            _model(ProtectedResourceMetadata, data.get("resource_metadata")),
            _model(OAuthMetadata, data.get("authorization_server")),
        )

    def recorded_issuer(self) -> str | None:
        """The authorization server the stored sign-in is bound to, if one was recorded."""
        data = self.read()
        found = data.get("issuer")
        if isinstance(found, str):
            return found
        _, server = self.saved_metadata()
        return None if server is None else str(server.issuer)

    def forget_tokens(self) -> None:
        """Drop the tokens but keep the registration (a new sign-in reuses the client)."""
        data = self.read()
        if data.pop("tokens", None) is not None:
            data.pop("expires_at", None)
            self.write(data)

    def forget_issuer(self) -> None:
        """Drop the tokens and what binds them to their authorization server.

        Another one is configured now. A registration stays: it is still bound to the server
        it was made at, and the SDK registers anew elsewhere.
        """
        data = self.read()
        keys = ("tokens", "expires_at", "issuer", "resource_metadata", "authorization_server")
        dropped = [data.pop(k, None) for k in keys]
        if any(d is not None for d in dropped):
            self.write(data)

    def delete(self) -> bool:
        """Remove the file; False when there was none."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def read(self) -> dict[str, Any]:
        """The file's content, or `{}` when there is none that can be trusted."""
        try:
            raw = json.loads(_read_private(self.path))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("ignoring the MCP sign-in in %s: %s", self.path, exc)
            return {}
        if not isinstance(raw, dict) or cast(dict[str, Any], raw).get("format") != FORMAT:
            return {}
        return cast(dict[str, Any], raw)

    def write(self, data: dict[str, Any]) -> None:
        """Replace the file with `data` (0600, atomically) in the 0700 folder."""
        data.update(format=FORMAT, url=self.url, client=self.client_key)
        folder = self.path.parent
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise OSError(f"{folder} is not a folder of this user")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(folder, 0o700)  # tokens: nobody else may even list the names
        body = json.dumps(data, ensure_ascii=False, indent=1).encode()
        write_file_atomic(self.path, body, mode=0o600)


def _read_private(path: Path) -> bytes:
    return read_private_file(path, _MAX_BYTES)


def _model(model: type[_M], value: Any) -> _M | None:
    """`value` validated as the pydantic `model`, or None (absent or not in shape)."""
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return cast(Any, model).model_validate(value)
    return None
