"""`handrail serve --http` for stateless clients (MCP 2026-07-28): approvals across requests.

A 2026-07-28 request is self-contained: no session, no `Mcp-Session-Id`, no request from the
server to the client. Each such request gets its own handrail `Session`, closed when the
request ends, so replicas behind a load balancer need no sticky sessions. What a session
remembers therefore lasts one request: the files read (so `edit_file` and `write_file` cannot
change an existing file: the model is told why and what to do), tools activated by
`tool_search` (a call of a deferred tool activates it for its own request instead), the
permission mode, background jobs, checkpoints (the checkpoint tools are not offered) and
"allow always".

A call that asks is put to the client's user over two requests (`StatelessAsker`):

1. The call runs through the pipeline up to its approval. The asker notes the question and
   denies it, so nothing runs; the server answers `InputRequiredResult`: the question as an
   elicitation input request (key `approval`) and a signed `requestState` (`_server_state`).
2. The client retries with the user's answer and the state, maybe to another replica. The
   state is checked (signature, expiry, same tool and arguments, not used before on this
   replica); a refused one ends the call with a result saying why, and nothing runs. Else the
   call runs through the pipeline again, and when its approval asks the very question the
   state names, the answer is the user's: accept runs it once, decline refuses it. A
   different question (the rules changed between the two requests) is asked anew.

Each request runs the whole pipeline, so the stages before the approval (validation, the
tool's checks, pre-tool hooks) run once per request: a hook with side effects sees the call
twice when it asks.

"Allow always" is not offered (as over a session, accept approves one call): no request
remembers another, so a rule could not outlive the call. An operator who wants a call to stop
asking adds an allow rule to the server. A question asked *while* a tool runs (a tool's
confirmation, a sub-agent's call) cannot wait for another request: it gets the server's
`ask_fallback` (a sub-agent's call) or a no, with the reason.

Nothing here imports the MCP SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from .. import Approval, ApprovalRequest, ErrorCode, Question, ToolResult
from .._i18n import render
from ..permissions import rules_to_allow
from ._server_payloads import RESULT_META_KEY, approval_message, call_result, fallback_reason, say
from ._server_state import StateRefusal, question_digest

__all__ = [
    "APPROVAL_KEY",
    "CATALOG",
    "Answer",
    "StatelessAsker",
    "input_required",
    "not_remembered",
    "state_refused",
    "stateless_instructions",
    "tell",
    "unavailable",
]

APPROVAL_KEY = "approval"
"""The key of the approval among an `InputRequiredResult`'s input requests and responses."""

