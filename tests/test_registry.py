"""The registry: stable order, lookup, filters, deferred tools and tool_search."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handrail import (
    ConfigurationError,
    ErrorCode,
    PermissionMode,
    Registry,
    Runtime,
    Session,
    Tool,
    ToolKind,
    tool,
)


def make(name: str, description: str | None = None, **options: Any) -> Tool:
    """A small tool named `name` that echoes its query."""

    def fn(query: str = "") -> str:
        return f"{name}:{query}"

    fn.__name__ = name
    fn.__doc__ = description or f"The {name} tool."
    return tool(**options)(fn)


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


def wire(tools: list[Tool]) -> str:
    """What a provider would send: name, description and schema of each tool, in order."""
    return json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools],
        sort_keys=True,
    )


# -- order and lookup ----------------------------------------------------------------------------


def test_order_is_local_sorted_then_imported_sorted() -> None:
    local = [make("delta"), make("alpha"), make("charlie")]
    imported = [make("zulu"), make("bravo_mcp"), make("aardvark")]
    reg = Registry(local, imported=imported)
    assert names(reg.list()) == ["alpha", "charlie", "delta", "aardvark", "bravo_mcp", "zulu"]
    assert names(reg.all()) == names(reg.list())


def test_order_does_not_depend_on_insertion_order() -> None:
    a, b, c = make("a_tool"), make("b_tool"), make("c_tool")
    x, y = make("x_imp"), make("y_imp")
    first = Registry([c, a, b], imported=[y, x])
    second = Registry([b, c, a], imported=[x, y])
    third = Registry()
    for t in (y,):
        third.add(t, imported=True)
    for t in (b, a, c):
        third.add(t)
    third.add(x, imported=True)
    assert names(first.list()) == names(second.list()) == names(third.list())
    assert wire(first.list()) == wire(second.list()) == wire(third.list())


def test_lookup_by_name_and_alias() -> None:
    t = make("read_file", aliases=["Read", "view"])
    reg = Registry([t])
    assert reg.get("read_file") is t
    assert reg.get("Read") is t
    assert reg.get("view") is t
    assert reg.get("read") is None
    assert "view" in reg
    assert "nope" not in reg
    assert names(reg.list()) == ["read_file"]  # an alias is not a second tool


def test_registry_accepts_tool_classes() -> None:
    from pydantic import BaseModel

    class Args(BaseModel):
        q: str

    class Cls(Tool):
        name = "cls_tool"
        args_model = Args

    reg = Registry([Cls])
    assert isinstance(reg.get("cls_tool"), Cls)


def test_non_tool_is_a_configuration_error() -> None:
    def plain() -> str:
        return ""

    with pytest.raises(ConfigurationError):
        Registry([plain])  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (make("same"), make("same")),
        (make("one", aliases=["shared"]), make("shared")),
        (make("one", aliases=["shared"]), make("two", aliases=["shared"])),
        (make("one"), make("two", aliases=["one"])),
    ],
)
def test_duplicate_name_or_alias_is_a_configuration_error(first: Tool, second: Tool) -> None:
    with pytest.raises(ConfigurationError):
        Registry([first, second])
    with pytest.raises(ConfigurationError):
        Registry([first], imported=[second])
    with pytest.raises(ConfigurationError):
        Registry([first]).merge(Registry([second]))
    with pytest.raises(ConfigurationError):
        Registry([first]).merge(Registry(imported=[second]))


def test_merge_keeps_the_imported_partition() -> None:
    local_a, local_z = make("a_local"), make("z_local")
    mcp_b = make("b_mcp")
    merged = Registry([local_z]).merge(Registry(imported=[mcp_b]), Registry([local_a]))
    assert names(merged.list()) == ["a_local", "z_local", "b_mcp"]
    assert merged.is_imported(mcp_b)
    assert not merged.is_imported(local_a)


def test_merge_returns_a_new_registry_and_keeps_disabled() -> None:
    a, b = make("a_tool"), make("b_tool")
    left = Registry([a], disabled=["a_tool"])
    right = Registry([b])
    merged = left.merge(right)
    assert names(merged.list()) == ["b_tool"]
    assert names(left.list()) == []
    assert names(right.list()) == ["b_tool"]


def test_merge_keeps_each_registrys_feature_flags() -> None:
    # Like `disabled`, a registry's feature configuration must survive a merge: a tool that its
    # own registry lists must not vanish because it was merged into another one.
    flagged = make("beta_tool", feature="beta")
    own = Registry([flagged], features={"beta": True})
    assert names(own.list()) == ["beta_tool"]
    assert names(Registry([make("base")]).merge(own).list()) == ["base", "beta_tool"]


# -- filters -----------------------------------------------------------------------------------


def test_disabled_tools_are_hidden() -> None:
    reg = Registry([make("keep"), make("drop")], disabled=["drop"])
    assert names(reg.list()) == ["keep"]
    assert reg.get("drop") is not None  # still known, just not offered


def test_feature_flags_from_a_mapping() -> None:
    tools = [make("base"), make("beta_tool", feature="beta"), make("gamma_tool", feature="gamma")]
    assert names(Registry(tools).list()) == ["base"]  # flags not configured are off
    reg = Registry(tools, features={"beta": True, "gamma": False})
    assert names(reg.list()) == ["base", "beta_tool"]


def test_feature_flags_from_a_callable() -> None:
    tools = [make("base"), make("beta_tool", feature="beta"), make("gamma_tool", feature="gamma")]
    reg = Registry(tools, features=lambda flag: flag == "gamma")
    assert names(reg.list()) == ["base", "gamma_tool"]


def test_provider_filter() -> None:
    tools = [
        make("everywhere"),
        make("anthropic_only", providers=("anthropic",)),
        make("openai_or_gemini", providers=["openai", "gemini"]),
    ]
    reg = Registry(tools)
    assert names(reg.list(provider="openai")) == ["everywhere", "openai_or_gemini"]
    assert names(reg.list(provider="anthropic")) == ["anthropic_only", "everywhere"]
    assert names(reg.list()) == ["anthropic_only", "everywhere", "openai_or_gemini"]


def test_plan_mode_lists_only_tools_that_may_be_read_only() -> None:
    tools = [
        make("reader", read_only=True),
        make("writer"),
        make("sometimes", read_only=lambda args: args.query == ""),
    ]
    reg = Registry(tools)
    assert names(reg.list(mode="plan")) == ["reader", "sometimes"]
    assert names(reg.list(mode=PermissionMode.PLAN)) == ["reader", "sometimes"]
    assert names(reg.list(session=Session(mode=PermissionMode.PLAN))) == ["reader", "sometimes"]
    assert names(reg.list(mode="default")) == ["reader", "sometimes", "writer"]


def test_filters_are_anded() -> None:
    tools = [
        make("ok_tool", read_only=True),
        make("disabled_tool", read_only=True),
        make("flag_off", read_only=True, feature="off"),
        make("flag_on", read_only=True, feature="on"),
        make("anthropic_tool", read_only=True, providers=("anthropic",)),
        make("writer", feature="on"),
    ]
    reg = Registry(tools, disabled=["disabled_tool"], features={"on": True})
    assert names(reg.list(provider="openai", mode="plan")) == ["flag_on", "ok_tool"]
    assert names(reg.list(provider="anthropic", mode="plan")) == [
        "anthropic_tool",
        "flag_on",
        "ok_tool",
    ]
    assert names(reg.list(provider="openai")) == ["flag_on", "ok_tool", "writer"]


def test_views_by_kind_and_read_only() -> None:
    tools = [
        make("read_file", kind=ToolKind.READ, read_only=True),
        make("grep", kind=ToolKind.SEARCH, read_only=True),
        make("edit_file", kind=ToolKind.EDIT),
        make("run", kind=ToolKind.EXECUTE, read_only=lambda args: args.query.startswith("ls")),
        make("rm", kind=ToolKind.DELETE, feature="danger"),
    ]
    reg = Registry(tools)
    assert names(reg.by_kind(ToolKind.READ)) == ["read_file"]
    assert names(reg.by_kind("edit")) == ["edit_file"]
    assert names(reg.by_kind(ToolKind.DELETE)) == []  # the feature flag is off
    assert names(reg.read_only_tools()) == ["grep", "read_file", "run"]
    assert names(reg.writing_tools()) == ["edit_file"]
    assert names(reg.read_only_tools(provider="openai")) == ["grep", "read_file", "run"]


# -- deferred tools ----------------------------------------------------------------------------


def deferred_registry() -> Registry:
    return Registry(
        [
            make("alpha", read_only=True),
            make("bravo", read_only=True),
            make(
                "github_issues",
                "List the issues of a GitHub repository.",
                deferred=True,
                read_only=True,
            ),
            make(
                "github_pulls",
                "List the pull requests of a GitHub repository.",
                deferred=True,
                read_only=True,
            ),
            make("weather", "Get the weather forecast for a city.", deferred=True, read_only=True),
        ],
        imported=[make("zeta_mcp", read_only=True)],
    )


def test_deferred_tools_are_hidden_until_activated() -> None:
    reg = deferred_registry()
    session = Session()
    listed = names(reg.list(session=session))
    assert "weather" not in listed
    assert "github_issues" not in listed
    assert listed == ["alpha", "bravo", "tool_search", "zeta_mcp"]
    assert names(reg.deferred_tools()) == ["github_issues", "github_pulls", "weather"]


def test_activated_tools_are_appended_after_the_others_in_activation_order() -> None:
    reg = deferred_registry()
    session = Session()
    before = reg.list(session=session)
    session.activated.append("weather")
    after_one = reg.list(session=session)
    session.activated.append("github_issues")
    after_two = reg.list(session=session)
    assert names(after_one) == [*names(before), "weather"]
    assert names(after_two) == [*names(before), "weather", "github_issues"]
    # Activation never changes the bytes of what was already sent.
    assert wire(after_two[: len(before)]) == wire(before)
    assert wire(after_two[: len(after_one)]) == wire(after_one)


def test_tool_search_exists_only_with_deferred_tools() -> None:
    plain = Registry([make("alpha"), make("bravo")])
    assert "tool_search" not in names(plain.list())
    assert plain.get("tool_search") is None
    reg = deferred_registry()
    assert "tool_search" in names(reg.list())
    search = reg.get("tool_search")
    assert search is not None
    assert search.is_read_only(None) is True
    assert set(search.parameters["properties"]) == {"query", "max_results"}


@pytest.mark.parametrize("imported", [False, True])
def test_own_tool_named_tool_search_clashes_with_the_builtin_one(imported: bool) -> None:
    # With deferred tools the registry adds its own tool_search; a second tool of that name
    # would be sent twice (providers reject duplicate names), so it is a setup error.
    mine = make("tool_search")

    def build_and_list() -> list[Tool]:
        return Registry(
            [make("later", deferred=True)] + ([] if imported else [mine]),
            imported=[mine] if imported else [],
        ).list()

    with pytest.raises(ConfigurationError):
        build_and_list()


def test_deferred_tool_lookup_still_works_for_the_runtime() -> None:
    reg = deferred_registry()
    assert reg.get("weather") is not None


async def test_calling_a_deferred_tool_before_activation() -> None:
    rt = Runtime(deferred_registry())
    result = await rt.call("weather", '{"query": "Paris"}')
    assert not result.ok
    assert result.error is ErrorCode.TOOL_NOT_ACTIVATED
    assert "tool_search" in result.content
    assert "weather" in result.content


async def test_tool_search_ranks_activates_and_returns_the_schema() -> None:
    session = Session()
    rt = Runtime(deferred_registry(), session=session)
    before = rt.tools()
    result = await rt.call("tool_search", '{"query": "github issues"}')
    assert result.ok, result.content
    blocks = [line for line in result.content.splitlines() if line.startswith("<function>")]
    first = json.loads(blocks[0].removeprefix("<function>").removesuffix("</function>"))
    assert first["name"] == "github_issues"
    assert first["description"] == "List the issues of a GitHub repository."
    assert first["parameters"] == deferred_registry().get("github_issues").parameters  # pyright: ignore[reportOptionalMemberAccess]
    assert "weather" not in result.content
    assert session.activated[0] == "github_issues"
    assert "weather" not in session.activated
    after = rt.tools()
    assert wire(after[: len(before)]) == wire(before)
    assert names(after)[len(before) :] == session.activated
    called = await rt.call("github_issues", '{"query": "open"}')
    assert called.ok, called.content
    assert called.content == "github_issues:open"


async def test_tool_search_by_description_keyword() -> None:
    session = Session()
    rt = Runtime(deferred_registry(), session=session)
    result = await rt.call("tool_search", '{"query": "forecast"}')
    assert result.ok
    assert session.activated == ["weather"]
    assert (await rt.call("weather", '{"query": "Oslo"}')).content == "weather:Oslo"


async def test_tool_search_select_activates_exactly_those() -> None:
    session = Session()
    rt = Runtime(deferred_registry(), session=session)
    result = await rt.call("tool_search", '{"query": "select:weather,github_pulls"}')
    assert result.ok
    assert session.activated == ["weather", "github_pulls"]
    assert names(rt.tools())[-2:] == ["weather", "github_pulls"]
    assert (await rt.call("weather")).ok
    assert (await rt.call("github_pulls")).ok
    still_hidden = await rt.call("github_issues")
    assert still_hidden.error is ErrorCode.TOOL_NOT_ACTIVATED


async def test_tool_search_with_no_match_activates_nothing() -> None:
    session = Session()
    rt = Runtime(deferred_registry(), session=session)
    result = await rt.call("tool_search", '{"query": "kubernetes"}')
    assert result.ok
    assert session.activated == []
    assert "select:" in result.content


async def test_activation_is_per_session() -> None:
    reg = deferred_registry()
    first, second = Session(), Session()
    rt = Runtime(reg, session=first)
    await rt.call("tool_search", '{"query": "select:weather"}')
    assert (await rt.call("weather", session=first)).ok
    other = await rt.call("weather", session=second)
    assert other.error is ErrorCode.TOOL_NOT_ACTIVATED


# -- unknown tool names ------------------------------------------------------------------------


async def test_unknown_tool_name_suggests_the_closest_names() -> None:
    rt = Runtime(Registry([make("read_file"), make("write_file"), make("list_dir")]))
    result = await rt.call("read_fil", "{}")
    assert not result.ok
    assert result.error is ErrorCode.TOOL_NOT_FOUND
    assert "`read_fil`" in result.content
    assert "`read_file`" in result.content
    assert "list_dir" not in result.content
    case = await rt.call("ReadFile", "{}")
    assert "`read_file`" in case.content


async def test_unknown_tool_name_does_not_leak_hidden_deferred_tools() -> None:
    rt = Runtime(deferred_registry())
    result = await rt.call("github_isues", "{}")
    assert result.error is ErrorCode.TOOL_NOT_FOUND
    assert "github_issues" not in result.content
    assert "github_pulls" not in result.content
    assert "tool_search" in result.content


async def test_unknown_tool_name_does_not_suggest_disabled_tools() -> None:
    rt = Runtime(Registry([make("read_file"), make("ready")], disabled=["read_file"]))
    result = await rt.call("read_fil", "{}")
    assert result.error is ErrorCode.TOOL_NOT_FOUND
    assert "read_file" not in result.content.replace("`read_fil`", "")


async def test_hidden_tools_cannot_be_called() -> None:
    reg = Registry(
        [make("on", read_only=True), make("off", read_only=True), make("later", feature="x")],
        disabled=["off"],
    )
    rt = Runtime(reg)
    assert (await rt.call("on")).ok
    assert (await rt.call("off")).error is ErrorCode.TOOL_NOT_FOUND
    assert (await rt.call("later")).error is ErrorCode.TOOL_NOT_FOUND


def test_disabled_tools_may_be_named_by_alias() -> None:
    @tool(name="read_file", aliases=["cat"], read_only=True)
    def read(path: str) -> str:
        """Read."""
        return path

    reg = Registry([read], disabled=["cat"])
    assert reg.list() == []


def test_usage_notes_follow_the_visible_tools_in_order() -> None:
    from handrail import Runtime

    @tool(read_only=True, usage="Prefer this over shell `cat`.\n")
    def read_file(path: str) -> str:
        """Read."""
        return path

    @tool(usage="Always read a file before editing it.")
    def edit_file(path: str) -> str:
        """Edit."""
        return path

    @tool(read_only=True)
    def ls(path: str) -> str:
        """List (no notes)."""
        return path

    reg = Registry([read_file, ls, edit_file])
    assert reg.usage_notes() == (
        "## edit_file\nAlways read a file before editing it.\n\n## read_file\nPrefer this over shell `cat`."
    )
    # plan mode hides the writing tool, and its notes with it
    assert Runtime(reg, mode="plan").usage_notes() == "## read_file\nPrefer this over shell `cat`."
