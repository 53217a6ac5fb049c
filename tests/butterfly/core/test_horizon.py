"""The horizon (butterfly/core/horizon_metric.py): its JSON shape, the contract's order of decision
(all passed, all failed, not enough data, the fit) with its censored bounds, the interval's
open ends and never zero width, the Kaplan-Meier survival curve, and recovery of the drift
agent's known horizon on butterfly-long."""

from __future__ import annotations

import ast
import itertools
import math
import random
from pathlib import Path

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from butterfly.core.agents import drift_expected_final_match, drift_spec
from butterfly.core.horizon_metric import (
    NOT_ENOUGH_DATA,
    Conversation,
    Horizon,
    crossing,
    horizon,
    interval,
    survival,
)
from butterfly.core.logistic import Fit, fit_logistic
from butterfly.suite.load import load_suite
from oracle import replay

LONG = load_suite(ROOT / "scenarios" / "butterfly-long.jsonl")
CI = settings(derandomize=True, database=None, deadline=None, print_blob=False,
              suppress_health_check=[HealthCheck.too_slow])


def _convs(rates: dict[int, float], per: int = 40, seed: int = 0) -> list[Conversation]:
    """Conversations of independent scenarios, final match drawn at the given rate per length."""
    rng = random.Random(seed)
    out = []
    for n, rate in rates.items():
        for i in range(per):
            out.append(Conversation(f"s{n}-{i}", n, rng.random() < rate))
    return out


_IDS = itertools.count()


def _matched(n: int, miss: int | None = None) -> Conversation:
    """A conversation of n turns that matched every turn but ``miss`` (and the ones after)."""
    tm = tuple(miss is None or t < miss for t in range(1, n + 1))
    return Conversation(f"c{next(_IDS)}", n, tm[-1], tm)


def _placed(h: Horizon) -> tuple[object, ...]:
    return h.turns, h.censored, h.bound, h.ci


def test_json_has_exactly_the_contract_keys_plus_the_documented_ones() -> None:
    j = horizon(_convs({5: 0.9, 20: 0.5, 80: 0.1}), resamples=200).to_json()
    contract = {"turns", "ci", "censored", "bound", "note", "by_length"}
    assert contract <= set(j)
    assert set(j) - contract == {"fit", "survival", "n_conversations", "n_scenarios",
                                 "bootstrap"}
    assert set(j["bootstrap"]) == {"resamples", "drawn", "above", "below", "seed"}
    assert isinstance(j["ci"], list) and len(j["ci"]) == 2
    assert (j["censored"], j["bound"], j["note"]) == (None, None, None)
    assert list(j["by_length"]) == ["5", "20", "80"]
    assert set(j["by_length"]["5"]) == {"n", "final_match"} and j["by_length"]["5"]["n"] == 40
    assert 5 <= j["ci"][0] <= j["turns"] <= j["ci"][1] <= 80


def test_a_known_logistic_curve_is_recovered() -> None:
    # p(L) = sigmoid(4 - 1.5 log L): crosses 50% at exp(4/1.5) = 14.4 turns
    rates = {n: 1 / (1 + math.exp(-(4 - 1.5 * math.log(n)))) for n in (5, 10, 20, 40, 80)}
    h = horizon(_convs(rates, per=400, seed=3), resamples=300, seed=1)
    assert h.fit is not None and h.fit.method == "mle"
    assert h.turns is not None and abs(h.turns - math.exp(4 / 1.5)) < 2
    lo, hi = h.ci
    assert lo is not None and hi is not None and lo <= math.exp(4 / 1.5) <= hi


# ---------------------------------------------------------------------------- the order


def test_all_passed_at_20_and_40_turns_is_above_40_not_a_number() -> None:
    """Seen: "horizon: 52.0 turns (95% CI - to 52.0)" for a run that matched every turn."""
    h = horizon([_matched(n) for n in (20, 40) for _ in range(12)])
    assert _placed(h) == (None, "above", 40, (40, None))
    assert h.note == "no conversation failed" and h.fit is None and h.bootstrap.drawn == 0
    j = h.to_json()
    assert (j["turns"], j["censored"], j["bound"], j["ci"]) == (None, "above", 40, [40, None])


