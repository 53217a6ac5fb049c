"""Efficiency (contract v4, section 9): what a run's answers cost against how many matched.

Where models tie on the answers, what separates them is what the answers cost. From each
answered call (:class:`Spent`: its conversation, turn, price, tokens and latency) and each
conversation's verdict, :func:`efficiency` computes the run's figures (``core.scores.
Efficiency``; docs/metrics.md, "Efficiency"):

- **cost per correct conversation**: what the complete conversations' calls cost / the ones
  matched at their last asked turn (none when none matched, or when a call has no price), and
  the same in tokens (prompt + completion) for models nobody prices;
- **reasoning tokens per edit** at each asked turn: the reasoning tokens of the asks at turn t /
  (asks x t), an ask at turn t restating t edits; pooled over every ask too;
- **latency** of the calls the run sent for them (a cache hit sent none): median and 95th
  percentile (nearest rank).

Honest denominators: the figures are over complete conversations; incomplete ones are counted
apart with what they cost. A call served by the answer cache counts in the cost (what the answer
cost to make, as ``usage.cost_usd``) but not in the latency. Pure: the Kaggle notebook and
inspect's metrics compute the same figures from their own calls.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from butterfly.core.scores import ConversationScore, Efficiency, EfficiencySlice
from butterfly.core.turns import ConversationKey


@dataclass(frozen=True, slots=True)
class Spent:
    """What efficiency reads of one answered call."""

    key: ConversationKey
    turn: int
    cost_usd: float | None
    """None: the call has no price."""
    tokens: int | None
    """Prompt + completion tokens; None when the provider reported neither."""
    reasoning: int | None
    """None when the provider reported none."""
    latency_s: float | None
    """None for an answer the cache served (no call was sent)."""


@dataclass(slots=True)
class Sum:
    """Running totals of some calls' cost and tokens; a total is unknown (None) once one call
    has no price, and tokens count the calls that report them."""

    cost: float = 0.0
    unpriced: bool = False
    tokens: int | None = None
    reasoning: int | None = None

    def merge(self, other: Sum) -> None:
        self.unpriced = self.unpriced or other.unpriced
        self.cost += other.cost
        if other.tokens is not None:
            self.tokens = (self.tokens or 0) + other.tokens
        if other.reasoning is not None:
            self.reasoning = (self.reasoning or 0) + other.reasoning

    @property
    def cost_usd(self) -> float | None:
        return None if self.unpriced else round(self.cost, 8)


def scenario_mean(values: Sequence[float | None]) -> float | None:
    """A scenario's mean cost (or tokens) per complete conversation: None when it has none, or
    when one of them has no figure."""
    known = [float(v) for v in values if v is not None]
    return None if not known or len(known) < len(values) else sum(known) / len(known)


def paired_means(a: Mapping[str, Sequence[float | None]], b: Mapping[str, Sequence[float | None]],
                 ids: Iterable[str]) -> list[tuple[float | None, float | None]]:
    """The pairs a paired cost ratio reads (``core.stats.ratio_bootstrap``; compare's cost
    ratio and the report's frontier both): per scenario in ``ids``, each run's mean figure per
    complete conversation (:func:`scenario_mean`), so that runs with different repeats, or
    different layouts, pair fairly; a side is None where the scenario has no figure there."""
    return [(scenario_mean(a.get(i, ())), scenario_mean(b.get(i, ()))) for i in ids]


def per_conversation(calls: Iterable[Spent]) -> tuple[dict[ConversationKey, Sum],
                                                      dict[tuple[ConversationKey, int], int]]:
    """Each conversation's totals, and the reasoning tokens of each (conversation, turn) whose
    calls report them."""
    sums: dict[ConversationKey, Sum] = {}
    reasoning: dict[tuple[ConversationKey, int], int] = {}
    for c in calls:
        sums.setdefault(c.key, Sum()).merge(Sum(c.cost_usd or 0.0, c.cost_usd is None, c.tokens,
                                                 c.reasoning))
        if c.reasoning is not None:
            reasoning[c.key, c.turn] = reasoning.get((c.key, c.turn), 0) + c.reasoning
    return sums, reasoning


def _per(total: float | None, n: int, places: int) -> float | None:
    return None if total is None or n == 0 else round(total / n, places)


def total(sums: Iterable[Sum]) -> Sum:
    """The totals of these sums together."""
    whole = Sum()
    for s in sums:
        whole.merge(s)
    return whole


def efficiency_slice(whole: Sum, conversations: int, correct: int) -> EfficiencySlice:
    """The cost and token figures of ``conversations`` complete conversations (``whole``: their
    totals) of which ``correct`` matched."""
    cost = whole.cost_usd if conversations else None
    tokens = whole.tokens
    return EfficiencySlice(
        conversations=conversations, correct=correct, cost_usd=cost,
        cost_per_conversation_usd=_per(cost, conversations, 8),
        cost_per_correct_usd=_per(cost, correct, 8), tokens=tokens,
        tokens_per_conversation=_per(tokens, conversations, 3),
        tokens_per_correct=_per(tokens, correct, 3))


def _slice(sums: Mapping[ConversationKey, Sum],
           verdicts: Mapping[ConversationKey, tuple[str, bool]]) -> EfficiencySlice:
    """The cost and token figures of the complete conversations ``verdicts`` holds."""
    return efficiency_slice(total(sums.get(k, Sum()) for k in verdicts), len(verdicts),
                            sum(ok for _, ok in verdicts.values()))


def nearest_rank(values: list[float], q: float) -> float | None:
    """The ``q`` quantile by nearest rank (a value that occurred); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def reasoning_by_turn(reasoning: Mapping[tuple[ConversationKey, int], int],
                      complete: Collection[ConversationKey]) -> tuple[dict[str, float | None],
                                                                       float | None]:
    """Reasoning tokens per edit at each asked turn of the complete conversations, and pooled
    over every ask (None where no call reports reasoning tokens)."""
    by_turn: dict[int, list[int]] = {}  # each ask's reasoning tokens, by its turn
    for (key, turn), n in reasoning.items():
        if key in complete:
            by_turn.setdefault(turn, []).append(n)
    out: dict[str, float | None] = {
        str(t): round(sum(asks) / (len(asks) * t), 3) for t, asks in sorted(by_turn.items())}
    edits = sum(len(asks) * t for t, asks in by_turn.items())
    pooled = round(sum(map(sum, by_turn.values())) / edits, 3) if edits else None
    return out, pooled


def efficiency(calls: Iterable[Spent], verdicts: Mapping[ConversationKey, tuple[str, bool]],
               incomplete: Collection[ConversationKey]) -> Efficiency:
    """A run's efficiency figures. ``verdicts``: each complete conversation's category and
    final match; ``incomplete``: the conversations a failed call left incomplete (apart)."""
    calls = list(calls)
    sums, reasoning = per_conversation(calls)
    latencies = [c.latency_s for c in calls if c.latency_s is not None and c.key in verdicts]
    complete = total(sums.get(k, Sum()) for k in verdicts)
    overall = _slice(sums, verdicts)
    categories = sorted({cat for cat, _ in verdicts.values()})
    by_category = {cat: _slice(sums, {k: v for k, v in verdicts.items() if v[0] == cat})
                   for cat in categories}
    by_turn, pooled = reasoning_by_turn(reasoning, verdicts.keys())
    late = total(sums.get(k, Sum()) for k in incomplete)
    p50 = round(median(latencies), 6) if latencies else None
    p95 = nearest_rank(latencies, 0.95)
    return Efficiency(
        **dict(overall),
        reasoning_tokens=complete.reasoning,
        reasoning_per_edit=pooled, reasoning_per_edit_by_turn=by_turn,
        latency_calls=len(latencies), latency_median_s=p50,
        latency_p95_s=None if p95 is None else round(p95, 6),
        incomplete=len(incomplete), incomplete_cost_usd=late.cost_usd if incomplete else None,
        by_category=by_category)


def scored(calls: Sequence[Spent], scores: Sequence[ConversationScore],
           incomplete: Collection[ConversationKey]
           ) -> tuple[Efficiency, list[ConversationScore]]:
    """The run's figures from its calls and its complete conversations' verdicts, and each
    verdict with what its conversation cost (``score --json``'s ``scenarios``: what ``compare``
    pairs)."""
    verdicts = {ConversationKey(c.id, c.layout, c.repeat): (c.category, c.final_match)
                for c in scores}
    sums = per_conversation(calls)[0]
    out = []
    for c, key in zip(scores, verdicts, strict=True):
        got = sums.get(key)
        out.append(c if got is None else c.model_copy(update={
            "cost_usd": got.cost_usd, "tokens": got.tokens, "reasoning_tokens": got.reasoning}))
    return efficiency(calls, verdicts, incomplete), out
