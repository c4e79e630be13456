"""The agent layer's own model-facing sentences, in English and Chinese (the runtime's locale).

The system prompt's fixed parts live in `_prompt.py`; everything here is text the model reads
in results and messages the loop writes.
"""

from __future__ import annotations

from .._i18n import render

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "headless_denied": (
            "nobody can approve calls in this run ({reason}); the user can allow such calls "
            "with the allow rule {rule} or a permission mode"
        ),
        "headless_question": "nobody can answer questions in this run ({reason})",
        "repeated": (
            "Refused: this is the same `{name}` call with the same arguments {count} times in "
            "a row, and it will not give a different result. Do not repeat it: use what the "
            "earlier results said, change the arguments, try another approach, or finish and "
            "tell the user what blocks you."
        ),
        "interrupted": (
            "The user interrupted this call on purpose; it was stopped (or never started). "
            "Do not retry it: stop and wait for the user's instructions."
        ),
        "summary": (
            "This conversation was compacted to fit the context window: older messages were "
            "replaced by the summary below. Files you read before are not in your context any "
            "more: read them again before editing them.\n\n<summary>\n{summary}\n</summary>"
        ),
        "pruned": (
            "[Output removed to save context ({chars} characters of `{name}` output). Call the "
            "tool again if you need it.]"
        ),
        "nudge_answer": (
            "Stop here and answer now, without calling tools: reply with your final answer as "
            "plain text (what you found or did, and what is left undone)."
        ),
        "no_tools_now": "Not run: the task is over and no more tool calls are accepted.",
        "notice": "<system-notice>\n{text}\n</system-notice>",
        "empty_answer": (
            "Your last answer was empty (it was cut short or filtered). Answer again, briefly; "
            "if a tool call failed to come through, make it again."
        ),
    },
    "zh": {
        "headless_denied": (
            "本次运行中没有人可以批准调用({reason});用户可以用规则 {rule} 或权限模式允许这类调用"
        ),
        "headless_question": "本次运行中没有人可以回答问题({reason})",
        "repeated": (
            "已拒绝:这是连续第 {count} 次使用相同参数调用 `{name}`,结果不会不同。"
            "不要再重复:利用之前的结果、修改参数、换一种做法,或结束并告诉用户是什么阻碍了你。"
        ),
        "interrupted": (
            "用户有意中断了这个调用;它已被停止(或从未开始)。不要重试:停下来等待用户的指示。"
        ),
        "summary": (
            "为了适应上下文窗口,这段对话已被压缩:较早的消息被下面的摘要取代。"
            "你之前读过的文件已不在上下文中:编辑前请重新读取。\n\n<summary>\n{summary}\n</summary>"
        ),
        "pruned": (
            "[为节省上下文,已删除输出(`{name}` 的 {chars} 个字符)。如需要,请重新调用该工具。]"
        ),
        "nudge_answer": (
            "请在这里停下并立即回答,不要再调用工具:"
            "用纯文本给出最终答案(你发现或完成了什么,还剩什么没做)。"
        ),
        "no_tools_now": "未执行:任务已结束,不再接受工具调用。",
        "notice": "<system-notice>\n{text}\n</system-notice>",
        "empty_answer": (
            "你上一次的回答是空的(被截断或被过滤)。请简短地重新回答;"
            "如果某个工具调用没有成功发出,请重新调用。"
        ),
    },
}


def say(locale: str, key: str, /, **values: object) -> str:
    """One sentence of the agent layer in `locale` (English when unknown)."""
    return render(CATALOG, locale, key, **values)
