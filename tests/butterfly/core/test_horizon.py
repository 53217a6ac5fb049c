"""The horizon (butterfly/core/horizon.py): its JSON shape, the fit at the edges, the survival
curve, and recovery of the drift agent's known horizon on butterfly-long."""

from __future__ import annotations

import ast
import math
import random
from pathlib import Path

import pytest
from conftest import ROOT

from butterfly.core.agents import drift_expected_final_match, drift_spec
from butterfly.core.horizon import Conversation, crossing, horizon
from butterfly.core.logistic import fit_logistic
from butterfly.suite.load import load_suite
from oracle import replay

LONG = load_suite(ROOT / "scenarios" / "butterfly-long.jsonl")


def _convs(rates: dict[int, float], per: int = 40, seed: int = 0) -> list[Conversation]:
    """Conversations of independent scenarios, final match drawn at the given rate per length."""
    rng = random.Random(seed)
    out = []
    for n, rate in rates.items():
        for i in range(per):
            out.append(Conversation(f"s{n}-{i}", n, rng.random() < rate))
    return out


def test_json_has_exactly_the_contract_keys_plus_the_documented_ones() -> None:
    h = horizon(_convs({5: 0.9, 20: 0.5, 80: 0.1}), resamples=200)
    j = h.to_json()
    assert {"turns", "ci", "by_length"} <= set(j)
    assert set(j) - {"turns", "ci", "by_length"} == {
        "fit", "survival", "n_conversations", "n_scenarios", "bootstrap", "note"}
    assert isinstance(j["ci"], list) and len(j["ci"]) == 2
    assert list(j["by_length"]) == ["5", "20", "80"]
    assert set(j["by_length"]["5"]) == {"n", "final_match"} and j["by_length"]["5"]["n"] == 40
    assert j["ci"][0] <= j["turns"] <= j["ci"][1]


def test_a_known_logistic_curve_is_recovered() -> None:
    # p(L) = sigmoid(4 - 1.5 log L): crosses 50% at exp(4/1.5) = 14.4 turns
    rates = {n: 1 / (1 + math.exp(-(4 - 1.5 * math.log(n)))) for n in (5, 10, 20, 40, 80)}
    h = horizon(_convs(rates, per=400, seed=3), resamples=300, seed=1)
    assert h.fit is not None and h.fit.method == "mle"
    assert h.turns is not None and abs(h.turns - math.exp(4 / 1.5)) < 2
    lo, hi = h.ci
    assert lo is not None and hi is not None and lo <= math.exp(4 / 1.5) <= hi


def test_one_length_only_says_so_instead_of_a_fit() -> None:
    h = horizon(_convs({10: 0.5}))
    assert h.turns is None and h.ci == (None, None) and h.fit is None
    assert h.note is not None and "one chain length" in h.note
    assert h.to_json()["by_length"] == {"10": {"n": 40, "final_match": h.by_length[10][1]}}


def test_all_matched_means_beyond_the_range_and_all_failed_below_it() -> None:
    up = horizon(_convs({5: 1.0, 40: 1.0}), resamples=100)
    assert up.turns is None and up.ci[1] is None
    assert up.note is not None and "above 50%" in up.note
    assert up.fit is not None and up.fit.method == "firth"  # separated: no finite MLE
    down = horizon(_convs({5: 0.0, 40: 0.0}), resamples=100)
    assert down.turns is None and down.ci[0] is None
    assert down.note is not None and "below 50%" in down.note


def test_perfect_separation_gives_a_finite_horizon_between_the_lengths() -> None:
    h = horizon(_convs({5: 1.0, 10: 1.0, 40: 0.0, 80: 0.0}), resamples=200)
    assert h.fit is not None and h.fit.method == "firth"
    assert h.turns is not None and 10 < h.turns < 40
    assert all(math.isfinite(x) for x in (h.fit.intercept, h.fit.slope))


