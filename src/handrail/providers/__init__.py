"""Provider wire formats: tools out, tool calls in, results back; pure functions over JSON.

No network and no SDK here: responses and stream events go in as plain dicts (raw JSON, or an
SDK object's `.model_dump()`), requests' `tools` and result messages come out as dicts.

For each provider in `PROVIDERS` (openai_chat, openai_responses, anthropic, gemini):

- the request's `tools`: `openai_chat_tools`, `openai_responses_tools`, `anthropic_tools`,
  `gemini_tools`;
- the calls of a whole response: `parse_openai_chat`, `parse_openai_responses`,
  `parse_anthropic`, `parse_gemini`;
- the calls of a stream: `OpenAIChatStream`, `OpenAIResponsesStream`, `AnthropicStream`,
  `GeminiStream` (each a `StreamParser`);
- the results to send back: `openai_chat_results`, `openai_responses_results`,
  `anthropic_results`, `gemini_results`;

or, by provider name: `tools_payload`, `parse_response`, `stream_parser`, `result_messages`.

Invariants: tools are rendered in the order given (pass `Runtime.tools(provider=...)`, the
registry's stable order); a tool name a provider refuses, or a schema no provider could take,
raises `ConfigurationError` at render time, never a 400 later. Schemas are transformed per
provider (OpenAI strict mode, Gemini's OpenAPI subset, an object root for all); a constraint a
provider cannot express is left off its wire copy but still enforced, because the arguments are
validated against the tool's own schema. Every call gets exactly one result, in request order,
even a denied, cancelled or interrupted one (sent as "not run: approval has not been given"),
so no provider rejects the transcript. A stream parser's `feed(event)` returns each call the
moment its arguments are complete, ready for `StreamingExecutor.submit`.

A result with content parts (`ToolResult.parts`) sends what each format takes: Anthropic gets
text, image and document blocks, OpenAI Responses input_text / input_image / input_file items,
Gemini `inlineData` beside (or, with `media="inside"`, inside) its function responses; Chat
Completions tool messages take text only, so they get the text view (`images=True` adds the
images in a user message after them). Whatever a format cannot take, or an attachment over the
provider's documented size limits, goes as a one-line note (`[image: image/png, 73 bytes]`).
Text-only results are sent exactly as before.

For hosts that build OpenAI tool definitions themselves, `openai_strict_schema(tool)` gives a
tool's strict-mode parameters and `undo_strict_nulls(tool, arguments)` turns the model's
`null`s back into "not given". Pass the tools a request was rendered with to the OpenAI
parsers: strict mode makes the model send `null` for an optional argument, and the parsers
turn that back into "not given" (where the tool's own schema has no null). A call without a
result (the host lost it) is answered as "not run" when `calls=` is given; a `Batch` brings
its calls along. Provider names are also the names `Tool.providers` and
`Runtime.tools(provider=...)` use.

The loops below run inside an async function; `rt` is the runtime of the first one.

OpenAI Chat Completions (also DeepSeek, vLLM, llama.cpp, Ollama):

```python
from openai import AsyncOpenAI
from handrail import Registry, Runtime
from handrail.builtin import coding_tools
from handrail.providers import openai_chat_results, openai_chat_tools, parse_openai_chat

rt = Runtime(Registry(coding_tools()), root=".", mode="accept_edits")
client = AsyncOpenAI()
messages = [{"role": "user", "content": "Add a test for slugify() and run it."}]
while True:
    tools = rt.tools(provider="openai_chat")
    completion = await client.chat.completions.create(
        model="gpt-4.1", messages=messages, tools=openai_chat_tools(tools)
    )
    message = completion.choices[0].message.model_dump(exclude_none=True)
    messages.append(message)
    calls = parse_openai_chat(message, tools=tools)  # tools: strict-mode nulls -> "not given"
    if not calls:
        break
    batch = await rt.call_many(calls)
    messages += openai_chat_results(batch, locale=rt.locale)
```

OpenAI Responses:

```python
from handrail.providers import (
    openai_responses_results, openai_responses_tools, parse_openai_responses,
)

items = [{"role": "user", "content": "Add a test for slugify() and run it."}]
while True:
    tools = rt.tools(provider="openai_responses")
    response = await client.responses.create(
        model="gpt-4.1", input=items, tools=openai_responses_tools(tools)
    )
    output = [item.model_dump(exclude_none=True) for item in response.output]
    items += output
    calls = parse_openai_responses(output, tools=tools)
    if not calls:
        break
    batch = await rt.call_many(calls)
    items += openai_responses_results(batch, locale=rt.locale)
```

Anthropic, streamed: each call starts as soon as its block is complete, while the model is
still writing the next one; calls that need the user's approval are asked about at the end.

```python
from anthropic import AsyncAnthropic
from handrail import Approval, ApprovalRequest
from handrail.providers import AnthropicStream, anthropic_results, anthropic_tools

async def ask_user(request: ApprovalRequest) -> Approval:
    answer = input(f"Allow {request.tool_name} ({request.reason})? [y/N] ")
    return Approval.allow_once() if answer == "y" else Approval.deny()

client = AsyncAnthropic()
messages = [{"role": "user", "content": "Add a test for slugify() and run it."}]
while True:
    parser = AnthropicStream()
    async with rt.stream() as ex:
        async with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=8000, messages=messages,
            tools=anthropic_tools(rt.tools(provider="anthropic")),
        ) as stream:
            async for event in stream:
                for call in parser.feed(event.model_dump()):
                    ex.submit(call)  # starts now (in parallel where safe)
            message = await stream.get_final_message()
        for call in parser.finish():
            ex.submit(call)
        ex.close()
        async for item in ex:  # ProgressEvents at once, ToolResults in request order
            pass
    content = message.model_dump(exclude_none=True)["content"]
    messages.append({"role": "assistant", "content": content})
    if not parser.calls:
        break
    batch = ex.batch
    if batch.interrupted:  # some calls ask the user: answer them, then carry on
        answers = {r.call_id: await ask_user(r.approval) for r in batch.interrupted}
        batch = await rt.resume(batch, answers)
    messages.append(anthropic_results(batch, locale=rt.locale))
```

Gemini, over plain HTTP (a `functionCall` part arrives whole; its thought signature stays in
the content you send back):

```python
import os
import httpx
from handrail.providers import gemini_results, gemini_tools, parse_gemini

key = os.environ["GEMINI_API_KEY"]

url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
contents = [{"role": "user", "parts": [{"text": "Add a test for slugify() and run it."}]}]
async with httpx.AsyncClient(headers={"x-goog-api-key": key}, timeout=120) as http:
    while True:
        body = {"contents": contents, "tools": gemini_tools(rt.tools(provider="gemini"))}
        data = (await http.post(url, json=body)).raise_for_status().json()
        contents.append(data["candidates"][0]["content"])
        calls = parse_gemini(data)
        if not calls:
            break
        batch = await rt.call_many(calls)
        contents.append(gemini_results(batch, locale=rt.locale))
```
"""

