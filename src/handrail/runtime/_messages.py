"""The runtime's own model-facing sentences, in English and Chinese (`Runtime(locale=...)`).

Reasons that come from elsewhere (a policy rule's reason, a tool's own message) are embedded
as they are.
"""

from __future__ import annotations

from .._i18n import render

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "no_tool": "There is no tool named `{name}`. {hint}",
        "did_you_mean": "Did you mean {names}?",
        "available": "Available tools: {names}.",
        "none": "(none)",
        "or": " or ",
        "more_tools": " More tools can be found with tool_search.",
        "not_activated": (
            "The tool `{name}` is not loaded yet. Call tool_search with query "
            '"select:{name}" first, then call `{name}` again.'
        ),
        "not_checked": "The arguments could not be checked ({detail}). Try simpler arguments.",
        "call_again": "{verdict}\nCall `{name}` again with corrected arguments.",
        "needs_approval": (
            "Not run yet: `{name}` needs the user's approval ({reason}). "
            "Wait for the user's decision."
        ),
        "waiting_behind": "Not run yet: waiting for the approval of call `{blocker}`.",
        "tool_failed": "{detail}\nThe tool failed; fix the cause or try a different approach.",
        "timeout": (
            "`{name}` did not finish within {seconds:g} {unit} and was stopped. "
            "Try a smaller task, or narrower arguments."
        ),
        "second": "second",
        "seconds": "seconds",
        "cancelled": "The call was cancelled.",
        "sibling_failed": (
            "Cancelled because the shell call `{failed}` in the same parallel group failed."
        ),
        "denied": (
            "Permission denied: {reason}. Do not retry this call as is; "
            "choose another approach or ask the user."
        ),
        "refused": "Refused: {reason}. Only paths inside the allowed roots can be used.",
        "hidden": "Refused: {reason}.",
        "no_output": "({name} completed with no output)",
        "no_structured": "it returned no structured content",
        "bad_structured": (
            "`{name}` declares an output schema, but its result does not match it ({detail}). "
            "This is a fault of the tool, not of your arguments; do not retry the same call, "
            "tell the user or use another way."
        ),
    },
    "zh": {
        "no_tool": "没有名为 `{name}` 的工具。{hint}",
        "did_you_mean": "你是不是想用 {names}?",
        "available": "可用的工具:{names}。",
        "none": "(无)",
        "or": " 或 ",
        "more_tools": "更多工具可以用 tool_search 查找。",
        "not_activated": (
            '工具 `{name}` 尚未加载。请先用 query "select:{name}" 调用 tool_search,'
            "再重新调用 `{name}`。"
        ),
        "not_checked": "无法检查这些参数({detail})。请使用更简单的参数。",
        "call_again": "{verdict}\n请修正参数后重新调用 `{name}`。",
        "needs_approval": "尚未执行:`{name}` 需要用户批准({reason})。请等待用户的决定。",
        "waiting_behind": "尚未执行:正在等待调用 `{blocker}` 的批准。",
        "tool_failed": "{detail}\n工具执行失败;请修正原因,或换一种做法。",
        "timeout": "`{name}` 未能在 {seconds:g} {unit}内完成,已被停止。请缩小任务或参数范围。",
        "second": "秒",
        "seconds": "秒",
        "cancelled": "该调用已被取消。",
        "sibling_failed": "已取消:同一并行组中的 shell 调用 `{failed}` 失败了。",
        "denied": "权限被拒绝:{reason}。不要原样重试这个调用;请换一种做法或询问用户。",
        "refused": "已拒绝:{reason}。只能使用允许的根目录内的路径。",
        "hidden": "已拒绝:{reason}。",
        "no_output": "({name} 已完成,没有输出)",
        "no_structured": "它没有返回结构化内容",
        "bad_structured": (
            "`{name}` 声明了输出模式，但其结果不符合（{detail}）。这是工具本身的问题，"
            "不是参数的问题；不要重复同样的调用，请告知用户或换一种方式。"
        ),
    },
}


def say(locale: str, key: str, /, **values: object) -> str:
    """Render one runtime sentence in `locale` (English when the locale is unknown)."""
    return render(CATALOG, locale, key, **values)
