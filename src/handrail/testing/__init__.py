"""Fakes for testing agents: a scripted model server that speaks the providers' real formats.

`ModelServer` is a real HTTP server on 127.0.0.1 (stdlib only, in a daemon thread) that
answers OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini requests
from one script, streamed or whole, and records every request. Async tests in the same
process and subprocesses (a CLI under test) reach it alike.

```python
import httpx
from handrail.testing import Fault, ModelServer, Reply, ToolUse

script = [
    Reply(text="Let me look.", tool_calls=[ToolUse("read_file", {"file_path": "a.py"})]),
    Fault(status=429, retry_after=0.2),  # the next request gets a 429 + Retry-After
    Reply(text="Done."),
    lambda req: Reply(text=f"you sent {len(req.body['messages'])} messages"),
]
with ModelServer(script) as server:
    r = httpx.post(
        server.base_url("openai_chat") + "/chat/completions",
        json={"model": "gpt-4.1", "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "read_file"
    assert server.problems == []
```

Invariants: each script item answers exactly one request, whatever its provider; a request
that a real provider would refuse (a tool call without its result, a result for no call, no
`model`, Anthropic without `max_tokens`, a tool result whose blocks or media types the
provider does not take, base64 that does not decode) gets that provider's 400 and a sentence in
`problems`, and consumes nothing; so does one without the `require_key` credential (with the
provider's authentication error). `close()` returns within about a second, whatever is being
streamed. `python -m handrail.testing --script FILE` serves a JSON script (`load_script`)
from the command line.
"""

from __future__ import annotations

from ._script import Fault as Fault
from ._script import RecordedRequest as RecordedRequest
from ._script import Reply as Reply
from ._script import ScriptItem as ScriptItem
from ._script import ToolUse as ToolUse
from ._script import load_script as load_script
from ._server import ModelServer as ModelServer

__all__ = [
    "Fault",
    "ModelServer",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ToolUse",
    "load_script",
]


def _publish() -> None:
    # Tracebacks and reprs name the public path (`handrail.testing.Reply`).
    for name in __all__:
        obj = globals()[name]
        if getattr(obj, "__module__", "").startswith("handrail.testing."):
            try:
                obj.__module__ = __name__
            except (AttributeError, TypeError):
                pass


_publish()
