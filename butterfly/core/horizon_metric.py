"""The horizon (contract section 4): the chain length at which final match crosses 50%, and
where the data cannot place that crossing inside the tested lengths, the bound it lies beyond.

Pure: plain data in, a frozen record out; imports only numpy, the standard library and its
logistic fit (``core/logistic.py``), so that the notebook inlines it.

Input: one :class:`Conversation` per played conversation (scenario id, chain length, final
match, and the turn matches of turns 1..n). Output: :class:`Horizon`, whose :meth:`~Horizon.
to_json` is exactly ``{"turns", "ci": [lo, hi], "censored", "bound", "note", "by_length":
{"<length>": {"n", "final_match"}}}`` plus the documented extra keys ``fit``, ``survival``,
``n_conversations``, ``n_scenarios`` and ``bootstrap``.

Method (docs/ladder.md), with L_min and L_max the shortest and longest tested lengths, decided
in the contract's order:

1. no conversation failed: censored ``above`` L_max;
2. every conversation failed: censored ``below`` L_min;
3. outcomes mixed at fewer than two distinct lengths: no horizon, ``note`` "not enough data";
4. otherwise the fit. **Fit**: logistic regression of final match on log(chain length), by
   Newton's method on the counts per length; where the data are separated in log length the
   maximum-likelihood slope is infinite and the fit is Firth's bias-reduced one (always finite;
   ``fit.method`` says so). **Place**: the horizon is the first tested-range length where the
   fitted final match is at or below 50%: ``below`` L_min when it is so already at L_min,
   ``above`` L_max when it is still above 50% at L_max, otherwise ``turns`` is where the curve
   falls through 50%, exp(-intercept / slope), inside [L_min, L_max]. A crossing outside the
   tested lengths is never a number.

**Interval**: a seeded cluster bootstrap over scenarios (each drawn scenario brings all its
conversations); each resample is decided by the same four steps over the run's [L_min, L_max],
giving a length, +inf (above) or -inf (below); resamples in step 3 are left out and counted.
The ends are the 2.5th and 97.5th percentiles of these values (3 decimals). An end beyond the
tested lengths on its own side is open (None); an end beyond them on the other side (the whole
interval lies above L_max, or below L_min) is that bound. Ends that coincide are widened to the
nearest distinct resample values; where there is none on a side (every resample crosses at the
same length: each scenario passes up to some tested length and fails from the next), to the
nearest tested length beyond it on that side, between which the data put the crossing; open
only beyond the tested lengths. An interval never has zero width.

**Survival curve**: the Kaplan-Meier estimate of "matched at every turn so far" by turn index.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from butterfly.core.logistic import Fit, fit_logistic, fit_many

RESAMPLES: Final = 1000
LEVEL: Final = 0.95
NOT_ENOUGH_DATA: Final = "not enough data"
Censored = Literal["above", "below"]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One played conversation: its scenario, its number of turns and what matched."""

    scenario: str
    length: int
    final_match: bool
    turn_matches: tuple[bool, ...] = ()
    """Turn match of turns 1..length, or of the ``asked`` turns (empty: unknown, the survival
    curve then skips it)."""
    asked: tuple[int, ...] = ()
    """The turns ``turn_matches`` are of, when the run asked at chosen turns (the last is
    ``length``); empty: every turn."""

    def __post_init__(self) -> None:
        if self.length < 1:
            raise ValueError(f"{self.scenario}: a conversation has at least one turn")
        if self.asked and self.asked[-1] != self.length:
            raise ValueError(f"{self.scenario}: the last turn of a chain is always asked")
        if self.turn_matches:
            if len(self.turn_matches) != (len(self.asked) if self.asked else self.length):
                raise ValueError(f"{self.scenario}: {len(self.turn_matches)} turn matches for "
                                 f"{self.length} turns")
            if self.turn_matches[-1] != self.final_match:
                raise ValueError(f"{self.scenario}: final match differs from the last turn's")


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """What the interval rests on: resamples drawn, those decided (step 3 leaves a resample
    out), and how many of those were censored on each side."""

    drawn: int
    used: int
    above: int
    below: int
    seed: int


