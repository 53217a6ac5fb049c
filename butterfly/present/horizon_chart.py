"""The report's horizon chart: final match by chain length with the fitted curve and where the
horizon lies, beside the Kaplan-Meier survival curve of turn match (docs/ladder.md).

Reads each run's typed horizon (``score --json``'s ``horizon``); its words label the run's
points, made by ``core/horizon_text.py`` as ``butterfly score`` makes them. The fitted curve is
drawn only over the tested lengths; a finite horizon is a dotted vertical line at its crossing,
a censored one a triangle at its bound pointing the way it lies (the crossing is no number).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from butterfly.core.horizon_text import horizon_words
from butterfly.core.results import HorizonResult

CURVE_POINTS = 61


def fitted_curve(h: HorizonResult) -> tuple[list[float], list[float]]:
    """The fitted final match (%) at lengths from the shortest tested length to the longest
    (log-spaced), or nothing when there is no fit."""
    if h.fit is None:
        return [], []
    ns = [int(n) for n in h.by_length]
    lo, hi = min(ns), max(ns)
    xs = [lo * (hi / lo) ** (i / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)]
    a, b = h.fit.intercept, h.fit.slope
    return xs, [100 / (1 + math.exp(-(a + b * math.log(x)))) for x in xs]


def _mark(ax: Any, h: HorizonResult, color: str) -> None:
    """The horizon: a line at a crossing, a triangle at a censored bound, nothing otherwise."""
    if h.turns is not None:
        ax.axvline(h.turns, color=color, linewidth=0.8, linestyle=":")
    elif h.censored is not None and h.bound is not None:
        marker = ">" if h.censored == "above" else "<"
        ax.plot([h.bound], [50], marker, color=color, markersize=8)


def horizon_figure(runs: Sequence[tuple[str, HorizonResult]]) -> Any:
    """The figure of (label, horizon) runs, one colour each."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    for label, h in runs:
        (line,) = left.plot([int(n) for n in h.by_length],
                            [100 * v.final_match for v in h.by_length.values()], "o",
                            label=f"{label}: horizon {horizon_words(h)}")
        left.plot(*fitted_curve(h), "-", color=line.get_color(), linewidth=1)
        _mark(left, h, line.get_color())
        right.step([s.turn for s in h.survival], [100 * s.still_matched for s in h.survival],
                   where="post", label=label)
    left.axhline(50, color="#999", linewidth=0.8, linestyle=":")
    left.set_xscale("log")
    left.set_xlabel("chain length (turns, log scale)")
    left.set_ylabel("final match (%)")
    left.set_ylim(-2, 102)
    left.set_title("Final match by chain length, logistic fit")
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    right.set_xlabel("turn")
    right.set_ylabel("matched at every turn so far (%)")
    right.set_ylim(-2, 102)
    right.set_title("Survival of turn match (Kaplan-Meier)")
    right.legend(fontsize=7)
    return fig
