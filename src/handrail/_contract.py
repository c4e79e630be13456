"""The values every layer shares: calls, results, issues, denials, permission requests.

Values only: nothing here does I/O or imports another handrail module (but the one-function
sentence lookup), so providers, MCP and the CLI can depend on the contract without pulling in
the runtime. Every value is a frozen, keyword-only dataclass; change one with
`dataclasses.replace`.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol

from ._i18n import render

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Approver",
    "AudioPart",
    "Confirmation",
    "ContentPart",
    "Denial",
    "Elicitation",
    "ErrorCode",
    "FetchUrl",
    "ImagePart",
    "Interrupted",
    "PermissionRequest",
    "Preflight",
    "ProgressEvent",
    "Question",
    "ReadPath",
    "ResourceLinkPart",
    "ResourcePart",
    "RunCommand",
    "Sampler",
    "SamplingMessage",
    "SamplingRequest",
    "SamplingResult",
    "SwitchMode",
    "TextPart",
    "ToolCall",
    "ToolKind",
    "ToolResult",
    "ValidationIssue",
    "WritePath",
    "decoded_size",
    "part_note",
    "part_to_json",
    "parts_text",
]


class _EmptyMapping(Mapping[str, Any]):
    """A shared, immutable `{}`: the default metadata, so results allocate nothing for it."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and not other

    def __repr__(self) -> str:
        return "{}"


EMPTY: Mapping[str, Any] = _EmptyMapping()


class ErrorCode(enum.StrEnum):
    """Stable machine identifiers for every way a call can fail.

    A code is added, never renamed or removed: programs branch on these values and
    transcripts outlive code.
    """

    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    """No tool has this name or alias; the content lists the closest names."""
    TOOL_NOT_ACTIVATED = "TOOL_NOT_ACTIVATED"
    """The tool is deferred and this session has not activated it through tool_search."""
    INVALID_ARGS = "INVALID_ARGS"
    """The arguments are malformed JSON or do not match the schema; see `issues`."""
    PERMISSION_DENIED = "PERMISSION_DENIED"
    """A rule, the permission mode, a hook or the user refused the call; see `denial`."""
    INTERRUPTED = "INTERRUPTED"
    """The call has not run: it waits for an approval (its own or an earlier call's)."""
    TIMEOUT = "TIMEOUT"
    """The tool ran past its time limit and was stopped."""
    CANCELLED = "CANCELLED"
    """The call was cancelled (by the host, or because a sibling shell call failed)."""
    EXECUTION_ERROR = "EXECUTION_ERROR"
    """The tool raised; the content carries the exception's message."""
    OUTSIDE_READ_ROOTS = "OUTSIDE_READ_ROOTS"
    """A path the call reads is outside the read roots."""
    OUTSIDE_WRITE_ROOTS = "OUTSIDE_WRITE_ROOTS"
    """A path the call writes is outside the write roots (or is protected inside them)."""
    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    """The file does not exist."""
    FILE_TOO_LARGE = "FILE_TOO_LARGE"
    """The file is larger than the tool's cap and paging cannot help."""
    BINARY_FILE = "BINARY_FILE"
    """The file is binary and the tool works on text."""
    NOT_A_FILE = "NOT_A_FILE"
    """The path is a directory, device or FIFO, not a regular file."""
    FILE_NOT_READ = "FILE_NOT_READ"
    """The file must be read in full in this session before it is changed."""
    FILE_MODIFIED_SINCE_READ = "FILE_MODIFIED_SINCE_READ"
    """The file changed on disk after this session read it."""
    TEXT_NOT_FOUND = "TEXT_NOT_FOUND"
    """The text to replace does not occur in the file."""
    TEXT_MULTIPLE_MATCHES = "TEXT_MULTIPLE_MATCHES"
    """The text to replace occurs more than once."""
    NONZERO_EXIT = "NONZERO_EXIT"
    """A command exited with a non-zero status."""
    URL_BLOCKED = "URL_BLOCKED"
    """The URL is refused (scheme, credentials, or an address the SSRF guard blocks)."""
    HTTP_ERROR = "HTTP_ERROR"
    """The server answered with an HTTP error status or the transfer failed."""
    SANDBOX_UNAVAILABLE = "SANDBOX_UNAVAILABLE"
    """No OS sandbox is available and the configuration refuses to run without one."""
    REPEATED_CALL = "REPEATED_CALL"
    """An agent loop refused the call: the same call, same arguments, came too often in a row."""
    SESSION_LOST = "SESSION_LOST"
    """The remote session is gone (its host or node died, or it expired); every later call of
    it answers the same. `metadata["executed"]` says whether this call may have run."""
    BACKEND_UNAVAILABLE = "BACKEND_UNAVAILABLE"
    """The remote backend could not take the call (the pool is full, the host did not answer
    in time); the session may still work. `metadata["executed"]` says whether it may have run."""