_EMPTY_FORM: dict[str, Any] = {"type": "object", "properties": {}}
"""An approval asks a yes/no question: the client's accept / decline is the whole answer."""
_NOT_REMEMBERED = frozenset({ErrorCode.FILE_NOT_READ, ErrorCode.FILE_MODIFIED_SINCE_READ})

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "instructions": (
            "This server answers each of your requests on its own (MCP 2026-07-28, "
            "stateless): nothing carries from one request to the next. It cannot know which "
            "files you read, so existing files cannot be edited or overwritten; the "
            "permission mode, background jobs and tool_search's activations last one "
            "request. A call that needs approval asks your user each time. For all of these, "
            "connect with the session-based protocol (the initialize handshake, MCP "
            "2025-11-25)."
        ),
        "not_remembered": (
            "This server answers you statelessly (MCP 2026-07-28): no request remembers "
            "another, so it cannot know which files you read, and reading the file again will "
            "not help. Changing an existing file needs a session: connect with the "
            "session-based protocol (the initialize handshake, MCP 2025-11-25)."
        ),
        "mid_run": (
            "nobody could be asked ({reason}): this MCP client is served statelessly (MCP "
            "2026-07-28), so a question asked while a tool runs cannot wait for its answer"
        ),
        "mid_run_call": (
            "`{name}` needs the user's approval ({reason}), asked while another tool runs; a "
            "stateless MCP client (2026-07-28) can answer only the approval of the call it "
            "made. The server's operator can allow such calls with the allow rule {rule} "
            "(handrail serve --allow)"
        ),
        "invalid": (
            "`{name}` did not run: the approval sent back with this call (its requestState) "
            "is not one this server made, or it was altered. Call the tool again to be asked "
            "again."
        ),
        "expired": (
            "`{name}` did not run: its approval expired (an answer counts for {ttl} s after "
            "the question). Call the tool again to be asked again."
        ),
        "other_call": (
            "`{name}` did not run: the approval sent back was given for another call (another "
            "tool or other arguments). Call the tool again to be asked again."
        ),
        "replayed": (
            "`{name}` did not run again: this approval was already used for one run (one "
            "approval, one run). Call the tool again to be asked again."
        ),
        "unavailable": (
            "`{name}` is not offered to a stateless MCP client (2026-07-28): checkpoints belong "
            "to a session. Connect with the session-based protocol (the initialize handshake, "
            "MCP 2025-11-25) to list or restore them."
        ),
    },
    "zh": {
        "instructions": (
            "本服务器独立处理你的每个请求(MCP 2026-07-28,无状态):请求之间不保留任何内容。"
            "它无法知道你读过哪些文件,因此不能编辑或覆盖已有文件;权限模式、后台任务和 "
            "tool_search 的激活只在一个请求内有效。需要批准的调用每次都会询问你的用户。"
            "如需这些功能,请用基于会话的协议连接(initialize 握手,MCP 2025-11-25)。"
        ),
        "not_remembered": (
            "本服务器以无状态方式为你服务(MCP 2026-07-28):请求之间互不记忆,因此它无法知道"
            "你读过哪些文件,重新读取文件也无济于事。修改已有文件需要会话:请用基于会话的协议"
            "连接(initialize 握手,MCP 2025-11-25)。"
        ),
        "mid_run": (
            "无法询问任何人({reason}):这个 MCP 客户端以无状态方式连接(MCP 2026-07-28),"
            "工具运行中提出的问题无法等待回答"
        ),
        "mid_run_call": (
            "`{name}` 需要用户批准({reason}),但这是在另一个工具运行时提出的;无状态的 MCP "
            "客户端(2026-07-28)只能回答它自己发起的调用的批准。服务器的管理者可以用允许规则 "
            "{rule} 放行这类调用(handrail serve --allow)"
        ),
        "invalid": (
            "`{name}` 没有执行:随调用发回的批准(requestState)不是本服务器生成的,或已被"
            "篡改。请再次调用该工具,以便重新询问。"
        ),
        "expired": (
            "`{name}` 没有执行:它的批准已过期(回答在提问后 {ttl} 秒内有效)。"
            "请再次调用该工具,以便重新询问。"
        ),
        "other_call": (
            "`{name}` 没有执行:发回的批准是针对另一个调用的(不同的工具或不同的参数)。"
            "请再次调用该工具,以便重新询问。"
        ),
        "replayed": (
            "`{name}` 没有再次执行:这个批准已用于一次执行(一次批准,一次执行)。"
            "请再次调用该工具,以便重新询问。"
        ),
        "unavailable": (
            "`{name}` 不提供给无状态的 MCP 客户端(2026-07-28):检查点属于会话。"
            "请用基于会话的协议连接(initialize 握手,MCP 2025-11-25)来列出或恢复检查点。"
        ),
    },
}


def tell(locale: str, key: str, /, **values: object) -> str:
    """Render `key` from `CATALOG` in `locale` (English when the locale is unknown)."""
    return render(CATALOG, locale, key, **values)


def stateless_instructions(notes: str | None, locale: str) -> str:
    """The server's instructions for a stateless client: its usage notes, then what it lacks."""
    note = tell(locale, "instructions")
    return f"{notes}\n\n{note}" if notes else note


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """The user's answer sent back with a retry, for the question its verified state names."""

    question: str
    """The `question_digest` of the question the user was shown."""
    action: Literal["accept", "decline", "cancel"]


