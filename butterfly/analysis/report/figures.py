"""The figures of the report's headline and charts, from the runs' scores (docs/report.md):
the headline's rows and which runs it may say are apart, the category heatmap's cells, undo
recovery by op, change radius, the first divergent turn, and the horizon's series.

The headline claims a difference only where the statistics support it: for two runs of one
suite, the paired difference in final match of ``butterfly compare`` (its 95% interval,
clustered by scenario) must exclude zero and the exact sign test agree; for runs of different
suites (no pairing), their 95% intervals must not overlap."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from butterfly.analysis.report.data import (
    FDT_BINS,
    BaselineEntry,
    FirstDivergent,
    Headline,
    HeadRow,
    HeatCell,
    HorizonSeries,
    Radius,
    RadiusRow,
    RunEntry,
    UndoCell,
    UndoPanels,
)
from butterfly.core.scores import Aggregate, HorizonResult
from butterfly.errors import UserError
from oracle import UNDO_OPS

if TYPE_CHECKING:  # compare imports scipy: loaded only when two runs share a suite
    from butterfly.analysis.compare import RunAnswers

SIGN_ALPHA: Final = 0.05
"""A paired interval that excludes zero separates two runs only if the exact sign test over the
scenarios agrees (p below this): with few scenarios, or all differences equal, the normal
interval has no variance to go on and would call one scenario's difference certain."""

CURVE_POINTS: Final = 61
"""Points of a fitted horizon curve, log-spaced over the tested lengths."""

Answers = Callable[[int], "RunAnswers"]
"""Run i's final-match verdicts (read once per report; raises ``UserError`` if it cannot)."""


def head_rows(runs: Sequence[RunEntry]) -> tuple[HeadRow, ...]:
    """Each run's final match, interval, effective final match, cost and conversations."""
    out = []
    for r in runs:
        s, ci = r.score, r.score.final_match_ci
        out.append(HeadRow(label=r.label, final_match=s.final_match,
                           lo=None if ci is None else ci[0], hi=None if ci is None else ci[1],
                           effective=s.effective_final_match,
                           cost_usd=None if s.usage is None else s.usage.cost_usd,
                           n=s.n_conversations))
    return tuple(out)


def headline(runs: Sequence[RunEntry], baselines: Sequence[BaselineEntry],
             answers: Answers) -> Headline:
    """The headline's rows, the baselines' final match, and the pairs of runs it may say are
    apart (runs of one suite, ``suite_sha256``, are paired)."""
    rows = head_rows(runs)
    base = {b.name: b.score.final_match for b in baselines if b.score.final_match is not None}
    played = [sorted({c.id for c in r.score.scenarios}) for r in runs]  # the baselines': [0]'s
    return Headline(rows=rows, baselines=base,
                    above=separated(rows, [r.suite_sha256 for r in runs], answers),
                    on_baseline_scenarios=tuple(ids == played[0] for ids in played))


def separated(rows: Sequence[HeadRow], suites: Sequence[str],
              answers: Answers) -> frozenset[tuple[int, int]]:
    """The pairs (i, j) where run i's final match is above run j's with the statistics' support:
    the paired difference's 95% interval (runs of one suite) lies above zero, or (other suites)
    run i's 95% interval lies wholly above run j's."""
    out: set[tuple[int, int]] = set()
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            ci = _paired_ci(rows, suites, answers, i, j)
            if ci is None:
                continue
            if ci[1] < 0:  # B - A below zero: A above B
                out.add((i, j))
            elif ci[0] > 0:
                out.add((j, i))
    return frozenset(out)


def _paired_ci(rows: Sequence[HeadRow], suites: Sequence[str], answers: Answers, i: int,
               j: int) -> tuple[float, float] | None:
    """The 95% interval of j's final match minus i's: paired when they share a suite, else
    a conservative one from their own intervals (empty-overlap test); None if unknown."""
    a, b = rows[i], rows[j]
    if suites[i] != suites[j]:
        if a.lo is None or a.hi is None or b.lo is None or b.hi is None:
            return None
        return (b.lo - a.hi, b.hi - a.lo)
    from butterfly.analysis.compare import paired_difference, paired_matrix

    try:
        _, aa, bb = paired_matrix(answers(i), answers(j))
    except UserError:
        return None
    diff = paired_difference(aa.tolist(), bb.tolist())
    if diff.ci is None or diff.sign_p is None or diff.sign_p >= SIGN_ALPHA:  # too few moved
        return None
    return (diff.ci[0], diff.ci[1])


