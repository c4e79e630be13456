"""An MCP server (stdio, raw JSON-RPC) behind a served call, asking whoever answers.

`python hostile_passthrough_server.py` speaks JSON-RPC itself, each message in its own task,
so a call can wait on the client while another call runs. Tools:

- hold(marker, seconds): writes the file `marker` once it runs, then takes `seconds`: a test
  knows for sure that this call is running on the server before it does anything else;
- ask(method, params): sends the request `method` with `params` to its client while the call
  runs, and returns the answer (`result` or `error`, as JSON text; no answer within 20 s:
  `{"error": "no answer"}`).

It never reads the calls' identity: which call a request of its own belongs to is for the
client to guess, which is what the tests look at.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

ANY: dict[str, Any] = {"type": "object"}
TOOLS = [
    {"name": "hold", "description": "Hold a while.", "inputSchema": ANY},
    {"name": "ask", "description": "Ask the client something.", "inputSchema": ANY},
]


class Server:
    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.running: set[asyncio.Task[Any]] = set()

    def write(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        rid = f"s{next(self.ids)}"
        future = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        self.write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        try:
            return await asyncio.wait_for(future, 20)
        except TimeoutError:
            return {"error": "no answer"}
        finally:
            self.pending.pop(rid, None)

    async def handle(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            future = self.pending.get(str(message.get("id")))
            if future is not None and not future.done():
                future.set_result({k: message[k] for k in ("result", "error") if k in message})
            return
        if "id" not in message:
            return
        result = await self.answer(message["method"], message.get("params") or {})
        self.write({"jsonrpc": "2.0", "id": message["id"], **result})

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return {
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile-passthrough", "version": "1"},
                }
            }
        if method == "ping":
            return {"result": {}}
        if method == "tools/list":
            return {"result": {"tools": TOOLS}}
        if method == "tools/call":
            args: dict[str, Any] = params.get("arguments") or {}
            if params.get("name") == "hold":
                Path(str(args["marker"])).write_text("running\n")
                await asyncio.sleep(float(args.get("seconds", 5)))
                return {"result": _text("held")}
            if params.get("name") == "ask":
                answer = await self.request(str(args["method"]), args.get("params"))
                return {"result": _text(json.dumps(answer))}
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def _text(body: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": body}], "isError": False}


async def main() -> None:
    server = Server()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if line.strip():
            server.spawn(server.handle(json.loads(line)))


if __name__ == "__main__":
    asyncio.run(main())
