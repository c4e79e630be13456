"""The agent layer's model-facing text, as the model reads it (reviewed as snapshots)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inline_snapshot import snapshot

from handrail import Registry, Runtime
from handrail.agent import Agent, AgentTool, ModelClient
from handrail.agent._text import CATALOG, say
from handrail.providers import openai_chat_tools


def test_every_sentence_exists_in_every_language() -> None:
    assert set(CATALOG["zh"]) == set(CATALOG["en"])


def test_the_sentences_the_model_reads() -> None:
    assert say(
        "en", "headless_denied", reason="`run_shell` can change things", rule="`run_shell(rm:*)`"
    ) == snapshot(
        "nobody can approve calls in this run (`run_shell` can change things); the user can allow such calls with the allow rule `run_shell(rm:*)` or a permission mode"
    )
    assert say("en", "repeated", name="grep_search", count=3) == snapshot(
        "Refused: this is the same `grep_search` call with the same arguments 3 times in a row, and it will not give a different result. Do not repeat it: use what the earlier results said, change the arguments, try another approach, or finish and tell the user what blocks you."
    )
    assert say("en", "interrupted") == snapshot(
        "The user interrupted this call on purpose; it was stopped (or never started). Do not retry it: stop and wait for the user's instructions."
    )
    assert say("en", "pruned", chars=4000, name="read_file") == snapshot(
        "[Output removed to save context (4000 characters of `read_file` output). Call the tool again if you need it.]"
    )
    assert say("en", "summary", summary="- did X") == snapshot(
        """\
This conversation was compacted to fit the context window: older messages were replaced by the summary below. Files you read before are not in your context any more: read them again before editing them.

<summary>
- did X
</summary>\
"""
    )
    assert say("en", "nudge_answer") == snapshot(
        "Stop here and answer now, without calling tools: reply with your final answer as plain text (what you found or did, and what is left undone)."
    )
    assert say("en", "empty_answer") == snapshot(
        "Your last answer was empty (it was cut short or filtered). Answer again, briefly; if a tool call failed to come through, make it again."
    )
    assert say("zh", "interrupted") == snapshot(
        "用户有意中断了这个调用;它已被停止(或从未开始)。不要重试:停下来等待用户的指示。"
    )


async def test_the_agent_tool_as_the_model_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    rt = Runtime(Registry([]), root=tmp_path)
    client = ModelClient("openai_chat", "m", base_url="http://127.0.0.1:9/v1")
    Agent(client, rt, save=False)
    tool = rt.registry.get("agent")
    assert isinstance(tool, AgentTool)
    payload = openai_chat_tools([tool])[0]["function"]
    assert payload["description"] == snapshot("""\
Start a sub-agent for a self-contained task; it works with its own context and returns its final answer as this call's result.
Agent types (agent_type):
- explore: A read-only agent that finds and reads code and answers questions about it; it cannot change anything. Several can run at once.
- general: A general-purpose agent for a self-contained, multi-step task (research, a change, running checks); it has your tools except starting agents.\
""")
    assert json.dumps(payload["parameters"], indent=1) == snapshot("""\
{
 "additionalProperties": false,
 "description": "Arguments of the agent tool.",
 "properties": {
  "description": {
   "description": "A short (3-5 words) description of the task, shown to the user. (maxLength: 120; minLength: 1)",
   "type": "string"
  },
  "prompt": {
   "description": "The task for the sub-agent. It starts with no memory of this conversation, so include everything it needs: the goal, file paths, names, constraints, and what its answer should contain. (minLength: 1)",
   "type": "string"
  },
  "agent_type": {
   "description": "Which kind of agent to run (see the list). (default: \\"general\\")",
   "type": [
    "string",
    "null"
   ]
  }
 },
 "required": [
  "description",
  "prompt",
  "agent_type"
 ],
 "type": "object"
}\
""")
    await client.aclose()
