"""Regression detection between two runs of one suite, with false-discovery control.

Pure: numbers in, numbers out (numpy, scipy); no files, no clock. ``docs/statistics.md`` gives
the methods, their sources and the measured error rates.

The unit is a scenario i with two streams of pass/fail answers: A (old) with pass rate a_i and
B (new) with pass rate b_i. Scenario i REGRESSED when b_i < a_i. Answers are used in pairs
(repeat r of A with repeat r of B). Every method takes arrays of shape (..., m, n): a leading
batch axis (replications of a simulation; 1 for stored runs), m scenarios, n pairs in order, and
returns a :class:`Decision` with the same leading axes.

Methods (names as in ``butterfly compare --method``):

- ``diff``: the single-run diff, regressed when A passed and B failed in the first pair;
- ``fixed``: k pairs, one-sided Fisher exact test per scenario at level q, no suite-wide control;
- ``bh``: k pairs, the same exact test, then Benjamini-Hochberg over the suite at q
  (``scipy.stats.false_discovery_control``);
- ``ebh``: a per-scenario e-process (testing by betting on discordant pairs, averaged over all
  bets), sampled pair by pair up to a cap; a scenario stops when e-BH over the current e-values
  rejects it (or with ``stop_fine`` when it looks fine at a look), and e-BH is applied to the
  e-values at the stopping times;
- ``gs``: a group-sequential exact design: looks at fixed numbers of pairs; at a look the
  cumulative exact test either stops the scenario for efficacy (p <= c, final p-value = c times
  the number of looks so far: a union bound over looks), stops it as fine (p >= f: final p-value
  1), or continues; at the last look the final p-value is the exact p on all pairs plus c times
  the earlier looks. Every stopping rule reads the scenario's own answers only, so final
  p-values are independent across scenarios and BH controls the FDR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

from butterfly.core.vocab import COMPARE_METHODS

Bools = NDArray[np.bool_]
Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

METHODS = COMPARE_METHODS


@dataclass(frozen=True)
class Decision:
    """The outcome of one method: ``regressed`` (..., m) and the pairs it read (..., m)."""

    regressed: Bools
    pairs: Ints
    stat: Floats
    """p-values (diff, fixed, bh, gs) or e-values (ebh), per scenario."""

    @property
    def answers(self) -> Ints:
        """Answers used: two per pair (one of A, one of B)."""
        return 2 * self.pairs


# ---------------------------------------------------------------- multiple testing procedures


def bh(pvalues: NDArray[np.floating], q: float) -> Bools:
    """Benjamini-Hochberg at level q along the last axis (scipy's ``false_discovery_control``):
    reject the hypotheses whose BH-adjusted p-value is at most q."""
    p = np.asarray(pvalues, dtype=float)
    if p.shape[-1] == 0:
        return np.zeros(p.shape, dtype=bool)
    adjusted = stats.false_discovery_control(np.clip(p, 0.0, 1.0), axis=-1, method="bh")
    return np.asarray(adjusted <= q)


def ebh(evalues: NDArray[np.floating], q: float) -> Bools:
    """e-BH (Wang and Ramdas 2022) along the last axis: with e_(1) >= ... >= e_(m), reject the
    k* largest, k* = max{k : e_(k) >= m / (q k)} (none if no k qualifies). Controls the FDR at q
    under any dependence between the e-values."""
    e = np.asarray(evalues, dtype=float)
    m = e.shape[-1]
    if m == 0:
        return np.zeros(e.shape, dtype=bool)
    ranked = -np.sort(-e, axis=-1)
    k = np.arange(1, m + 1)
    ok = ranked * q * k >= m
    kstar = np.where(ok.any(axis=-1), m - np.argmax(ok[..., ::-1], axis=-1), 0)
    threshold = np.where(kstar > 0, m / (q * np.maximum(kstar, 1)), np.inf)
    return np.asarray(e >= threshold[..., None])


# ---------------------------------------------------------------- per-scenario tests


def fisher_greater(a_pass: NDArray[np.integer], a_n: NDArray[np.integer] | int,
                   b_pass: NDArray[np.integer], b_n: NDArray[np.integer] | int) -> Floats:
    """One-sided Fisher exact p-value for "A's pass rate is higher than B's" (B regressed):
    P(X >= a_pass) for X hypergeometric with the table's margins; the same number as
    ``scipy.stats.fisher_exact([[a_pass, a_n - a_pass], [b_pass, b_n - b_pass]],
    alternative="greater")``, vectorised. Valid for the composite null b >= a."""
    a1 = np.asarray(a_pass)
    b1 = np.asarray(b_pass)
    an = np.broadcast_to(np.asarray(a_n), a1.shape)
    bn = np.broadcast_to(np.asarray(b_n), b1.shape)
    p = stats.hypergeom.sf(a1 - 1, an + bn, a1 + b1, an)
    p = np.where(an + bn == 0, 1.0, p)
    return np.asarray(np.clip(p, 0.0, 1.0), dtype=float)


def log_mixture_e(k: NDArray[np.integer], l: NDArray[np.integer]) -> Floats:  # noqa: E741
    """log of the averaged-bet e-process after k pairs (A pass, B fail) and l pairs (A fail,
    B pass); concordant pairs leave it unchanged.

    Each pair gives s = +1, -1 or 0; under the null b >= a, E[s] = a - b <= 0, so for every bet
    lambda in [0, 1] the wealth prod_j (1 + lambda s_j) is a nonnegative supermartingale
    (testing by betting, Waudby-Smith and Ramdas 2023; Shafer and Vovk). Averaging it over
    lambda uniform on [0, 1] keeps that property and needs no tuning:

        E = int_0^1 (1 + lambda)^k (1 - lambda)^l dlambda
          = 2^(k+l+1) B(k+1, l+1) P(Beta(k+1, l+1) > 1/2),

    the mixture likelihood ratio of the discordant pairs' sign against a fair coin (the
    one-sided sign test of McNemar's pairs made anytime-valid).
    """
    k = np.asarray(k, dtype=float)
    l = np.asarray(l, dtype=float)  # noqa: E741
    upper = special.betainc(l + 1, k + 1, 0.5)  # = P(Beta(k+1, l+1) > 1/2)
    with np.errstate(divide="ignore"):
        out = (k + l + 1) * np.log(2.0) + special.betaln(k + 1, l + 1) + np.log(upper)
    return np.asarray(out, dtype=float)


def mixture_e(k: NDArray[np.integer], l: NDArray[np.integer]) -> Floats:  # noqa: E741
    """The averaged-bet e-value itself (see :func:`log_mixture_e`)."""
    return np.asarray(np.exp(log_mixture_e(k, l)), dtype=float)


# ---------------------------------------------------------------- methods


def _check(a: Bools, b: Bools) -> tuple[Bools, Bools]:
    a = np.asarray(a, dtype=bool)
    b = np.asarray(b, dtype=bool)
    if a.shape != b.shape or a.ndim < 2:
        raise ValueError(f"answers of A and B must have one shape (..., m, n): {a.shape} "
                         f"vs {b.shape}")
    return a, b


def method_diff(a: Bools, b: Bools) -> Decision:
    """Single-run diff: regressed when the first pair is (pass, fail)."""
    a, b = _check(a, b)
    reg = a[..., 0] & ~b[..., 0]
    return Decision(reg, np.ones(reg.shape, dtype=np.int64), np.where(reg, 0.0, 1.0))


def _fixed_p(a: Bools, b: Bools, k: int) -> Floats:
    if k < 1 or k > a.shape[-1]:
        raise ValueError(f"k = {k} pairs asked, {a.shape[-1]} available")
    return fisher_greater(a[..., :k].sum(-1), k, b[..., :k].sum(-1), k)


def method_fixed(a: Bools, b: Bools, k: int, q: float) -> Decision:
    """k pairs per scenario, exact test at level q per scenario, no suite-wide control."""
    a, b = _check(a, b)
    p = _fixed_p(a, b, k)
    return Decision(p <= q, np.full(p.shape, k, dtype=np.int64), p)


def method_bh(a: Bools, b: Bools, k: int, q: float) -> Decision:
    """k pairs per scenario, exact test, Benjamini-Hochberg over the suite at q."""
    a, b = _check(a, b)
    p = _fixed_p(a, b, k)
    return Decision(bh(p, q), np.full(p.shape, k, dtype=np.int64), p)


FINE_LOOKS = (10, 20, 30, 40, 60, 80, 100, 150)
"""Pairs at which a sequential scenario may be stopped as fine (``stop_fine``)."""
FINE_P = 0.5
"""A scenario looks fine at a look when the exact one-sided p-value so far is at least this."""


def method_ebh(a: Bools, b: Bools, q: float, cap: int | None = None, *, stop_fine: bool = False,
               fine_looks: Sequence[int] = FINE_LOOKS, fine_p: float = FINE_P) -> Decision:
    """Sequential e-BH on the answers in pair order (see :class:`Sequential`)."""
    a, b = _check(a, b)
    n = a.shape[-1] if cap is None else min(cap, a.shape[-1])
    seq = Sequential(a.shape[:-1], q, n, stop_fine=stop_fine, fine_looks=fine_looks,
                     fine_p=fine_p)
    return _fed(seq, a, b, n)


def _fed(design: Sequential | GroupSequential, a: Bools, b: Bools, n: int) -> Decision:
    """The decision of a live design fed the first ``n`` pairs, in order, while any scenario
    still samples."""
    for j in range(n):
        if not design.active.any():
            break
        design.update(a[..., j], b[..., j])
    return design.decision()


class _Tally:
    """The per-scenario state of a live design (:class:`Sequential`,
    :class:`GroupSequential`): A's and B's passes and the pairs fed so far, and which scenarios
    still sample, were decided (regressed), or stopped as fine."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.a_pass = np.zeros(shape, dtype=np.int64)
        self.b_pass = np.zeros(shape, dtype=np.int64)
        self.pairs = np.zeros(shape, dtype=np.int64)
        self.active = np.ones(shape, dtype=bool)
        self.decided = np.zeros(shape, dtype=bool)
        self.fine = np.zeros(shape, dtype=bool)

    def _count(self, act: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """One pair (a, b) counted for the scenarios ``act``."""
        self.a_pass += act & a
        self.b_pass += act & b
        self.pairs += act


class Sequential(_Tally):
    """Sequential e-BH over a suite (and a batch of suites): feed one pair per active scenario
    per round with :meth:`update`; read :attr:`active` to know which scenarios still sample.

    After each round, e-BH is applied to the current e-values (stopped scenarios keep the value
    at their stopping time); every active scenario it rejects stops there (decided). All of a
    round's rejections stop together, so the stopped-and-rejected set stays self-consistent and
    is still rejected by the final e-BH (a union of self-consistent sets is self-consistent).
    With ``stop_fine``, at each of ``fine_looks`` a scenario whose exact one-sided p-value on
    its pairs so far is at least ``fine_p`` stops as fine. A scenario also stops at ``cap``
    pairs. The final decision is e-BH on the e-values at the stopping times, never on running
    maxima. Scenarios are independent, so each e-process is a supermartingale for the whole
    suite's filtration and its value at any of these stopping times is an e-value.
    """

    def __init__(self, shape: tuple[int, ...], q: float, cap: int, *, stop_fine: bool = False,
                 fine_looks: Sequence[int] = FINE_LOOKS, fine_p: float = FINE_P) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.q = q
        self.cap = cap
        self.stop_fine = stop_fine
        self.fine_looks = frozenset(fine_looks)
        self.fine_p = fine_p
        super().__init__(shape)
        self.k = np.zeros(shape, dtype=np.int64)  # A pass, B fail
        self.l = np.zeros(shape, dtype=np.int64)  # A fail, B pass
        self.log_e = np.zeros(shape, dtype=float)

    def update(self, a: Bools, b: Bools, active: Bools | None = None) -> None:
        """One pair (a, b) for each active scenario (entries of stopped ones are ignored)."""
        act = self.active if active is None else self.active & active
        a = np.asarray(a, dtype=bool)
        b = np.asarray(b, dtype=bool)
        self.k += act & a & ~b
        self.l += act & ~a & b
        self._count(act, a, b)
        self.log_e = np.where(act, log_mixture_e(self.k, self.l), self.log_e)
        rejected = ebh(np.exp(self.log_e), self.q)
        newly = self.active & rejected
        self.decided |= newly
        self.active &= ~newly
        if self.stop_fine:
            at_look = self.active & np.isin(self.pairs, list(self.fine_looks))
            if at_look.any():
                p = fisher_greater(self.a_pass, self.pairs, self.b_pass, self.pairs)
                fine = at_look & (p >= self.fine_p)
                self.fine |= fine
                self.active &= ~fine
        self.active &= self.pairs < self.cap

    def decision(self) -> Decision:
        e = np.exp(self.log_e)
        return Decision(ebh(e, self.q), self.pairs.copy(), e)


GS_LOOKS = (6, 12, 25, 50, 100)
"""Pairs at the looks of the group-sequential design (the last one is its cap)."""
GS_EFFICACY: tuple[float, ...] = (0.0005, 0.001, 0.002, 0.002)
"""Efficacy boundaries c_s at the interim looks (the last one is reused): stop for efficacy when
the exact p so far is <= c_s; the final p-value is c_1 + ... + c_s (a union bound over looks)."""
GS_FUTILITY = (0.8, 0.6, 0.45, 0.35)
"""Futility boundaries f at the interim looks: stop as fine when the exact p so far is >= f."""


def gs_looks(available: int, looks: Sequence[int] = GS_LOOKS) -> tuple[int, ...]:
    """The looks of the group-sequential design within ``available`` pairs (the last look is
    moved down to what is available; with more pairs than it, the design still ends there)."""
    if available < 1:
        raise ValueError("no pairs")
    kept = [n for n in looks[:-1] if n < available]
    return (*kept, min(available, looks[-1]))


def method_gs(a: Bools, b: Bools, q: float, *, looks: Sequence[int] = GS_LOOKS,
              efficacy: Sequence[float] = GS_EFFICACY,
              futility: Sequence[float] = GS_FUTILITY) -> Decision:
    """Group-sequential exact design with BH (module docstring). ``looks`` are cumulative pair
    counts; ``futility`` has one boundary per interim look (the last one is reused). The
    answers are fed pair by pair to :class:`GroupSequential`, the design's one form."""
    a, b = _check(a, b)
    design = GroupSequential(a.shape[:-1], q, a.shape[-1], looks=looks, efficacy=efficacy,
                             futility=futility)
    return _fed(design, a, b, design.looks[-1])


class GroupSequential(_Tally):
    """The group-sequential design fed pair by pair (:func:`method_gs` feeds it stored
    answers): :attr:`active` says which scenarios still sample."""

    def __init__(self, shape: tuple[int, ...], q: float, cap: int, *,
                 looks: Sequence[int] = GS_LOOKS, efficacy: Sequence[float] = GS_EFFICACY,
                 futility: Sequence[float] = GS_FUTILITY) -> None:
        self.q = q
        self.looks = gs_looks(cap, looks)
        interim = len(self.looks) - 1
        self.c = [efficacy[min(s, len(efficacy) - 1)] if efficacy else 0.0
                  for s in range(interim)]
        self.f = [futility[min(s, len(futility) - 1)] if futility else 1.0
                  for s in range(interim)]
        self.spent = np.concatenate([[0.0], np.cumsum(self.c)])
        super().__init__(shape)
        self.final_p = np.ones(shape, dtype=float)

    def update(self, a: Bools, b: Bools) -> None:
        act = self.active
        self._count(act, np.asarray(a, dtype=bool), np.asarray(b, dtype=bool))
        at = act & np.isin(self.pairs, self.looks)
        if not at.any():
            return
        p = fisher_greater(self.a_pass, self.pairs, self.b_pass, self.pairs)
        s = np.searchsorted(np.asarray(self.looks), self.pairs)
        last = at & (s == len(self.looks) - 1)
        self.final_p = np.where(last, np.minimum(1.0, p + self.spent[np.minimum(s, len(
            self.spent) - 1)]), self.final_p)
        interim = at & ~last
        c = np.array([*self.c, 0.0])[np.minimum(s, len(self.c))]
        f = np.array([*self.f, 1.0])[np.minimum(s, len(self.f))]
        win = interim & (p <= c)
        lose = interim & ~win & (p >= f)
        self.final_p = np.where(win, self.spent[np.minimum(s + 1, len(self.spent) - 1)],
                                np.where(lose, 1.0, self.final_p))
        self.decided |= win
        self.fine |= lose
        self.active &= ~(last | win | lose)

    def decision(self) -> Decision:
        return Decision(bh(self.final_p, self.q), self.pairs.copy(), self.final_p.copy())


def run_method(name: str, a: Bools, b: Bools, q: float, *, k: int | None = None,
               cap: int | None = None, stop_fine: bool = False) -> Decision:
    """Dispatch by method name; ``k`` (fixed, bh) defaults to every pair, ``cap`` (ebh, gs) to
    every pair as well."""
    a, b = _check(a, b)
    n = a.shape[-1]
    if name == "diff":
        return method_diff(a, b)
    if name == "fixed":
        return method_fixed(a, b, n if k is None else k, q)
    if name == "bh":
        return method_bh(a, b, n if k is None else k, q)
    if name == "ebh":
        return method_ebh(a, b, q, cap, stop_fine=stop_fine)
    if name == "gs":
        if cap is not None:
            a, b = a[..., :cap], b[..., :cap]
        return method_gs(a, b, q)
    raise ValueError(f"unknown method {name!r} (known: {', '.join(METHODS)})")
