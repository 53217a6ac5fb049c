"""The horizon in words: one text for ``butterfly score``, the report and the Kaggle notebook.

Rendering only, from the typed result (``HorizonResult``, the ``horizon`` of ``score --json``);
the computation is ``core/horizon_metric.py``. Inlined into the notebook, so that the three say the
same thing. A crossing outside the tested lengths is never a number here: an open end of the
interval reads "below L_min" or "above L_max" (tested lengths), and the two ends are printed
with as many decimals (up to 3, the JSON's) as it takes for them to differ.
"""

from __future__ import annotations

from butterfly.core.scores import HorizonResult


def _turns(n: float) -> str:
    return f"{n:g} turn" if n == 1 else f"{n:g} turns"


def _ends(lo: float, hi: float) -> tuple[str, str]:
    """The two ends with the fewest decimals (1 to 3) that tell them apart."""
    for places in (1, 2):
        a, b = f"{lo:.{places}f}", f"{hi:.{places}f}"
        if a != b:
            return a, b
    return f"{lo:.3f}", f"{hi:.3f}"


def lengths(h: HorizonResult) -> tuple[int, int]:
    """The shortest and longest tested chain lengths."""
    ns = sorted(int(n) for n in h.by_length)
    return ns[0], ns[-1]


def interval_text(h: HorizonResult) -> str | None:
    """``95% CI 9.8 to 15.1``, an open end as "below L_min" / "above L_max"; None when there is
    no interval (not enough data) or it says no more than the censoring ([L_max, open])."""
    shortest, longest = lengths(h)
    lo, hi = h.ci
    if h.note is not None and h.censored is None:
        return None
    if (h.censored, lo, hi) in (("above", longest, None), ("below", None, shortest)):
        return None
    if lo is not None and hi is not None:
        a, b = _ends(lo, hi)
    else:
        a = f"below {shortest}" if lo is None else f"{lo:.1f}"
        b = f"above {longest}" if hi is None else f"{hi:.1f}"
    return f"95% CI {a} to {b}"


def value_text(h: HorizonResult) -> str:
    """``12.4 turns``, ``above 40 turns``, ``below 5 turns`` or ``not enough data``."""
    if h.turns is not None:
        return f"{h.turns:.1f} turns"
    if h.censored is not None and h.bound is not None:
        return f"{h.censored} {_turns(h.bound)}"
    return h.note or "no horizon"


def _detail(h: HorizonResult) -> list[str]:
    """Why there is no number, or no interval."""
    if h.censored is not None:
        return [h.note] if h.note else []
    if h.turns is None:
        shortest, longest = lengths(h)
        return [f"outcomes mixed at {_turns(shortest)} only" if shortest == longest
                else "the logistic fit failed"]
    return []


def horizon_words(h: HorizonResult) -> str:
    """The horizon with its reason and interval, e.g. ``above 40 turns (no conversation
    failed)`` or ``7.6 turns (95% CI 5.3 to above 10)``."""
    parts = _detail(h) + [t for t in (interval_text(h),) if t]
    return value_text(h) + (f" ({'; '.join(parts)})" if parts else "")


def rates_text(h: HorizonResult) -> str:
    """Final match by chain length: ``5: 76.7% (n=60), 10: 61.7% (n=60)``."""
    return ", ".join(f"{n}: {100 * r.final_match:.1f}% (n={r.n})"
                     for n, r in h.by_length.items())


def horizon_line(h: HorizonResult) -> str:
    """The one line ``butterfly score`` and the notebook print."""
    return f"horizon: {horizon_words(h)}; final match by chain length: {rates_text(h)}"