def test_all_passed_at_8_to_11_turns_is_above_11() -> None:
    """Seen: "at or below 50% from the first turn" for a run that matched every turn."""
    assert _placed(horizon([_matched(n) for n in range(8, 12) for _ in range(3)])) == (
        None, "above", 11, (11, None))


def test_two_scenarios_at_100_percent_are_above_the_longer() -> None:
    h = horizon([Conversation("a", 3, True), Conversation("b", 8, True)])
    assert _placed(h) == (None, "above", 8, (8, None))


def test_two_failing_conversations_are_below_the_shorter_not_a_zero_width_interval() -> None:
    """Seen: "2.3 turns (95% CI 2.3 to 2.3)"."""
    h = horizon([Conversation("a", 2, False), Conversation("b", 3, False)])
    assert _placed(h) == (None, "below", 2, (None, 2))
    assert h.note == "every conversation failed" and h.fit is None


def test_one_length_is_decided_by_steps_one_and_two_before_three() -> None:
    assert _placed(horizon(_convs({10: 1.0}, per=5))) == (None, "above", 10, (10, None))
    assert _placed(horizon(_convs({10: 0.0}, per=5))) == (None, "below", 10, (None, 10))
    mixed = horizon(_convs({10: 0.5}))
    assert _placed(mixed) == (None, None, None, (None, None))
    assert mixed.note == NOT_ENOUGH_DATA == "not enough data" and mixed.fit is None
    j = mixed.to_json()
    assert (j["turns"], j["ci"], j["note"]) == (None, [None, None], "not enough data")
    assert j["by_length"] == {"10": {"n": 40, "final_match": mixed.by_length[10][1]}}


def test_a_fitted_crossing_outside_the_tested_lengths_is_censored_there() -> None:
    up = horizon(_convs({5: 0.97, 40: 0.8}, per=60), resamples=200)
    assert up.fit is not None and math.exp(-up.fit.intercept / up.fit.slope) > 40
    assert _placed(up) == (None, "above", 40, (40, None))  # every resample too
    assert up.note is not None and "fitted" in up.note and "40 turns" in up.note
    down = horizon(_convs({5: 0.3, 40: 0.05}, per=60), resamples=200)
    assert down.fit is not None and math.exp(-down.fit.intercept / down.fit.slope) < 5
    assert _placed(down) == (None, "below", 5, (None, 5))
    assert down.note is not None and "fitted" in down.note and "5 turns" in down.note


def test_a_curve_that_rises_from_under_50_percent_is_below() -> None:
    """The horizon is the first tested length where the fitted final match is at or below 50%,
    whatever the curve's shape (docs/ladder.md)."""
    h = horizon(_convs({5: 0.3, 40: 0.7}, per=60), resamples=100)
    assert h.fit is not None and h.fit.slope > 0
    assert (h.turns, h.censored, h.bound) == (None, "below", 5)


def test_crossing_places_the_fit_inside_the_tested_lengths() -> None:
    fit = fit_logistic([5, 10], [9, 1], [10, 10])
    assert fit is not None and fit.slope < 0 and 5 < crossing(fit, 5, 10) < 10
    assert crossing(Fit(3, -1, "mle"), 2, 10) == math.inf  # 50% at e^3 = 20 turns
    assert crossing(Fit(-1, -1, "mle"), 2, 10) == -math.inf
    assert crossing(Fit(-5, 1, "mle"), 2, 10) == -math.inf  # rising, under 50% throughout
    assert crossing(Fit(1, 1, "mle"), 2, 10) == math.inf  # rising, above 50% throughout
    assert crossing(Fit(-1, 1, "mle"), 2, 10) == -math.inf  # rises through 50% at e turns