from __future__ import annotations

from ._anthropic import AnthropicStream as AnthropicStream
from ._anthropic import anthropic_results as anthropic_results
from ._anthropic import anthropic_tools as anthropic_tools
from ._anthropic import parse_anthropic as parse_anthropic
from ._common import PROVIDERS as PROVIDERS
from ._common import StreamParser as StreamParser
from ._common import openai_strict_schema as openai_strict_schema
from ._common import undo_strict_nulls as undo_strict_nulls
from ._dispatch import parse_response as parse_response
from ._dispatch import result_messages as result_messages
from ._dispatch import stream_parser as stream_parser
from ._dispatch import tools_payload as tools_payload
from ._gemini import GeminiStream as GeminiStream
from ._gemini import gemini_results as gemini_results
from ._gemini import gemini_tools as gemini_tools
from ._gemini import parse_gemini as parse_gemini
from ._openai_chat import OpenAIChatStream as OpenAIChatStream
from ._openai_chat import openai_chat_results as openai_chat_results
from ._openai_chat import openai_chat_tools as openai_chat_tools
from ._openai_chat import parse_openai_chat as parse_openai_chat
from ._openai_responses import OpenAIResponsesStream as OpenAIResponsesStream
from ._openai_responses import openai_responses_results as openai_responses_results
from ._openai_responses import openai_responses_tools as openai_responses_tools
from ._openai_responses import parse_openai_responses as parse_openai_responses

__all__ = [
    "PROVIDERS",
    "AnthropicStream",
    "GeminiStream",
    "OpenAIChatStream",
    "OpenAIResponsesStream",
    "StreamParser",
    "anthropic_results",
    "anthropic_tools",
    "gemini_results",
    "gemini_tools",
    "openai_chat_results",
    "openai_chat_tools",
    "openai_responses_results",
    "openai_responses_tools",
    "openai_strict_schema",
    "parse_anthropic",
    "parse_gemini",
    "parse_openai_chat",
    "parse_openai_responses",
    "parse_response",
    "result_messages",
    "stream_parser",
    "tools_payload",
    "undo_strict_nulls",
]


def _publish() -> None:
    # Tracebacks and reprs name the public path (`handrail.providers.AnthropicStream`).
    for name in __all__:
        obj = globals()[name]
        if getattr(obj, "__module__", "").startswith("handrail.providers."):
            try:
                obj.__module__ = __name__
            except (AttributeError, TypeError):
                pass


_publish()
