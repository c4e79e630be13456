"""The README's own Chat Completions loop, run against the scripted model server.

`chat_loop` is the README snippet (the lead keeps them the same): the assistant message that
carries `tool_calls` goes into the conversation before the tool messages that answer it. The
server refuses a request otherwise, as OpenAI does (a 400: "a tool result for unknown call").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from handrail import Registry, Runtime
from handrail.builtin import coding_tools
from handrail.providers import parse_response, result_messages, tools_payload
from handrail.testing import ModelServer, Reply, ToolUse


async def chat_loop(base_url: str, root: Path) -> tuple[str, list[dict[str, Any]]]:
    rt = Runtime(Registry(coding_tools(project_dir=root)), root=root)
    tools = rt.tools(provider="openai_chat")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What does README.md say?"}]
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        while True:
            request = {
                "model": "gpt-5",
                "messages": messages,
                "tools": tools_payload("openai_chat", tools),
            }
            response = (await http.post("/chat/completions", json=request)).json()
            message = response["choices"][0]["message"]
            messages.append(message)  # the assistant turn, with its tool_calls, first
            calls = parse_response("openai_chat", response, tools=tools)
            if not calls:
                break
            batch = await rt.call_many(calls)
            messages += result_messages("openai_chat", batch)  # then one result per call
    await rt.aclose()
    return message["content"], messages


async def test_the_readme_chat_loop_sends_what_a_provider_accepts(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Demo\nHello.\n")
    script = [
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "README.md"})]),
        Reply(text="It says hello."),
    ]
    with ModelServer(script) as server:
        answer, messages = await chat_loop(server.base_url("openai_chat"), tmp_path)
        assert server.problems == []
    assert answer == "It says hello."
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2]["content"] == "1\t# Demo\n2\tHello."
