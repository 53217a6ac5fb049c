"""The logistic fit of the horizon (butterfly/core/logistic.py): Firth's fit where the data are
separated, its convergence on the thinnest data, and the bootstrap's fits made together bit for
bit as one at a time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from butterfly.core.logistic import Fit, _separated, fit_logistic, fit_many


def test_firth_on_one_conversation_at_each_of_two_lengths_is_its_exact_optimum() -> None:
    """One success at 3 turns, one failure at 8: the penalised likelihood is p1^1.5 (1-p1)^0.5
    p2^0.5 (1-p2)^1.5 (saturated), maximal at p(3) = 0.75 and p(8) = 0.25. Steps made with
    the plain information cycle round that point for ever (200 of them ended at a rising
    curve, slope +0.32, so a pass at 3 turns and a failure at 8 read "above 8")."""
    fit = fit_logistic([3, 8], [1, 0], [1, 1])
    assert fit is not None and fit.method == "firth"
    assert fit.rate(3) == pytest.approx(0.75, abs=1e-6)
    assert fit.rate(8) == pytest.approx(0.25, abs=1e-6)
    assert math.exp(-fit.intercept / fit.slope) == pytest.approx(math.sqrt(24), rel=1e-6)


def test_separated_data_get_a_finite_falling_firth_fit() -> None:
    for lengths, succ, trials in (([3, 8, 12], [1, 0, 0], [1, 1, 1]), ([3, 8], [2, 0], [2, 2]),
                                  ([3, 8], [10, 0], [10, 10])):
        fit = fit_logistic(lengths, succ, trials)
        assert fit is not None and fit.method == "firth" and fit.slope < 0, (succ, fit)
        assert math.isfinite(fit.intercept) and math.isfinite(fit.slope)
    assert fit_logistic([5, 5], [1, 2], [3, 3]) is None  # one distinct length: no fit


def _score(fit: Fit, lengths: list[int], s: np.ndarray, n: np.ndarray) -> float:
    """The largest component of the (Firth-modified, for a Firth fit) score at the fit."""
    keep = n > 0
    x = np.log(np.asarray(lengths, dtype=float))[keep]
    s, n = s[keep], n[keep]
    X = np.column_stack([np.ones_like(x), x])
    p = 1.0 / (1.0 + np.exp(-(X @ np.array([fit.intercept, fit.slope]))))
    resid = s - n * p
    if fit.method == "firth":
        w = n * p * (1 - p)
        inv = np.linalg.inv(X.T @ (X * w[:, None]))
        resid = resid + w * np.einsum("ij,jk,ik->i", X, inv, X) * (0.5 - p)
    return float(np.max(np.abs(X.T @ resid)))


def test_every_fit_of_thin_data_converges() -> None:
    """Zero to two conversations per length, as in a bootstrap of a handful of scenarios:
    every fit is where its score vanishes (the plain-information iteration left a third of
    these rows where it stopped after 200 steps)."""
    rng = np.random.default_rng(11)
    fitted = 0
    for _ in range(30):
        k = int(rng.integers(2, 5))
        lengths = sorted(int(v) for v in rng.choice([2, 5, 10, 20, 40, 80], size=k,
                                                      replace=False))
        trials = rng.integers(0, 3, size=(40, k)).astype(float)
        succ = np.floor(trials * rng.random(trials.shape) + 0.5)
        for r, fit in enumerate(fit_many(lengths, succ, trials)):
            if fit is not None:
                fitted += 1
                assert _score(fit, lengths, succ[r], trials[r]) < 1e-6, (lengths, r, fit)
    assert fitted > 500


def _one_at_a_time(lengths: list[int], s: np.ndarray, n: np.ndarray) -> Fit | None:
    """The fit of one row alone, with 2x2 numpy operations on that row: Newton's method, where
    the row is separated with Firth's score and the Fisher information of its pseudo-data
    (s + h/2 successes of n + h trials), each step capped at 5."""
    keep = n > 0
    x = np.log(np.asarray(lengths, dtype=float))[keep]
    s, n = s[keep], n[keep]
    if np.unique(x).size < 2:
        return None
    firth = _separated(x, s, n)
    X = np.column_stack([np.ones_like(x), x])
    beta = np.zeros(2)
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-(X @ beta)))
        w = n * p * (1 - p)
        try:
            inv = np.linalg.inv(X.T @ (X * w[:, None]))
        except np.linalg.LinAlgError:
            return None
        resid = s - n * p
        if firth:
            h = w * np.einsum("ij,jk,ik->i", X, inv, X)
            resid = resid + h * (0.5 - p)
            inv = np.linalg.inv(X.T @ (X * (w + h * p * (1 - p))[:, None]))
        step = inv @ (X.T @ resid)
        size = float(np.max(np.abs(step)))
        if size > 5:
            step = step * (5 / size)
        beta = beta + step
        if size < 1e-10:
            break
    return Fit(float(beta[0]), float(beta[1]), "firth" if firth else "mle")


@pytest.mark.parametrize("kind", ["perfect", "hopeless", "random", "separated", "thin"])
def test_fits_made_together_are_the_fits_made_one_at_a_time_bit_for_bit(kind: str) -> None:
    rng = np.random.default_rng(
        {"perfect": 1, "hopeless": 2, "random": 3, "separated": 4, "thin": 5}[kind])
    rows = 0
    for _ in range(40):
        k = int(rng.integers(2, 6))
        lengths = sorted(int(v) for v in rng.choice([1, 2, 5, 10, 20, 40, 80, 160], size=k,
                                                      replace=False))
        top = 3 if kind == "thin" else 30  # thin: 0 to 2 conversations per length
        trials = rng.integers(0, top, size=(60, k)).astype(float)  # some lengths unsampled
        succ = {"perfect": trials, "hopeless": np.zeros_like(trials),
                "random": np.floor(trials * rng.random(trials.shape)),
                "thin": np.floor(trials * rng.random(trials.shape) + 0.5),
                "separated": np.where(np.arange(k)[None] < k // 2, trials, 0.0)}[kind]
        together = fit_many(lengths, succ, trials)
        for r in range(len(trials)):
            assert together[r] == _one_at_a_time(lengths, succ[r], trials[r]), (lengths, r)
            rows += together[r] is not None
    assert rows > 1000  # most rows keep two lengths or more, and are fitted
