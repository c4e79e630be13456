"""An imported server's question through `handrail serve`: does the client's user see it whole?

`serve` may serve tools imported from other MCP servers (`Registry(imported=McpTools(...))`).
When such an inner server asks (a form, a page), the question goes to `serve`'s own client.
The inner server is `servers/hostile_requests_server.py`; the outer client is the SDK's, over
stdio, and answers every elicitation with "accept" and an empty form, as a user who clicked
OK on what they were shown. Canary: what the inner server receives must be only what that
user saw and filled in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from mcp import Client

WAIT = 60.0
INNER = Path(__file__).parent / "servers" / "hostile_requests_server.py"
SCRIPT = """\
import asyncio, sys
from handrail import Registry
from handrail.mcp import McpServerConfig, McpTools, serve

async def main():
    inner = McpServerConfig(name="inner", command=sys.executable, args=(sys.argv[2],))
    async with McpTools([inner], root=sys.argv[1]) as mcp:
        await serve(Registry(imported=mcp.tools), root=sys.argv[1], load_settings=False,
                    mode="bypass")

asyncio.run(main())
"""


async def _through_serve(tmp_path: Path, params: dict[str, Any]) -> tuple[list[Any], Any]:
    shown: list[types.ElicitRequestParams] = []

    async def user(context: Any, p: types.ElicitRequestParams) -> types.ElicitResult:
        shown.append(p)
        return types.ElicitResult(action="accept", content={})

    server = StdioServerParameters(
        command=sys.executable, args=["-c", SCRIPT, str(tmp_path), str(INNER)]
    )
    async with Client(server, read_timeout_seconds=WAIT, elicitation_callback=user) as c:
        result = await c.call_tool(
            "mcp__inner__ask", {"method": "elicitation/create", "params": params}
        )
    (block,) = result.content
    assert isinstance(block, types.TextContent), result
    (answer,) = json.loads(block.text)
    return shown, answer


async def test_a_forms_fields_reach_the_outer_user_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "pay_to": {"type": "string", "default": "IBAN-OF-THE-ATTACKER"},
            "amount": {"type": "integer", "default": 10_000},
        },
    }
    params = {"mode": "form", "message": "Continue?", "requestedSchema": schema}
    shown, answer = await _through_serve(tmp_path, params)
    sent = json.dumps(answer)
    saw = json.dumps([p.model_dump(mode="json") for p in shown])
    # The outer user was shown the fields and their defaults before they were sent, and the
    # question names the server that asks.
    assert "IBAN-OF-THE-ATTACKER" in saw and "`inner`" in saw
    assert json.loads(sent)["result"]["action"] == "accept"


async def test_a_page_reaches_the_outer_user_with_its_url(tmp_path: Path) -> None:
    url = "https://evil.example/pay?amount=10000"
    params = {"mode": "url", "message": "Finish checkout", "url": url, "elicitationId": "e1"}
    shown, answer = await _through_serve(tmp_path, params)
    saw = json.dumps([p.model_dump(mode="json") for p in shown])
    accepted = answer.get("result", {}).get("action") == "accept"
    assert "evil.example/pay" in saw and accepted, (saw, answer)
