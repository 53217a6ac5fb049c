"""The report's efficiency frontier (contract v4, section 9; docs/report.md, "The frontier"):
what each run's conversations cost against how often they matched, computed before any markup.

- **Points**: one per run, x its cost per complete conversation (USD, ``score --json``'s
  ``efficiency.cost_per_conversation_usd``) or, when fewer than two runs are priced, its tokens
  per conversation; y its final match with its 95% interval or, when every run was asked at
  chosen turns (a horizon suite), its horizon with its interval. A run with no x or no y (no
  price, no tokens, a censored horizon) is listed apart with why, never drawn at 0.
- **Pareto marks**: a run is beaten when another costs no more (within :data:`COST_MARGIN`:
  costs that close are the same to a reader) and does no worse, and is materially better on
  one axis: at least :data:`COST_MARGIN` cheaper, or at least
  :data:`MATCH_MARGIN` higher in final match (:data:`HORIZON_MARGIN` longer in horizon). The
  runs no other beats are marked and joined.
- **Sweeps**: the runs of one budget sweep (``manifest.budget_sweep``), in budget order.
- **Claims**: the sentences the page may say. "B matches as often as A at a fifth of the cost"
  only when the headline does not separate them in final match (``Headline.above``: paired
  difference for runs of one suite) and A's final match lies inside B's 95% interval ("more
  often" when the headline puts B above A), and the paired cost ratio's 95% interval
  (``core.efficiency.paired_means``, as compare pairs them, then ``core.stats.ratio_bootstrap``
  over the scenarios both played) lies below 1; the words
  "a fifth" only when 1/5 is inside that interval.
- **Ranking**: the leaderboard's order. Runs by final match, highest first; the runs whose
  95% interval overlaps the leading run's interval form a tier, ranked cheaper first (cost per
  conversation; no price last); then the next tier from the runs left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from butterfly.analysis.report.data import (
    CostClaim,
    Frontier,
    FrontierPoint,
    Headline,
    Ranking,
    RunEntry,
    SweepLine,
    XMetric,
    YMetric,
)
from butterfly.core.efficiency import paired_means
from butterfly.core.stats import ratio_bootstrap

COST_MARGIN: Final = 0.10
"""A run is materially cheaper than another when it costs at least 10% less per conversation
(calls' costs vary by a few percent between plays of the same answers; a tenth is a price
difference a reader acts on)."""
MATCH_MARGIN: Final = 0.01
"""Materially better in final match: at least one point (0.01) higher."""
HORIZON_MARGIN: Final = 0.10
"""Materially better in horizon: at least 10% longer (the horizon is read on a log axis)."""
MAX_CLAIMS: Final = 3
"""The sentences kept (the cheapest claims first): more would bury the headline."""

def per_conversation(r: RunEntry, metric: XMetric = "cost") -> float | None:
    """The run's cost (USD) or tokens (prompt + completion) per complete conversation, as
    ``score --json`` has them."""
    e = r.score.efficiency
    if e is None:
        return None
    return e.cost_per_conversation_usd if metric == "cost" else e.tokens_per_conversation


def x_metric(runs: Sequence[RunEntry]) -> XMetric:
    """Cost when two runs or more are priced, else tokens (models nobody prices)."""
    return "cost" if sum(per_conversation(r) is not None for r in runs) >= 2 else "tokens"


def y_metric(runs: Sequence[RunEntry]) -> YMetric:
    """The horizon when every run was asked at chosen turns (a horizon suite), else final
    match."""
    return "horizon" if runs and all(r.params.ask_at is not None for r in runs) else (
        "final match")


def _y(r: RunEntry, metric: YMetric) -> tuple[float, float, float] | str:
    """The run's y and interval, or why it has none."""
    s = r.score
    if metric == "final match":
        if s.final_match is None:
            return "no complete conversation"
        lo, hi = s.final_match_ci or (s.final_match, s.final_match)
        return s.final_match, lo, hi
    h = s.horizon
    if h is None or h.turns is None:
        return "no horizon inside the tested lengths" if h is not None else "no horizon"
    lo = h.ci[0] if h.ci and h.ci[0] is not None else h.turns
    hi = h.ci[1] if len(h.ci) > 1 and h.ci[1] is not None else h.turns
    return h.turns, lo, hi


