"""The tool contract: @tool, the class form, raw-schema tools, names, flags, fail-closed defaults.

This module uses `from __future__ import annotations` on purpose: every annotation below is a
string, which `@tool` must resolve (module-level and function-local types alike).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from handrail import (
    ConfigurationError,
    ErrorCode,
    FunctionTool,
    Interrupted,
    JsonSchemaTool,
    Registry,
    Runtime,
    Tool,
    ToolContext,
    ToolKind,
    ToolResult,
    tool,
)

# -- helpers ---------------------------------------------------------------------------------


async def run_one(t: Tool, arguments: Any = "{}", name: str | None = None) -> ToolResult:
    rt = Runtime(Registry([t]))
    return await rt.call(name or t.name, arguments)


class Point(BaseModel):
    x: int
    y: int = 0


class GreetArgs(BaseModel):
    # No extra="forbid" here: the class form must refuse unknown fields anyway.
    who: str
    times: int = 1


# -- the three ways to write @tool -----------------------------------------------------------


def test_bare_decorator() -> None:
    @tool
    def ping() -> str:
        """Reply pong."""
        return "pong"

    assert isinstance(ping, FunctionTool)
    assert ping.name == "ping"
    assert ping.description == "Reply pong."


def test_decorator_with_options() -> None:
    @tool(name="say_hi", aliases=["hello"], kind=ToolKind.THINK, description="Say hi.", usage="U.")
    def hi(who: str) -> str:
        """Ignored docstring."""
        return f"hi {who}"

    assert isinstance(hi, FunctionTool)
    assert hi.name == "say_hi"
    assert hi.aliases == ("hello",)
    assert hi.kind is ToolKind.THINK
    assert hi.description == "Say hi."
    assert hi.usage == "U."


def test_plain_call_form() -> None:
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    t = tool(shout)
    assert isinstance(t, FunctionTool)
    assert t.name == "shout"
    assert t.parameters["properties"] == {"text": {"type": "string"}}
    assert t.parameters["required"] == ["text"]


async def test_all_decorator_forms_run_end_to_end() -> None:
    @tool(read_only=True)
    def sync_add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool(read_only=True)
    async def async_add(a: int, b: int) -> int:
        """Add, asynchronously."""
        await asyncio.sleep(0)
        return a + b

    def plain_add(a: int, b: int) -> int:
        """Add, plainly."""
        return a + b

    plain = tool(read_only=True)(plain_add)
    rt = Runtime(Registry([sync_add, async_add, plain]))
    for name in ("sync_add", "async_add", "plain_add"):
        result = await rt.call(name, '{"a": 2, "b": 3.0}')
        assert result.ok, result.content
        assert result.content == "5"
        assert result.error is None
        assert result.tool_name == name


def test_sync_and_async_are_told_apart() -> None:
    @tool
    def s() -> str:
        return ""

    @tool
    async def a() -> str:
        return ""

    assert s.is_async is False
    assert a.is_async is True


async def test_sync_tool_runs_off_the_event_loop_thread() -> None:
    import threading

    loop_thread = threading.get_ident()

    @tool(read_only=True)
    def where() -> str:
        """Report the thread."""
        return "loop" if threading.get_ident() == loop_thread else "worker"

    result = await run_one(where)
    assert result.content == "worker"


# -- string annotations ------------------------------------------------------------------------


async def test_string_annotations_with_a_module_level_model() -> None:
    @tool(read_only=True)
    def move(to: Point, label: str | None = None) -> str:
        """Move to a point."""
        return f"{to.x},{to.y} {label}"

    assert move.parameters["properties"]["to"] == {"$ref": "#/$defs/Point"}
    assert move.parameters["$defs"]["Point"]["required"] == ["x"]
    result = await run_one(move, '{"to": {"x": 1.0}}')
    assert result.content == "1,0 None"


async def test_string_annotations_with_a_model_defined_in_the_function() -> None:
    class Local(BaseModel):
        name: str
        size: int

    @tool(read_only=True)
    def describe(item: Local, items: list[Local] | None = None) -> str:
        """Describe an item."""
        return f"{item.name}={item.size} ({len(items or [])})"

    assert describe.parameters["properties"]["item"] == {"$ref": "#/$defs/Local"}
    result = await run_one(describe, '{"item": {"name": "a", "size": 2}, "items": []}')
    assert result.content == "a=2 (0)"
    bad = await run_one(describe, '{"item": {"name": "a", "size": "2"}}')
    assert bad.error is ErrorCode.INVALID_ARGS
    assert [i.path for i in bad.issues] == ["/item/size"]


def test_string_annotations_with_the_bare_call_form_and_a_local_model() -> None:
    class Local2(BaseModel):
        v: int

    def use(x: Local2) -> int:
        return x.v

    t = tool(use)
    assert t.validator.validate('{"x": {"v": 3}}').x.v == 3


def test_unresolvable_annotation_is_a_configuration_error() -> None:
    def broken(x: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    with pytest.raises(ConfigurationError):
        tool(broken)


# -- descriptions ------------------------------------------------------------------------------


def test_description_from_docstring_without_the_args_section() -> None:
    @tool
    def grep(pattern: str, path: str = ".") -> str:
        """Search file contents.

        Uses regular expressions; results are capped.

        Args:
            pattern: Regular expression to look for.
            path: Where to search.

        Returns:
            Matching lines.
        """
        return ""

    assert grep.description == (
        "Search file contents.\n\nUses regular expressions; results are capped."
    )
    assert "Args" not in grep.description
    assert "Regular expression to look for" not in grep.description
    props = grep.parameters["properties"]
    assert props["pattern"]["description"] == "Regular expression to look for."
    assert props["path"]["description"] == "Where to search."


def test_parameter_descriptions_from_annotated_field() -> None:
    @tool
    def fetch(
        url: Annotated[str, Field(description="The URL to fetch.")],
        timeout: Annotated[float, Field(description="Seconds to wait.", gt=0)] = 10.0,
    ) -> str:
        """Fetch a URL."""
        return url

    props = fetch.parameters["properties"]
    assert props["url"]["description"] == "The URL to fetch."
    assert props["timeout"]["description"] == "Seconds to wait."
    assert props["timeout"]["exclusiveMinimum"] == 0
    assert props["timeout"]["default"] == 10.0


def test_field_default_with_description() -> None:
    @tool
    def page(limit: int = Field(20, description="Page size.", ge=1)) -> str:
        """Page."""
        return str(limit)

    assert page.parameters["properties"]["limit"] == {
        "default": 20,
        "description": "Page size.",
        "minimum": 1,
        "type": "integer",
    }


def test_no_docstring_gives_an_empty_description() -> None:
    @tool
    def bare(x: int) -> int:
        return x

    assert bare.description == ""
    assert "description" not in bare.parameters["properties"]["x"]


def test_generated_schema_has_no_titles_and_forbids_extra() -> None:
    @tool
    def f(a: int, p: Point) -> str:
        return ""

    assert "title" not in f.parameters
    assert "title" not in f.parameters["properties"]["a"]
    assert "title" not in f.parameters["$defs"]["Point"]
    assert f.parameters["additionalProperties"] is False


async def test_parameter_names_that_are_basemodel_attributes() -> None:
    # `schema`, `json` and `copy` are ordinary parameter names for a tool; defining the tool
    # must not warn (warnings are errors in this test suite) and the values must arrive.
    @tool(read_only=True)
    def query_db(schema: str, json: bool = False, copy: int = 0) -> str:
        """Query a database schema."""
        return f"{schema} {json} {copy}"

    assert set(query_db.parameters["properties"]) == {"schema", "json", "copy"}
    result = await run_one(query_db, '{"schema": "public", "json": true, "copy": 2}')
    assert result.content == "public True 2"


# -- the context parameter -----------------------------------------------------------------------


async def test_tool_context_is_injected_and_not_in_the_schema() -> None:
    seen: dict[str, Any] = {}

    @tool(read_only=True)
    async def whoami(ctx: ToolContext, tag: str = "x") -> str:
        """Report the context."""
        seen["ctx"] = ctx
        return f"{ctx.tool_name} {ctx.call_id} {tag}"

    assert set(whoami.parameters["properties"]) == {"tag"}
    assert "ctx" not in whoami.parameters.get("required", [])
    result = await run_one(whoami, '{"tag": "y"}')
    assert result.ok, result.content
    assert result.content == f"whoami {result.call_id} y"
    assert isinstance(seen["ctx"], ToolContext)


async def test_sending_the_context_parameter_as_an_argument_is_refused() -> None:
    @tool(read_only=True)
    def needs(ctx: ToolContext) -> str:
        """Needs context."""
        return "ok"

    result = await run_one(needs, '{"ctx": 1}')
    assert result.error is ErrorCode.INVALID_ARGS
    assert [i.path for i in result.issues] == ["/ctx"]


async def test_sync_tool_gets_the_context_too() -> None:
    @tool(read_only=True)
    def cwd(ctx: ToolContext) -> str:
        """The working directory."""
        return str(ctx.cwd)

    rt = Runtime(Registry([cwd]))
    result = await rt.call("cwd")
    assert result.content == str(rt.cwd)


# -- class form --------------------------------------------------------------------------------


class Greet(Tool):
    name = "greet"
    description = "Greet someone."
    args_model = GreetArgs
    read_only = True

    async def run(self, args: GreetArgs, ctx: ToolContext) -> str:
        return " ".join([f"hello {args.who}"] * args.times)


class SyncGreet(Tool):
    name = "sync_greet"
    description = "Greet someone, synchronously."
    args_model = GreetArgs
    read_only = True

    def run(self, args: GreetArgs, ctx: ToolContext) -> str:
        return f"hi {args.who}"


async def test_class_form_runs_end_to_end() -> None:
    rt = Runtime(Registry([Greet(), SyncGreet]))
    result = await rt.call("greet", '{"who": "ann", "times": 2.0}')
    assert result.content == "hello ann hello ann"
    sync = await rt.call("sync_greet", '{"who": "bob"}')
    assert sync.content == "hi bob"


def test_class_form_schema_comes_from_args_model() -> None:
    g = Greet()
    assert g.parameters["properties"]["who"] == {"type": "string"}
    assert g.parameters["required"] == ["who"]
    assert g.is_async is True
    assert SyncGreet().is_async is False


async def test_instances_of_a_class_share_the_schema_work_but_not_the_schema() -> None:
    # The schema is worked out once per model (a session builds a dozen tools); a caller
    # editing one instance's schema (a description, say) leaves every other instance alone.
    first, second = Greet(), Greet()
    assert first.parameters == second.parameters
    first.parameters["properties"]["who"]["description"] = "only here"
    assert "description" not in second.parameters["properties"]["who"]
    assert "description" not in Greet().parameters["properties"]["who"]
    result = await run_one(second, '{"who": "ann", "Who": "x"}')
    assert [i.path for i in result.issues] == ["/Who"]


async def test_class_form_refuses_unknown_fields_without_extra_forbid() -> None:
    assert GreetArgs.model_config.get("extra") is None
    result = await run_one(Greet(), '{"who": "ann", "Who": "x"}')
    assert result.error is ErrorCode.INVALID_ARGS
    assert [i.path for i in result.issues] == ["/Who"]
    assert result.issues[0].message == "unknown field `Who`; did you mean `who`?"
    # The user's model itself is left alone.
    assert GreetArgs.model_validate({"who": "a", "extra": 1}).who == "a"


def test_class_form_keeps_an_explicit_extra_setting() -> None:
    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")
        a: int

    class LooseTool(Tool):
        name = "loose"
        args_model = Loose

    args = LooseTool().validator.validate('{"a": 1, "b": 2}')
    assert args.a == 1


def test_class_form_without_a_model_is_a_configuration_error() -> None:
    class NoModel(Tool):
        name = "no_model"

    with pytest.raises(ConfigurationError):
        NoModel()


def test_class_form_with_a_bad_name_is_a_configuration_error() -> None:
    class BadName(Tool):
        name = "bad name"
        args_model = GreetArgs

    with pytest.raises(ConfigurationError):
        BadName()


def test_unknown_tool_option_is_a_configuration_error() -> None:
    def f() -> str:
        return ""

    with pytest.raises(ConfigurationError):
        tool(readonly=True)(f)  # pyright: ignore[reportCallIssue]


# -- raw JSON Schema tools ---------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["n"],
    "additionalProperties": False,
}


async def test_from_json_schema_handler_forms() -> None:
    def sync_args(args: dict[str, Any]) -> str:
        return f"sync {args['n']}"

    def sync_ctx(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"sync-ctx {args['n']} {ctx.tool_name}"

    async def async_args(args: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return f"async {args['n']}"

    async def async_ctx(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"async-ctx {args['n']} {ctx.tool_name}"

    tools = [
        Tool.from_json_schema("t_sync", "Sync.", SCHEMA, sync_args, read_only=True),
        Tool.from_json_schema("t_sync_ctx", "Sync ctx.", SCHEMA, sync_ctx, read_only=True),
        Tool.from_json_schema("t_async", "Async.", SCHEMA, async_args, read_only=True),
        Tool.from_json_schema("t_async_ctx", "Async ctx.", SCHEMA, async_ctx, read_only=True),
    ]
    assert all(isinstance(t, JsonSchemaTool) for t in tools)
    assert [t.is_async for t in tools] == [False, False, True, True]
    rt = Runtime(Registry(tools))
    contents = [(await rt.call(t.name, '{"n": 4}')).content for t in tools]
    assert contents == [
        "sync 4",
        "sync-ctx 4 t_sync_ctx",
        "async 4",
        "async-ctx 4 t_async_ctx",
    ]


async def test_from_json_schema_handler_gets_a_dict_and_bad_input_is_refused() -> None:
    got: list[Any] = []
    t = Tool.from_json_schema("rec", "Record.", SCHEMA, got.append, read_only=True)
    assert t.description == "Record."
    assert t.parameters == SCHEMA
    await run_one(t, '{"n": 1, "label": "x"}')
    assert got == [{"n": 1, "label": "x"}]
    bad = await run_one(t, '{"n": "1", "lable": "x"}')
    assert bad.error is ErrorCode.INVALID_ARGS
    assert sorted(i.path for i in bad.issues) == ["/lable", "/n"]
    assert got == [{"n": 1, "label": "x"}]


# -- names and aliases -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["has space", "a" * 65, "", "dots.not.ok", "slash/no", "ünï"])
def test_invalid_names_are_configuration_errors(bad: str) -> None:
    def f() -> str:
        return ""

    with pytest.raises(ConfigurationError):
        tool(name=bad)(f)
    with pytest.raises(ConfigurationError):
        Tool.from_json_schema(bad, "d", SCHEMA, lambda a: a)


@pytest.mark.parametrize("bad", ["has space", "a" * 65, ""])
def test_invalid_aliases_are_configuration_errors(bad: str) -> None:
    def f() -> str:
        return ""

    with pytest.raises(ConfigurationError):
        tool(aliases=[bad])(f)
    with pytest.raises(ConfigurationError):
        Tool.from_json_schema("ok", "d", SCHEMA, lambda a: a, aliases=(bad,))


@pytest.mark.parametrize("good", ["mcp__github__search", "a" * 64, "A-b_9", "x"])
def test_valid_names_are_accepted(good: str) -> None:
    def f() -> str:
        return ""

    assert tool(name=good)(f).name == good
    assert tool(name="other", aliases=[good])(f).aliases == (good,)


async def test_alias_calls_reach_the_tool() -> None:
    @tool(read_only=True, aliases=["old_name"])
    def new_name() -> str:
        """Renamed."""
        return "here"

    result = await run_one(new_name, "{}", name="old_name")
    assert result.ok
    assert result.content == "here"
    assert result.tool_name == "new_name"


# -- flags -------------------------------------------------------------------------------------


def _function_tool(**options: Any) -> Tool:
    def flags(n: int = 0) -> str:
        return ""

    return tool(**options)(flags)


def _class_tool() -> Tool:
    class Plain(Tool):
        name = "plain"
        args_model = GreetArgs

    return Plain()


def _schema_tool() -> Tool:
    return Tool.from_json_schema("raw", "Raw.", SCHEMA, lambda a: a)


@pytest.mark.parametrize("make", [_function_tool, _class_tool, _schema_tool])
def test_defaults_fail_closed(make: Any) -> None:
    t: Tool = make()
    assert t.read_only is False
    assert t.concurrency_safe is False
    assert t.destructive is True
    assert t.idempotent is False
    assert t.deferred is False
    assert t.kind is ToolKind.OTHER
    assert t.is_read_only(None) is False
    assert t.is_concurrency_safe(None) is False
    assert t.is_destructive(None) is True
    assert t.may_be_read_only() is False


async def test_default_tool_is_not_run_without_approval() -> None:
    ran: list[int] = []

    @tool
    def change(n: int) -> str:
        """Change something."""
        ran.append(n)
        return "changed"

    result = await run_one(change, '{"n": 1}')
    assert isinstance(result, Interrupted)
    assert result.error is ErrorCode.INTERRUPTED
    assert result.approval is not None
    assert ran == []


def test_read_only_implies_not_destructive_unless_stated() -> None:
    assert _function_tool(read_only=True).destructive is False
    assert _function_tool(read_only=True, destructive=True).destructive is True
    assert Tool.from_json_schema("r", "R.", SCHEMA, print, read_only=True).destructive is False


def test_class_form_read_only_implies_not_destructive() -> None:
    class Reader(Tool):
        name = "reader"
        args_model = GreetArgs
        read_only = True

    assert Reader().destructive is False
    assert Reader().is_destructive(None) is False


def test_class_form_explicit_destructive_is_kept_with_read_only() -> None:
    class Odd(Tool):
        name = "odd"
        args_model = GreetArgs
        read_only = True
        destructive = True

    assert Odd().destructive is True


def test_flags_are_functions_of_the_validated_input() -> None:
    t = _function_tool(
        read_only=lambda args: args.n == 0,
        concurrency_safe=lambda args: args.n < 10,
        destructive=lambda args: args.n > 100,
        idempotent=lambda args: args.n % 2 == 0,
    )
    zero = t.validator.validate('{"n": 0}')
    big = t.validator.validate('{"n": 101}')
    assert (t.is_read_only(zero), t.is_read_only(big)) == (True, False)
    assert (t.is_concurrency_safe(zero), t.is_concurrency_safe(big)) == (True, False)
    assert (t.is_destructive(zero), t.is_destructive(big)) == (False, True)
    assert (t.is_idempotent(zero), t.is_idempotent(big)) == (True, False)
    assert t.may_be_read_only() is True


def test_a_flag_function_that_raises_counts_as_false() -> None:
    def boom(args: Any) -> bool:
        raise RuntimeError("cannot decide")

    t = _function_tool(read_only=boom, concurrency_safe=boom, destructive=boom, idempotent=boom)
    args = t.validator.validate("{}")
    assert t.is_read_only(args) is False
    assert t.is_concurrency_safe(args) is False
    assert t.is_destructive(args) is False
    assert t.is_idempotent(args) is False


async def test_input_dependent_read_only_through_the_runtime() -> None:
    def boom(args: Any) -> bool:
        raise RuntimeError("cannot decide")

    @tool(read_only=lambda args: args.path.startswith("docs/"))
    def touch(path: str) -> str:
        """Touch a path."""
        return f"touched {path}"

    @tool(read_only=boom)
    def unsure() -> str:
        """Cannot tell."""
        return "ran"

    rt = Runtime(Registry([touch, unsure]))
    allowed = await rt.call("touch", '{"path": "docs/a.md"}')
    assert allowed.ok
    assert allowed.content == "touched docs/a.md"
    asked = await rt.call("touch", '{"path": "src/a.py"}')
    assert isinstance(asked, Interrupted)
    failed_closed = await rt.call("unsure")
    assert isinstance(failed_closed, Interrupted)


# -- other setup errors ------------------------------------------------------------------------


def test_inline_sync_tool_with_timeout_is_a_configuration_error() -> None:
    def quick() -> str:
        return ""

    with pytest.raises(ConfigurationError):
        tool(inline=True, timeout=1.0)(quick)
    with pytest.raises(ConfigurationError):
        Tool.from_json_schema("q", "Q.", SCHEMA, lambda a: a, inline=True, timeout=1.0)


def test_inline_alone_or_timeout_alone_is_fine() -> None:
    def quick() -> str:
        return ""

    assert tool(inline=True)(quick).inline is True
    assert tool(timeout=1.0)(quick).timeout == 1.0


def test_inline_with_timeout_is_fine_for_async_tools() -> None:
    # `inline` only concerns sync tools; an async tool can always be stopped at its timeout.
    async def quick() -> str:
        return ""

    async def handler(args: dict[str, Any]) -> str:
        return ""

    assert tool(inline=True, timeout=1.0)(quick).timeout == 1.0
    assert Tool.from_json_schema("q", "Q.", SCHEMA, handler, inline=True, timeout=1.0).is_async


def test_var_args_and_kwargs_are_configuration_errors() -> None:
    def star(*args: int) -> str:
        return ""

    def double_star(a: int, **kwargs: int) -> str:
        return ""

    with pytest.raises(ConfigurationError):
        tool(star)
    with pytest.raises(ConfigurationError):
        tool(double_star)


def test_positional_only_parameters_are_configuration_errors() -> None:
    def pos(a: int, /) -> str:
        return ""

    with pytest.raises(ConfigurationError):
        tool(pos)


@pytest.mark.parametrize("bad", [0, -1.0])
def test_non_positive_timeout_is_a_configuration_error(bad: float) -> None:
    def f() -> str:
        return ""

    with pytest.raises(ConfigurationError):
        tool(timeout=bad)(f)
