"""The tool contract: `Tool`, the `@tool` decorator, and raw-JSON-Schema tools.

A tool declares its name, aliases, description, usage notes, kind, input schema and behaviour
flags; the runtime does everything else. Defaults fail closed: a tool is not read-only, not
concurrency-safe, and destructive until it says otherwise.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, ClassVar, cast, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from ._context import ToolContext
from ._contract import PermissionRequest, ToolKind
from .display import CallView, Display, default_display
from .errors import ConfigurationError
from .validation import ArgsValidator, JsonSchemaArgs, OutputSchema, PydanticArgs

__all__ = ["Flag", "FunctionTool", "JsonSchemaTool", "Tool", "tool"]

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DEFAULT_MAX_RESULT_CHARS = 30_000

Flag = bool | Callable[[Any], bool]
"""A behaviour flag: fixed, or decided from the validated arguments."""


def check_name(name: str, what: str = "tool name") -> str:
    """Refuse names that OpenAI or Anthropic would reject on the wire."""
    if not isinstance(name, str) or not NAME_RE.match(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(
            f"invalid {what} {name!r}: use 1-64 characters from a-z, A-Z, 0-9, '_' and '-' "
            "(namespaced tools join parts with '__', e.g. 'mcp__github__search')"
        )
    return name


def _eval_flag(flag: Flag, args: Any) -> bool:
    if flag is True or flag is False:
        return flag
    try:
        return bool(flag(args))
    except Exception:
        return False  # a flag that cannot decide fails closed


class Tool:
    """Base class of every tool. Subclass it (class form), or use `@tool` / `from_json_schema`.

    Class form: set the class attributes, give `args_model` a Pydantic model, and implement
    `run`. Unknown fields are refused even if the model does not say `extra="forbid"`.

    ```python
    class Greet(Tool):
        name = "greet"
        description = "Greet someone."
        args_model = GreetArgs
        read_only = True

        async def run(self, args: GreetArgs, ctx: ToolContext) -> str:
            return f"hello {args.who}"
    ```
    """

    name: str = ""
    """Wire name, `^[a-zA-Z0-9_-]{1,64}$`; never renamed once published (add an alias)."""
    aliases: tuple[str, ...] = ()
    """Old names that keep working forever."""
    description: str = ""
    """What the tool does and when to use it: the model reads this to decide."""
    usage: str = ""
    """Usage notes for the system prompt (rules, pitfalls), kept out of the tool list."""
    kind: ToolKind = ToolKind.OTHER
    read_only: Flag = False
    """Changes nothing. Read-only calls are allowed in the default and plan modes."""
    concurrency_safe: Flag = False
    """May run alongside other concurrency-safe calls."""
    destructive: Flag = True
    """May destroy data (overwrite, delete)."""
    idempotent: Flag = False
    """Running it twice with the same arguments has the effect of running it once."""
    timeout: float | None = None
    """Seconds before the call is stopped with TIMEOUT (None: the runtime's default)."""
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    """Longer content is cut to head and tail; the full text is saved to a file."""
    providers: tuple[str, ...] | None = None
    """Providers this tool is offered to (None: all)."""
    feature: str | None = None
    """Feature flag that must be on for the tool to be listed."""
    deferred: bool = False
    """Hidden from the model until activated through tool_search."""
    output_schema: Mapping[str, Any] | None = None
    """JSON Schema of the tool's structured content (an object). When set, every successful
    result must carry `structured` content that matches it (a returned dict or Pydantic model
    becomes it); MCP clients of `serve` see it as the tool's `outputSchema`."""
    inline: bool = False
    """Run a sync tool on the event loop thread instead of a worker thread. Only for quick,
    CPU-only functions: it saves the thread hop (tens of microseconds) but blocks the loop for
    as long as the function runs, and cannot be stopped by a timeout."""
    args_model: ClassVar[type[BaseModel] | None] = None
    """Class form: the Pydantic model of the arguments."""

    validator: ArgsValidator
    output_check: OutputSchema | None = None
    """The compiled `output_schema` (None without one)."""
    needs_context: bool = True
    """False when the tool never looks at its context (lets the runtime skip building one)."""

    def __init__(self, **options: Any) -> None:
        for key, value in options.items():
            if key not in _OPTIONS:
                raise ConfigurationError(f"unknown tool option {key!r}")
            setattr(self, key, value)
        if not hasattr(self, "validator"):
            model = type(self).args_model
            if model is None:
                raise ConfigurationError(
                    f"tool {self.name or type(self).__name__!r} has no input schema: set "
                    "`args_model` to a Pydantic model, or use @tool / Tool.from_json_schema"
                )
            self.validator = _arguments_of(model).copy()
        self._finish()

    def _finish(self) -> None:
        check_name(self.name)
        self.aliases = tuple(self.aliases)
        for alias in self.aliases:
            check_name(alias, "alias")
        stated = "destructive" in vars(self) or any(
            "destructive" in vars(c) for c in type(self).__mro__ if c is not Tool
        )
        if self.read_only is True and not stated:
            self.destructive = False  # read-only implies non-destructive unless stated
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigurationError(f"tool {self.name!r}: timeout must be positive seconds")
        if self.max_result_chars < 200:
            raise ConfigurationError(f"tool {self.name!r}: max_result_chars must be >= 200")
        self.output_check = OutputSchema(self.output_schema) if self.output_schema else None
        if "is_async" not in vars(self):
            self.is_async = inspect.iscoroutinefunction(self.run)
        self._check_inline()

    def _check_inline(self) -> None:
        if self.inline and self.timeout is not None and not self.is_async:
            raise ConfigurationError(
                f"tool {self.name!r}: an inline sync tool cannot have a timeout (it could not be "
                "stopped); drop `inline=True` so it runs on a worker thread, or drop the timeout"
            )

    # -- what the runtime calls --------------------------------------------------------------

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as the model sees it."""
        return self.validator.schema

    def run(self, args: Any, ctx: ToolContext) -> Any:
        """Do the work; sync (run on a worker thread) or async.

        Return text, any value (rendered as readable text), or a `ToolResult`; raise
        `ToolFailure` to fail with a specific code.
        """
        raise NotImplementedError

    def validate_input(self, args: Any, ctx: ToolContext) -> str | Awaitable[str | None] | None:
        """Business rules, checked after the schema and before permissions.

        Do cheap checks before any I/O. Return a message (the call ends INVALID_ARGS) or raise
        `ToolFailure`; None means fine.
        """
        return None

    def permission_requests(self, args: Any, ctx: ToolContext) -> Sequence[PermissionRequest]:
        """What the call is about to touch (paths, commands, URLs), for the central policy."""
        return ()

    def is_read_only(self, args: Any) -> bool:
        """The `read_only` flag for these arguments."""
        return _eval_flag(self.read_only, args)

    def is_concurrency_safe(self, args: Any) -> bool:
        """The `concurrency_safe` flag for these arguments."""
        return _eval_flag(self.concurrency_safe, args)

    def is_destructive(self, args: Any) -> bool:
        """The `destructive` flag for these arguments."""
        return _eval_flag(self.destructive, args)

    def is_idempotent(self, args: Any) -> bool:
        """The `idempotent` flag for these arguments."""
        return _eval_flag(self.idempotent, args)

    def display(self, view: CallView) -> Display:
        """How this call looks in `view.status` (running, waiting, done, failed, ...).

        Plain data for any UI: a title, a subtitle, a group, progress and a body. The default
        is built from the tool's kind, name and result; override it to say more (and start
        from `super().display(view)`). It must be quick and do no I/O; if it raises, UIs fall
        back to the default.
        """
        return default_display(view, name=self.name, kind=self.kind)

    def may_be_read_only(self) -> bool:
        """True unless the tool is never read-only (an input-dependent flag might be)."""
        return self.read_only is not False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    @staticmethod
    def from_json_schema(
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        handler: Callable[..., Any],
        **options: Any,
    ) -> JsonSchemaTool:
        """A tool whose arguments are checked against a raw JSON Schema (the MCP case).

        `handler(args)` or `handler(args, ctx)` receives the validated arguments as a dict;
        it may be sync or async.
        """
        return JsonSchemaTool(
            name=name, description=description, parameters=parameters, handler=handler, **options
        )


_OPTIONS = frozenset(
    {
        "name",
        "aliases",
        "description",
        "usage",
        "kind",
        "read_only",
        "concurrency_safe",
        "destructive",
        "idempotent",
        "timeout",
        "max_result_chars",
        "providers",
        "feature",
        "deferred",
        "inline",
        "output_schema",
    }
)


@functools.lru_cache(maxsize=1024)
def _arguments_of(model: type[BaseModel]) -> PydanticArgs:
    # Building the schema costs about a millisecond a tool: a session that makes a dozen tools
    # (coding_tools) would spend most of its start there. Bounded, for models made on the fly.
    return PydanticArgs(_forbid_extra(model))


def _forbid_extra(model: type[BaseModel]) -> type[BaseModel]:
    if model.model_config.get("extra") is not None:
        return model
    config = ConfigDict(**{**model.model_config, "extra": "forbid"})  # pyright: ignore[reportArgumentType]
    return cast(type[BaseModel], type(model.__name__, (model,), {"model_config": config}))


def _accepts_context(handler: Callable[..., Any]) -> bool:
    try:
        params = [
            p
            for p in inspect.signature(handler).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2


class JsonSchemaTool(Tool):
    """A tool defined by a raw JSON Schema and a handler; see `Tool.from_json_schema`."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        handler: Callable[..., Any],
        **options: Any,
    ) -> None:
        self.validator = JsonSchemaArgs(parameters)
        self.handler = handler
        self._with_ctx = _accepts_context(handler)
        self.needs_context = self._with_ctx
        self.is_async = inspect.iscoroutinefunction(handler)
        super().__init__(name=name, description=description, **options)

    def run(self, args: Any, ctx: ToolContext) -> Any:
        """Call the handler with the validated arguments."""
        if self._with_ctx:
            return self.handler(args, ctx)
        return self.handler(args)