def heat(runs: Sequence[RunEntry], categories: Sequence[str]) -> tuple[tuple[HeatCell, ...], ...]:
    """One row per category, one cell per run (in the runs' order)."""
    return tuple(tuple(_cell(r.score.by_category.get(c)) for r in runs) for c in categories)


def _cell(x: Aggregate | None) -> HeatCell:
    if x is None:
        return HeatCell(final_match=None, matches=0, n=0)
    return HeatCell(final_match=x.final_match, matches=x.final_matches if x.final_match
                    is not None else 0, n=x.n_conversations)


def undo_panels(runs: Sequence[RunEntry]) -> UndoPanels | None:
    """Undo recovery by op for the undo ops some run played; None when no run played one."""
    ops = tuple(op for op in UNDO_OPS if any(_played(r, op) for r in runs))
    if not ops:
        return None
    return UndoPanels(ops=ops, rows=tuple(tuple(_undo(r, op) for op in ops) for r in runs))


def _played(r: RunEntry, op: str) -> bool:
    """Whether the run answered any turn of ``op``."""
    x = r.score.by_op.get(op)
    return x is not None and x.answers > 0


def _undo(r: RunEntry, op: str) -> UndoCell:
    u = r.score.undo_recovery_by_op.get(op)
    if not _played(r, op) or u is None:
        return UndoCell(op=op, state="not-played", share=None, k=0, n=0)
    if u.share is None or u.n == 0:
        return UndoCell(op=op, state="not-scored", share=None, k=0, n=u.n)
    return UndoCell(op=op, state="point", share=u.share, k=round(u.share * u.n), n=u.n)


def radius(runs: Sequence[RunEntry], baselines: Sequence[BaselineEntry]) -> Radius:
    """Each run's mean change radius with its interval, and the baselines'."""
    rows = []
    for r in runs:
        v, ci = r.score.change_radius, r.score.change_radius_ci
        lo, hi = (v, v) if ci is None else (ci[0], ci[1])
        rows.append(RadiusRow(value=v, lo=None if v is None else lo,
                              hi=None if v is None else hi, n=r.score.change_radius_n))
    return Radius(rows=tuple(rows), baselines={
        b.name: b.score.change_radius for b in baselines if b.score.change_radius is not None})


def first_divergent(runs: Sequence[RunEntry]) -> FirstDivergent:
    """Each run's first-divergent-turn distribution over :data:`FDT_BINS` (shares of all its
    complete conversations, %)."""
    shares = []
    for r in runs:
        hist = r.score.first_divergent_turn
        total = sum(hist.values()) or 1
        shares.append(tuple(100 * hist.get(b, 0) / total for b in FDT_BINS))
    return FirstDivergent(bins=FDT_BINS, shares=tuple(shares),
                          asked=any(r.params.ask_at is not None for r in runs))


def fitted_curve(h: HorizonResult) -> tuple[tuple[float, float], ...]:
    """The fitted final match (%) at lengths from the shortest tested length to the longest
    (log-spaced), or nothing when there is no fit."""
    if h.fit is None:
        return ()
    ns = [int(n) for n in h.by_length]
    lo, hi = min(ns), max(ns)
    xs = [lo * (hi / lo) ** (i / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)]
    a, b = h.fit.intercept, h.fit.slope
    return tuple((x, 100 / (1 + math.exp(-(a + b * math.log(x))))) for x in xs)


def series_of(i: int, label: str, h: HorizonResult) -> HorizonSeries:
    """Run i's horizon as the chart draws it."""
    return HorizonSeries(
        run=i, label=label, horizon=h,
        points=tuple((int(n), 100 * v.final_match) for n, v in h.by_length.items()),
        curve=fitted_curve(h),
        survival=((0, 100.0), *((s.turn, 100 * s.still_matched) for s in h.survival)))


def horizon_series(runs: Sequence[RunEntry]) -> tuple[HorizonSeries, ...]:
    """The runs over two chain lengths or more, as the horizon chart draws them."""
    return tuple(series_of(i, r.label, h) for i, r in enumerate(runs)
                 if (h := r.score.horizon) is not None and len(h.by_length) > 1)
