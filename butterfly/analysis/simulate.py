"""Simulating regressions: the realistic mixture of pass rates, injected drops, and the scoring
of a decision against the truth (false alarms, FDR, power, answers). Used by ``butterfly
calibrate`` and ``bench/stats.py`` (docs/statistics.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from butterfly.analysis.regress import Bools, Decision, Floats

MIXTURE = ((0.4, "beta", 8.0, 1.0), (0.3, "beta", 4.0, 4.0), (0.2, "beta", 1.0, 6.0),
           (0.1, "point", 0.0, 1.0))
"""The realistic baseline mixture of pass rates: 40% Beta(8,1), 30% Beta(4,4), 20% Beta(1,6),
10% exactly 0 or 1 (half each)."""


def mixture_rates(rng: np.random.Generator, size: tuple[int, ...]) -> Floats:
    """Pass rates drawn from :data:`MIXTURE`."""
    u = rng.random(size)
    out = np.empty(size, dtype=float)
    edges = np.cumsum([w for w, *_ in MIXTURE])
    lo = 0.0
    for (_, kind, x, y), hi in zip(MIXTURE, edges, strict=True):
        sel = (u >= lo) & (u < hi) if hi < edges[-1] else (u >= lo)
        count = int(sel.sum())
        if kind == "beta":
            out[sel] = rng.beta(x, y, count)
        else:
            out[sel] = rng.integers(0, 2, count).astype(float)
        lo = hi
    return out


def regressed_mask(m: int) -> Bools:
    """Every third scenario (indices 2, 5, 8, ...) is the one a drop is injected into."""
    return np.asarray(np.arange(m) % 3 == 2, dtype=bool)


@dataclass(frozen=True)
class Outcome:
    """Error rates of one method on one configuration, averaged over replications."""

    false_alarms: float
    """Mean number of rejected scenarios that did not regress."""
    fdr: float
    """Mean of V / max(R, 1)."""
    power: float | None
    """Found / regressed scenarios whose true drop is at least ``min_drop`` (pooled)."""
    answers: float
    """Mean answers used per suite."""
    reps: int


MIN_DROP = 0.10
"""Cases whose true drop is under 10 points do not count as misses (seed 003)."""


def outcome(decision: Decision, drop: Floats, *, min_drop: float = MIN_DROP) -> Outcome:
    """Score a decision against the truth: ``drop`` (..., m) is the true fall in pass rate
    (0 where nothing changed). A rejection of a scenario with drop > 0 is true even below
    ``min_drop``; only scenarios with drop >= ``min_drop`` count for power."""
    reg = decision.regressed
    truth = drop > 0
    v = (reg & ~truth).sum(-1)
    r = reg.sum(-1)
    counted = drop >= min_drop - 1e-12
    n_counted = counted.sum()
    reps = int(np.prod(reg.shape[:-1])) if reg.ndim > 1 else 1
    return Outcome(
        false_alarms=float(v.mean()),
        fdr=float((v / np.maximum(r, 1)).mean()),
        power=None if n_counted == 0 else float((reg & counted).sum() / n_counted),
        answers=float(decision.answers.sum(-1).mean()),
        reps=reps,
    )


def inject(b: Bools, rng: np.random.Generator, which: Bools, rate: float) -> Bools:
    """B's answers of the ``which`` scenarios turned into fails, each with probability ``rate``
    (seed 003's injected regression)."""
    flip = rng.random(b.shape) < rate
    return np.asarray(b & ~(flip & which[..., None]))