class FunctionTool(Tool):
    """A tool made from a typed function by `@tool`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        localns: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self.fn = fn
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        model, ctx_param, renamed = _args_model(fn, doc, localns)
        self.validator = PydanticArgs(model)
        self._ctx_param = ctx_param
        self.needs_context = ctx_param is not None
        self._renamed = renamed
        options.setdefault("name", fn.__name__)
        if "description" not in options:
            options["description"] = _description(doc)
        self.is_async = inspect.iscoroutinefunction(fn)
        super().__init__(**options)

    def run(self, args: Any, ctx: ToolContext) -> Any:
        """Call the function with the validated fields (and the context, if it asks for one)."""
        # The model forbids extra fields, so its __dict__ is exactly the function's parameters.
        kwargs: dict[str, Any] = args.__dict__
        if self._renamed:
            kwargs = {self._renamed.get(k, k): v for k, v in kwargs.items()}
        if self._ctx_param is None:
            return self.fn(**kwargs)
        return self.fn(**kwargs, **{self._ctx_param: ctx})


def _description(doc: docstring_parser.Docstring) -> str:
    parts = [p for p in (doc.short_description, doc.long_description) if p]
    return "\n\n".join(parts).strip()


def _hints(fn: Callable[..., Any], localns: Mapping[str, Any] | None) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True, localns=dict(localns or {}))
    except NameError as exc:
        raise ConfigurationError(
            f"cannot resolve the type hints of tool function {fn.__qualname__!r}: {exc}. "
            "Define the types it uses at module level, or pass them where @tool can see them."
        ) from exc


def _field_name(param: str) -> str | None:
    """A safe model field name for a parameter whose own name Pydantic cannot use."""
    if param.startswith(("_", "model_")) or hasattr(BaseModel, param):
        return "p_" + param.lstrip("_") + "_"
    return None


def _args_model(
    fn: Callable[..., Any],
    doc: docstring_parser.Docstring,
    localns: Mapping[str, Any] | None,
) -> tuple[type[BaseModel], str | None, dict[str, str]]:
    hints = _hints(fn, localns)
    docs = {p.arg_name: (p.description or "").strip() for p in doc.params}
    fields: dict[str, Any] = {}
    renamed: dict[str, str] = {}
    ctx_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(
                f"tool function {fn.__qualname__!r} takes *args/**kwargs: "
                "tools need named parameters"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ConfigurationError(
                f"tool function {fn.__qualname__!r}: positional-only parameters "
                "cannot be named in JSON"
            )
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            ctx_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        description = docs.get(param.name) or None
        if _has_field_description(annotation):
            description = None
        extra: dict[str, Any] = {}
        if description is not None:
            extra["description"] = description
        field_name = _field_name(param.name)
        if field_name is not None:
            # `schema`, `json`, `_x`, `model_x`: valid parameters, reserved in Pydantic models.
            renamed[field_name] = param.name
            extra["alias"] = param.name
        if isinstance(default, FieldInfo):
            if extra:
                annotation = Annotated[annotation, Field(**extra)]
            fields[field_name or param.name] = (annotation, default)
        else:
            fields[field_name or param.name] = (annotation, Field(default, **extra))
    model_name = "".join(w.capitalize() for w in fn.__name__.split("_")) + "Args"
    # NaN and Infinity are not JSON; refusing them keeps both tracks' verdicts equal.
    config = ConfigDict(extra="forbid", protected_namespaces=(), allow_inf_nan=False)
    model: type[BaseModel] = create_model(model_name, __config__=config, **fields)
    return model, ctx_param, renamed


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext or (
        typing.get_origin(annotation) is typing.Annotated
        and typing.get_args(annotation)[0] is ToolContext
    )


def _has_field_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(
        isinstance(meta, FieldInfo) and meta.description for meta in typing.get_args(annotation)[1:]
    )


def _caller_locals(depth: int) -> Mapping[str, Any]:
    # Tools defined inside a function may refer to types local to it; string annotations
    # (`from __future__ import annotations`) can only be resolved with that frame's names.
    try:
        frame = sys._getframe(depth)  # pyright: ignore[reportPrivateUsage]
    except ValueError:
        return {}
    return dict(frame.f_locals)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    aliases: Sequence[str] = (),
    description: str | None = None,
    usage: str = "",
    kind: ToolKind = ToolKind.OTHER,
    read_only: Flag = False,
    concurrency_safe: Flag = False,
    destructive: Flag = True,
    idempotent: Flag = False,
    timeout: float | None = None,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    providers: Sequence[str] | None = None,
    feature: str | None = None,
    deferred: bool = False,
    inline: bool = False,
    output_schema: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, **options: Any
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function (sync or async) into a tool.

    The schema comes from the signature (via Pydantic), the description from the docstring,
    parameter descriptions from its `Args:` section or `Annotated[..., Field(description=...)]`.
    A parameter annotated `ToolContext` receives the call's context and is not in the schema.

    ```python
    @tool(read_only=True, concurrency_safe=True)
    async def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b
    ```
    """
    if "aliases" in options:
        options["aliases"] = tuple(options["aliases"])
    if options.get("providers") is not None:
        options["providers"] = tuple(options["providers"])
    if options.get("description") is None:
        options.pop("description", None)
    if options.get("name") is None:
        options.pop("name", None)
    if fn is not None:
        return FunctionTool(fn, localns=_caller_locals(2), **options)
    localns = _caller_locals(2)

    def decorate(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, localns=localns, **options)

    return decorate
