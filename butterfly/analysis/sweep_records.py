"""A budget sweep's bill and result as typed, frozen records (``butterfly sweep``; contract v4,
section 9; docs/running.md, "Budget sweeps").

:func:`sweep_bill` adds up the dry-run bills of a sweep's budgets (what ``--max-cost`` would
be held against); :func:`sweep_result` reads, for each budget, its run's score: final match
with its interval (and the horizon, on a suite built by length), what its answers cost (in
total and per correct conversation) and the reasoning tokens it spent per edit. Compute first,
render second: ``present/sweep.py`` prints them; ``--json`` prints their dump, whose JSON
Schemas are published in docs/schemas/.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from butterfly.core.pooling import Interval, Result
from butterfly.core.scores import RunScore
from butterfly.core.vocab import RunStatus
from butterfly.runs.dryrun import Bill, DryRun


class SweepBill(Result):
    """``butterfly sweep --dry-run --json``: each budget's dry-run bill, and their sum."""

    schema_version: int = 1
    name: str = Field(description="The sweep's name (its folder).")
    key: str = Field(description="The budget swept (a -M key, or max_tokens).")
    values: list[str]
    max_cost: float | None = Field(description="--max-cost, held over the whole sweep.")
    budgets: list[DryRun] = Field(description="Each budget's bill, in the order given (what a "
                                  "resume would still send, for a budget already played).")
    total: Bill = Field(description="The sum; cost null when a budget's has no price.")


class SweepBudget(Result):
    """One budget of a sweep: its run and its figures (null where it has none)."""

    value: str
    run: str = Field(description="Its run directory.")
    status: RunStatus | None = Field(description="Its run's status; null: not played (the "
                                     "sweep stopped before it).")
    conversations: int = Field(description="Complete conversations (every figure's "
                               "denominator).")
    final_match: float | None
    final_match_ci: Interval | None
    horizon: float | None = Field(description="On a suite built by length: the chain length at "
                                  "which final match crosses 50%; null when censored, without "
                                  "enough data, or on another suite.")
    horizon_ci: list[float | None] | None
    horizon_censored: str | None
    cost_usd: float | None = Field(description="What its complete conversations' answers "
                                   "cost; null when one has no price.")
    cost_per_correct_usd: float | None
    tokens_per_correct: float | None
    reasoning_tokens: int | None
    reasoning_per_edit: float | None = Field(description="Reasoning tokens per edit, pooled "
                                             "over its asks (score's efficiency); null when "
                                             "no call reports reasoning tokens.")
    spent_usd: float | None = Field(description="What its run directory's own calls spent "
                                    "(cache hits cost nothing): what --max-cost counts.")


class SweepResult(Result):
    """``butterfly sweep --json``: one model over one suite at each budget."""

    schema_version: int = 1
    name: str
    model: str
    suite: str
    key: str
    values: list[str]
    by_length: bool = Field(description="The suite is built by chain length: the horizon is "
                            "its headline figure.")
    max_cost: float | None
    spent_usd: float = Field(description="What the sweep's runs spent together: their own "
                             "priced calls (cache hits cost nothing), as --max-cost counts.")
    stopped: str | None = Field(description="Why the sweep stopped before its last budget "
                                "(the budget, a failed run); null when every budget was "
                                "played.")
    budgets: list[SweepBudget]


def _plus(a: int | float | None, b: int | float | None) -> float | None:
    return None if a is None or b is None else a + b


def sweep_bill(name: str, key: str, values: Sequence[str], max_cost: float | None,
               bills: Sequence[DryRun]) -> SweepBill:
    """The bills of a sweep's budgets, and their sum."""
    totals = [b.total for b in bills]
    cost: float | None = 0.0
    cached: int | None = None
    for t in totals:
        cost = _plus(cost, t.cost_usd)
        if t.cached_tokens is not None:
            cached = (cached or 0) + t.cached_tokens
    total = Bill(slice="total", calls=sum(t.calls for t in totals),
                 prompt_tokens=sum(t.prompt_tokens for t in totals),
                 completion_tokens=sum(t.completion_tokens for t in totals),
                 cached_tokens=cached, cost_usd=cost)
    return SweepBill(name=name, key=key, values=list(values), max_cost=max_cost,
                     budgets=list(bills), total=total)


def budget_row(value: str, run: str, status: RunStatus | None, score: RunScore | None,
               spent_usd: float | None, by_length: bool) -> SweepBudget:
    """One budget's row from its run's score (None: no run yet); the horizon on a suite built
    by length only (elsewhere it would fit a curve to a few lengths by accident)."""
    eff = None if score is None else score.efficiency
    hz = None if score is None or not by_length else score.horizon
    return SweepBudget(
        value=value, run=run, status=status,
        conversations=0 if score is None else score.n_conversations,
        final_match=None if score is None else score.final_match,
        final_match_ci=None if score is None else score.final_match_ci,
        horizon=None if hz is None else hz.turns,
        horizon_ci=None if hz is None else hz.ci,
        horizon_censored=None if hz is None else hz.censored,
        cost_usd=None if eff is None else eff.cost_usd,
        cost_per_correct_usd=None if eff is None else eff.cost_per_correct_usd,
        tokens_per_correct=None if eff is None else eff.tokens_per_correct,
        reasoning_tokens=None if eff is None else eff.reasoning_tokens,
        reasoning_per_edit=None if eff is None else eff.reasoning_per_edit,
        spent_usd=spent_usd)


def sweep_result(*, name: str, model: str, suite: str, key: str, values: Sequence[str],
                 by_length: bool, max_cost: float | None, stopped: str | None,
                 budgets: Sequence[SweepBudget]) -> SweepResult:
    """The sweep's result: its budgets' rows and what they spent together."""
    spent = sum(b.spent_usd or 0.0 for b in budgets)
    return SweepResult(name=name, model=model, suite=suite, key=key, values=list(values),
                       by_length=by_length, max_cost=max_cost, spent_usd=spent,
                       stopped=stopped, budgets=list(budgets))
