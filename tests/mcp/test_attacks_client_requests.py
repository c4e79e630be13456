"""Attacks by an MCP server on what it may ask of handrail: elicitation, sampling, roots.

The server is `servers/hostile_requests_server.py`, a real process over stdio that sends any
request with any parameters, at any moment (its `ask` tool while a call runs, its `later` tool
when none does). Canaries: a loopback HTTP listener that must get no request, a marker in a
sampling request that must not reach the main conversation, the model's request count against
the budget, and the answers the server records.
"""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail import (
    Approval,
    ApprovalRequest,
    Confirmation,
    Elicitation,
    ErrorCode,
    Question,
    Registry,
    Runtime,
    SamplingRequest,
    SamplingResult,
)
from handrail.agent import Agent, ModelClient
from handrail.mcp import McpServerConfig, McpTools
from handrail.testing import ModelServer, Reply, ToolUse

SERVER = Path(__file__).parent / "servers" / "hostile_requests_server.py"
WAIT = 60.0  # an upper bound for anything a test waits on, never a speed threshold


def hostile(name: str = "h", **options: Any) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(str(SERVER),), **options)


@pytest.fixture
async def mcp(tmp_path: Path) -> AsyncIterator[McpTools]:
    async with McpTools([hostile()], root=tmp_path) as tools:
        assert tools.failures == {}
        yield tools


class Canary:
    """A loopback HTTP listener that records every request it gets."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                body = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def canary() -> Iterator[Canary]:
    c = Canary()
    c.thread.start()
    try:
        yield c
    finally:
        c.httpd.shutdown()
        c.httpd.server_close()
        c.thread.join(5)


def recording(answer: Approval | None, seen: list[Question]) -> Any:
    """Records what a server's requests put to the person (a call's own approval passes)."""

    async def approve(question: Question) -> Approval:
        if isinstance(question, ApprovalRequest):
            return Approval.allow_once()
        seen.append(question)
        if answer is None:
            raise AssertionError("nobody should have been asked")
        return answer

    return approve


async def ask(rt: Runtime, method: str, params: Any, count: int = 1) -> list[dict[str, Any]]:
    """Have the server send `count` requests while its call runs; the client's answers."""
    args = {"method": method, "params": params, "count": count}
    async with asyncio.timeout(WAIT):
        result = await rt.call("mcp__h__ask", args)
    assert result.ok, result.content
    return json.loads(result.content)


def form(schema: dict[str, Any], message: str = "Your name, please") -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": schema}


# -- elicitation ---------------------------------------------------------------------------------


async def test_a_forms_schema_never_makes_handrail_fetch_a_url(
    mcp: McpTools, tmp_path: Path, canary: Canary
) -> None:
    # The form looks like any other (a text field the terminal asks); the references hide in
    # keywords the form does not draw.
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "$ref": f"{canary.url}/property"}},
        "required": ["name"],
        "allOf": [{"$ref": f"{canary.url}/top-level"}],
    }
    seen: list[Question] = []
    rt = Runtime(
        Registry(imported=mcp.tools),
        root=tmp_path,
        approver=recording(Approval.reply({"name": "Ada"}), seen),
    )
    await ask(rt, "elicitation/create", form(schema))
    await rt.aclose()
    assert len(seen) == 1
    assert canary.hits == [], f"handrail fetched {canary.hits} for the server"


async def test_a_forms_schema_never_reads_a_local_file(mcp: McpTools, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"const": "Ada"}))  # stands for any JSON file of the user's
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "$ref": secret.as_uri()}},
    }
    outcomes: dict[str, str] = {}
    for typed in ("Ada", "Bob"):
        rt = Runtime(
            Registry(imported=mcp.tools),
            root=tmp_path,
            approver=recording(Approval.reply({"name": typed}), []),
        )
        (answer,) = await ask(rt, "elicitation/create", form(schema))
        await rt.aclose()
        outcomes[typed] = answer["result"]["action"]
    # If the file's content decides the outcome, the server has an oracle on the user's files.
    assert outcomes["Ada"] == outcomes["Bob"], outcomes


