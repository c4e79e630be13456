"""What every adapter shares: tool-name rules, one result per call, and the text of a result."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import (
    ApprovalRequest,
    ConfigurationError,
    ErrorCode,
    Interrupted,
    Tool,
    ToolCall,
    ToolResult,
)
from handrail.providers import PROVIDERS, openai_chat_results, tools_payload


def named(name: str) -> Tool:
    return Tool.from_json_schema(name, "A probe.", {"type": "object"}, lambda args: "ok")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_tools_with_one_name_are_refused(provider: str) -> None:
    with pytest.raises(ConfigurationError, match=f"two tools are named 'dup'; {provider}"):
        tools_payload(provider, [named("dup"), named("dup")])


@pytest.mark.parametrize(
    ("name", "refused_by"),
    [
        ("read_file", []),
        ("a" * 64, []),
        ("mcp__github__search-issues", []),
        ("_private", []),
        ("3d_render", ["gemini"]),  # Gemini: "Must start with a letter or an underscore"
        ("-dash", ["gemini"]),
    ],
)
def test_tool_names_follow_each_providers_rule(name: str, refused_by: list[str]) -> None:
    for provider in PROVIDERS:
        if provider in refused_by:
            with pytest.raises(ConfigurationError, match="is not valid for"):
                tools_payload(provider, [named(name)])
        else:
            assert tools_payload(provider, [named(name)])


# -- one result per call -----------------------------------------------------------------------


def ok(call_id: str, text: str = "done") -> ToolResult:
    return replace(ToolResult.success(text), call_id=call_id, tool_name="probe")


def calls(*ids: str) -> list[ToolCall]:
    return [ToolCall(id=i, name="probe") for i in ids]


def contents(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in messages]


def test_results_follow_the_calls_order_not_the_results_order() -> None:
    messages = openai_chat_results([ok("b", "B"), ok("a", "A")], calls=calls("a", "b"))
    assert contents(messages) == [("a", "A"), ("b", "B")]


def test_a_call_without_a_result_is_answered_as_not_run() -> None:
    messages = openai_chat_results([ok("a")], calls=calls("a", "b"))
    assert contents(messages) == snapshot(
        [
            ("a", "done"),
            (
                "b",
                "Not run: no result was recorded for this call. It had no effect; call it again if it is still needed.",
            ),
        ]
    )


def test_results_that_cannot_belong_to_the_turn_are_programming_errors() -> None:
    with pytest.raises(ConfigurationError, match="not one of this turn's calls"):
        openai_chat_results([ok("zzz")], calls=calls("a"))
    with pytest.raises(ConfigurationError, match="two results answer call 'a'"):
        openai_chat_results([ok("a"), ok("a")], calls=calls("a"))
    with pytest.raises(ConfigurationError, match="two calls share the id 'a'"):
        openai_chat_results([ok("a")], calls=calls("a", "a"))
    with pytest.raises(ConfigurationError, match="has no call_id"):
        openai_chat_results([ToolResult.success("x")])


def test_results_alone_keep_their_order() -> None:
    assert contents(openai_chat_results([ok("x", "1"), ok("y", "2")])) == [("x", "1"), ("y", "2")]


# -- the text of a result ----------------------------------------------------------------------


def waiting(call_id: str, *, own: bool) -> Interrupted:
    request = ApprovalRequest(
        call=ToolCall(id=call_id, name="rm"),
        tool_name="run_shell",
        reason="run_shell(rm:*) asks",
    )
    return Interrupted(
        ok=False,
        content="Not run yet: ... Wait for the user's decision.",
        error=ErrorCode.INTERRUPTED,
        approval=request if own else None,
        call_id=call_id,
        tool_name="run_shell",
    )


def test_an_interrupted_call_says_approval_has_not_been_given() -> None:
    # A host sends an Interrupted only when it moves on without the user's answer, so the text
    # cannot tell the model to wait.
    results = [waiting("a", own=True), waiting("b", own=False)]
    texts = {
        locale: [m["content"] for m in openai_chat_results(results, locale=locale)]
        for locale in ("en", "zh")
    }
    assert texts == snapshot(
        {
            "en": [
                "Not run: `run_shell` is waiting for the user's approval (run_shell(rm:*) asks), which has not been given. The call had no effect; do not assume it ran. Continue without it, or ask the user.",
                "Not run: this call was queued behind another call that is waiting for the user's approval, which has not been given. The call had no effect; call it again if it is still needed.",
            ],
            "zh": [
                "未执行:`run_shell` 正在等待用户批准(run_shell(rm:*) asks),用户尚未批准。该调用没有产生任何效果,不要假设它已执行。请在没有它的情况下继续,或询问用户。",
                "未执行:该调用排在另一个等待用户批准的调用之后,而用户尚未批准。该调用没有产生任何效果;如仍需要,请重新调用。",
            ],
        }
    )


def test_failures_carry_their_code_where_the_wire_has_no_error_flag() -> None:
    failed = replace(
        ToolResult.failure(ErrorCode.FILE_NOT_READ, "Read the file first."), call_id="a"
    )
    assert contents(openai_chat_results([failed])) == [
        ("a", "Error (FILE_NOT_READ): Read the file first.")
    ]
    assert contents(openai_chat_results([failed], locale="zh")) == [
        ("a", "错误(FILE_NOT_READ):Read the file first.")
    ]
