"""The registry: a deterministic, filterable set of tools, with deferred tools and tool_search.

Order is part of the contract: local tools sorted by name, then imported tools (MCP) sorted by
name, then deferred tools in the order a session activated them. The rendered tool list is
therefore byte-stable for prompt caching, and activating a tool only appends to it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._context import PermissionMode, Session, ToolContext
from ._contract import ToolKind
from ._tool import Tool
from .display import CallView, Display, DisplayGroup, default_display, one_line
from .errors import ConfigurationError

__all__ = ["Registry", "ToolSearch"]

FeatureFunc = Callable[[str], bool]


class Registry:
    """Tools by name and alias, in a stable order, with the filters a model's tool list needs.

    ```python
    registry = Registry([add, search])            # local tools
    registry = registry.merge(Registry(imported=mcp_tools))
    registry.list(provider="anthropic", session=session)
    ```
    """

    def __init__(
        self,
        tools: Iterable[Tool | type[Tool]] = (),
        *,
        imported: Iterable[Tool | type[Tool]] = (),
        disabled: Iterable[str] = (),
        features: Mapping[str, bool] | FeatureFunc | None = None,
    ) -> None:
        self._local: dict[str, Tool] = {}
        self._imported: dict[str, Tool] = {}
        self._lookup: dict[str, Tool] = {}
        self.disabled: frozenset[str] = frozenset(disabled)
        """Tool names turned off by configuration."""
        self._features = features
        self._search_tool: ToolSearch | None = None
        self.version = 0
        """Bumped on every change, so callers can cache what they derive from the registry."""
        self._list_cache: dict[tuple[Any, ...], list[Tool]] = {}
        self._has_deferred: bool | None = None
        for t in tools:
            self.add(t)
        for t in imported:
            self.add(t, imported=True)

    # -- building ----------------------------------------------------------------------------

    def add(self, tool: Tool | type[Tool], *, imported: bool = False) -> Registry:
        """Add a tool (or a Tool subclass, instantiated with no arguments). Returns self."""
        instance = tool() if isinstance(tool, type) else tool
        if not isinstance(instance, Tool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"not a tool: {tool!r} (decorate functions with @tool)")
        if not isinstance(instance, ToolSearch) and ToolSearch.name in (
            instance.name,
            *instance.aliases,
        ):
            raise ConfigurationError(
                f"{instance!r}: the name {ToolSearch.name!r} is reserved for the built-in search "
                "over deferred tools"
            )
        for key in (instance.name, *instance.aliases):
            if key in self._lookup:
                other = self._lookup[key]
                raise ConfigurationError(
                    f"duplicate tool name {key!r}: {instance!r} clashes with {other!r}"
                )
        (self._imported if imported else self._local)[instance.name] = instance
        for key in (instance.name, *instance.aliases):
            self._lookup[key] = instance
        self._search_tool = None
        self._has_deferred = None
        self.version += 1
        self._list_cache.clear()
        return self

    def merge(self, *others: Registry) -> Registry:
        """A new registry with this one's tools and the others'; duplicate names are an error.

        A feature flag is on in the merged registry if any of the merged registries turns it on.
        """
        regs = (self, *others)
        features: FeatureFunc | Mapping[str, bool] | None = self._features
        if any(r._features is not None for r in others):
            features = lambda flag: any(r.feature_enabled(flag) for r in regs)  # noqa: E731
        merged = Registry(disabled=self.disabled, features=features)
        for reg in regs:
            for t in reg._local.values():
                merged.add(t)
            for t in reg._imported.values():
                merged.add(t, imported=True)
            merged.disabled = merged.disabled | reg.disabled
        merged._list_cache.clear()
        merged.version += 1
        return merged

    # -- lookup ------------------------------------------------------------------------------

    def get(self, name: str) -> Tool | None:
        """The tool with this name or alias, available or not (None if there is none)."""
        found = self._lookup.get(name)
        if found is None and name == ToolSearch.name and self.has_deferred:
            return self.search_tool
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self.all())

    def all(self) -> list[Tool]:
        """Every tool, in registry order, with no filter applied."""
        tools = sorted(self._local.values(), key=_by_name)
        if self.has_deferred:
            tools = sorted([*tools, self.search_tool], key=_by_name)
        return tools + sorted(self._imported.values(), key=_by_name)

    def is_imported(self, tool: Tool) -> bool:
        """True for tools added as imported (MCP)."""
        return self._imported.get(tool.name) is tool

    # -- availability and listing ------------------------------------------------------------

    def with_features(self, features: Mapping[str, bool]) -> Registry:
        """A copy where `features` (e.g. from settings) override this registry's flags."""
        overrides = dict(features)

        def enabled(flag: str) -> bool:
            if flag in overrides:
                return overrides[flag]
            return self.feature_enabled(flag)

        copy = Registry(features=enabled).merge(self)
        copy._features = enabled
        copy._list_cache.clear()
        return copy

    def feature_enabled(self, flag: str) -> bool:
        """Whether a feature flag is on (flags not configured are off)."""
        if self._features is None:
            return False
        if callable(self._features):
            return bool(self._features(flag))
        return bool(self._features.get(flag, False))

    def available(self, tool: Tool, provider: str | None = None) -> bool:
        """Not disabled, feature flag on, and offered to this provider."""
        if self.disabled and (
            tool.name in self.disabled or any(a in self.disabled for a in tool.aliases)
        ):
            return False
        if tool.feature is not None and not self.feature_enabled(tool.feature):
            return False
        return not (
            provider is not None and tool.providers is not None and provider not in tool.providers
        )

    def list(
        self,
        *,
        provider: str | None = None,
        mode: PermissionMode | str | None = None,
        session: Session | None = None,
    ) -> list[Tool]:
        """The tools to send to the model; every filter applies (AND).

        Hidden: tools disabled by configuration, behind a feature flag that is off, not offered
        to `provider`, not read-only in plan mode, and deferred tools the session has not
        activated (those follow the others, in activation order).
        """
        if mode is None and session is not None:
            mode = session.mode
        plan = mode is not None and PermissionMode(mode) is PermissionMode.PLAN
        key = (provider, plan, tuple(session.activated) if session is not None else ())
        cached = self._list_cache.get(key)
        if cached is not None:
            return list(cached)
        visible: list[Tool] = []
        for t in self.all():
            if t.deferred or not self.available(t, provider):
                continue
            if plan and not t.may_be_read_only():
                continue
            visible.append(t)
        if session is not None:
            for name in session.activated:
                t = self._lookup.get(name)
                if t is None or t in visible or not self.available(t, provider):
                    continue
                if plan and not t.may_be_read_only():
                    continue
                visible.append(t)
        if len(self._list_cache) > 256:
            self._list_cache.clear()
        self._list_cache[key] = visible
        return list(visible)

    def usage_notes(self, **filters: Any) -> str:
        """The visible tools' usage notes, for the system prompt (same order as `list`).

        Each tool with notes gets a `## <name>` section; tools without notes are left out.
        """
        sections = [
            f"## {t.name}\n{t.usage.strip()}" for t in self.list(**filters) if t.usage.strip()
        ]
        return "\n\n".join(sections)

    def by_kind(self, kind: ToolKind | str, **filters: Any) -> list[Tool]:
        """Visible tools of one kind (same filters as `list`)."""
        return [t for t in self.list(**filters) if t.kind == ToolKind(kind)]

    def read_only_tools(self, **filters: Any) -> list[Tool]:
        """Visible tools that can be read-only (fixed, or for some inputs)."""
        return [t for t in self.list(**filters) if t.may_be_read_only()]

    def writing_tools(self, **filters: Any) -> list[Tool]:
        """Visible tools that are never read-only."""
        return [t for t in self.list(**filters) if not t.may_be_read_only()]

    # -- deferred tools ----------------------------------------------------------------------

    @property
    def has_deferred(self) -> bool:
        """True when some tool is deferred (tool_search is then part of the registry)."""
        if self._has_deferred is None:
            self._has_deferred = any(t.deferred for t in self._lookup.values())
        return self._has_deferred

    def deferred_tools(self) -> list[Tool]:
        """Every deferred tool, in registry order."""
        return [t for t in self.all() if t.deferred]

    @property
    def search_tool(self) -> ToolSearch:
        """The built-in tool_search tool bound to this registry."""
        if self._search_tool is None:
            self._search_tool = ToolSearch(self)
        return self._search_tool