async def test_a_question_asked_while_none_of_its_calls_runs_is_declined_unasked(
    tmp_path: Path,
) -> None:
    # Server `h` asks (a form, a page, the model) after its own call ended, while server
    # `other`'s call runs: nobody is asked, nothing is sampled.
    sampled: list[SamplingRequest] = []

    async def sampler(request: SamplingRequest) -> SamplingResult:
        sampled.append(request)
        return SamplingResult(text="SAMPLED", model="m")

    seen: list[Question] = []
    schema = {"type": "object", "properties": {"pin": {"type": "string", "default": "1234"}}}
    page = {"mode": "url", "message": "pay", "url": "https://example.com/pay", "elicitationId": "x"}
    sampling = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
    }
    async with McpTools([hostile("h"), hostile("other")], root=tmp_path) as tools:
        rt = Runtime(
            Registry(imported=tools.tools),
            root=tmp_path,
            approver=recording(Approval.reply({"pin": "0000"}), seen),
            mode="bypass",
        )
        rt.session.sampler = sampler
        async with asyncio.timeout(WAIT):
            for i, (method, params) in enumerate(
                [
                    ("elicitation/create", form(schema)),
                    ("elicitation/create", page),
                    ("sampling/createMessage", sampling),
                ]
            ):
                later = {"method": method, "params": params, "delay": 0.2 + 0.1 * i}
                assert (await rt.call("mcp__h__later", later)).ok
            slow = await rt.call("mcp__other__slow", {"seconds": 1.0})
            journal = json.loads((await rt.call("mcp__h__journal", {})).content)
        await rt.aclose()
    assert slow.ok
    assert seen == [] and sampled == []
    answers = journal["later"]
    assert [a.get("result", {}).get("action") for a in answers[:2]] == ["decline", "decline"]
    assert "error" in answers[2] and "SAMPLED" not in json.dumps(answers)


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(document.cookie)//https://example.com",
        "JavaScript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "ms-settings:privacy",
        "//evil.example/no-scheme",
    ],
)
async def test_url_mode_never_asks_about_what_is_not_a_web_page(
    mcp: McpTools, tmp_path: Path, url: str
) -> None:
    seen: list[Question] = []
    rt = Runtime(
        Registry(imported=mcp.tools),
        root=tmp_path,
        approver=recording(Approval.allow_once(), seen),
    )
    params = {"mode": "url", "message": "open", "url": url, "elicitationId": "e1"}
    (answer,) = await ask(rt, "elicitation/create", params)
    await rt.aclose()
    assert seen == []
    assert answer.get("result", {}).get("action") != "accept"


@pytest.mark.parametrize("mode", ["bypass", "accept_edits", "default"])
async def test_no_mode_answers_a_form_for_the_person(
    mcp: McpTools, tmp_path: Path, mode: str
) -> None:
    # No approver (a headless run), whatever the mode, the call itself allowed by a rule: the
    # server's defaults are not sent back as if someone had accepted them.
    rt = Runtime(Registry(imported=mcp.tools), root=tmp_path, mode=mode, allow=["mcp__h__ask"])
    schema = {"type": "object", "properties": {"ok": {"type": "boolean", "default": True}}}
    (answer,) = await ask(rt, "elicitation/create", form(schema))
    await rt.aclose()
    assert answer["result"] == {"action": "decline"}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": [1, "a", {"b": 2}]},
        {"type": "object", "properties": "abc"},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"},
        {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5000)}},
        {"type": "object", "properties": {}, "deep": 150},
        {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
    ],
    ids=["list-properties", "string-properties", "string-required", "5000-fields", "deep", "loop"],
)
async def test_a_malformed_or_huge_form_ends_as_an_answer_never_a_crash(
    tmp_path: Path, schema: dict[str, Any]
) -> None:
    # An approver that says yes without looking (as `serve` passes its client's accept on),
    # behind an agent's observer that records the question, and every event serialised as
    # `handrail run --output-format stream-json` does: nothing may raise out of the runtime.
    finished: list[Any] = []

    def on_event(event: Any) -> None:
        json.dumps(event.to_json())
        if type(event).__name__ == "ToolCallFinished":
            finished.append(event.result)

    schema = dict(schema)
    args: dict[str, Any] = {"method": "elicitation/create", "params": form(schema)}
    if "deep" in schema:  # the server builds it: the model's arguments could not carry it
        args["deep"] = schema.pop("deep")
    call = ToolUse("mcp__h__ask", args, id="c1")
    with ModelServer([Reply(tool_calls=[call]), Reply(text="done")]) as server:
        model = ModelClient(
            "openai_chat", "m", base_url=server.base_url("openai_chat"), max_retries=0
        )
        # A request nested too deep for the SDK's JSON parser is dropped unanswered: the server
        # then waits on itself, and the call ends at its time limit (kept short here).
        async with McpTools([hostile(timeout=4)], root=tmp_path) as tools:
            rt = Runtime(Registry(imported=tools.tools), root=tmp_path, mode="bypass")
            agent = Agent(
                model, rt, agents=False, save=False, approver=recording(Approval.allow_once(), [])
            )
            try:
                async with asyncio.timeout(WAIT):
                    result = await agent.run("go", on_event=on_event)
            finally:
                await model.aclose()
                await rt.aclose()
    assert result.subtype == "success", result.error
    (tool_result,) = finished
    if tool_result.error == ErrorCode.TIMEOUT:
        return
    assert tool_result.ok, tool_result.content
    # The server got an answer (a refusal or an error), never a malformed acceptance.
    (answer,) = json.loads(tool_result.content)
    if answer.get("result", {}).get("action") == "accept":
        assert isinstance(answer["result"].get("content", {}), dict)


# -- sampling -------------------------------------------------------------------------------------

MARKER = "SERVER-SIDE-SAMPLING-7c1d"  # hostile_requests_server.MARKER