def test_the_bootstrap_is_seeded_and_clustered_by_scenario() -> None:
    convs = _convs({5: 0.8, 20: 0.5, 80: 0.2}, per=30)
    assert horizon(convs, seed=4) == horizon(convs, seed=4)
    assert horizon(convs, seed=4).ci != horizon(convs, seed=5).ci
    # ten identical repeats of each conversation: the point estimate is the same, but the
    # interval is not narrower, since a scenario is resampled with all its repeats
    repeated = [c for c in convs for _ in range(10)]
    one, ten = horizon(convs, seed=4), horizon(repeated, seed=4)
    assert one.turns == pytest.approx(ten.turns)
    assert ten.n_scenarios == one.n_scenarios == 90 and ten.n_conversations == 900
    assert (ten.ci[1] - ten.ci[0]) == pytest.approx(one.ci[1] - one.ci[0], rel=0.01)  # type: ignore[operator]


def test_survival_curve() -> None:
    convs = [
        Conversation("a", 3, True, (True, True, True)),
        Conversation("b", 3, False, (True, False, False)),
        Conversation("c", 2, True, (False, True)),  # a wobble: not "still matched" after t=1
    ]
    h = horizon(convs, resamples=10)
    assert h.survival == ((1, 3, 2 / 3), (2, 3, 1 / 3), (3, 2, 1 / 2))
    with pytest.raises(ValueError, match="final match"):
        Conversation("d", 2, True, (True, False))
    with pytest.raises(ValueError, match="2 turn matches"):
        Conversation("d", 3, True, (True, True))


def test_crossing_edges() -> None:
    fit = fit_logistic([5, 10], [9, 1], [10, 10])
    assert fit is not None and fit.slope < 0 and 5 < crossing(fit, 100) < 10
    assert fit_logistic([5, 5], [1, 2], [3, 3]) is None


def test_the_module_imports_only_numpy_scipy_oracle_and_the_standard_library() -> None:
    tree = ast.parse(Path(ROOT / "butterfly" / "core" / "horizon.py").read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            roots.add(node.module.split(".")[0])
    import sys

    assert roots - sys.stdlib_module_names <= {"numpy", "scipy", "oracle", "butterfly"}, roots
    assert {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and (n.module or "").startswith("butterfly")} == {"butterfly.core.logistic"}


# ---------------------------------------------------------------------------- the drift agent


def _drift_conversations(p: float, repeats: int) -> list[Conversation]:
    out = []
    for r in range(repeats):
        for s in LONG:
            o = replay(s)
            tm = tuple(drift_spec(s, t, r, p, o) == o[t] for t in range(1, len(o)))
            out.append(Conversation(s.id, len(s.turns), tm[-1], tm))
    return out


def test_drift_recovers_its_known_rates_and_horizon_on_butterfly_long() -> None:
    """script/drift:p=0.05, 5 repeats (the seeds a run uses): every by-length rate within three
    standard errors of the exact expectation, and the 95% interval covers the horizon of the
    expected curve (the same fit on the exact rates)."""
    p = 0.05
    h = horizon(_drift_conversations(p, 5), resamples=400, seed=0)
    expected: dict[int, list[float]] = {}
    for s in LONG:
        expected.setdefault(len(s.turns), []).append(drift_expected_final_match(s, p))
    for n, (k, rate) in h.by_length.items():
        e = sum(expected[n]) / len(expected[n])
        se = math.sqrt(max(e * (1 - e), 0.01) / k)
        assert abs(rate - e) <= 3 * se, (n, rate, e)
    lengths = sorted(expected)
    fit = fit_logistic(lengths, [sum(expected[n]) for n in lengths],
                       [len(expected[n]) for n in lengths])
    assert fit is not None
    true = crossing(fit, 800)
    lo, hi = h.ci
    assert lo is not None and hi is not None and lo <= true <= hi, (lo, true, hi)
    assert h.turns is not None and abs(h.turns - true) < 3

