"""The report's horizon chart: final match by chain length with the fitted curve and where the
horizon lies, beside the Kaplan-Meier survival curve of turn match (docs/ladder.md).

Reads each run's typed horizon (``score --json``'s ``horizon``); its words label the run's
points, made by ``core/horizon_text.py`` as ``butterfly score`` makes them. The fitted curve is
drawn only over the tested lengths, and only where there is a fit: a run with no failure (or
no success) has none (``HorizonResult.fit`` is None), so no curve is drawn for it. A finite
horizon is a dotted vertical line at its crossing; a censored one an arrow from its bound
pointing the way it lies, labelled in words ("above 20 turns": the crossing is no number).
Matplotlib draws it; each run's artists carry SVG ids (``points-I``, ``fit-I``, ``horizon-I``,
``censored-I`` with its label ``censored-label-I``, ``survival-I``; I the run's index among the
charted runs) so tests read what was drawn."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from butterfly.core.horizon_text import horizon_words, lengths, value_text
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


ARROW = 1.45
"""How far a censored horizon's arrow reaches past its bound (a factor on the log axis)."""


def _mark(ax: Any, i: int, h: HorizonResult, color: str) -> None:
    """The horizon: a line at a crossing, an arrow from a censored bound with its words,
    nothing otherwise (not enough data)."""
    if h.turns is not None:
        ax.axvline(h.turns, color=color, linewidth=0.8, linestyle=":", gid=f"horizon-{i}")
    elif h.censored is not None and h.bound is not None:
        above = h.censored == "above"
        tip = h.bound * ARROW if above else h.bound / ARROW
        y = 50 - 10 * (i % 5)
        arrow = ax.annotate("", xy=(tip, y), xytext=(h.bound, y),
                            arrowprops={"arrowstyle": "-|>", "color": color, "linewidth": 1.4})
        arrow.arrow_patch.set_gid(f"censored-{i}")
        ax.text((h.bound * tip) ** 0.5, y + 1.5, value_text(h), color=color, fontsize=8,
                ha="center", va="bottom", gid=f"censored-label-{i}")


def spaced(lengths: Sequence[int]) -> list[int]:
    """The tested lengths to label on the log axis: the shortest, the longest, and those in
    between at least a tenth of the axis from the last one kept (labels would overlap)."""
    gap = 0.1 * math.log(lengths[-1] / lengths[0])
    out = [lengths[0]]
    for n in lengths[1:-1]:
        if math.log(n / out[-1]) >= gap and math.log(lengths[-1] / n) >= gap:
            out.append(n)
    return out + ([lengths[-1]] if lengths[-1] != lengths[0] else [])


def horizon_figure(runs: Sequence[tuple[str, HorizonResult]]) -> Any:
    """The figure of (label, horizon) runs, one colour each."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    for i, (label, h) in enumerate(runs):
        (line,) = left.plot([int(n) for n in h.by_length],
                            [100 * v.final_match for v in h.by_length.values()], "o",
                            label=f"{label}: horizon {horizon_words(h)}", gid=f"points-{i}")
        xs, ys = fitted_curve(h)
        if xs:
            left.plot(xs, ys, "-", color=line.get_color(), linewidth=1, gid=f"fit-{i}")
        _mark(left, i, h, line.get_color())
        right.step([0] + [s.turn for s in h.survival],  # every curve starts at 100%
                   [100.0] + [100 * s.still_matched for s in h.survival],
                   where="post", label=label, gid=f"survival-{i}")
    shortest = min(lengths(h)[0] for _, h in runs)
    longest = max(lengths(h)[1] for _, h in runs)
    left.set_xlim(shortest / ARROW ** 1.3, longest * ARROW ** 1.3)  # room for the arrows
    left.axhline(50, color="#999", linewidth=0.8, linestyle=":")
    left.set_xscale("log")
    tested = spaced(sorted({int(n) for _, h in runs for n in h.by_length}))
    left.set_xticks(tested, [str(n) for n in tested])
    left.minorticks_off()
    left.set_xlabel("chain length (turns, log scale)")
    left.set_ylabel("final match (%)")
    left.set_ylim(-2, 102)
    left.set_title("Final match by chain length, logistic fit")
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_xlabel("turn (0: before the first)")
    right.set_ylabel("matched at every turn so far (%)")
    right.set_ylim(-2, 102)
    right.set_title("Survival of turn match (Kaplan-Meier)")
    right.legend(fontsize=7)
    return fig
