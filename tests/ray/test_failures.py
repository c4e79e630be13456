"""What the model reads when the backend fails, in both languages (snapshots)."""

from __future__ import annotations

from inline_snapshot import snapshot

from handrail import ErrorCode
from handrail.ray._failures import lost, restamp, unavailable


def test_session_lost_texts_tell_the_model_to_stop() -> None:
    died = lost("host_died", call_id="c1", tool_name="run_shell", executed="unknown", detail="x")
    assert died.error is ErrorCode.SESSION_LOST and not died.ok
    assert (died.call_id, died.tool_name) == ("c1", "run_shell")
    assert dict(died.metadata) == {
        "reason": "host_died",
        "executed": "unknown",
        "retryable": False,
        "detail": "x",
    }
    assert died.content == snapshot(
        "The environment of this session is gone: its host process or node stopped. Nothing more can run in this session and its files are lost. Stop calling tools and report that the environment was lost."
    )
    assert lost("expired", which="absolute").content == snapshot(
        "This session expired (total time limit) and its workspace was removed. Stop calling tools: a new session is needed."
    )
    assert lost("closed").content == snapshot(
        "This session was closed and its workspace was removed. Stop calling tools: a new session is needed."
    )
    assert lost("expired", which="idle", locale="zh").content == snapshot(
        "此会话已过期（空闲时限），其工作区已删除。请停止调用工具：需要新的会话。"
    )


def test_backend_unavailable_texts_say_whether_the_call_ran() -> None:
    full = unavailable("full")
    assert full.error is ErrorCode.BACKEND_UNAVAILABLE
    assert full.metadata["retryable"] is True and full.metadata["executed"] == "no"
    assert full.content == snapshot(
        "No session host can take this session now: every host is at its limit of sessions. Nothing ran. Try again later."
    )
    assert unavailable("timeout", seconds=11.5, executed="unknown").content == snapshot(
        "The session host did not answer within 11.5 seconds. The call may or may not have run. Check the state of the workspace before you repeat it."
    )
    assert unavailable("unreachable").content == snapshot(
        "The connection to the session host broke. The call did not run. Check the state of the workspace before you repeat it."
    )
    assert unavailable("no_host").content == snapshot(
        "No running session host can take this session (the pool's hosts stopped, or none runs on a node with the labels asked for). Nothing ran. Try again later."
    )
    assert unavailable("timeout", seconds=3, executed="unknown", locale="zh").content == snapshot(
        "会话宿主在 3 秒内没有回应。调用可能已运行，也可能没有。重复之前请先检查工作区的状态。"
    )


def test_a_failure_told_to_each_call_says_what_its_metadata_says() -> None:
    judged = unavailable("unreachable", executed="unknown", detail="reset", host=3)
    told = restamp(judged, "c7", "edit_file", "no", "en")
    assert (told.call_id, told.tool_name) == ("c7", "edit_file")
    assert told.metadata["executed"] == "no" and told.metadata["host"] == 3
    assert "did not run" in told.content and "may or may not" not in told.content
    timed = restamp(unavailable("timeout", seconds=12), "c8", "run_shell", "unknown", "zh")
    assert "12" in timed.content and "可能已运行" in timed.content
    died = restamp(lost("host_died", detail="gone"), "c9", "read_file", "no", "en")
    assert died.metadata["executed"] == "no" and died.metadata["detail"] == "gone"