def beats(a: tuple[float, float], b: tuple[float, float], metric: YMetric) -> bool:
    """Whether point ``a`` (x, y) beats ``b``: not materially dearer (at most
    :data:`COST_MARGIN` more), no worse, and materially better on one axis (that much cheaper,
    or :data:`MATCH_MARGIN` higher in final match, :data:`HORIZON_MARGIN` longer in horizon)."""
    (xa, ya), (xb, yb) = a, b
    if xa > xb * (1 + COST_MARGIN) or ya < yb:  # within the margin, costs are the same
        return False
    better_y = ya >= yb * (1 + HORIZON_MARGIN) if metric == "horizon" else (
        ya - yb >= MATCH_MARGIN - 1e-12)
    return xa <= xb * (1 - COST_MARGIN) or better_y


def pareto(xy: Sequence[tuple[float, float]], metric: YMetric) -> tuple[bool, ...]:
    """For each point, whether no other point beats it."""
    return tuple(not any(beats(o, p, metric) for j, o in enumerate(xy) if j != i)
                 for i, p in enumerate(xy))


def sweep_lines(runs: Sequence[RunEntry], drawn: set[int]) -> tuple[SweepLine, ...]:
    """Each budget sweep with two drawn runs or more, its runs in budget order."""
    by: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    for i, r in enumerate(runs):
        b = r.budget_sweep
        if b is not None and i in drawn:
            by.setdefault((b.name, b.key), []).append((b.index, i, b.value))
    out = []
    for (name, key), members in by.items():
        members.sort()
        if len(members) > 1:
            out.append(SweepLine(name=name, key=key, runs=tuple(i for _, i, _ in members),
                                 budgets=tuple(v for _, _, v in members)))
    return tuple(out)


def scenario_costs(r: RunEntry, metric: XMetric) -> dict[str, list[float | None]]:
    """Each scenario's cost (or tokens) per complete conversation of the run, over its layouts
    and repeats: what ``core.efficiency.paired_means`` pairs."""
    out: dict[str, list[float | None]] = {}
    for c in r.score.scenarios:
        v = c.cost_usd if metric == "cost" else c.tokens
        out.setdefault(c.id, []).append(None if v is None else float(v))
    return out


def fraction_in(lo: float, hi: float) -> int | None:
    """The k (2 to 10) whose 1/k lies inside [lo, hi] nearest the interval's middle (in log
    terms), or None."""
    import math

    inside = [k for k in range(2, 11) if lo <= 1 / k <= hi]
    if not inside:
        return None
    mid = math.sqrt(lo * hi)
    return min(inside, key=lambda k: abs(math.log(k * mid)))


def _holds(r: RunEntry, v: float | None) -> bool:
    """Whether the run's final-match 95% interval includes ``v``."""
    ci = r.score.final_match_ci
    return v is not None and ci is not None and ci[0] <= v <= ci[1]


def cost_claim(runs: Sequence[RunEntry], headline: Headline, metric: XMetric, cheaper: int,
               dearer: int) -> CostClaim | None:
    """The claim that run ``cheaper`` does as well or better than ``dearer`` for less, when the
    statistics allow it (same suite; above it in final match, or not separated from it with
    its final match inside the cheaper's interval; the paired cost ratio's interval below 1)."""
    a, b = runs[dearer], runs[cheaper]
    if a.suite_sha256 != b.suite_sha256 or (dearer, cheaper) in headline.above:
        return None
    better = (cheaper, dearer) in headline.above
    if not better and not _holds(b, a.score.final_match):
        return None  # not separated, but not shown to match as often either
    ca, cb = scenario_costs(a, metric), scenario_costs(b, metric)
    pairs = paired_means(ca, cb, sorted(set(ca) & set(cb)))
    known = [(x, y) for x, y in pairs if x is not None and y is not None]
    got = ratio_bootstrap(known)
    if got is None:
        return None
    ratio, lo, hi = got
    if hi >= 1:
        return None
    return CostClaim(cheaper=cheaper, dearer=dearer, ratio=ratio, lo=lo, hi=hi,
                     scenarios=len(known), better=better,
                     fraction=fraction_in(lo, hi))


