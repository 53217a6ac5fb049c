"""Intervals clustered by scenario: hand-computed values, limits, and coverage by simulation."""

from __future__ import annotations

import math
import random

import pytest

from butterfly.core.stats import (
    cluster_bootstrap,
    clustered_variance,
    mean_interval,
    proportion_interval,
    ratio_bootstrap,
    sign_test,
    wilson,
)


def test_wilson_by_hand() -> None:
    # k = 14, n = 40, z = 1.96: centre (0.35 + 0.048) / 1.096, half 1.96 sqrt(...) / 1.096
    z = 1.959963984540054
    p, n = 14 / 40, 40
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    assert wilson(14, 40) == pytest.approx((centre - half, centre + half))
    assert wilson(14, 40) == pytest.approx((0.2213, 0.5049), abs=1e-4)
    assert wilson(0, 40) == pytest.approx((0.0, 0.0876), abs=1e-4)


def test_clustered_variance_by_hand() -> None:
    mean, var, n = clustered_variance([[1.0, 1.0], [0.0, 0.0]])
    assert (mean, n) == (0.5, 4)
    assert var == pytest.approx(((0.5 + 0.5) ** 2 + (-0.5 - 0.5) ** 2) / 16)


def test_repeats_that_agree_add_no_information() -> None:
    once = proportion_interval([[True]] * 14 + [[False]] * 26)
    twice = proportion_interval([[True, True]] * 14 + [[False, False]] * 26)
    assert once == pytest.approx(twice)
    assert proportion_interval([[False, False]] * 40) == pytest.approx(wilson(0, 40))
    assert proportion_interval([]) is None and mean_interval([[]]) is None


def test_coverage_on_clustered_simulation() -> None:
    """Scenarios drawn with their own pass rates (Beta(1.2, 2): mean 0.375), 3 repeats each:
    the interval covers the population's mean pass rate (the estimand: scenarios are a sample
    of possible scenarios) close to 95% of the time (2,000 seeded trials; tolerance 3 binomial
    standard errors plus 1 point for the normal approximation)."""
    rng = random.Random(7)
    trials, hits = 2000, 0
    for _ in range(trials):
        rates = [rng.betavariate(1.2, 2) for _ in range(60)]
        truth = 1.2 / 3.2
        clusters = [[rng.random() < r for _ in range(3)] for r in rates]
        lo, hi = proportion_interval(clusters)  # type: ignore[misc]
        hits += lo <= truth <= hi
    se = math.sqrt(0.95 * 0.05 / trials)
    assert abs(hits / trials - 0.95) < 3 * se + 0.01, hits / trials


def _one_draw_bootstrap(clusters: list[list[float]], reps: int, seed: int
                        ) -> tuple[float, float]:
    """The bootstrap as it was, every resample's indices drawn at once (reps x clusters)."""
    import numpy as np

    sums = np.array([float(sum(c)) for c in clusters])
    sizes = np.array([len(c) for c in clusters], dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(clusters), size=(reps, len(clusters)))
    lo, hi = np.quantile(sums[idx].sum(axis=1) / sizes[idx].sum(axis=1), [0.025, 0.975])
    return float(lo), float(hi)


@pytest.mark.parametrize("k", [1, 7, 1000, 3001])
def test_the_bootstrap_drawn_in_blocks_is_the_one_drawn_at_once(k: int) -> None:
    rng = random.Random(k)
    clusters = [[rng.random() for _ in range(rng.randint(1, 4))] for _ in range(k)]
    for reps, seed in ((2000, 0), (999, 5)):  # with 3001 clusters: blocks of 349 resamples
        assert cluster_bootstrap(clusters, reps=reps, seed=seed) == _one_draw_bootstrap(
            clusters, reps, seed)


def test_sign_test_by_hand() -> None:
    assert sign_test([]) == sign_test([0.0, 0.0]) == 1.0  # nothing moved
    assert sign_test([1.0]) == 1.0  # one scenario: a coin's toss
    assert sign_test([1.0, 0.5, 1.0]) == 0.25  # 2 x (1/2)^3
    assert sign_test([-1.0] * 6) == pytest.approx(2 / 64)  # below 0.05 at six of six
    assert sign_test([1.0] * 5) == pytest.approx(2 / 32)  # five of five is not
    assert sign_test([1.0, 1.0, -1.0, 0.0]) == 1.0  # 2 x P(X >= 2 | 3) = 2 x 4/8, capped
    assert sign_test([1.0] * 9 + [-1.0]) == pytest.approx(2 * 11 / 1024)


def test_a_mean_over_one_scenario_has_no_interval() -> None:
    """One cluster's clustered variance is 0 whatever its values: no interval, not a point."""
    assert clustered_variance([[0.0, 2.0, 4.0]])[1] == 0.0
    assert mean_interval([[0.0, 2.0, 4.0]]) is None and mean_interval([[1.0], []]) is None
    lo, hi = mean_interval([[0.0, 2.0], [4.0]])  # type: ignore[misc]
    assert lo < 2.0 < hi


def test_ratio_bootstrap_is_the_ratio_of_totals_with_an_interval_around_it() -> None:
    pairs = [(1.0, 0.2), (2.0, 0.5), (1.5, 0.3), (3.0, 0.6), (0.5, 0.1)]
    point, lo, hi = ratio_bootstrap(pairs, reps=500, seed=3)
    assert point == pytest.approx(1.7 / 8.0)
    assert lo <= point <= hi and lo > 0 and hi < 1
    assert ratio_bootstrap(pairs, reps=500, seed=3) == (point, lo, hi)


def test_ratio_bootstrap_has_no_ratio_without_what_a_spent() -> None:
    assert ratio_bootstrap([]) is None
    assert ratio_bootstrap([(0.0, 1.0), (0.0, 2.0)]) is None


def test_ratio_bootstrap_of_equal_costs_is_one_exactly() -> None:
    assert ratio_bootstrap([(2.0, 2.0), (1.0, 1.0), (4.0, 4.0)], reps=200) == (1.0, 1.0, 1.0)
