"""handrail as the client under test of the MCP conformance suite's client scenarios.

The suite runs `python client.py <server-url>` with `MCP_CONFORMANCE_SCENARIO` set (and
`MCP_CONFORMANCE_CONTEXT`, a JSON object, for scenarios that hand out credentials). This is a
real handrail client, as a user's session is: an `McpServerConfig` for the URL, `McpTools` to
start it and list its tools, a `Runtime` that calls each tool through the whole pipeline, and
handrail's own OAuth code for whatever the server asks. Per scenario it only fills in what a
user would write in `mcp.json` (`oauth`: a pre-registered client, a private key, the
enterprise identity provider).

The "browser" of the sign-in is an HTTP GET that follows redirects, as a browser does: the
suite's authorization server approves at once and redirects to handrail's loopback listener.

Prints each call's result; exit status 0 when every call succeeded, 1 otherwise (some
scenarios expect the client to refuse).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from handrail import Approval, Elicitation, Question, Runtime
from handrail.mcp import McpServerConfig, McpTools
from handrail.mcp._client_auth import signing_in
from handrail.mcp._config_oauth import McpIdentityProvider, McpOAuthConfig

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document the suite expects a client to offer (auth/basic-cimd)."""
WAIT = 20.0


async def browser(url: str) -> None:
    """Visit the authorization URL and follow its redirects, back to the loopback listener."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=WAIT, trust_env=False) as http:
        await http.get(url)


async def issuer_of(url: str) -> str:
    """The authorization server the user would configure for a machine client or cross-app
    access (`oauth.issuer`, required for both): the one the server's protected resource
    metadata names."""
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    async with httpx.AsyncClient(timeout=WAIT, trust_env=False) as http:
        answer = await http.get(where)
    return str(answer.json()["authorization_servers"][0])


async def oauth_for(scenario: str, context: dict[str, Any], url: str) -> McpOAuthConfig:
    """What a user would write in the server's `oauth` object for this scenario."""
    if scenario == "auth/pre-registration":
        return McpOAuthConfig(
            client_id=context["client_id"], client_secret=context["client_secret"]
        )
    if scenario == "auth/client-credentials-basic":
        return McpOAuthConfig(
            grant="client_credentials",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            issuer=await issuer_of(url),
        )
    if scenario == "auth/client-credentials-jwt":
        return McpOAuthConfig(
            grant="client_credentials",
            client_id=context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
            issuer=await issuer_of(url),
        )
    if scenario == "auth/cross-app-access-complete-flow":
        return McpOAuthConfig(
            grant="jwt_bearer",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            issuer=await issuer_of(url),
            identity_provider=McpIdentityProvider(
                token_endpoint=context["idp_token_endpoint"],
                client_id=context["idp_client_id"],
                id_token=context["idp_id_token"],
            ),
        )
    return McpOAuthConfig(client_metadata_url=CIMD_URL)


async def person(question: Question) -> Approval:
    """The user at the keyboard: accepts a server's form as shown (its defaults), and the rest."""
    if isinstance(question, Elicitation) and question.schema is not None:
        return Approval.reply({})
    return Approval.allow_once()


def arguments(schema: Any) -> dict[str, Any]:
    """Values for a tool's required arguments, by type (the scenarios' tools take numbers)."""
    samples: dict[str, Any] = {"number": 2, "integer": 3, "string": "x", "boolean": True}
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = schema.get("required", []) if isinstance(schema, dict) else []
    return {name: samples.get(properties.get(name, {}).get("type"), "x") for name in required}


async def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    config = McpServerConfig(
        name="conformance", url=url, oauth=await oauth_for(scenario, context, url)
    )
    root = Path.cwd()
    ok = True
    with signing_in(browser, timeout=WAIT):
        async with McpTools([config], root=root, startup_timeout=WAIT, token_budget=None) as mcp:
            for name, reason in mcp.failures.items():
                print(f"server {name} failed: {reason}")
                ok = False
            rt = Runtime(mcp.registry(), root=root, mode="bypass", approver=person)
            for t in mcp.tools:
                result = await rt.call(t.name, arguments(t.parameters))
                print(f"{t.name}: ok={result.ok} {result.content}")
                ok = ok and result.ok
            await rt.aclose()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
