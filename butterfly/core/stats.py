"""Statistics of results: intervals clustered over scenarios (docs/statistics.md).

Repeats and layouts of one scenario are not independent answers, so every interval treats the
scenario as the cluster (Miller 2024, "Adding Error Bars to Evals", section on clustered
standard errors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for k successes in n trials (n may be an effective size)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def clustered_variance(clusters: Sequence[Sequence[float]]) -> tuple[float, float, int]:
    """(mean, variance of the mean, n) of every observation, clustered by scenario:
    Var = sum_c (sum_i (x_ci - mean))^2 / n^2 (Miller 2024, eq. for clustered SE)."""
    n = sum(len(c) for c in clusters)
    if n == 0:
        raise ValueError("no observations")
    mean = sum(sum(c) for c in clusters) / n
    var = sum(sum(x - mean for x in c) ** 2 for c in clusters) / (n * n)
    return mean, var, n


def proportion_interval(clusters: Sequence[Sequence[bool]]) -> tuple[float, float] | None:
    """95% interval of a pass rate whose answers are clustered by scenario.

    The Wilson interval at the effective sample size n_eff = p(1-p) / Var_clustered (Kish's
    design effect, as Korn and Graubard 1998 do for clustered survey proportions), kept between
    the number of scenarios m (repeats of a scenario perfectly correlated) and the number of
    answers n (independent). When p is 0 or 1 the clustered variance is 0 and n_eff = m: a run
    that failed all 40 scenarios twice has the interval of 0/40, not of 0/80 and not [0, 0].
    """
    clusters = [c for c in clusters if len(c)]
    if not clusters:
        return None
    mean, var, n = clustered_variance([[float(x) for x in c] for c in clusters])
    m = len(clusters)
    n_eff = float(m) if var <= 0 else min(float(n), max(float(m), mean * (1 - mean) / var))
    return wilson(mean * n_eff, n_eff)


def mean_interval(clusters: Sequence[Sequence[float]], low: float = -math.inf,
                  high: float = math.inf) -> tuple[float, float] | None:
    """95% normal interval of a mean with the clustered standard error (for counts such as the
    change radius), clipped to the metric's range [``low``, ``high``] (a change radius is
    never negative); None with observations of fewer than two clusters: one scenario's spread
    says nothing of the spread between scenarios, and its variance would be 0 (an interval of
    one point, as certain as a thousand scenarios)."""
    clusters = [c for c in clusters if len(c)]
    if len(clusters) < 2:
        return None
    mean, var, _ = clustered_variance(clusters)
    half = Z95 * math.sqrt(var)
    return (max(low, mean - half), min(high, mean + half))


def cluster_bootstrap(clusters: Sequence[Sequence[float]], *, reps: int = 2000, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of the pooled mean by a seeded cluster bootstrap: resample whole
    scenarios (clusters) with replacement ``reps`` times (numpy's PCG64 seeded by ``seed``), so
    the same inputs and seed give the same interval. None without observations."""
    import numpy as np

    kept = [c for c in clusters if len(c)]
    if not kept:
        return None
    sums = np.array([float(sum(c)) for c in kept])
    sizes = np.array([len(c) for c in kept], dtype=float)
    rng = np.random.default_rng(seed)
    # drawn a block of resamples at a time (about 2**20 indices: 8 MB), not all reps x
    # clusters at once (160 MB for 10,000 scenarios); the draws continue one stream, so the
    # blocks hold exactly the indices one draw would (tests/butterfly/core/test_stats.py)
    means = np.empty(reps)
    block = max(1, (1 << 20) // len(kept))
    for at in range(0, reps, block):
        idx = rng.integers(0, len(kept), size=(min(block, reps - at), len(kept)))
        means[at:at + len(idx)] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return (float(lo), float(hi))


def sign_test(diffs: Sequence[float]) -> float:
    """Two-sided exact sign test of paired differences (one per scenario): the probability, with
    no difference between the runs, of a split of the non-zero differences at least as uneven
    as the one seen. 1.0 with no non-zero difference. Unlike a normal interval it needs no
    variance: three scenarios that all moved one way give 0.25, not certainty."""
    pos = sum(1 for d in diffs if d > 0)
    m = pos + sum(1 for d in diffs if d < 0)
    if m == 0:
        return 1.0
    k = max(pos, m - pos)
    tail: float = sum(math.comb(m, i) for i in range(k, m + 1)) / 2**m
    return min(1.0, 2 * tail)


def ratio_bootstrap(pairs: Sequence[tuple[float, float]], *, reps: int = 2000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float, float] | None:
    """The paired ratio of totals, B's over A's, with a seeded percentile interval: ``pairs``
    holds, per scenario both runs played, what it cost A and what it cost B; the ratio is
    sum(B) / sum(A) (a ratio of totals, not a mean of per-scenario ratios, so a scenario A
    played for nearly nothing cannot dominate it), and the interval resamples whole scenarios
    with replacement ``reps`` times (numpy's PCG64 seeded by ``seed``, so the same inputs give
    the same interval). A resample whose A total is 0 is dropped. None without a pair, or when
    A's total is 0 (no ratio exists)."""
    import numpy as np

    if not pairs:
        return None
    a = np.array([float(p[0]) for p in pairs])
    b = np.array([float(p[1]) for p in pairs])
    if a.sum() <= 0:
        return None
    point = float(b.sum() / a.sum())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(pairs), size=(reps, len(pairs)))
    den = a[idx].sum(axis=1)
    ok = den > 0
    ratios = b[idx].sum(axis=1)[ok] / den[ok]
    tail = (1 - level) / 2
    lo, hi = np.quantile(ratios, [tail, 1 - tail])
    return (point, float(lo), float(hi))
