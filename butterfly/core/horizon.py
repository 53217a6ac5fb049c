"""The horizon (contract v2, section 4): the chain length at which final match crosses 50%.

Pure: plain data in, a frozen record out; imports only numpy, the standard library and its
logistic fit (``core/logistic.py``), so that the notebook inlines it.

Input: one :class:`Conversation` per played conversation (scenario id, chain length, final
match, and the turn matches of turns 1..n). Output: :class:`Horizon`, whose :meth:`~Horizon.
to_json` is exactly ``{"turns", "ci": [lo, hi], "by_length": {"<length>": {"n",
"final_match"}}}`` plus the documented extra keys ``fit``, ``survival``, ``n_conversations``,
``n_scenarios``, ``bootstrap`` and ``note``.

Method (docs/ladder.md):

- **Fit.** Logistic regression of final match on log(chain length), by Newton's method on the
  counts per length (the likelihood depends on nothing else). Where the data are separated in
  log length (every success at lengths no longer than every failure, or the reverse, including
  all successes or all failures at two or more lengths), the maximum-likelihood slope is
  infinite; the fit is then Firth's bias-reduced (Jeffreys-penalised) logistic regression, which
  is always finite, and ``fit.method`` says so.
- **Horizon.** The fitted curve p(L) = 1 / (1 + exp(-(a + b log L))) crosses 50% at
  L* = exp(-a / b). It is reported only when the curve falls (b < 0) and L* lies in the sane
  range [1, 10 x the longest chain]. Otherwise ``turns`` is None and ``note`` says why (still
  above 50% at ten times the longest chain; below 50% from the first turn; a curve that does
  not fall).
- **Interval.** A seeded cluster bootstrap over scenarios: scenarios are drawn with
  replacement, each bringing all its conversations (every repeat), and the curve is refitted.
  A resample whose curve stays above 50% over the sane range counts as a horizon beyond it
  (+inf); one below 50% from the first turn, or not falling there, as below it (-inf). The
  interval is the 2.5th and 97.5th percentile of these extended values; a bound that is
  infinite is reported as None (the data cannot bound the horizon on that side).
- **One length only**: no fit; ``turns`` is None, ``ci`` is [None, None], ``note`` says so.
- **Survival curve**: for each turn index t, among conversations with at least t turns, the
  share whose turns 1..t all matched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from butterfly.core.logistic import Fit, fit_logistic, fit_many

SANE_FACTOR: Final = 10.0
"""A crossing beyond SANE_FACTOR x the longest chain observed is not reported."""
RESAMPLES: Final = 1000
LEVEL: Final = 0.95


@dataclass(frozen=True, slots=True)
class Conversation:
    """One played conversation: its scenario, its number of turns and what matched."""

    scenario: str
    length: int
    final_match: bool
    turn_matches: tuple[bool, ...] = ()
    """Turn match of turns 1..length (empty: unknown, the survival curve then skips it)."""

    def __post_init__(self) -> None:
        if self.length < 1:
            raise ValueError(f"{self.scenario}: a conversation has at least one turn")
        if self.turn_matches:
            if len(self.turn_matches) != self.length:
                raise ValueError(f"{self.scenario}: {len(self.turn_matches)} turn matches for "
                                 f"{self.length} turns")
            if self.turn_matches[-1] != self.final_match:
                raise ValueError(f"{self.scenario}: final match differs from the last turn's")


@dataclass(frozen=True, slots=True)
class Horizon:
    turns: float | None
    ci: tuple[float | None, float | None]
    by_length: dict[int, tuple[int, float]]
    """length -> (conversations, final match share)."""
    fit: Fit | None
    survival: tuple[tuple[int, int, float], ...]
    """(turn t, conversations with at least t turns, share matched at every turn up to t)."""
    n_conversations: int
    n_scenarios: int
    resamples: int
    """Bootstrap fits made (resamples holding one length only are skipped)."""
    seed: int
    resamples_beyond: int
    """Bootstrap fits that did not cross within the sane range (either side)."""
    note: str | None
    sane_max: float

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": _round(self.turns),
            "ci": [_round(self.ci[0]), _round(self.ci[1])],
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
            "bootstrap": {"resamples": self.resamples, "seed": self.seed,
                          "not_crossing": self.resamples_beyond, "sane_max": self.sane_max},
            "note": self.note,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def crossing(fit: Fit, sane_max: float) -> float:
    """Where the fitted curve falls through 50%: a length in [1, sane_max], +inf when it is
    still above 50% at sane_max (or never falls while above), -inf when it is at or below 50%
    from the first turn."""
    if fit.slope >= 0:
        return math.inf if fit.rate(1.0) > 0.5 else -math.inf
    log_star = -fit.intercept / fit.slope
    if log_star < 0:
        return -math.inf
    if log_star > math.log(sane_max):
        return math.inf
    return math.exp(log_star)


# ---------------------------------------------------------------------------- the horizon


def horizon(conversations: Sequence[Conversation], *, resamples: int = RESAMPLES,
            seed: int = 0) -> Horizon:
    """The horizon of a run's conversations (see the module docstring)."""
    if not conversations:
        raise ValueError("no conversations")
    scenarios = sorted({c.scenario for c in conversations})
    lengths = sorted({c.length for c in conversations})
    col = {n: j for j, n in enumerate(lengths)}
    row = {s: i for i, s in enumerate(scenarios)}
    succ = np.zeros((len(scenarios), len(lengths)))
    trials = np.zeros_like(succ)
    for c in conversations:
        trials[row[c.scenario], col[c.length]] += 1
        succ[row[c.scenario], col[c.length]] += c.final_match
    total_s, total_n = succ.sum(0), trials.sum(0)
    by_length = {n: (int(total_n[j]), float(total_s[j] / total_n[j]))
                 for n, j in col.items()}
    sane_max = SANE_FACTOR * lengths[-1]
    curve = survival(conversations)

    def result(turns: float | None, ci: tuple[float | None, float | None], fit: Fit | None,
               done: int, beyond: int, note: str | None) -> Horizon:
        return Horizon(turns=turns, ci=ci, by_length=by_length, fit=fit, survival=curve,
                       n_conversations=len(conversations), n_scenarios=len(scenarios),
                       resamples=done, seed=seed, resamples_beyond=beyond, note=note,
                       sane_max=sane_max)

    if len(lengths) < 2:
        return result(None, (None, None), None, 0, 0,
                      f"one chain length only ({lengths[0]} turns): no fit, no horizon")
    fit = fit_logistic(lengths, total_s, total_n)
    if fit is None:  # pragma: no cover - a singular fit on two lengths or more
        return result(None, (None, None), None, 0, 0, "the logistic fit failed")
    point = crossing(fit, sane_max)
    rng = np.random.default_rng(seed)
    k = len(scenarios)
    # each resample's counts per length, one resample at a time: the weights of all of them
    # would be resamples x scenarios (80 MB at 10,000 scenarios)
    s_boot, n_boot = np.empty((resamples, len(lengths))), np.empty((resamples, len(lengths)))
    for i in range(resamples):
        weights = np.bincount(rng.integers(0, k, size=k), minlength=k).astype(float)
        s_boot[i], n_boot[i] = weights @ succ, weights @ trials
    fits = fit_many(lengths, s_boot, n_boot)
    values = [crossing(f, sane_max) for f in fits if f is not None]  # None: one length only
    ci: tuple[float | None, float | None] = (None, None)
    beyond = sum(not math.isfinite(v) for v in values)
    if values:
        alpha = (1 - LEVEL) / 2
        arr = np.asarray(values)
        lo, hi = (float(np.quantile(arr, q, method="inverted_cdf")) for q in (alpha, 1 - alpha))
        ci = (lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)
    note = None
    if not math.isfinite(point):
        note = (f"the fitted final match is still above 50% at {sane_max:g} turns (10 x the "
                "longest chain)" if point > 0 else
                "the fitted final match is at or below 50% from the first turn")
    return result(point if math.isfinite(point) else None, ci, fit, len(values), beyond, note)


def survival(conversations: Sequence[Conversation]) -> tuple[tuple[int, int, float], ...]:
    """(t, n_t, share of the n_t conversations with >= t turns matched at every turn <= t)."""
    known = [c for c in conversations if c.turn_matches]
    if not known:
        return ()
    longest = max(c.length for c in known)
    out = []
    for t in range(1, longest + 1):
        at = [c for c in known if c.length >= t]
        alive = sum(all(c.turn_matches[:t]) for c in at)
        out.append((t, len(at), alive / len(at)))
    return tuple(out)


__all__ = ["Conversation", "Fit", "Horizon", "crossing", "fit_logistic", "fit_many", "horizon",
           "survival"]