@dataclass(frozen=True, slots=True)
class Horizon:
    turns: float | None
    """The crossing, inside [L_min, L_max]; None when censored or not enough data."""
    ci: tuple[float | None, float | None]
    """None: an open end (the interval goes on beyond the tested lengths on that side)."""
    censored: Censored | None
    bound: int | None
    """The tested length the horizon is censored at (L_max above, L_min below)."""
    note: str | None
    """Why there is no number: ``not enough data`` (step 3), or the reason for a censoring."""
    by_length: dict[int, tuple[int, float]]
    """length -> (conversations, final match share)."""
    fit: Fit | None
    """The logistic fit (step 4 only)."""
    survival: tuple[tuple[int, int, float], ...]
    """(turn t, conversations at risk at t, Kaplan-Meier share matched at every turn to t)."""
    n_conversations: int
    n_scenarios: int
    bootstrap: Bootstrap

    def to_json(self) -> dict[str, Any]:
        b = self.bootstrap
        return {
            "turns": _round(self.turns),
            "ci": [_round(self.ci[0]), _round(self.ci[1])],
            "censored": self.censored,
            "bound": self.bound,
            "note": self.note,
            "by_length": {
                str(n): {"n": k, "final_match": round(r, 6)}
                for n, (k, r) in sorted(self.by_length.items())
            },
            "fit": None if self.fit is None else {
                "intercept": round(self.fit.intercept, 6),
                "slope": round(self.fit.slope, 6),
                "method": self.fit.method,
            },
            "survival": [{"turn": t, "n": n, "still_matched": round(s, 6)}
                         for t, n, s in self.survival],
            "n_conversations": self.n_conversations,
            "n_scenarios": self.n_scenarios,
            "bootstrap": {"resamples": b.used, "drawn": b.drawn, "above": b.above,
                          "below": b.below, "seed": b.seed},
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


# ---------------------------------------------------------------------------- the horizon


def crossing(fit: Fit, shortest: float, longest: float) -> float:
    """Step 4: the first length of [shortest, longest] where the fitted final match is at or
    below 50%: -inf when it is so already at ``shortest``, +inf when it is still above 50% at
    ``longest``, else where the curve falls through 50% (whatever the curve's shape: one that
    rises from under 50% is -inf)."""
    if fit.logit(shortest) <= 0:
        return -math.inf
    if fit.logit(longest) > 0:
        return math.inf
    return min(max(math.exp(-fit.intercept / fit.slope), shortest), longest)


def decide(successes: float, trials: float, fit: Fit | None, shortest: float,
           longest: float) -> float | None:
    """Steps 1 to 4 on pooled counts and their fit (None: fewer than two lengths), as one
    value: a length, +inf (above), -inf (below), or None (not enough data)."""
    if successes == trials:
        return math.inf
    if successes == 0:
        return -math.inf
    if fit is None:
        return None
    return crossing(fit, shortest, longest)


def interval(values: Sequence[float], shortest: float, longest: float,
             lengths: Sequence[float] = ()) -> tuple[float | None, float | None]:
    """The percentile interval of decided values (lengths and +-inf), with open (None) and
    bound ends and no zero width (see the module docstring); ``lengths``: the tested lengths,
    which bound an interval whose resamples all coincide."""
    if not values:
        return None, None
    arr = np.sort(np.round(np.asarray(values, dtype=float), 3))
    alpha = (1 - LEVEL) / 2
    lo, hi = (float(np.quantile(arr, q, method="inverted_cdf")) for q in (alpha, 1 - alpha))
    if lo == hi and math.isfinite(lo):  # widen: the nearest distinct values, else lengths
        point = lo
        lo = float(arr[arr < point].max()) if (arr < point).any() else max(
            (n for n in lengths if n < point), default=-math.inf)
        hi = float(arr[arr > point].min()) if (arr > point).any() else min(
            (n for n in lengths if n > point), default=math.inf)
    return (None if lo == -math.inf else min(lo, longest),
            None if hi == math.inf else max(hi, shortest))


def _counts(conversations: Sequence[Conversation], scenarios: list[str],
            lengths: list[int]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Final matches and conversations per scenario (rows) and length (columns)."""
    col = {n: j for j, n in enumerate(lengths)}
    row = {s: i for i, s in enumerate(scenarios)}
    succ = np.zeros((len(scenarios), len(lengths)))
    trials = np.zeros_like(succ)
    for c in conversations:
        trials[row[c.scenario], col[c.length]] += 1
        succ[row[c.scenario], col[c.length]] += c.final_match
    return succ, trials


def _resampled(succ: NDArray[np.float64], trials: NDArray[np.float64], lengths: list[int],
               resamples: int, seed: int) -> list[float | None]:
    """Each bootstrap resample of scenarios decided by steps 1 to 4 over the run's lengths."""
    rng = np.random.default_rng(seed)
    k = succ.shape[0]
    # each resample's counts per length, one resample at a time: the weights of all of them
    # would be resamples x scenarios (80 MB at 10,000 scenarios)
    s_boot, n_boot = np.empty((resamples, len(lengths))), np.empty((resamples, len(lengths)))
    for i in range(resamples):
        weights = np.bincount(rng.integers(0, k, size=k), minlength=k).astype(float)
        s_boot[i], n_boot[i] = weights @ succ, weights @ trials
    fits = fit_many(lengths, s_boot, n_boot)
    return [decide(s.sum(), n.sum(), f, lengths[0], lengths[-1])
            for s, n, f in zip(s_boot, n_boot, fits, strict=True)]


def _verdict(point: float | None, fitted: bool, shortest: int,
             longest: int) -> tuple[float | None, Censored | None, int | None, str | None]:
    """(turns, censored, bound, note) of the decided point."""
    if point is None:
        return None, None, None, NOT_ENOUGH_DATA
    if point not in (math.inf, -math.inf):  # a crossing (or, never seen, a NaN)
        return point, None, None, None
    above = point > 0
    if not fitted:
        note = "no conversation failed" if above else "every conversation failed"
    elif above:
        note = (f"the fitted final match is still above 50% at {longest} turns, the longest "
                "tested length")
    else:
        note = (f"the fitted final match is at or below 50% from {shortest} turns, the shortest "
                "tested length")
    return None, "above" if above else "below", longest if above else shortest, note


def horizon(conversations: Sequence[Conversation], *, resamples: int = RESAMPLES,
            seed: int = 0, chains: Sequence[Conversation] | None = None) -> Horizon:
    """The horizon of a run's conversations (see the module docstring); ``chains``: the
    conversations the survival curve is drawn from, when they are not ``conversations`` (a run
    asked at chosen turns: each ask is a point of the fit, each chain one curve)."""
    if not conversations:
        raise ValueError("no conversations")
    scenarios = sorted({c.scenario for c in conversations})
    lengths = sorted({c.length for c in conversations})
    succ, trials = _counts(conversations, scenarios, lengths)
    total_s, total_n = succ.sum(0), trials.sum(0)
    shortest, longest = lengths[0], lengths[-1]
    fit = fit_logistic(lengths, total_s, total_n) if 0 < total_s.sum() < total_n.sum() else None
    point = decide(total_s.sum(), total_n.sum(), fit, shortest, longest)
    boot, values = Bootstrap(0, 0, 0, 0, seed), [] if point is None else [point]
    if fit is not None:  # step 4: the resamples make the interval
        values = [v for v in _resampled(succ, trials, lengths, resamples, seed) if v is not None]
        boot = Bootstrap(resamples, len(values), values.count(math.inf),
                         values.count(-math.inf), seed)
    turns, censored, bound, note = _verdict(point, fit is not None, shortest, longest)
    return Horizon(
        turns=turns, ci=interval(values, shortest, longest, lengths), censored=censored,
        bound=bound,
        note=note, fit=fit, survival=survival(conversations if chains is None else chains),
        n_conversations=len(conversations),
        n_scenarios=len(scenarios), bootstrap=boot,
        by_length={n: (int(total_n[j]), float(total_s[j] / total_n[j]))
                   for j, n in enumerate(lengths)})


def _first_miss(c: Conversation) -> int | None:
    turns = c.asked or range(1, c.length + 1)
    return next((t for t, m in zip(turns, c.turn_matches, strict=True) if not m), None)


def survival(conversations: Sequence[Conversation]) -> tuple[tuple[int, int, float], ...]:
    """The Kaplan-Meier curve of turn match: at turn t, of the conversations at risk (at least
    t turns, every turn before t matched), the share that match at t; the curve is the running
    product, so it never rises. A conversation that diverges leaves the risk set at that turn
    (the event); one that never diverges leaves it after its last turn (censored), not as a
    success at later turns. The curve ends at the last turn with a conversation at risk;
    conversations without turn matches are skipped. (t, at risk, share). Conversations asked
    at chosen turns are at risk from one asked turn to the next: the curve then has a point at
    asked turns only (any conversation's)."""
    known = [c for c in conversations if c.turn_matches]
    if not known:
        return ()
    shown = (None if all(not c.asked for c in known) else
             {t for c in known for t in (c.asked or range(1, c.length + 1))})
    longest = max(c.length for c in known)
    events, leave = [0] * (longest + 2), [0] * (longest + 2)
    for c in known:
        t = _first_miss(c)
        if t is not None:
            events[t] += 1
        leave[c.length + 1 if t is None else t + 1] += 1
    at_risk, share, out = len(known), 1.0, []
    for t in range(1, longest + 1):
        at_risk -= leave[t]
        if at_risk == 0:
            break
        share *= 1 - events[t] / at_risk
        if shown is None or t in shown:
            out.append((t, at_risk, share))
    return tuple(out)