def sample(count: int = 1, max_tokens: int = 50, **more: Any) -> ToolUse:
    """The model's call that makes the server send `count` sampling requests at once."""
    return ToolUse("mcp__h__ask", {"sample": max_tokens, "count": count}, **more)


async def test_a_burst_of_sampling_requests_cannot_overrun_the_budget(tmp_path: Path) -> None:
    burst = 6
    script = [
        Reply(tool_calls=[sample(burst)], input_tokens=10, output_tokens=5),
        *[Reply(text="sampled", input_tokens=10, output_tokens=5) for _ in range(burst)],
        Reply(text="done"),
    ]
    with ModelServer(script) as server:
        model = ModelClient(
            "openai_chat", "m", base_url=server.base_url("openai_chat"), max_retries=0
        )
        async with McpTools([hostile()], root=tmp_path) as tools:
            rt = Runtime(Registry(imported=tools.tools), root=tmp_path, mode="bypass")
            agent = Agent(
                model,
                rt,
                agents=False,
                save=False,
                max_tokens=40,  # the first turn spends 15; each sampling request 15 more
                approver=recording(Approval.allow_always(), []),
            )
            try:
                async with asyncio.timeout(WAIT):
                    await agent.run("go")
            finally:
                await model.aclose()
                await rt.aclose()
        sampled = [r for r in server.requests if MARKER in json.dumps(r.body)]
    # Sequentially, requests stop once 40 tokens are spent: 15 + 15 + 15 (the one that passes
    # it), so two sampling requests; never all six.
    assert len(sampled) <= 2, f"{len(sampled)} sampling requests reached the model"


async def test_sampling_stays_out_of_the_conversation_and_always_is_per_server(
    tmp_path: Path,
) -> None:
    script = [
        Reply(tool_calls=[sample(id="c1")]),
        Reply(text="sampled for h"),
        Reply(tool_calls=[ToolUse("mcp__other__ask", {"sample": 50}, id="c2")]),
        Reply(text="sampled for other"),
        Reply(text="done"),
    ]
    seen: list[Question] = []

    async def approve(question: Question) -> Approval:
        seen.append(question)
        if isinstance(question, Confirmation) and question.subject == "h":
            return Approval.allow_always()
        return Approval.deny("not this one")

    with ModelServer(script) as server:
        model = ModelClient(
            "openai_chat", "m", base_url=server.base_url("openai_chat"), max_retries=0
        )
        async with McpTools([hostile("h"), hostile("other")], root=tmp_path) as tools:
            rt = Runtime(Registry(imported=tools.tools), root=tmp_path, mode="bypass")
            agent = Agent(model, rt, agents=False, save=False, approver=approve)
            try:
                async with asyncio.timeout(WAIT):
                    result = await agent.run("go")
            finally:
                await model.aclose()
                await rt.aclose()
        bodies = [json.dumps(r.body) for r in server.requests]
    assert result.subtype == "success"
    # "Always" for `h` did not cover `other`: it was asked, said no, and its text never went.
    subjects = [q.subject for q in seen if isinstance(q, Confirmation)]
    assert subjects == ["h", "other"]
    assert sum(MARKER in b for b in bodies) == 1  # h's one sampling request
    # The main conversation's requests carry neither the server's messages nor its system
    # prompt: only the server's tool result (its answers, not its request) is there.
    main = [b for b in bodies if MARKER not in b]
    assert len(main) == 3
    assert all("delete the user" not in b for b in main)


# -- roots -----------------------------------------------------------------------------------------


async def test_roots_name_only_the_sessions_roots(mcp: McpTools, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    rt = Runtime(Registry(imported=mcp.tools), root=root, mode="bypass")
    (answer,) = await ask(rt, "roots/list", {})
    await rt.aclose()
    uris = [r["uri"] for r in answer["result"]["roots"]]
    assert uris == [root.as_uri()]
    assert str(Path.home()) not in json.dumps(answer) or str(root).startswith(str(Path.home()))


# -- answers nobody gave ------------------------------------------------------------------------------


async def test_blanket_yes_settings_never_answer_a_servers_question(tmp_path: Path) -> None:
    # `handrail call --yes` off a terminal, and `serve --ask-fallback allow` (stateless), allow
    # calls; neither may fill in a server's form, agree to its page or let it use the model.
    from rich.console import Console

    from handrail._cli._call import choose_approver
    from handrail.mcp._server_stateless import StatelessAsker

    questions = [
        Elicitation(reason="r", server="h", message="m", schema={"type": "object"}),
        Elicitation(reason="r", server="h", message="m", url="https://example.com/pay"),
        Confirmation(reason="r", topic="sampling", subject="h", always="always"),
    ]
    approvers = [
        choose_approver(True, False, tmp_path, Console(file=io.StringIO())),
        StatelessAsker(call_id="c", locale="en", can_ask=True, fallback="allow", answer=None),
    ]
    for approve in approvers:
        for question in questions:
            assert (await approve(question)).kind == "deny", (approve, question)