def test_two_scenarios_with_mixed_outcomes_get_a_crossing_and_open_ends() -> None:
    """A pass at 3 turns and a failure at 8: Firth's fit is 75% at 3 and 25% at 8, crossing at
    sqrt(24) turns. A resample holding one scenario twice is all passed or all failed, about a
    quarter each: both ends are open."""
    h = horizon([Conversation("a", 3, True), Conversation("b", 8, False)])
    assert h.turns == pytest.approx(math.sqrt(24), rel=1e-6) and h.censored is None
    assert h.ci == (None, None)
    b = h.bootstrap
    assert b.drawn == b.used == 1000 and 200 < b.above < 300 and 200 < b.below < 300


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


# ---------------------------------------------------------------------------- the interval

INF = math.inf


@pytest.mark.parametrize(("values", "expected"), [
    ([6.0 + 0.25 * i for i in range(100)], (6.5, 30.25)),  # 3rd and 98th of 100
    ([-INF] * 10 + [6.0 + 0.25 * i for i in range(90)], (None, 27.75)),  # open below
    ([6.0 + 0.25 * i for i in range(90)] + [INF] * 10, (6.5, None)),  # open above
    ([INF] * 100, (40, None)),  # the whole interval above the longest length: its lower end
    ([-INF] * 100, (None, 5)),  # ... and below the shortest: its upper end
    ([-INF] * 3 + [INF] * 97, (None, None)),
    ([7.0] + [12.0] * 98 + [15.0], (7.0, 15.0)),  # equal ends: widened to distinct values
    ([12.0] * 99 + [INF], (None, None)),  # equal ends, nothing distinct below: open
    ([12.0] * 100, (None, None)),
    ([12.3451] * 50 + [12.3449] * 50, (None, None)),  # equal once rounded to 3 decimals
    ([], (None, None)),
])
def test_the_interval_has_open_and_bound_ends_and_never_zero_width(
        values: list[float], expected: tuple[float | None, float | None]) -> None:
    assert interval(values, 5, 40) == expected


@pytest.mark.parametrize(("values", "expected"), [
    ([12.0] * 100, (10, 20)),  # every resample crosses between 10 and 20: there it lies
    ([12.0] * 99 + [15.0], (10, 15.0)),  # a distinct value above, none below: a length
    ([7.0] + [12.0] * 99, (7.0, 20)),
    ([10.0] * 100, (5, 20)),  # on a tested length: the lengths around it
    ([5.0] * 100, (None, 10)),  # at the shortest: nothing tested below, open
])
def test_resamples_that_all_coincide_are_bounded_by_the_tested_lengths_around_them(
        values: list[float], expected: tuple[float | None, float | None]) -> None:
    assert interval(values, 5, 40, [5, 10, 20, 40]) == expected


def test_a_deterministic_agent_s_horizon_is_bracketed_by_the_lengths_around_it() -> None:
    # every chain passes up to 20 turns and fails from 40: the crossing lies between them
    convs = [Conversation(f"s{i}", n, n <= 20) for i in range(8) for n in (5, 10, 20, 40, 80)]
    h = horizon(convs)
    assert h.turns is not None and 20 <= h.turns <= 40 and h.ci == (20, 40)