def claims(runs: Sequence[RunEntry], headline: Headline, points: Sequence[FrontierPoint],
           metric: XMetric) -> tuple[CostClaim, ...]:
    """Claims for the frontier's runs against each dearer run they match as often or more
    often (the cheapest ratio first, at most :data:`MAX_CLAIMS`; one claim per cheaper run,
    against the dearest run it holds its own with)."""
    out = []
    on = [p for p in points if p.pareto]
    for p in sorted(on, key=lambda p: p.x):
        dearer = sorted((q for q in points if q.x > p.x), key=lambda q: -q.x)
        for q in dearer:
            c = cost_claim(runs, headline, metric, p.run, q.run)
            if c is not None:
                out.append(c)
                break
    return tuple(sorted(out, key=lambda c: c.ratio)[:MAX_CLAIMS])


def frontier(runs: Sequence[RunEntry], headline: Headline) -> Frontier | None:
    """The chart's figures, or None when fewer than two runs can be placed or they do not
    differ in cost (the chart would say nothing the headline does not)."""
    xm, ym = x_metric(runs), y_metric(runs)
    placed: list[tuple[int, float, tuple[float, float, float]]] = []
    apart: list[tuple[str, str]] = []
    for i, r in enumerate(runs):
        x = per_conversation(r, xm)
        got = _y(r, ym)
        if x is None or x <= 0:
            apart.append((r.label, "no price" if xm == "cost" else "no token counts"))
        elif isinstance(got, str):
            apart.append((r.label, got))
        else:
            placed.append((i, x, got))
    if len(placed) < 2 or len({x for _, x, _ in placed}) < 2:
        return None
    marks = pareto([(x, y[0]) for _, x, y in placed], ym)
    points = []
    for (i, x, (y, lo, hi)), mark in zip(placed, marks, strict=True):
        b = runs[i].budget_sweep
        points.append(FrontierPoint(run=i, label=runs[i].label, x=x, y=y, lo=lo, hi=hi,
                                    pareto=mark, budget=None if b is None else b.value))
    found = claims(runs, headline, points, xm) if ym == "final match" else ()
    return Frontier(x_metric=xm, y_metric=ym, points=tuple(points),
                    sweeps=sweep_lines(runs, {i for i, _, _ in placed}), claims=found,
                    apart=tuple(apart))


def ranking(runs: Sequence[RunEntry]) -> Ranking:
    """The leaderboard's order: by final match, the runs whose interval overlaps the leader's
    ranked cheaper first (no price last), tier by tier; runs with no final match last."""
    def interval(r: RunEntry) -> tuple[float, float]:
        fm = r.score.final_match or 0.0
        ci = r.score.final_match_ci
        return (fm, fm) if ci is None else (ci[0], ci[1])

    left = sorted((i for i, r in enumerate(runs) if r.score.final_match is not None),
                  key=lambda i: -(runs[i].score.final_match or 0.0))
    order: list[int] = []
    by_cost = False
    while left:
        lead_lo, lead_hi = interval(runs[left[0]])
        tier = [i for i in left if interval(runs[i])[1] >= lead_lo
                and interval(runs[i])[0] <= lead_hi]
        ranked = sorted(tier, key=lambda i: (per_conversation(runs[i]) is None,
                                             per_conversation(runs[i]) or 0.0,
                                             -(runs[i].score.final_match or 0.0)))
        by_cost = by_cost or ranked != tier
        order += ranked
        left = [i for i in left if i not in tier]
    order += [i for i, r in enumerate(runs) if r.score.final_match is None]
    return Ranking(order=tuple(order), by_cost=by_cost)
