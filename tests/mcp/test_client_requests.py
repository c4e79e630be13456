"""What MCP servers ask of handrail's client, against the official "everything" server.

server-everything lists tools that need the client's elicitation, sampling and roots only to a
client that declares them; these tests call them through `Runtime.call` (and, for sampling,
inside a real `Agent` run against the scripted model server) and read what the server says it
received.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from handrail import (
    Approval,
    Confirmation,
    Elicitation,
    Question,
    Registry,
    Runtime,
    SamplingRequest,
    SamplingResult,
)
from handrail.agent import Agent, ModelClient
from handrail.mcp import McpServerConfig, McpTools
from handrail.testing import ModelServer, Reply, ToolUse

from .conftest import Peers

PREFIX = "mcp__ev__"


@pytest.fixture
async def everything(mcp_peers: Peers, tmp_path: Path) -> AsyncIterator[McpTools]:
    node, *args = mcp_peers.everything
    config = McpServerConfig(name="ev", command=node, args=tuple(args))
    async with McpTools([config], root=tmp_path) as mcp:
        yield mcp


def answering(answer: Approval, seen: list[Question]) -> Any:
    async def approve(question: Question) -> Approval:
        seen.append(question)
        return answer

    return approve


def runtime(mcp: McpTools, root: Path, approver: Any = None, **options: Any) -> Runtime:
    return Runtime(
        Registry(imported=mcp.tools), root=root, approver=approver, mode="bypass", **options
    )


def text_of(result: Any) -> str:
    return str(result.content)


async def test_the_tools_that_need_the_clients_capabilities_are_listed(
    everything: McpTools,
) -> None:
    names = {t.name.removeprefix(PREFIX) for t in everything.tools}
    assert {
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
        "get-roots-list",
    } <= names


# -- elicitation -----------------------------------------------------------------------------


async def test_a_form_reaches_the_person_behind_the_call_and_defaults_fill_the_rest(
    everything: McpTools, tmp_path: Path
) -> None:
    seen: list[Question] = []
    rt = runtime(everything, tmp_path, answering(Approval.reply({"name": "Ada"}), seen))
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-elicitation-request", {}, call_id="c1")
    (asked,) = seen
    assert isinstance(asked, Elicitation)
    assert (asked.server, asked.tool_name, asked.call_id) == (
        "ev",
        PREFIX + "trigger-elicitation-request",
        "c1",
    )
    assert asked.url is None and asked.schema is not None
    assert asked.schema["required"] == ["name"]
    assert "`ev`" in asked.reason
    text = text_of(result)
    # What the person typed, and the schema's defaults for what they left out.
    assert '"name": "Ada"' in text
    assert '"integer": 42' in text
    assert '"firstLine": "It was a dark and stormy night."' in text
    assert '"action": "accept"' in text


async def test_a_no_is_sent_as_decline(everything: McpTools, tmp_path: Path) -> None:
    seen: list[Question] = []
    rt = runtime(everything, tmp_path, answering(Approval.deny("not now"), seen))
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-elicitation-request", {})
    assert len(seen) == 1
    assert "declined" in text_of(result).lower()
    assert "Ada" not in text_of(result)


async def test_values_that_do_not_fit_the_form_are_not_sent(
    everything: McpTools, tmp_path: Path
) -> None:
    seen: list[Question] = []
    # 500 is over the form's maximum of 100 for "integer".
    reply = Approval.reply({"name": "Ada", "integer": 500})
    rt = runtime(everything, tmp_path, answering(reply, seen))
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-elicitation-request", {})
    assert len(seen) == 1
    assert "500" not in text_of(result)
    assert "declined" in text_of(result).lower()


async def test_with_nobody_to_ask_a_form_is_declined(everything: McpTools, tmp_path: Path) -> None:
    rt = runtime(everything, tmp_path, approver=None)
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-elicitation-request", {})
    assert "declined" in text_of(result).lower()


async def test_url_mode_asks_to_open_a_page(everything: McpTools, tmp_path: Path) -> None:
    seen: list[Question] = []
    rt = runtime(everything, tmp_path, answering(Approval.allow_once(), seen))
    args = {"url": "https://example.com/sign-in", "message": "Sign in to continue"}
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-url-elicitation", args)
    (asked,) = seen
    assert isinstance(asked, Elicitation)
    assert asked.url == "https://example.com/sign-in" and asked.schema is None
    assert asked.message == "Sign in to continue" and asked.elicitation_id
    assert '"action": "accept"' in text_of(result)


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(document.cookie)", "file:///etc/passwd", "vscode://x/y", "data:,hi"],
)
async def test_url_mode_never_offers_what_is_not_a_web_page(
    everything: McpTools, tmp_path: Path, url: str
) -> None:
    seen: list[Question] = []
    rt = runtime(everything, tmp_path, answering(Approval.allow_once(), seen))
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-url-elicitation", {"url": url, "message": "m"})
    assert seen == []  # the person is not even shown it
    assert '"action": "decline"' in text_of(result)


# -- roots -----------------------------------------------------------------------------------


async def test_roots_are_the_sessions_and_follow_it(everything: McpTools, tmp_path: Path) -> None:
    first = tmp_path / "project-a"
    second = tmp_path / "project-b"
    first.mkdir()
    second.mkdir()
    async with asyncio.timeout(60):
        a = await runtime(everything, first).call(PREFIX + "get-roots-list", {})
        assert first.as_uri() in text_of(a)
        # Another session, other roots: the server is told they changed and reads them again
        # (in the background: MCP's notification is asynchronous). Without the notification
        # it would keep the first list for good.
        rt = runtime(everything, second)
        for _ in range(50):
            b = await rt.call(PREFIX + "get-roots-list", {})
            if second.as_uri() in text_of(b):
                break
            await asyncio.sleep(0.05)
    assert second.as_uri() in text_of(b)
    assert first.as_uri() not in text_of(b)


# -- sampling --------------------------------------------------------------------------------


async def test_without_a_model_sampling_is_refused_clearly(
    everything: McpTools, tmp_path: Path
) -> None:
    seen: list[Question] = []
    rt = runtime(everything, tmp_path, answering(Approval.allow_once(), seen))
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-sampling-request", {"prompt": "hi"})
    assert seen == []
    assert "no model to answer sampling requests" in text_of(result)


async def test_a_no_to_sampling_keeps_the_model_out(everything: McpTools, tmp_path: Path) -> None:
    asked: list[SamplingRequest] = []

    async def sampler(request: SamplingRequest) -> SamplingResult:
        asked.append(request)
        return SamplingResult(text="should not be sent", model="m")

    seen: list[Question] = []
    rt = runtime(everything, tmp_path, answering(Approval.deny("no"), seen))
    rt.session.sampler = sampler
    async with asyncio.timeout(60):
        result = await rt.call(PREFIX + "trigger-sampling-request", {"prompt": "hi"})
    (question,) = seen
    assert isinstance(question, Confirmation)
    assert (question.topic, question.subject) == ("sampling", "ev")
    assert asked == []
    assert "should not be sent" not in text_of(result)


async def test_allow_always_for_sampling_holds_for_the_session(
    everything: McpTools, tmp_path: Path
) -> None:
    async def sampler(request: SamplingRequest) -> SamplingResult:
        return SamplingResult(text=f"answer to {request.messages[-1].text}", model="m")

    seen: list[Question] = []
    rt = runtime(everything, tmp_path, answering(Approval.allow_always(), seen))
    rt.session.sampler = sampler
    async with asyncio.timeout(60):
        first = await rt.call(PREFIX + "trigger-sampling-request", {"prompt": "one"})
        second = await rt.call(PREFIX + "trigger-sampling-request", {"prompt": "two"})
    assert len(seen) == 1
    assert "answer to" in text_of(first) and "two" in text_of(second)


async def test_an_agent_answers_sampling_with_its_model_and_counts_it(
    everything: McpTools, tmp_path: Path
) -> None:
    tool = PREFIX + "trigger-sampling-request"
    script = [
        Reply(tool_calls=[ToolUse(tool, {"prompt": "name a colour", "maxTokens": 40})]),
        Reply(text="teal", input_tokens=7, output_tokens=3),  # the sampling request
        Reply(text="the server heard teal"),
    ]
    seen: list[Question] = []
    with ModelServer(script) as server:
        model = ModelClient(
            "openai_chat", "test-model", base_url=server.base_url("openai_chat"), max_retries=0
        )
        rt = runtime(everything, tmp_path)
        agent = Agent(
            model, rt, agents=False, save=False, approver=answering(Approval.allow_once(), seen)
        )
        try:
            async with asyncio.timeout(60):
                result = await agent.run("ask the server to sample")
        finally:
            await model.aclose()
        requests = server.requests
    assert result.subtype == "success"
    sampling = requests[1].body
    assert sampling["max_tokens"] == 40 or sampling.get("max_completion_tokens") == 40
    assert sampling["messages"][-1]["content"].endswith("name a colour")
    assert "tools" not in sampling
    (question,) = [q for q in seen if isinstance(q, Confirmation)]
    assert question.subject == "ev"
    # Three requests' tokens: the loop's two and the server's one.
    assert result.usage.input_tokens == 10 + 7 + 10
    assert result.usage.output_tokens == 5 + 3 + 5


async def test_with_nobody_to_ask_the_decline_is_logged_naming_the_server(
    everything: McpTools, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A framework integration's runtime has no live approver: the person never sees the
    # form, and the log says which server asked and why it was declined.
    rt = runtime(everything, tmp_path, approver=None)
    with caplog.at_level("WARNING", logger="handrail.mcp"):
        async with asyncio.timeout(60):
            await rt.call(PREFIX + "trigger-elicitation-request", {})
    (line,) = [r.getMessage() for r in caplog.records if "nobody could answer" in r.getMessage()]
    assert "'ev'" in line and "trigger-elicitation-request" in line
