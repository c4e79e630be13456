"""The agent part of `handrail demo`: the real loop against the scripted model server.

No key and no network beyond loopback: `handrail.testing.ModelServer` plays a short session in
the Anthropic wire format, and the `Agent` runs it with the coding tools on a throwaway
workspace, tools starting while the "model" still streams.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from .._context import PermissionMode
from .._registry import Registry
from ..runtime import Runtime


def _script() -> list[Any]:
    from ..testing import Reply, ToolUse

    return [
        Reply(
            text="Let me find the greeting.",
            tool_calls=[
                ToolUse("grep_search", {"pattern": "Hello", "output_mode": "content"}),
                ToolUse("read_file", {"file_path": "src/greet.py"}),
            ],
            chunk_size=6,
            delay=0.01,
        ),
        Reply(
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {
                        "file_path": "src/greet.py",
                        "old_string": '"Hello, "',
                        "new_string": '"Hi, "',
                    },
                ),
                ToolUse(
                    "run_shell",
                    {"command": "python3 -c 'import src.greet as g; print(g.greet(\"Ada\"))'"},
                ),
            ],
            chunk_size=12,
            delay=0.01,
        ),
        Reply(
            text="The greeting now says Hi; running it prints `Hi, Ada`.", chunk_size=8, delay=0.01
        ),
    ]


async def demo_agent() -> None:
    """Scene 5: one `Agent.run` with every event printed as one line."""
    from ..agent import Agent, Event, ModelClient
    from ..builtin import coding_tools
    from ..testing import ModelServer

    print("\n5. The agent loop: a scripted model server (Anthropic wire format, on loopback)")
    print("   drives the real Agent with the coding tools; no API key needed.")
    with (
        tempfile.TemporaryDirectory(prefix="handrail-demo-agent-") as tmp,
        ModelServer(_script()) as server,
    ):
        root = Path(tmp)
        (root / "src").mkdir()
        (root / "src" / "__init__.py").write_text("")
        (root / "src" / "greet.py").write_text('def greet(name):\n    return "Hello, " + name\n')
        rt = Runtime(
            Registry(coding_tools(project_dir=root)),
            root=root,
            mode=PermissionMode.ACCEPT_EDITS,
            allow=["run_shell(python3:*)"],
        )
        client = ModelClient("anthropic", "scripted", base_url=server.base_url("anthropic"))
        agent = Agent(client, rt, save=False)
        t0 = time.perf_counter()

        def show(event: Event) -> None:
            data = event.to_json()
            at = f"   t={time.perf_counter() - t0:5.2f}s"
            if data["type"] == "tool_call_started":
                raw = data["call"]["arguments"]
                args = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
                args = args if len(args) < 70 else args[:67] + "..."
                print(f"{at} model wrote a call: {data['call']['name']} {args}")
            elif data["type"] == "tool_call_finished":
                r = data["result"]
                status = "ok" if r["ok"] else r.get("error", "failed")
                line = (r.get("summary") or r["content"]).splitlines()[0][:70]
                print(f"{at}   -> {status}: {line}")
            elif data["type"] == "turn_ended":
                print(f"{at} turn {data['turn']} ended ({data['stop']})")

        result = await agent.run("Change the greeting to Hi and check it.", on_event=show)
        await agent.aclose()
        await rt.aclose()
        print(f"   answer: {result.result}")
        print(
            f"   {result.num_turns} turns, {result.usage.requests} requests, "
            f"problems the server found in what it was sent: {len(server.problems)}"
        )