@st.composite
def thin_runs(draw: st.DrawFn) -> list[Conversation]:
    """One to six scenarios at a few lengths, one to three repeats each, outcomes drawn."""
    out = []
    for i in range(draw(st.integers(1, 6))):
        n = draw(st.sampled_from([2, 3, 5, 8, 13, 40]))
        for _ in range(draw(st.integers(1, 3))):
            tm = tuple(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
            out.append(Conversation(f"s{i}", n, tm[-1], tm))
    return out


@CI
@given(thin_runs())
def test_thin_data_never_print_a_crossing_outside_the_tested_lengths(
        convs: list[Conversation]) -> None:
    h = horizon(convs, resamples=100)
    j = h.to_json()
    lengths = sorted({c.length for c in convs})
    lo_len, hi_len = lengths[0], lengths[-1]
    passed = [c.final_match for c in convs]
    if all(passed):
        assert (j["censored"], j["bound"]) == ("above", hi_len)
    elif not any(passed):
        assert (j["censored"], j["bound"]) == ("below", lo_len)
    elif len(lengths) < 2:
        assert (j["censored"], j["note"]) == (None, "not enough data")
    else:
        assert h.fit is not None
    assert (j["turns"] is None) == (j["censored"] is not None or j["note"] == NOT_ENOUGH_DATA)
    assert j["bound"] == {"above": hi_len, "below": lo_len, None: None}[j["censored"]]
    for x in (j["turns"], *j["ci"]):
        assert x is None or lo_len <= x <= hi_len, (x, j)
    lo, hi = j["ci"]
    assert lo is None or hi is None or lo < hi, j["ci"]
    steps = [p["still_matched"] for p in j["survival"]]
    assert all(a >= b for a, b in itertools.pairwise(steps)), steps


# ---------------------------------------------------------------------------- the survival curve


def _r(curve: tuple[tuple[int, int, float], ...]) -> list[tuple[int, int, float]]:
    return [(t, n, round(share, 12)) for t, n, share in curve]


def test_survival_is_kaplan_meier() -> None:
    convs = [
        Conversation("a", 3, True, (True, True, True)),
        Conversation("b", 3, False, (True, False, False)),
        Conversation("c", 2, True, (False, True)),  # a wobble: diverged at 1, out from then
    ]
    # t=1: a, b, c at risk, c diverges: 2/3; t=2: a and b, b diverges: 2/3 x 1/2; t=3: a alone
    assert _r(horizon(convs, resamples=10).survival) == _r(
        ((1, 3, 2 / 3), (2, 2, 1 / 3), (3, 1, 1 / 3)))
    with pytest.raises(ValueError, match="final match"):
        Conversation("d", 2, True, (True, False))
    with pytest.raises(ValueError, match="2 turn matches"):
        Conversation("d", 3, True, (True, True))


def test_a_conversation_that_ends_matched_is_censored_not_a_success_at_later_turns() -> None:
    """As script/lifo on butterfly-40: two 9-turn conversations diverge at turn 9, and the one
    10-turn conversation matched every turn. The share of conversations of at least t turns
    matched so far climbed from 33% at turn 9 to 100% at turn 10; Kaplan-Meier stays at 33%."""
    convs = [_matched(9, 9), _matched(9, 9), _matched(10)]
    assert _r(survival(convs)) == _r(
        (*((t, 3, 1.0) for t in range(1, 9)), (9, 3, 1 / 3), (10, 1, 1 / 3)))
    shorter = [_matched(4)] * 3 + [_matched(10, 6)]  # censored at 4: not counted at 5 and on
    assert survival(shorter)[4:7] == ((5, 1, 1.0), (6, 1, 0.0))


def test_the_curve_ends_when_no_conversation_is_at_risk() -> None:
    assert survival([_matched(5, 1), _matched(8, 1)]) == ((1, 2, 0.0),)
    assert survival([Conversation("x", 3, True)]) == ()  # turn matches unknown: skipped


def test_the_module_imports_only_numpy_the_standard_library_and_its_fit() -> None:
    tree = ast.parse(Path(ROOT / "butterfly" / "core" / "horizon_metric.py").read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            roots.add(node.module.split(".")[0])
    import sys

    assert roots - sys.stdlib_module_names <= {"numpy", "butterfly"}, roots
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
    true = crossing(fit, 5, 80)
    assert math.isfinite(true)
    lo, hi = h.ci
    assert lo is not None and hi is not None and lo <= true <= hi, (lo, true, hi)
    assert h.turns is not None and abs(h.turns - true) < 3 and h.censored is None