class StatelessAsker:
    """The approver of one `tools/call` of a stateless request (see the module docstring).

    After the call, `asked` holds its approval when the client must be asked (the call was
    denied without running); `message` is the question's text and `question` its digest.

    Args:
        call_id: The call's id: only its own approval is put to the client.
        locale: The runtime's locale.
        can_ask: The client declared form elicitation in this request's capabilities.
        fallback: The server's `ask_fallback`, for a client that cannot ask.
        answer: The user's answer from a verified retry, if any.
    """

    def __init__(
        self,
        *,
        call_id: str,
        locale: str,
        can_ask: bool,
        fallback: Literal["deny", "allow"],
        answer: Answer | None,
    ) -> None:
        self.call_id = call_id
        self.locale = locale
        self.can_ask = can_ask
        self.fallback = fallback
        self.answer = answer
        self.asked: ApprovalRequest | None = None
        self.message = ""
        self.question = ""
        """The `question_digest` of `asked`, for its state."""
        self._answered_own = False

    async def __call__(self, question: Question) -> Approval:
        loc = self.locale
        own = isinstance(question, ApprovalRequest) and question.call.id == self.call_id
        if isinstance(question, ApprovalRequest) and own and not self._answered_own:
            self._answered_own = True
            return self._own(question)
        # Asked while a tool runs: nothing can wait for another request.
        if isinstance(question, ApprovalRequest):
            if self.fallback == "allow":
                return Approval.allow_once()
            reason = tell(
                loc,
                "mid_run_call",
                name=question.tool_name,
                reason=question.reason.rstrip("."),
                rule=" + ".join(f"`{r}`" for r in rules_to_allow(question)),
            )
            return Approval.deny(reason, source=question.source)
        return Approval.deny(tell(loc, "mid_run", reason=question.reason.rstrip(".")))

    def _own(self, request: ApprovalRequest) -> Approval:
        loc = self.locale
        if not self.can_ask:
            if self.fallback == "allow":
                return Approval.allow_once()
            return Approval.deny(fallback_reason(request, loc), source=request.source)
        message = approval_message(request, loc)
        shown = question_digest(request.tool_name, request.call.arguments, message)
        answer = self.answer
        if answer is not None and answer.question == shown:
            if answer.action == "accept":
                return Approval.allow_once()
            key = "declined" if answer.action == "decline" else "dismissed"
            return Approval.deny(say(loc, key, name=request.tool_name))
        # Not answered yet (or the question changed since): stop here, nothing has run; the
        # server turns this denial into the question for the client.
        self.asked = request
        self.message = message
        self.question = shown
        return Approval.deny(message, source=request.source)


def input_required(message: str, state: str) -> dict[str, Any]:
    """The `tools/call` answer that puts the approval to the client and carries its state."""
    ask = {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": _EMPTY_FORM},
    }
    return {
        "resultType": "input_required",
        "inputRequests": {APPROVAL_KEY: ask},
        "requestState": state,
    }


def state_refused(refusal: StateRefusal, name: str, *, locale: str, ttl: float) -> dict[str, Any]:
    """The `tools/call` result of a retry whose state was refused: nothing ran, and why.

    PERMISSION_DENIED, with the reason as data in `_meta["handrail/result"]["requestState"]`
    (`invalid`, `expired`, `other_call`, `replayed`).
    """
    text = tell(locale, refusal, name=name, ttl=f"{ttl:g}")
    failed = ToolResult.failure(ErrorCode.PERMISSION_DENIED, text, summary=text.split(":")[0])
    payload = call_result(replace(failed, tool_name=name))
    payload["_meta"][RESULT_META_KEY]["requestState"] = refusal
    return payload


def not_remembered(result: ToolResult, locale: str) -> ToolResult:
    """`result`, with why re-reading cannot help when it needed an earlier request's reads."""
    if result.error not in _NOT_REMEMBERED:
        return result
    return replace(result, content=f"{result.content}\n\n{tell(locale, 'not_remembered')}")


def unavailable(name: str, locale: str) -> ToolResult:
    """The result of a checkpoint tool called by a stateless client."""
    return ToolResult.failure(ErrorCode.TOOL_NOT_FOUND, tell(locale, "unavailable", name=name))
