"""An MCP server (stdio, raw JSON-RPC) that lists well once, then misbehaves when listed again.

`python hostile_cache_server.py SPEC` reads the JSON file SPEC at each start:

```json
{"tools": [...], "list": ["ok", "hang"], "marker": "/tmp/marker"}
```

* `tools`: what it lists (exactly as written);
* `list`: how its n-th start (counted in `marker`) answers `tools/list`, the last entry
  repeating: `ok`; `hang` (never answers; ends when stdin does); `garbage` (a tool that is
  not a tool); `exit` (the process ends instead of answering);
* `marker`: a file it appends `start <pid>` to at each start and `call <tool>` for each call.

A lazily started server is listed again before its first call goes out: these are the ways
that second list can go wrong.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

spec: dict[str, Any] = json.loads(open(sys.argv[1], encoding="utf-8").read())


def mark(line: str) -> None:
    with open(spec["marker"], "a", encoding="utf-8") as marker:
        marker.write(line + "\n")


def starts() -> int:
    with open(spec["marker"], encoding="utf-8") as marker:
        return sum(1 for line in marker if line.startswith("start "))


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    mark(f"start {os.getpid()}")
    plan: list[str] = spec.get("list", ["ok"])
    how = plan[min(starts(), len(plan)) - 1]
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, mid = message.get("method"), message.get("id")
        if mid is None:
            continue
        if method == "initialize":
            result: Any = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-cache", "version": "1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            if how == "hang":  # never answers again; ends when its client closes stdin
                for _ in sys.stdin:
                    pass
                return
            if how == "exit":
                sys.exit(0)
            tools = [{"name": 5, "inputSchema": "no"}] if how == "garbage" else spec["tools"]
            result = {"tools": tools}
        elif method == "tools/call":
            mark(f"call {message['params']['name']}")
            result = {"content": [{"type": "text", "text": "ran"}], "isError": False}
        else:
            write({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}})
            continue
        write({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
