"""Token and cost budgets, shared down the agent tree: a child's spending counts for its parent."""

from __future__ import annotations

from ._conversation import Usage

__all__ = ["Budget"]


class Budget:
    """What an agent (and its sub-agents) spent, and the limits it may not pass.

    `add` records a model request's usage here and in every ancestor, so a sub-agent's
    tokens count against the parent's limits; `exceeded` checks this budget and its ancestors.
    Cost is known only while every request's price was known.
    """

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        parent: Budget | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.parent = parent
        self.usage = Usage()
        self.cost_usd: float | None = 0.0

    def add(self, usage: Usage, cost: float | None) -> None:
        """Record one request's usage (and its cost, None when the price is unknown)."""
        budget: Budget | None = self
        while budget is not None:
            budget.usage = budget.usage + usage
            if budget.cost_usd is not None:
                budget.cost_usd = None if cost is None else budget.cost_usd + cost
            budget = budget.parent

    def exceeded(self) -> str | None:
        """Why no further request may go out, or None while within every limit."""
        budget: Budget | None = self
        while budget is not None:
            used = budget.usage.total_tokens
            if budget.max_tokens is not None and used >= budget.max_tokens:
                return (
                    f"the token budget is spent: {used:,} of {budget.max_tokens:,} tokens "
                    "used (raise it with --max-budget-tokens)"
                )
            cost = budget.cost_usd
            if budget.max_cost_usd is not None and cost is None:
                # Fail closed: a request whose price is unknown (a model the price table does
                # not list, a sub-agent's other model) makes the spending unknowable.
                return (
                    "the cost budget cannot be checked any more: a request went to a model "
                    "whose prices are unknown (use a token budget for such models)"
                )
            if budget.max_cost_usd is not None and cost is not None and cost >= budget.max_cost_usd:
                return (
                    f"the cost budget is spent: ${cost:.4f} of ${budget.max_cost_usd:.4f} used "
                    "(raise it with --max-budget-usd)"
                )
            budget = budget.parent
        return None

    @property
    def enforceable(self) -> bool:
        """False when a cost limit is set but some price was unknown (it cannot be checked)."""
        budget: Budget | None = self
        while budget is not None:
            if budget.max_cost_usd is not None and budget.cost_usd is None:
                return False
            budget = budget.parent
        return True
