"""Scripted agents through the whole pipeline (run -> records -> score): known score profiles."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly.core.agents import AGENTS, agent_specs
from butterfly.suite.load import load_suite
from oracle import replay

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"
SCENARIOS = load_suite(SUITE)


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:  # type: ignore[type-arg]
    out: dict[str, dict] = {}  # type: ignore[type-arg]
    base = tmp_path_factory.mktemp("runs")
    for agent in AGENTS:
        run = base / agent
        r = run_cli("run", "--model", f"script/{agent}", "--out", str(run), "--no-cache")
        assert r.returncode == 0, r.stderr
        assert "final match" in r.stdout  # the score table
        s = run_cli("score", str(run), "--json")
        assert s.returncode == 0, s.stderr
        out[agent] = json.loads(s.stdout)
    return out


def test_json_has_the_promised_keys(scores: dict[str, dict]) -> None:  # type: ignore[type-arg]
    for key in ("final_match", "abstention", "change_radius", "undo_recovery", "n_scenarios",
                "by_category", "baselines", "first_divergent_turn", "wobble"):
        assert key in scores["oracle"]


def test_oracle_agent_is_perfect(scores: dict[str, dict]) -> None:  # type: ignore[type-arg]
    o = scores["oracle"]
    assert o["final_match"] == 1.0 and o["turn_match"] == 1.0
    assert o["abstention"] == 0.0 and o["change_radius"] == 0.0 and o["wobbles"] == 0
    assert o["undo_recovery"] == 1.0
    assert o["first_divergent_turn"] == {"none": 40}
    assert all(c["final_match"] == 1.0 for c in o["by_category"].values())


def test_noop_agent_profile(scores: dict[str, dict]) -> None:  # type: ignore[type-arg]
    n = scores["noop"]
    unchanged = sum(1 for s in SCENARIOS if replay(s)[-1] == s.initial)
    assert n["final_matches"] == unchanged
    assert n["abstention"] == 0.0
    assert n["change_radius"] == 0.0  # everything it gets wrong was targeted by some turn
    assert n["final_match"] == scores["oracle"]["baselines"]["noop"]["final_match"]


def test_last_edit_agent_profile(scores: dict[str, dict]) -> None:  # type: ignore[type-arg]
    le = scores["last-edit"]
    by = le["by_category"]
    for cat in ("distractor", "drop", "indirect_ref"):
        assert by[cat]["final_match"] == 1.0, cat
    for cat in ("undo_ref", "undo_last", "undo_earliest", "redo"):
        # an undo that changes the spec is ignored; redo after it restores agreement
        expected = sum(
            1 for s in SCENARIOS if s.category == cat
            and replay(s)[-1] == agent_specs("last-edit", s)[-1]
        ) / by[cat]["n_scenarios"]
        assert by[cat]["final_match"] == expected, cat
    assert by["undo_ref"]["final_match"] == 0.0
    assert by["redo"]["final_match"] == 1.0
    assert le["final_match"] == scores["oracle"]["baselines"]["last-edit"]["final_match"]
    for op in ("undo_last", "undo_ref", "undo_earliest"):
        assert le["undo_recovery_by_op"][op]["share"] == 0.0, op


def test_lifo_agent_fails_exactly_on_undo_earliest(scores: dict[str, dict]) -> None:  # type: ignore[type-arg]
    lifo = scores["lifo"]
    assert lifo["undo_recovery_by_op"]["undo_earliest"]["share"] == 0.0
    assert lifo["undo_recovery_by_op"]["undo_last"]["share"] == 1.0
    assert lifo["undo_recovery_by_op"]["undo_ref"]["share"] == 1.0
    assert lifo["by_category"]["undo_earliest"]["final_match"] == 0.0
    for cat in ("undo_ref", "undo_last", "coupling", "distractor", "drop", "redo"):
        assert lifo["by_category"][cat]["final_match"] == 1.0, cat


def test_no_coupling_agent_fails_where_a_rule_is_in_force(scores: dict[str, dict]) -> None:  # type: ignore[type-arg]
    nc = scores["no-coupling"]
    from oracle import COUPLINGS

    expected = sum(
        1 for s in SCENARIOS
        if not any(replay(s)[-1][c.trigger] == c.when and
                   agent_specs("no-coupling", s)[-1][c.forced] != c.then for c in COUPLINGS)
    )
    assert nc["final_matches"] == expected < 40
    assert nc["by_category"]["undo_earliest"]["final_match"] == 1.0


def test_score_reparse_modes_agree_for_clean_json(scores: dict[str, dict], tmp_path: Path) -> None:  # type: ignore[type-arg]
    run = tmp_path / "o"
    assert run_cli("run", "--model", "script/oracle", "--out", str(run), "--limit", "5",
                   "--no-cache").returncode == 0
    for mode in ("strict", "structured", "lenient"):
        r = run_cli("score", str(run), "--json", "--parse", mode)
        assert json.loads(r.stdout)["final_match"] == 1.0


# ---------------------------------------------------------------------------- the ladder (v2)

HARD = ROOT / "scenarios" / "butterfly-hard.jsonl"
LONG = ROOT / "scenarios" / "butterfly-long.jsonl"
DEFEATS = ROOT / "tests" / "butterfly" / "core" / "golden" / "butterfly-hard.defeats.json"
FLAWS = ("last-edit", "lifo", "no-coupling")


def _final_match(agent: str, path: Path) -> float:
    scenarios = load_suite(path)
    hits = sum(agent_specs(agent, s)[-1] == replay(s)[-1] for s in scenarios)
    return hits / len(scenarios)


def test_every_hard_scenario_defeats_scripted_flaws_and_the_golden_file_says_which() -> None:
    """Which flaws each hard scenario defeats (final spec differs from the oracle's), kept in a
    golden file so that a change of the suite or an agent shows up as a diff."""
    table = {
        s.id: [a for a in FLAWS if agent_specs(a, s)[-1] != replay(s)[-1]]
        for s in load_suite(HARD)
    }
    assert all(table.values())  # at least one each (in fact all three, by construction)
    assert json.loads(DEFEATS.read_text()) == table


@pytest.mark.parametrize("agent", FLAWS)
def test_flawed_agents_score_at_most_15_percent_on_hard(agent: str) -> None:
    assert _final_match(agent, HARD) <= 0.15


def test_oracle_agent_is_perfect_on_hard_and_long(tmp_path: Path) -> None:
    for path in (HARD, LONG):
        run = tmp_path / path.stem
        r = run_cli("run", "--model", "script/oracle", "--suite", str(path), "--out", str(run),
                    "--no-cache")
        assert r.returncode == 0, r.stderr
        score = json.loads(run_cli("score", str(run), "--json").stdout)
        assert score["final_match"] == 1.0 and score["turn_match"] == 1.0, path.stem


# ---------------------------------------------------------------------------- script/drift:p=P


def test_drift_answers_like_the_oracle_until_it_stops_then_repeats_itself() -> None:
    from butterfly.core.agents import drift_spec, drift_stop

    s = next(x for x in load_suite(LONG) if len(x.turns) == 20)
    o = replay(s)
    assert [drift_spec(s, t, 0, 0.0) for t in range(21)] == o
    assert all(drift_spec(s, t, 7, 1.0) == o[0] for t in range(1, 21))  # stops before turn 1
    stops = 0
    for seed in range(30):
        stop = drift_stop(s.id, 20, seed, 0.1)
        answers = [drift_spec(s, t, seed, 0.1, o) for t in range(1, 21)]
        if stop is None:
            assert answers == o[1:]
        else:
            stops += 1
            assert answers[: stop - 1] == o[1:stop]
            assert all(a == o[stop - 1] for a in answers[stop - 1:])
    assert 0 < stops < 30


def test_drift_expected_final_match_is_exact() -> None:
    """The closed form against 4,000 simulated conversations (other seeds) per scenario."""
    from butterfly.core.agents import drift_expected_final_match, drift_spec

    p = 0.08
    for s in [x for x in load_suite(LONG) if len(x.turns) in (10, 20)][::6]:
        o = replay(s)
        n = len(s.turns)
        hits = sum(drift_spec(s, n, seed, p, o) == o[n] for seed in range(4000))
        e = drift_expected_final_match(s, p, o)
        assert abs(hits / 4000 - e) <= 4 * math.sqrt(e * (1 - e) / 4000) + 1e-9, (s.id, e)
        # and by hand: P(no stop) + P(stop at t) over the turns whose previous answer is final
        by_hand = (1 - p) ** n + sum((1 - p) ** (t - 1) * p for t in range(1, n + 1)
                                     if o[t - 1] == o[n])
        assert e == pytest.approx(by_hand)


def test_drift_through_the_runner_answers_by_the_request_seed(tmp_path: Path) -> None:
    from butterfly.core.agents import drift_spec

    run = tmp_path / "d"
    r = run_cli("run", "--model", "script/drift:p=0.2", "--suite", str(LONG), "--limit", "4",
                "--repeats", "2", "--out", str(run), "--no-cache")
    assert r.returncode == 0, r.stderr
    by_id = {s.id: s for s in load_suite(LONG)}
    n = 0
    for line in (run / "calls.jsonl").read_text().splitlines():
        rec = json.loads(line)
        s = by_id[rec["scenario"]]
        assert rec["spec"] == drift_spec(s, rec["turn"], rec["repeat"], 0.2), rec["scenario"]
        n += 1
    assert n == 2 * sum(len(s.turns) for s in list(by_id.values())[:4])
    bad = run_cli("run", "--model", "script/drift:p=2", "--limit", "1", "--out",
                  str(tmp_path / "x"), "--no-cache")
    assert bad.returncode == 1 and "script/drift:p=P with P between 0 and 1" in bad.stderr


def test_the_generators_flaws_are_the_agents() -> None:
    """butterfly-hard is built against suite.hard.FLAWED_AGENTS; they must be the agents' rules."""
    from butterfly.core.agents import _RULES
    from butterfly.suite.hard import FLAWED_AGENTS

    assert all(_RULES[name] == rules for name, rules in FLAWED_AGENTS.items())
