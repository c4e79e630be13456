"""An MCP server that runs its tools as MCP tasks (protocol 2025-11-25), for the client tests.

Run `python tasks_server.py` (stdio). It speaks JSON-RPC itself: the SDK's server checks every
`tools/call` answer against `CallToolResult`, so it cannot answer one with a `CreateTaskResult`.
Each request is handled in its own asyncio task, so `tasks/get` is answered while a
`tasks/result` waits for its task to end.

Tools (task support `required` unless said):
- work(seconds, steps=1, poll_ms): `steps` steps over `seconds`, status "step i of n";
  `poll_ms` is the task's pollInterval (absent: none suggested);
- stages(n): stage i is shown to exactly one `tasks/get`, the next poll sees stage i + 1; done
  after the poll that saw stage n (status messages arrive whatever the timing);
- fail(message, result=False): fails soon with `message` as its status message; `tasks/result`
  answers with an isError result (`result`) or a JSON-RPC error;
- drop: the server cancels it soon, saying why;
- hang: works until cancelled; ask: goes `input_required` and ends only once a `tasks/result`
  is waiting (as a server that delivers its questions through that request would);
- quick(text) and quick_direct(text): the same body (echo `text`), as a task, and with task
  support `optional`, which a direct call answers directly;
- journal (task support absent): this server's record: every request with its method, its
  time on this server's monotonic clock, the tool, whether it asked for a task, and the id of
  the task it concerns.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

TERMINAL = ("completed", "failed", "cancelled")
_REQUIRED = {"taskSupport": "required"}


def _tool(
    name: str, properties: dict[str, Any], execution: dict[str, str] | None
) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "description": f"The {name} test tool.",
        "inputSchema": {"type": "object", "properties": properties},
    }
    if execution is not None:
        tool["execution"] = execution
    return tool


TOOLS = [
    _tool(
        "work",
        {
            "seconds": {"type": "number", "minimum": 0},
            "steps": {"type": "integer", "minimum": 1},
            "poll_ms": {"type": "integer", "minimum": 0},
        },
        _REQUIRED,
    ),
    _tool("stages", {"n": {"type": "integer", "minimum": 1}}, _REQUIRED),
    _tool("fail", {"message": {"type": "string"}, "result": {"type": "boolean"}}, _REQUIRED),
    _tool("drop", {}, _REQUIRED),
    _tool("hang", {}, _REQUIRED),
    _tool("ask", {}, _REQUIRED),
    _tool("quick", {"text": {"type": "string"}}, _REQUIRED),
    _tool("quick_direct", {"text": {"type": "string"}}, {"taskSupport": "optional"}),
    _tool("journal", {}, None),
]


def now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Task:
    id: str
    tool: str
    args: dict[str, Any]
    poll_ms: int | None
    status: str = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    created: str = field(default_factory=now)
    updated: str = field(default_factory=now)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once a `tasks/result` waits on this task."""
    stage: int = 0

    def set(self, status: str, message: str | None = None) -> None:
        if self.status in TERMINAL:
            return
        self.status, self.message, self.updated = status, message, now()
        self.changed.set()
        self.changed = asyncio.Event()

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": 60_000,
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        if self.poll_ms is not None:
            out["pollInterval"] = self.poll_ms
        return out


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class TasksServer:
    def __init__(self) -> None:
        self.tasks: dict[str, Task] = {}
        self.journal: list[dict[str, Any]] = []
        self.ids = itertools.count(1)
        self.running: set[asyncio.Task[Any]] = set()

    def write(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    async def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params: dict[str, Any] = message.get("params") or {}
        if "id" not in message:  # a notification: only recorded
            self.record(method, params)
            return
        try:
            result = await self.answer(str(method), params)
            self.write({"jsonrpc": "2.0", "id": message["id"], "result": result})
        except RpcError as exc:
            error = {"code": exc.code, "message": exc.message}
            self.write({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def record(self, method: Any, params: dict[str, Any]) -> dict[str, Any]:
        entry = {
            "method": method,
            "t": time.monotonic(),
            "tool": params.get("name"),
            "task": "task" in params,
            "task_id": params.get("taskId"),
        }
        self.journal.append(entry)
        return entry

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        entry = {} if params.get("name") == "journal" else self.record(method, params)
        if method == "initialize":
            return {
                "protocolVersion": "2025-11-25",
                "capabilities": {
                    "tools": {},
                    "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}},
                },
                "serverInfo": {"name": "tasks-test", "version": "1"},
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": TOOLS}
        if method == "tools/call":
            return await self.call(params, entry)
        task = self.tasks.get(str(params.get("taskId")))
        if task is None:
            raise RpcError(-32602, f"Task not found: {params.get('taskId')}")
        if method == "tasks/get":
            return self.poll(task)
        if method == "tasks/result":
            return await self.result(task)
        if method == "tasks/cancel":
            if task.status in TERMINAL:
                raise RpcError(-32602, f"Cannot cancel task in terminal status: {task.status}")
            task.set("cancelled", "Cancelled at the client's request.")
            return task.wire()
        raise RpcError(-32601, f"Method not found: {method}")

    async def call(self, params: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        args: dict[str, Any] = params.get("arguments") or {}
        if name == "journal":
            return {"content": [{"type": "text", "text": json.dumps(self.journal)}]}
        if name == "quick_direct" and "task" not in params:
            return {"content": [{"type": "text", "text": str(args.get("text", ""))}]}
        if name not in {t["name"] for t in TOOLS}:
            raise RpcError(-32602, f"Unknown tool: {name}")
        if "task" not in params:
            raise RpcError(-32601, f"Tool {name} must be called as a task")
        poll_ms = args.get("poll_ms") if name == "work" else 50
        task = Task(id=f"task-{next(self.ids)}", tool=str(name), args=args, poll_ms=poll_ms)
        self.tasks[task.id] = task
        entry["task_id"] = task.id  # the call that created it belongs to its record too
        runner = asyncio.get_running_loop().create_task(self.run(task))
        self.running.add(runner)
        runner.add_done_callback(self.running.discard)
        return {"task": task.wire()}

    def poll(self, task: Task) -> dict[str, Any]:
        if task.tool == "stages" and task.status == "working":
            n = int(task.args.get("n", 1))
            if task.stage == n:
                task.result = text_result(f"all {n} stages done")
                task.set("completed")
            else:
                task.stage += 1
                task.set("working", f"stage {task.stage} of {n}")
        return task.wire()

    async def result(self, task: Task) -> dict[str, Any]:
        task.waiting.set()
        for _ in range(10_000):  # each round waits for one change: bounded by the task's end
            if task.status in TERMINAL:
                break
            await task.changed.wait()
        if task.error is not None:
            raise RpcError(task.error["code"], task.error["message"])
        if task.result is None:
            raise RpcError(-32603, f"Task {task.id} has no result ({task.status})")
        related = {"io.modelcontextprotocol/related-task": {"taskId": task.id}}
        return {**task.result, "_meta": related}

    async def run(self, task: Task) -> None:
        body = BODIES.get(task.tool)
        if body is not None:
            await body(task)


def text_result(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


async def work(task: Task) -> None:
    steps = int(task.args.get("steps", 1))
    for i in range(1, steps + 1):
        task.set("working", f"step {i} of {steps}")
        await asyncio.sleep(float(task.args.get("seconds", 0)) / steps)
    if task.status == "working":
        task.result = text_result(f"worked in {steps} steps")
        task.set("completed")


async def fail(task: Task) -> None:
    await asyncio.sleep(0.05)
    message = str(task.args.get("message", ""))
    if task.args.get("result"):
        task.result = text_result(f"the tool says: {message}", error=True)
    else:
        task.error = {"code": -32603, "message": f"Task {task.id} failed"}
    task.set("failed", message)


async def drop(task: Task) -> None:
    await asyncio.sleep(0.05)
    task.set("cancelled", "the server is shutting down")


async def hang(task: Task) -> None:
    task.set("working", "hanging on")


async def ask(task: Task) -> None:
    task.set("input_required", "Which one did you mean?")
    await task.waiting.wait()
    task.set("working", "got the answer")
    await asyncio.sleep(0.05)
    task.result = text_result("answered")
    task.set("completed")


async def quick(task: Task) -> None:
    task.result = text_result(str(task.args.get("text", "")))
    task.set("completed")


BODIES: dict[str, Callable[[Task], Awaitable[None]]] = {
    "work": work,
    "fail": fail,
    "drop": drop,
    "hang": hang,
    "ask": ask,
    "quick": quick,
    "quick_direct": quick,
}


async def main() -> None:
    server = TasksServer()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if not line.strip():
            continue
        handler = loop.create_task(server.handle(json.loads(line)))
        server.running.add(handler)
        handler.add_done_callback(server.running.discard)


if __name__ == "__main__":
    asyncio.run(main())