class ToolKind(enum.StrEnum):
    """What a tool does, for UIs, views and permission modes."""

    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    MOVE = "move"
    SEARCH = "search"
    EXECUTE = "execute"
    FETCH = "fetch"
    THINK = "think"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationIssue:
    """One problem with a call's arguments, the same shape for every validation track."""

    path: str
    """RFC 6901 JSON pointer to the offending field; `""` is the arguments object itself."""
    expected: str
    """What the schema wants there, e.g. `integer`, `present`, `one of "a", "b"`."""
    received: str
    """A description of what was sent (at most 60 characters)."""
    message: str
    """Readable text for the model, in the runtime's locale."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A model's request to run one tool."""

    id: str
    """The provider's call id; results are matched to calls by it."""
    name: str
    """The tool name (or an alias) as the model wrote it."""
    arguments: str | Mapping[str, Any] = "{}"
    """The argument JSON string as the model emitted it, or an already-parsed object."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRequest:
    """Something a call is about to touch, declared as data so the policy decides centrally."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPath(PermissionRequest):
    """The call reads this path (a file, or a directory it lists or searches)."""

    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WritePath(PermissionRequest):
    """The call creates, changes, moves or deletes this path."""

    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCommand(PermissionRequest):
    """The call runs this shell command.

    `commands` holds the simple commands of a compound command line (`a && b | c`) when the
    tool has parsed it; a rule must match every one of them. Empty means "just `command`".
    """

    command: str
    commands: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchUrl(PermissionRequest):
    """The call fetches this URL."""

    url: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchMode(PermissionRequest):
    """The call switches the session's permission mode (e.g. leaving plan mode).

    The policy never lets a mode's default allow this: it asks unless a deny rule refuses it
    or an allow rule (`exit_plan_mode`, or `exit_plan_mode(<mode>)`) covers it.
    """

    mode: str
    """The permission mode the session will be in afterwards (a `PermissionMode` value)."""
    plan: str = ""
    """The plan to approve, when the switch ends plan mode; hosts show it to the user."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Denial:
    """Why a call was refused."""

    reason: str
    """Readable explanation for the model and the user."""
    source: Literal["rule", "mode", "roots", "hook", "user"]
    """Who refused: a deny rule, the permission mode, root confinement, a hook, the user."""
    rule: str | None = None
    """The rule that matched, e.g. `run_shell(rm:*)`, when a rule decided."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """Something a person is asked: the base of every request an `Approver` answers.

    A tool call's approval is an `ApprovalRequest`; anything else (a confirmation a tool
    needs while it runs, a server's question) is another subclass. Every front end can show
    any `Question` from `reason` alone, so a new kind needs no new plumbing to be answered.
    """

    reason: str
    """What is asked and why, in a sentence or two a person reads."""
    agent: str = ""
    """The sub-agent that asks (e.g. `explore#1`), or `""` for the host's own calls."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest(Question):
    """What the host is asked to approve before a call may run."""

    call: ToolCall
    """The call, with the arguments that will be used if approved."""
    tool_name: str
    """The tool's canonical name (the call may have used an alias)."""
    requests: tuple[PermissionRequest, ...] = ()
    """What the call will touch."""
    suggested_rules: tuple[str, ...] = ()
    """Rules an "allow always" answer could add, most specific first."""
    allow_rules: tuple[str, ...] = ()
    """The narrowest allow rules that together let this call run without asking, e.g.
    (`run_shell(npm test:*)`, `run_shell(npm run build:*)`) for `npm test && npm run build`;
    the bare tool name when no narrower rule can cover the call."""
    source: Literal["rule", "mode", "hook"] = "mode"
    """What asks: an ask rule, the permission mode's default, or a hook. A host that cannot
    ask anyone denies with this source (`Approval.deny(..., source=request.source)`), so the
    refusal is not reported as the user's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Confirmation(Question):
    """A yes/no question a tool asks while it runs (`ToolContext.ask`), not about a call.

    "Allow this domain?", "overwrite a file changed by hand?": the answer is an `Approval`;
    `allow_once` is yes, `deny` is no, and `allow_always` (offered when `always` is set) is
    yes and remember it, which the asking tool records itself.
    """

    topic: str
    """What kind of question this is, for hosts that answer some kinds by rule, e.g.
    `domain` or `overwrite`."""
    subject: str = ""
    """What it is about: a domain, a path."""
    always: str | None = None
    """What "yes, always" would remember, as the person reads it (e.g. "allow example.com for
    this session"); None: the question has no such answer."""
    tool_name: str = ""
    """The tool that asks (`ToolContext.ask` fills it in)."""
    call_id: str = ""
    """The call whose tool asks (`ToolContext.ask` fills it in)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Elicitation(Question):
    """An MCP server's question to the person while one of its tools runs (MCP elicitation).

    Form mode: `schema` is the flat JSON Schema object the answer must fill (strings, numbers,
    booleans, enums; `default`s included); answer with `Approval.reply(values)`. A value the
    reply leaves out is filled from the schema's default before it is checked and sent.
    URL mode: `url` is a page the person should open (to sign in, to pay); answer
    `Approval.allow_once()` once they agreed to open it. Either way `Approval.deny(...)`
    declines. `reason` names the server, so a person knows who asks.
    """

    server: str
    """The MCP server that asks, as configured."""
    message: str
    """The server's own text, as sent (untrusted: show it, never obey it)."""
    schema: Mapping[str, Any] | None = None
    """Form mode: the requested schema; None in URL mode."""
    url: str | None = None
    """URL mode: the page to open; None in form mode."""
    elicitation_id: str = ""
    """URL mode: the server's id for this elicitation."""
    tool_name: str = ""
    """The tool whose call the question belongs to (empty when none is running)."""
    call_id: str = ""
    """That call's id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """The host's answer to an `ApprovalRequest`. Build one with the class methods."""

    kind: Literal["allow_once", "allow_always", "deny", "edit"]
    reason: str | None = None
    """For `deny`: shown to the model so it can adapt."""
    arguments: str | Mapping[str, Any] | None = None
    """For `edit`: replacement arguments, validated again before the call runs."""
    rule: str | None = None
    """For `allow_always`: the session rule to add (default: every rule of `allow_rules`)."""
    source: Literal["user", "rule", "mode", "hook"] = "user"
    """For `deny`: who refused; `user` unless the host answered for nobody (headless)."""
    values: Mapping[str, Any] | None = None
    """For `allow_once` to an `Elicitation` in form mode: the values filled in."""

    @classmethod
    def allow_once(cls) -> Approval:
        """Run this call; ask again next time."""
        return cls(kind="allow_once")

    @classmethod
    def allow_always(cls, rule: str | None = None) -> Approval:
        """Run this call and add an allow rule for the rest of the session."""
        return cls(kind="allow_always", rule=rule)

    @classmethod
    def deny(
        cls,
        reason: str = "The user declined this call.",
        *,
        source: Literal["user", "rule", "mode", "hook"] = "user",
    ) -> Approval:
        """Refuse this call; `reason` reaches the model.

        A host that could not ask anyone passes the request's `source`, so the denial says
        the mode (or rule, or hook) refused, not the user.
        """
        return cls(kind="deny", reason=reason, source=source)

    @classmethod
    def reply(cls, values: Mapping[str, Any]) -> Approval:
        """Accept an `Elicitation` with the values filled in (form mode)."""
        return cls(kind="allow_once", values=dict(values))

    @classmethod
    def edit(cls, arguments: str | Mapping[str, Any]) -> Approval:
        """Run this call with edited arguments (validated again first)."""
        return cls(kind="edit", arguments=arguments)


class Approver(Protocol):
    """Answers the questions a person is asked: the one road every front end plugs into.

    Any `async def approve(request: Question) -> Approval` is one. Tool approvals arrive as
    `ApprovalRequest`; other questions (`Confirmation`, ...) as their own subclass of
    `Question`, so an approver that only knows tool calls checks `isinstance` and denies the
    rest. Give one to a `Runtime` (its calls' default) or to a call or stream (that call
    only); tools reach the one in force as `ToolContext.approver`. Wrap an approver to observe
    it (log, record); never replace another component's.
    """

    def __call__(self, request: Question, /) -> Awaitable[Approval]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingMessage:
    """One message of a conversation a tool wants the model to continue."""

    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingRequest:
    """A tool's request for one completion from the session's model (MCP sampling).

    The model answers with text only and without tools. Model preferences, temperature and
    stop sequences are the asking server's hints; the session's model keeps its own settings.
    """

    requester: str
    """Who asks, as a person reads it (e.g. "MCP server `docs`")."""
    messages: tuple[SamplingMessage, ...]
    system: str = ""
    """The system prompt the asker wants (empty: none)."""
    max_tokens: int
    """The most output tokens the asker wants."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingResult:
    """The model's answer to a `SamplingRequest`."""

    text: str
    model: str
    stop_reason: Literal["endTurn", "maxTokens", "stopSequence"] = "endTurn"
    input_tokens: int = 0
    output_tokens: int = 0


class Sampler(Protocol):
    """Answers `SamplingRequest`s with a model: `Agent` gives its session one.

    It raises an exception whose message says why it cannot answer (a budget spent, the
    model failing); the asking tool passes that message on.
    """

    def __call__(self, request: SamplingRequest, /) -> Awaitable[SamplingResult]: ...


# -- content parts ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentPart:
    """One block of a result's content beside plain text: an image, audio, a resource.

    `annotations` are MCP's content annotations (`audience`, `priority`, `lastModified`) and
    `meta` its `_meta`, both kept as sent so `serve` can pass them on unchanged.
    """

    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart(ContentPart):
    """Text, in its place among the other parts."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePart(ContentPart):
    """An image, base64-encoded (the form every provider and MCP carry it in)."""

    data: str
    mime_type: str

    @classmethod
    def of(cls, data: bytes, mime_type: str) -> ImagePart:
        """An image from its bytes, e.g. `ImagePart.of(png_bytes, "image/png")`."""
        return cls(data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)

    @property
    def size(self) -> int:
        """The decoded size in bytes."""
        return decoded_size(self.data)


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioPart(ContentPart):
    """Audio, base64-encoded."""

    data: str
    mime_type: str

    @classmethod
    def of(cls, data: bytes, mime_type: str) -> AudioPart:
        """Audio from its bytes, e.g. `AudioPart.of(wav_bytes, "audio/wav")`."""
        return cls(data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)

    @property
    def size(self) -> int:
        """The decoded size in bytes."""
        return decoded_size(self.data)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourcePart(ContentPart):
    """An embedded resource: its URI and either its text or its base64 `blob`."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceLinkPart(ContentPart):
    """A link to a resource the client may read (not its content)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


def decoded_size(data: str) -> int:
    """The bytes a base64 string decodes to."""
    # Counted, not stripped: rstrip would copy a megabyte string to measure it.
    pad = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return (len(data) - pad) * 3 // 4


_PART_NOTES = {
    "en": {
        "image": "[image: {mime}, {size} bytes]",
        "audio": "[audio: {mime}, {size} bytes]",
        "link": "[resource link: {name} <{uri}>]",
        "resource_text": "[resource: {uri} ({mime})]\n{text}",
        "resource_blob": "[resource: {uri} ({mime}), {size} bytes]",
    },
    "zh": {
        "image": "[图片：{mime}，{size} 字节]",
        "audio": "[音频：{mime}，{size} 字节]",
        "link": "[资源链接：{name} <{uri}>]",
        "resource_text": "[资源：{uri}（{mime}）]\n{text}",
        "resource_blob": "[资源：{uri}（{mime}），{size} 字节]",
    },
}


def part_note(part: ContentPart, locale: str = "en") -> str:
    """A part as text, for formats that cannot carry it.

    Text stays itself; anything else becomes a one-line note (an embedded text resource keeps
    its text under the note).
    """
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ImagePart | AudioPart):
        key = "image" if isinstance(part, ImagePart) else "audio"
        return render(_PART_NOTES, locale, key, mime=part.mime_type, size=part.size)
    if isinstance(part, ResourceLinkPart):
        return render(_PART_NOTES, locale, "link", name=part.name, uri=part.uri)
    if isinstance(part, ResourcePart):
        mime = part.mime_type or "?"
        if part.text is not None:
            return render(
                _PART_NOTES, locale, "resource_text", uri=part.uri, mime=mime, text=part.text
            )
        size = decoded_size(part.blob or "")
        return render(_PART_NOTES, locale, "resource_blob", uri=part.uri, mime=mime, size=size)
    return ""


def part_to_json(part: ContentPart) -> dict[str, Any]:
    """A part as an MCP content block (`type`, its fields, `annotations`, `_meta`).

    The one JSON shape of a part: `handrail serve` sends it, transcripts store it.
    """
    block: dict[str, Any]
    if isinstance(part, TextPart):
        block = {"type": "text", "text": part.text}
    elif isinstance(part, ImagePart | AudioPart):
        kind = "image" if isinstance(part, ImagePart) else "audio"
        block = {"type": kind, "data": part.data, "mimeType": part.mime_type}
    elif isinstance(part, ResourceLinkPart):
        block = {"type": "resource_link", "uri": part.uri, "name": part.name}
        for key, value in (
            ("title", part.title),
            ("description", part.description),
            ("mimeType", part.mime_type),
            ("size", part.size),
        ):
            if value is not None:
                block[key] = value
    elif isinstance(part, ResourcePart):
        resource: dict[str, Any] = {"uri": part.uri}
        if part.mime_type is not None:
            resource["mimeType"] = part.mime_type
        if part.text is not None:
            resource["text"] = part.text
        else:
            resource["blob"] = part.blob or ""
        block = {"type": "resource", "resource": resource}
    else:  # a part type this version does not know: its text view
        block = {"type": "text", "text": part_note(part)}
    if part.annotations:
        block["annotations"] = dict(part.annotations)
    if part.meta:
        block["_meta"] = dict(part.meta)
    return block


def parts_text(parts: Sequence[ContentPart], locale: str = "en") -> str:
    """The text view of `parts`: text as it is, anything else as a note, one block per line."""
    return "\n".join(note for note in (part_note(p, locale) for p in parts) if note)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The one result shape for every outcome: success, bad arguments, denial, timeout, crash.

    `content` is what the model reads. Programs branch on `error`, UIs show `summary` and `diff`.

    A result may also carry `parts` (images, audio, resources, in order, text included) and
    `structured` content. When `parts` is non-empty it is the full content and `content` is its
    text view (`parts_text`): formats that take images send the parts, the others the text.
    """

    ok: bool
    content: str
    """Text for the model; never a repr or a raw JSON dump of an object."""
    error: ErrorCode | None = None
    summary: str = ""
    """One line for a UI."""
    diff: str | None = None
    """A unified diff, for tools that change files."""
    issues: tuple[ValidationIssue, ...] = ()
    """For INVALID_ARGS: every problem with the arguments."""
    denial: Denial | None = None
    """For PERMISSION_DENIED (and root refusals): who refused and why."""
    duration: float = 0.0
    """Seconds from the start of the pipeline to the result."""
    metadata: Mapping[str, Any] = EMPTY
    """Data for programs and UIs; never sent to the model."""
    call_id: str = ""
    tool_name: str = ""
    parts: tuple[ContentPart, ...] = ()
    """The content as parts when it is more than text (see above); empty for text results."""
    structured: Mapping[str, Any] | None = None
    """Structured content (a JSON object), checked against the tool's `output_schema`."""

    @classmethod
    def success(
        cls,
        content: str = "",
        *,
        summary: str = "",
        diff: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parts: Sequence[ContentPart] = (),
        structured: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """A successful result, for tools that want to set summary, diff, metadata or parts.

        With `parts` and no `content`, the content is their text view.
        """
        parts = tuple(parts)
        if parts and not content:
            content = parts_text(parts)
        return cls(
            ok=True,
            content=content,
            summary=summary,
            diff=diff,
            metadata=metadata or EMPTY,
            parts=parts,
            structured=structured,
        )

    @classmethod
    def failure(
        cls,
        code: ErrorCode,
        content: str,
        *,
        summary: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """A failed result with a stable code and text telling the model what to do next."""
        return cls(
            ok=False, content=content, error=code, summary=summary, metadata=metadata or EMPTY
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Interrupted(ToolResult):
    """A call that has not run because it waits for the host.

    `approval` is set when this call itself needs approval; it is None when the call waits
    behind an earlier call of the same batch that does. Answer with `Runtime.resume`. If the
    host gives up instead, an `Interrupted` is still a valid result to send to the model.
    """

    approval: ApprovalRequest | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Preflight:
    """What `Runtime.check` found for a call that has not run: it would run, ask, or be refused.

    Nothing ran and nothing was stored: the stages up to the permission decision (resolve,
    parse, validate, the tool's own checks, pre-tool hooks, the policy) were evaluated as a
    real call would, and the call stopped there.
    """

    verdict: Literal["run", "ask", "refuse"]
    """`run`: allowed as it stands; `ask`: it needs approval; `refuse`: it would fail or be
    denied before running (see `refusal`)."""
    call: ToolCall
    """The call as it would run (a pre-tool hook may have rewritten its arguments)."""
    tool_name: str
    """The tool's canonical name (the call may have used an alias), or the name as given."""
    request: ApprovalRequest | None = None
    """For `ask`: what the host would be asked (reason, suggested rules)."""
    refusal: ToolResult | None = None
    """For `refuse`: the result the call would get (INVALID_ARGS, PERMISSION_DENIED, ...)."""

    @property
    def needs_approval(self) -> bool:
        """True when the call would ask (`verdict == "ask"`)."""
        return self.verdict == "ask"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressEvent:
    """A progress report from a running tool, delivered as soon as it happens."""

    call_id: str
    tool_name: str
    message: str
    data: Mapping[str, Any] = EMPTY


# The runtime builds a result or a call for every call it handles; a frozen dataclass's
# generated __init__ costs about 1.5 us more than these descriptor writes. They produce exactly
# what the normal constructor would (a test checks field by field).
_new = object.__new__
_RESULT_SETTERS = tuple(getattr(ToolResult, f.name).__set__ for f in fields(ToolResult))
_CALL_SETTERS = tuple(getattr(ToolCall, f.name).__set__ for f in fields(ToolCall))


def make_result(
    ok: bool,
    content: str,
    call_id: str,
    tool_name: str,
    duration: float,
    error: ErrorCode | None = None,
    summary: str = "",
    issues: tuple[ValidationIssue, ...] = (),
    denial: Denial | None = None,
    metadata: Mapping[str, Any] = EMPTY,
) -> ToolResult:
    """Fast construction of a `ToolResult` (no diff) for the runtime's hot path."""
    r = _new(ToolResult)
    (
        s_ok,
        s_content,
        s_error,
        s_summary,
        s_diff,
        s_issues,
        s_denial,
        s_dur,
        s_meta,
        s_id,
        s_name,
        s_parts,
        s_structured,
    ) = _RESULT_SETTERS
    s_ok(r, ok)
    s_content(r, content)
    s_error(r, error)
    s_summary(r, summary)
    s_diff(r, None)
    s_issues(r, issues)
    s_denial(r, denial)
    s_dur(r, duration)
    s_meta(r, metadata)
    s_id(r, call_id)
    s_name(r, tool_name)
    s_parts(r, ())
    s_structured(r, None)
    return r


def make_call(id: str, name: str, arguments: str | Mapping[str, Any]) -> ToolCall:
    """Fast construction of a `ToolCall` for the runtime's hot path."""
    c = _new(ToolCall)
    s0, s1, s2 = _CALL_SETTERS
    s0(c, id)
    s1(c, name)
    s2(c, arguments)
    return c