def _by_name(tool: Tool) -> str:
    return tool.name


class _SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        description='Keywords describing the capability you need, or "select:name1,name2" to '
        "activate tools by exact name."
    )
    max_results: int = Field(5, ge=1, le=25, description="How many tools to return at most.")


_WORD = re.compile(r"[a-z0-9]+")
_LOADED = re.compile(r"Loaded \d+ tool\(s\); you can call them now: (.+)\.\n")
"""The first line of a tool_search result that found tools (see `ToolSearch.run`)."""


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class ToolSearch(Tool):
    """Finds deferred tools by keyword, returns their full schemas and activates them."""

    name = "tool_search"
    description = (
        "Search for additional tools that are available but not loaded yet. Returns the full "
        "definitions of the best matches and makes them callable for the rest of the session. "
        'Use keywords (e.g. "github issues"), or "select:tool_a,tool_b" to load tools by exact '
        "name."
    )
    kind = ToolKind.SEARCH
    read_only = True
    concurrency_safe = True
    destructive = False
    idempotent = True
    args_model = _SearchArgs

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        super().__init__()

    def display(self, view: CallView) -> Display:
        """`Search tools "github issues"` (`Load tools a, b` for `select:`) / what it loaded."""
        query = view.text("query")
        if query.startswith("select:"):
            names = [n.strip() for n in query[len("select:") :].split(",") if n.strip()]
            title = f"Load tools {', '.join(names) or '?'}"
        else:
            title = f'Search tools "{one_line(query, 60) or "?"}"'
        shown = default_display(view, name=self.name, kind=self.kind)
        shown = replace(shown, title=one_line(title), group=DisplayGroup.SEARCH)
        result = view.result
        if result is None or not result.ok:
            return shown
        loaded = _LOADED.match(result.content)
        return replace(shown, subtitle=one_line(f"loaded {loaded[1]}" if loaded else "no match"))

    def rank(self, query: str, max_results: int, provider: str | None = None) -> list[Tool]:
        """Deferred tools for a query, best first (`select:a,b` picks exact names)."""
        pool = [t for t in self._registry.deferred_tools() if self._registry.available(t, provider)]
        if query.strip().startswith("select:"):
            wanted = [n.strip() for n in query.strip()[len("select:") :].split(",") if n.strip()]
            by_name = {n: t for t in pool for n in (t.name, *t.aliases)}
            return [by_name[n] for n in wanted if n in by_name][:max_results]
        terms = _words(query)
        scored: list[tuple[float, str, Tool]] = []
        for t in pool:
            name_words = _words(t.name.replace("__", " "))
            desc_words = set(_words(t.description))
            score = 0.0
            for term in terms:
                if term in name_words:
                    score += 3
                elif any(term in w for w in name_words):
                    score += 2
                if term in desc_words:
                    score += 1
                elif any(w.startswith(term) for w in desc_words if len(term) >= 3):
                    score += 0.5
            if score > 0:
                scored.append((-score, t.name, t))
        scored.sort(key=lambda s: (s[0], s[1]))
        return [t for _, _, t in scored[:max_results]]

    async def run(self, args: _SearchArgs, ctx: ToolContext) -> str:
        """Rank, describe, and activate the matches for the session."""
        found = self.rank(args.query, args.max_results)
        if not found:
            names = ", ".join(t.name for t in self._registry.deferred_tools()) or "(none)"
            return (
                f"No deferred tool matches {args.query!r}. Deferred tools: {names}. "
                'Try other keywords, or "select:<name>" with one of these names.'
            )
        names = [t.name for t in found]

        def activate(session: Session) -> None:
            for n in names:
                if n not in session.activated:
                    session.activated.append(n)

        ctx.update_state(activate)
        blocks = [
            "<function>"
            + json.dumps(
                {"name": t.name, "description": t.description, "parameters": t.parameters},
                ensure_ascii=False,
                sort_keys=True,
            )
            + "</function>"
            for t in found
        ]
        header = f"Loaded {len(found)} tool(s); you can call them now: {', '.join(names)}."
        return header + "\n" + "\n".join(blocks)
