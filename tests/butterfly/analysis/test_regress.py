"""The regression engine: BH and e-BH against hand-computed examples, the exact test against
scipy, the e-process's supermartingale property, FDR control on null simulations, and the
group-sequential design's p-values. Simulation sizes are small; every tolerance is derived from
the simulation's own size (k standard errors)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from butterfly.analysis import regress as R
from butterfly.analysis import simulate as S

# ------------------------------------------------------------------ BH and e-BH by hand


def test_bh_hand_examples() -> None:
    # m = 5, q = 0.05: BH thresholds k q / m = 0.01, 0.02, 0.03, 0.04, 0.05.
    # sorted 0.01 <= 0.01, 0.02 <= 0.02, 0.04 > 0.03, 0.045 > 0.04, 0.9 > 0.05 -> k* = 2
    p = np.array([0.01, 0.02, 0.045, 0.04, 0.9])
    assert R.bh(p, 0.05).tolist() == [True, True, False, False, False]
    # step-up: 0.035 > 0.02 and 0.039 > 0.03, but 0.04 <= 0.04 at k = 4 -> k* = 4
    p = np.array([0.035, 0.039, 0.04, 0.001, 0.7])
    assert R.bh(p, 0.05).tolist() == [True, True, True, True, False]
    # nothing under the first threshold -> nothing
    assert not R.bh(np.array([0.2, 0.3, 0.5]), 0.1).any()
    # rows are independent suites
    both = R.bh(np.array([[0.01, 0.02, 0.045, 0.04, 0.9], [0.035, 0.039, 0.04, 0.001, 0.7]]),
                0.05)
    assert both.sum(axis=1).tolist() == [2, 4]


def test_ebh_hand_examples() -> None:
    # m = 4, q = 0.5: thresholds m / (q k) = 8, 4, 2.667, 2.
    # sorted 10 >= 8 (k=1), 3 < 4 (k=2), 2.9 >= 2.667 (k=3), 1 < 2 (k=4) -> k* = 3
    e = np.array([3.0, 10.0, 1.0, 2.9])
    assert R.ebh(e, 0.5).tolist() == [True, True, False, True]
    # m = 60, q = 0.1: one rejection needs e >= 600; 20 rejections need e >= 30 each
    e = np.ones(60)
    e[:20] = 30.0
    assert R.ebh(e, 0.1).sum() == 20
    e[:20] = 29.9
    assert R.ebh(e, 0.1).sum() == 0
    e[0] = 600.0
    assert R.ebh(e, 0.1).tolist() == [True] + [False] * 59


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0.01, 0.5))
@settings(max_examples=100, deadline=None, derandomize=True, database=None)
def test_bh_agrees_with_definition(ps: list[float], q: float) -> None:
    """k* = max{k : p_(k) <= k q / m}; reject every p <= p_(k*)."""
    p = np.array(ps)
    m = len(p)
    ranked = np.sort(p)
    bars = q * np.arange(1, m + 1) / m
    assume(np.abs(ranked - bars).min() > 1e-9)  # no value on a bar: rounding cannot decide
    ok = np.nonzero(ranked <= bars)[0]
    expected = p <= ranked[ok.max()] if ok.size else np.zeros(m, dtype=bool)
    assert R.bh(p, q).tolist() == expected.tolist()


@given(st.lists(st.floats(0, 1e4), min_size=1, max_size=30), st.floats(0.01, 0.5))
@settings(max_examples=100, deadline=None, derandomize=True, database=None)
def test_ebh_self_consistent(es: list[float], q: float) -> None:
    e = np.array(es)
    m = len(e)
    rej = R.ebh(e, q)
    r = int(rej.sum())
    if r:  # every rejection meets the bar of the rejection count, and the set is the largest
        assert (e[rej] >= m / (q * r)).all()
    for k in range(r + 1, m + 1):
        assert (e >= m / (q * k)).sum() < k


# ------------------------------------------------------------------ the per-scenario tests


@given(st.integers(1, 30), st.integers(1, 30), st.data())
@settings(max_examples=60, deadline=None, derandomize=True, database=None)
def test_fisher_matches_scipy(na: int, nb: int, data: st.DataObject) -> None:
    a1 = data.draw(st.integers(0, na))
    b1 = data.draw(st.integers(0, nb))
    ours = float(R.fisher_greater(np.array(a1), na, np.array(b1), nb))
    theirs = stats.fisher_exact([[a1, na - a1], [b1, nb - b1]], alternative="greater").pvalue
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(("k", "l"), [(0, 0), (1, 0), (0, 1), (5, 2), (2, 5), (30, 3), (0, 40)])
def test_mixture_e_closed_form(k: int, l: int) -> None:  # noqa: E741
    numeric, _ = integrate.quad(lambda lam: (1 + lam) ** k * (1 - lam) ** l, 0, 1)
    assert float(R.mixture_e(np.array(k), np.array(l))) == pytest.approx(numeric, rel=1e-8)


def test_mixture_e_starts_at_one_and_is_monotone() -> None:
    assert float(R.mixture_e(np.array(0), np.array(0))) == pytest.approx(1.0)
    e = R.mixture_e(np.arange(10), np.zeros(10, dtype=int))
    assert (np.diff(e) > 0).all()
    e = R.mixture_e(np.zeros(10, dtype=int), np.arange(10))
    assert (np.diff(e) < 0).all()


@pytest.mark.parametrize(("pa", "pb"), [(0.5, 0.5), (0.9, 0.9), (0.2, 0.6), (0.05, 0.05),
                                        (0.7, 0.75)])
def test_e_process_one_step_supermartingale_exact(pa: float, pb: float) -> None:
    """E[M_{n+1} | F_n] <= M_n on a grid of states, computed exactly for null rates b >= a."""
    k, l = np.meshgrid(np.arange(40), np.arange(40))  # noqa: E741
    p10, p01 = pa * (1 - pb), (1 - pa) * pb
    now = R.mixture_e(k, l)
    nxt = p10 * R.mixture_e(k + 1, l) + p01 * R.mixture_e(k, l + 1) + (1 - p10 - p01) * now
    assert (nxt <= now * (1 + 1e-10)).all()


def test_e_process_supermartingale_simulation() -> None:
    """Mean of M at a fixed time and at a stopping time under null rates stays <= 1 within the
    Monte Carlo error of 20,000 paths (4 standard errors)."""
    rng = np.random.default_rng(7)
    paths, n = 20_000, 40
    pa = rng.beta(2, 2, size=(paths, 1))
    pb = np.minimum(1.0, pa + 0.05 * rng.random((paths, 1)))  # b >= a: the null
    a = rng.random((paths, n)) < pa
    b = rng.random((paths, n)) < pb
    k = np.cumsum(a & ~b, axis=1)
    l = np.cumsum(~a & b, axis=1)  # noqa: E741
    m = R.mixture_e(k, l)
    fixed = m[:, -1]
    # stopping time: the first time M >= 3, else n
    hit = m >= 3
    tau = np.where(hit.any(axis=1), hit.argmax(axis=1), n - 1)
    stopped = m[np.arange(paths), tau]
    for sample in (fixed, stopped):
        se = sample.std(ddof=1) / math.sqrt(paths)
        assert sample.mean() <= 1 + 4 * se
        assert (sample >= 0).all()
    # Ville: P(sup M >= 1/alpha) <= alpha
    alpha = 0.1
    share = (m.max(axis=1) >= 1 / alpha).mean()
    assert share <= alpha + 4 * math.sqrt(alpha * (1 - alpha) / paths)


# ------------------------------------------------------------------ methods and FDR


def _null_suites(reps: int, m: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = S.mixture_rates(rng, (reps, m))
    a = rng.random((reps, m, n)) < p[..., None]
    b = rng.random((reps, m, n)) < p[..., None]
    return a, b


@pytest.mark.parametrize("method", ["bh", "ebh", "ebh-fine", "gs"])
def test_fdr_on_null_simulation(method: str) -> None:
    """Under the global null the FDR is P(any rejection); it stays <= q within 3 standard errors
    of a binomial share over the replications."""
    reps, m, q = 300, 30, 0.1
    a, b = _null_suites(reps, m, 100, seed=11)
    if method == "bh":
        d = R.method_bh(a, b, 30, q)
    elif method == "ebh":
        d = R.method_ebh(a, b, q, 30)
    elif method == "ebh-fine":
        d = R.method_ebh(a, b, q, 60, stop_fine=True)
    else:
        d = R.method_gs(a, b, q)
    o = S.outcome(d, np.zeros((reps, m)))
    assert o.fdr <= q + 3 * math.sqrt(q * (1 - q) / reps)


def test_fdr_with_injected_drops() -> None:
    """With every third scenario regressed, false rejections stay rare: FDR <= q within 3
    standard errors for BH and gs (the V/R ratio is in [0, 1], so its sd is at most 1/2)."""
    reps, m, q = 200, 30, 0.1
    a, b = _null_suites(reps, m, 100, seed=12)
    rng = np.random.default_rng(13)
    which = np.broadcast_to(S.regressed_mask(m), (reps, m))
    b = S.inject(b, rng, which, 0.6)
    drop = np.where(which, 1.0, 0.0)  # only the sign of the drop matters for the FDR
    for d in (R.method_bh(a, b, 50, q), R.method_gs(a, b, q), R.method_ebh(a, b, q, 50)):
        assert S.outcome(d, drop).fdr <= q + 3 * 0.5 / math.sqrt(reps)


def test_gs_p_values_are_super_uniform_under_null() -> None:
    reps, m = 400, 30
    a, b = _null_suites(reps, m, 100, seed=21)
    p = R.method_gs(a, b, 0.1).stat.ravel()
    n = p.size
    # scenarios within a suite are independent: each final p-value is an independent draw
    for t in (0.005, 0.01, 0.05, 0.2):
        assert (p <= t).mean() <= t + 4 * math.sqrt(t * (1 - t) / n)


def test_sequential_rejections_are_final_and_stopping_is_respected() -> None:
    rng = np.random.default_rng(3)
    m, n = 30, 60
    p = np.full(m, 0.8)
    a = rng.random((m, n)) < p[:, None]
    b = rng.random((m, n)) < np.where(S.regressed_mask(m), 0.1, 0.8)[:, None]
    seq = R.Sequential((m,), 0.1, n)
    frozen = np.zeros(m, dtype=bool)
    for j in range(n):
        seq.update(a[:, j], b[:, j])
        assert (seq.decided >= frozen).all()
        frozen = seq.decided.copy()
    d = seq.decision()
    assert (d.regressed >= seq.decided).all()  # stopped rejections survive the final e-BH
    assert (d.pairs <= n).all() and (d.pairs[seq.decided] < n).any()
    assert d.regressed[S.regressed_mask(m)].mean() > 0.5
    # the e-values are the ones at the stopping times, not running maxima
    k = np.array([(a[i, :d.pairs[i]] & ~b[i, :d.pairs[i]]).sum() for i in range(m)])
    l = np.array([(~a[i, :d.pairs[i]] & b[i, :d.pairs[i]]).sum() for i in range(m)])  # noqa: E741
    assert np.allclose(d.stat, R.mixture_e(k, l))


def test_methods_on_a_clear_case() -> None:
    a = np.ones((1, 6, 20), dtype=bool)
    b = a.copy()
    b[0, 2, :] = False  # scenario 2 always fails in B
    for name in R.METHODS:
        d = R.run_method(name, a, b, 0.1)
        assert d.regressed[0].tolist() == [False, False, True, False, False, False], name
    assert R.run_method("diff", a, b, 0.1).answers.sum() == 12
    assert R.run_method("bh", a, b, 0.1, k=5).answers.sum() == 60
    with pytest.raises(ValueError):
        R.run_method("bh", a, b, 0.1, k=21)
    with pytest.raises(ValueError):
        R.run_method("nope", a, b, 0.1)


def test_outcome_counts_power_only_for_meaningful_drops() -> None:
    reg = np.array([[True, False, True, False]])
    drop = np.array([[0.3, 0.05, 0.0, 0.2]])
    o = S.outcome(R.Decision(reg, np.ones((1, 4), dtype=np.int64), np.zeros((1, 4))), drop)
    assert o.false_alarms == 1.0  # scenario 2 did not change
    assert o.fdr == pytest.approx(0.5)
    assert o.power == pytest.approx(0.5)  # found 0.3, missed 0.2; 0.05 is not a miss
    assert o.answers == 8.0


def test_mixture_rates_follow_the_mixture() -> None:
    p = S.mixture_rates(np.random.default_rng(0), (20_000,))
    assert ((p == 0) | (p == 1)).mean() == pytest.approx(0.1, abs=0.01)
    assert p.mean() == pytest.approx(0.4 * 8 / 9 + 0.3 * 0.5 + 0.2 / 7 + 0.05, abs=0.01)


def test_the_design_ends_at_its_last_look_whatever_is_available() -> None:
    assert R.gs_looks(30) == (6, 12, 25, 30)
    assert R.gs_looks(50) == (6, 12, 25, 50)
    assert R.gs_looks(100) == R.gs_looks(150) == R.GS_LOOKS  # not 100 twice (found in review)


def _gs_by_definition(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """One scenario's final p-value and pairs read by the group-sequential design, from its
    definition (module docstring) with scipy's own exact test."""
    looks = R.gs_looks(len(a))
    spent = 0.0
    for s, n in enumerate(looks):
        table = [[a[:n].sum(), n - a[:n].sum()], [b[:n].sum(), n - b[:n].sum()]]
        p = stats.fisher_exact(table, alternative="greater")[1]
        if s == len(looks) - 1:
            return min(1.0, p + spent), n
        spent += R.GS_EFFICACY[min(s, len(R.GS_EFFICACY) - 1)]
        if p <= R.GS_EFFICACY[min(s, len(R.GS_EFFICACY) - 1)]:
            return spent, n
        if p >= R.GS_FUTILITY[min(s, len(R.GS_FUTILITY) - 1)]:
            return 1.0, n
    raise AssertionError("no look")


@pytest.mark.parametrize("n", [100, 130])
def test_group_sequential_design_follows_its_definition(n: int) -> None:
    """The design fed pair by pair (``method_gs`` on stored answers, the live form in
    ``butterfly sequential``) gives each scenario the final p-value and the pairs its
    definition does, and BH over those decides."""
    rng = np.random.default_rng(5)
    reps, m = 6, 24
    p = S.mixture_rates(rng, (reps, m))
    a = rng.random((reps, m, n)) < p[..., None]
    b = S.inject(rng.random((reps, m, n)) < p[..., None], rng,
                 np.broadcast_to(S.regressed_mask(m), (reps, m)), 0.6)
    d = R.method_gs(a, b, 0.1)
    want = np.array([[_gs_by_definition(a[r, i], b[r, i]) for i in range(m)]
                     for r in range(reps)])
    assert np.allclose(d.stat, want[..., 0])
    assert np.array_equal(d.pairs, want[..., 1].astype(np.int64))
    assert np.array_equal(d.regressed, R.bh(want[..., 0], 0.1))
    assert d.regressed.any() and (d.pairs < n).any()
