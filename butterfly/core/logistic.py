"""The logistic fit of the horizon (core/horizon_metric.py): final match on log(chain length).

Pure: imports only numpy and the standard library. Newton's method on the counts per length
(the likelihood depends on nothing else); where the data are separated in log length (every
success at lengths no longer than every failure, or the reverse, including all successes or all
failures) the maximum-likelihood slope is infinite, and the fit is Firth's bias-reduced
(Jeffreys-penalised) logistic regression, which is always finite. Firth's score is the ordinary
score of pseudo-data (s + h/2 successes of n + h trials, h the leverages), and each step is the
Fisher step of that pseudo-data: with the plain information instead, the iteration could cycle
without converging (one conversation at each of two lengths: a third of the rows of thin
bootstrap data). :func:`fit_many` fits the bootstrap's resamples together, bit for bit as one at
a time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Fit:
    """p(L) = 1 / (1 + exp(-(intercept + slope * log L)))."""

    intercept: float
    slope: float
    method: str
    """``mle`` or ``firth`` (separated data)."""

    def logit(self, length: float) -> float:
        return self.intercept + self.slope * math.log(length)

    def rate(self, length: float) -> float:
        return 1.0 / (1.0 + math.exp(-self.logit(length)))


def _separated(x: NDArray[np.float64], succ: NDArray[np.float64],
               trials: NDArray[np.float64]) -> bool:
    """Are successes and failures (quasi-)separated along x (grouped data)?"""
    fail = trials - succ
    has_s, has_f = x[succ > 0], x[fail > 0]
    if has_s.size == 0 or has_f.size == 0:
        return True
    return bool(has_s.max() <= has_f.min() or has_f.max() <= has_s.min())


def fit_logistic(lengths: Sequence[float] | NDArray[np.float64],
                 successes: Sequence[float] | NDArray[np.float64],
                 trials: Sequence[float] | NDArray[np.float64]) -> Fit | None:
    """Logistic fit of success on log(length), from counts per length (successes may be
    fractional: expected rates). None with fewer than two distinct lengths."""
    s = np.asarray(successes, dtype=float)[None]
    n = np.asarray(trials, dtype=float)[None]
    return fit_many(lengths, s, n)[0]


def fit_many(lengths: Sequence[float] | NDArray[np.float64], successes: NDArray[np.float64],
             trials: NDArray[np.float64]) -> list[Fit | None]:
    """:func:`fit_logistic` of every row of ``successes`` and ``trials`` (one row per
    bootstrap resample, one column per length), the rows that keep the same lengths fitted
    together: each row's Newton steps are its own (it stops when its own step is tiny), made
    with numpy's stacked operations, which give the same bits as one row at a time
    (tests/butterfly/core/test_horizon.py checks it on random and separated data)."""
    x_all = np.log(np.asarray(lengths, dtype=float))
    out: list[Fit | None] = [None] * successes.shape[0]
    keep = trials > 0
    groups: dict[bytes, list[int]] = {}
    for r in range(successes.shape[0]):
        groups.setdefault(keep[r].tobytes(), []).append(r)
    for rows in groups.values():
        k = keep[rows[0]]
        if np.unique(x_all[k]).size < 2:
            continue
        fits = _newton(x_all[k], successes[rows][:, k], trials[rows][:, k])
        for r, f in zip(rows, fits, strict=True):
            out[r] = f
    return out


def _newton(x: NDArray[np.float64], s: NDArray[np.float64],
            n: NDArray[np.float64]) -> list[Fit | None]:
    """Newton's method (Firth's where a row is separated) on rows sharing the lengths ``x``."""
    firth = np.array([_separated(x, si, ni) for si, ni in zip(s, n, strict=True)])
    X = np.column_stack([np.ones_like(x), x])
    beta = np.zeros((s.shape[0], 2))
    active = np.ones(s.shape[0], dtype=bool)
    for _ in range(200):
        at = np.flatnonzero(active)
        if at.size == 0:
            break
        b = beta[at]
        eta = (X[None] @ b[:, :, None])[..., 0]
        p = 1.0 / (1.0 + np.exp(-eta))
        w = n[at] * p * (1 - p)
        info = X.T[None] @ (X[None] * w[:, :, None])
        try:
            inv = np.linalg.inv(info)
        except np.linalg.LinAlgError:  # a singular row has no fit: each row alone, then
            if s.shape[0] == 1:
                return [None]
            return [_newton(x, s[i:i + 1], n[i:i + 1])[0] for i in range(s.shape[0])]
        resid = s[at] - n[at] * p
        if firth[at].any():
            # Firth's score is the score of pseudo-data, s + h/2 successes of n + h trials (h
            # the leverages of the weighted design), and the step is that data's Fisher step
            h = w * np.einsum("ij,rjk,ik->ri", X, inv, X)
            resid = np.where(firth[at][:, None], resid + h * (0.5 - p), resid)
            w = np.where(firth[at][:, None], w + h * p * (1 - p), w)
            inv = np.linalg.inv(X.T[None] @ (X[None] * w[:, :, None]))
        step = (inv @ (X.T[None] @ resid[:, :, None]))[..., 0]
        # a step at most 5 long keeps Newton stable far from the optimum
        size = np.max(np.abs(step), axis=1)
        big = size > 5
        step[big] = step[big] * (5 / size[big])[:, None]
        beta[at] = b + step
        active[at[size < 1e-10]] = False
    return [Fit(float(b0), float(b1), "firth" if f else "mle")
            for (b0, b1), f in zip(beta, firth, strict=True)]

