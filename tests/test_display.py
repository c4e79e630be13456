"""The display contract's values: what every front end reads about a call."""

from __future__ import annotations

from handrail import (
    CallStatus,
    Denial,
    DiffBody,
    Display,
    DisplayGroup,
    ErrorCode,
    TextBody,
    ToolCall,
    ToolKind,
    ToolResult,
)
from handrail.display import CallView, call_arguments, default_display, group_summary, status_of


def shown(group: DisplayGroup, status: CallStatus = CallStatus.DONE) -> Display:
    return Display(title="t", group=group, status=status)


def test_group_summary_counts_each_kind_in_the_order_it_came() -> None:
    calls = [
        shown(DisplayGroup.READ),
        shown(DisplayGroup.SEARCH),
        shown(DisplayGroup.READ),
        shown(DisplayGroup.READ),
        shown(DisplayGroup.LIST),
        shown(DisplayGroup.SEARCH),
    ]
    assert group_summary(calls) == "Read 3 files, searched 2 patterns, listed 1 directory"


def test_group_summary_speaks_in_the_present_while_a_call_runs() -> None:
    calls = [shown(DisplayGroup.READ), shown(DisplayGroup.LIST, CallStatus.RUNNING)]
    assert group_summary(calls) == "Reading 1 file, listing 1 directory"


def test_status_of_tells_denials_cancellations_and_failures_apart() -> None:
    denied = ToolResult(
        ok=False,
        content="no",
        error=ErrorCode.PERMISSION_DENIED,
        denial=Denial(reason="no", source="rule"),
    )
    outside = ToolResult(ok=False, content="no", error=ErrorCode.OUTSIDE_WRITE_ROOTS)
    cancelled = ToolResult(ok=False, content="stop", error=ErrorCode.CANCELLED)
    failed = ToolResult(ok=False, content="boom", error=ErrorCode.NONZERO_EXIT)
    assert status_of(ToolResult(ok=True, content="x")) is CallStatus.DONE
    assert status_of(denied) is CallStatus.DENIED
    assert status_of(outside) is CallStatus.DENIED
    assert status_of(cancelled) is CallStatus.CANCELLED
    assert status_of(failed) is CallStatus.FAILED


def test_diff_body_counts_changed_lines_not_headers() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n+more\n"
    body = DiffBody.of(diff)
    assert (body.added, body.removed) == (2, 1)


def test_text_body_keeps_head_and_tail_and_counts_what_it_left_out() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 101))
    body = TextBody.of(text, head=2, tail=2)
    assert body.head == ("line 1", "line 2")
    assert body.tail == ("line 99", "line 100")
    assert body.omitted == 96
    assert body.lines == 100
    # One hidden line would cost as much room as the marker saying so: show it instead.
    assert TextBody.of("a\nb\nc\nd\ne", head=2, tail=2).omitted == 0


def test_call_arguments_survive_whatever_the_model_sent() -> None:
    assert call_arguments(ToolCall(id="1", name="x", arguments='{"a": 1}')) == {"a": 1}
    assert call_arguments(ToolCall(id="1", name="x", arguments="{not json")) == {}
    assert call_arguments(ToolCall(id="1", name="x", arguments="[1, 2]")) == {}
    assert call_arguments(ToolCall(id="1", name="x", arguments="")) == {}


def test_default_display_comes_from_the_kind_the_name_and_the_result() -> None:
    call = ToolCall(id="c1", name="deploy", arguments={"service": "api", "replicas": 3})
    running = default_display(CallView(call=call, arguments={"service": "api"}), name="deploy")
    assert (running.title, running.status, running.group) == (
        "deploy api",
        CallStatus.RUNNING,
        DisplayGroup.OTHER,
    )
    result = ToolResult(
        ok=False, content="the cluster said no\nmore detail", error=ErrorCode.HTTP_ERROR
    )
    done = default_display(
        CallView(call=call, arguments={"service": "api"}, result=result),
        name="deploy",
        kind=ToolKind.FETCH,
    )
    assert done.status is CallStatus.FAILED
    assert done.group is DisplayGroup.FETCH
    assert done.subtitle == "the cluster said no"


def test_display_json_is_what_stream_json_carries() -> None:
    d = Display(
        title="Edit a.py",
        subtitle="+1 -1",
        status=CallStatus.DONE,
        group=DisplayGroup.EDIT,
        body=DiffBody.of("@@ -1 +1 @@\n-a\n+b\n"),
        duration=0.0123,
    )
    assert d.to_json() == {
        "title": "Edit a.py",
        "subtitle": "+1 -1",
        "status": "done",
        "group": "edit",
        "body": {"kind": "diff", "diff": "@@ -1 +1 @@\n-a\n+b\n", "added": 1, "removed": 1},
        "duration": 0.012,
    }


def test_view_shows_paths_relative_to_the_working_directory() -> None:
    view = CallView(call=ToolCall(id="1", name="x"), cwd="/work/app")
    assert view.relative("/work/app/src/main.py") == "src/main.py"
    assert view.relative("/work/app") == "."
    assert view.relative("/etc/hosts") == "/etc/hosts"
    assert view.relative("/work/application/x") == "/work/application/x"
