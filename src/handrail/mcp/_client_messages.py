"""Model-facing text of the MCP client, in English and Chinese (the call's `ctx.locale`)."""

from __future__ import annotations

from .._i18n import render

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "stopped": (
            "MCP server `{server}` stopped: {detail}; it will be restarted on the next call. "
            "Call `{tool}` again if you still need it."
        ),
        "connection_closed": "the connection closed during the call",
        "stderr": "its last error output was: {text}",
        "and": "; ",
        "start_failed": (
            "MCP server `{server}` could not be started: {detail}. Its tools cannot run right "
            "now; tell the user, or try again later."
        ),
        "refused": "MCP server `{server}` refused the call to `{tool}`: {detail}.",
        "bad_result": (
            "MCP server `{server}` answered the call to `{tool}` with a result that is not valid "
            "MCP: {detail}."
        ),
        "no_details": "`{tool}` reported an error without details.",
        "timeout": (
            "MCP server `{server}` did not answer the call to `{tool}` within {seconds:g} s; "
            "the call was cancelled on the server. Try again later or with a smaller request, "
            "or tell the user the server is slow."
        ),
        "bad_structured": (
            "MCP server `{server}` answered the call to `{tool}` with structured content that "
            "does not match the tool's output schema ({detail}). This is a fault of the server, "
            "not of your arguments; tell the user or use another way."
        ),
        "step": "{progress:g} of {total:g}",
        "step_open": "{progress:g}",
    },
    "zh": {
        "stopped": (
            "MCP 服务器 `{server}` 已停止：{detail}；下次调用时会重新启动。"
            "如果仍然需要，请再次调用 `{tool}`。"
        ),
        "connection_closed": "调用过程中连接已关闭",
        "stderr": "它最后的错误输出是：{text}",
        "and": "；",
        "start_failed": (
            "MCP 服务器 `{server}` 无法启动：{detail}。它的工具暂时无法运行；"
            "请告知用户，或稍后再试。"
        ),
        "refused": "MCP 服务器 `{server}` 拒绝了对 `{tool}` 的调用：{detail}。",
        "bad_result": "MCP 服务器 `{server}` 对 `{tool}` 的调用返回了无效的 MCP 结果：{detail}。",
        "no_details": "`{tool}` 报告了错误，但没有给出详情。",
        "timeout": (
            "MCP 服务器 `{server}` 未在 {seconds:g} 秒内回应对 `{tool}` 的调用；"
            "该调用已在服务器上取消。请稍后再试或缩小请求，或告知用户该服务器很慢。"
        ),
        "bad_structured": (
            "MCP 服务器 `{server}` 对 `{tool}` 的调用返回的结构化内容不符合该工具的输出模式"
            "（{detail}）。这是服务器的问题，不是参数的问题；请告知用户或换一种方式。"
        ),
        "step": "{progress:g} / {total:g}",
        "step_open": "{progress:g}",
    },
}


def say(locale: str, key: str, /, **values: object) -> str:
    """Render `key` in `locale` (English when the locale or the key is missing)."""
    return render(CATALOG, locale, key, **values)
