"""Deep chains (contract v4, section 8; ``butterfly.suite.deep_chains``): the plan of long-lived
changes
covers every band of every ask point, every generator emits only chains that pass the depth
guard, the frozen suites pass it and their older versions are refused, and on butterfly-horizon
the horizon means what it says (the recency agents' horizons track their windows; the drift
agent's expected horizon is inside its interval)."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import pytest

from butterfly.api import audit_depth, generate, validate
from butterfly.core.agents import drift_expected_final_match, drift_spec
from butterfly.core.asking import asked_turns
from butterfly.core.horizon_metric import Conversation, crossing, horizon
from butterfly.core.logistic import fit_logistic
from butterfly.errors import UserError
from butterfly.suite.chains import generate_chains
from butterfly.suite.deep_chains import ANCHOR_KEYS, asked_of, deep_enough, plan
from butterfly.suite.load import HORIZON_ASK_AT, ROOT, dumps_suite, load_suite, resolve_suite
from oracle import COUPLINGS, Scenario, check, replay
from oracle.catalogue import APPLICABILITY
from oracle.depth import bands, window_spec

RETIRED = ROOT / "scenarios" / "retired"


def test_anchor_settings_are_free_of_rules_and_always_apply() -> None:
    involved = {k for c in COUPLINGS for k in (c.trigger, c.forced)}
    involved |= {k for a in APPLICABILITY for k in (*a.settings, a.on)}
    assert ANCHOR_KEYS and not set(ANCHOR_KEYS) & involved


@pytest.mark.parametrize("seed", range(6))
def test_the_plan_covers_every_band_of_every_ask_point(seed: int) -> None:
    rng = random.Random(seed)
    length = rng.choice([40, 80, 200, 1000, 5000])
    asked = asked_of(length, sorted(rng.sample(range(1, length), 4)))
    anchors = plan(length, asked, rng)
    for t in (a for a in asked if a >= 40):
        for j, (lo, hi) in enumerate(bands(t)):
            serving = [a for a in anchors if t in a.needs and lo <= t - a.last
                       and t - a.first < hi]
            assert len(serving) == (2 if j == 0 else 1), (t, lo, hi)  # the oldest: a spare
    assert all(a.first <= a.at <= a.last for a in anchors)
    assert plan(30, asked_of(30, [10, 20]), rng) == []  # no ask point from 40 on: no plan


@pytest.mark.parametrize("ops", [None, "set=1", "set=1,undo_last=5",
                                 "set=1,undo_earliest=10,redo=5", "set=1,redo=1,undo_ref=8"])
def test_chains_of_40_turns_or_more_pass_the_guard_whatever_the_mix(ops: str | None) -> None:
    made = generate(lengths="40,80,120", per_length=2, seed=11, ops=ops).scenarios
    for s in made:
        assert check(s) is None, s.id
        assert deep_enough(s, asked_of(len(s.turns), None)), s.id


def test_chains_asked_at_chosen_turns_are_deep_at_each() -> None:
    asked = [20, 40, 60, 80]
    for s in generate_chains([80], 3, seed=5, ask_at=asked):
        assert deep_enough(s, asked_of(80, asked)), s.id


def test_chains_shorter_than_40_turns_draw_as_before() -> None:
    # no plan below 40 turns: the random stream, and so the chain, is generator v3's
    old = {s.id: s for s in load_suite(RETIRED / "butterfly-long.v2.jsonl", readings=False)}
    new = [s for s in load_suite(resolve_suite("butterfly-long")) if len(s.turns) < 40]
    for s in new:  # the same ops; a few turns reworded (readings 7 and 8)
        for a, b in zip(old[s.id].turns, s.turns, strict=True):
            if a != b:
                assert a.model_copy(update={"text": "", "paraphrase": None}) == \
                    b.model_copy(update={"text": "", "paraphrase": None})
                assert "which data format the output" in b.text or "still in effect" in b.text
    assert sum(old[s.id] != s for s in new) <= 4


@pytest.mark.parametrize("name", ["butterfly-long", "butterfly-horizon"])
def test_the_frozen_suites_pass_the_depth_guard(name: str) -> None:
    (report,) = audit_depth([name])
    assert report.guarded and report.violation is None
    assert all(r.bands_covered == r.chains and r.half_matches == 0 and r.tenth_matches == 0
               for r in report.rows)


@pytest.mark.parametrize("name", ["butterfly-40", "butterfly-hard", "butterfly-code"])
def test_suites_of_short_conversations_are_not_concerned(name: str) -> None:
    (report,) = audit_depth([name])
    assert not report.guarded and report.rows == []


@pytest.mark.parametrize("name", ["butterfly-long.v2", "butterfly-horizon.v1"])
def test_the_retired_versions_are_shallow(name: str) -> None:
    (report,) = audit_depth([str(RETIRED / f"{name}.jsonl")])
    assert report.violation is not None
    assert any(r.half_matches > r.chains / 10 for r in report.rows)


def test_a_shallow_suite_is_refused_naming_chain_ask_point_and_band(tmp_path: Path) -> None:
    # butterfly-long v2's chains of 40 and 80 turns that every other guard accepts
    kept = [s for s in load_suite(RETIRED / "butterfly-long.v2.jsonl", readings=False)
            if len(s.turns) >= 40 and check(s) is None]
    suite = tmp_path / "shallow.jsonl"
    suite.write_text(dumps_suite(kept), encoding="utf-8")
    with pytest.raises(UserError) as e:
        validate([str(suite)])
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"{suite}: scenario long-0")
    assert ", ask point " in line and "age band [" in line and "depth guard" in line


# ------------------------------------------------------------------ the horizon means what it says


@pytest.fixture(scope="module")
def horizon_suite() -> list[tuple[Scenario, list[dict[str, str]], list[int]]]:
    return [(s, replay(s), list(asked_turns(len(s.turns), HORIZON_ASK_AT)))
            for s in load_suite(resolve_suite("butterfly-horizon"))]


@pytest.mark.parametrize("k", [50, 200, 1000])
def test_a_recency_agent_s_horizon_tracks_its_window(
        horizon_suite: list[tuple[Scenario, list[dict[str, str]], list[int]]], k: int) -> None:
    asks = [Conversation(s.id, t, window_spec(s, t, k) == o[t])
            for s, o, asked in horizon_suite for t in asked]
    h = horizon(asks)
    assert h.censored is None and h.turns is not None
    assert k / 2 <= h.turns <= 4 * k, (k, h.turns, h.by_length)


def test_the_drift_agent_s_expected_horizon_is_inside_its_interval(
        horizon_suite: list[tuple[Scenario, list[dict[str, str]], list[int]]]) -> None:
    p, repeats = 0.002, 6
    asks = []
    total: dict[int, float] = defaultdict(float)
    count: dict[int, int] = defaultdict(int)
    for s, o, asked in horizon_suite:
        for t in asked:
            cut = Scenario.model_validate({**s.model_dump(), "turns": s.model_dump()["turns"][:t]})
            total[t] += drift_expected_final_match(cut, p, o[: t + 1])
            count[t] += 1
            asks += [Conversation(s.id, t, drift_spec(s, t, r, p, o) == o[t])
                     for r in range(repeats)]
    lengths = sorted(count)
    fit = fit_logistic(lengths, [total[n] for n in lengths], [count[n] for n in lengths])
    assert fit is not None
    expected = crossing(fit, lengths[0], lengths[-1])
    h = horizon(asks)
    lo, hi = h.ci
    assert h.turns is not None and lo is not None and hi is not None
    assert lo <= expected <= hi, (expected, h.turns, h.ci)


@pytest.mark.parametrize("agent", ["last-edit", "lifo"])
def test_flawed_agents_fail_at_every_guarded_ask_point(
        horizon_suite: list[tuple[Scenario, list[dict[str, str]], list[int]]],
        agent: str) -> None:
    """Undos that cancel out by the ask point (an anchor undone, then brought back) test
    nothing there; the earliest change undone for good before each ask point does."""
    from butterfly.core.agents import agent_specs_at

    for t in (a for a in HORIZON_ASK_AT if a >= 40):
        matched = sum(agent_specs_at(agent, s, [t])[0] == o[t] for s, o, _ in horizon_suite)
        assert matched <= 1, (agent, t, matched)
