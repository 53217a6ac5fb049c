"""Contract v3 on what the generators make: the frozen suites, 2,000 generated scenarios and
5 x 12 ladder chains word no generated turn in a way that a second reading triggers, hold no
reading that changes a spec (handwritten turns included), and the oracle equals the naive twin
(its own readings included) on every one of them."""

from __future__ import annotations

from pathlib import Path

import naive
import pytest

import oracle
from butterfly.suite.chains import generate_chains
from butterfly.suite.generate import generate_mixed
from butterfly.suite.hard import FLAWED_AGENTS
from butterfly.suite.load import LONG_LENGTHS, load_suite
from oracle.readings import contexts, triggered

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def assert_one_reading(scenarios: list[oracle.Scenario]) -> None:
    for s in scenarios:
        assert oracle.check(s) is None, s.id
        assert oracle.replay(s) == naive.naive(s), s.id
        if s.source == "generated":
            hits = [(t, [r.name for r in triggered(c)]) for t, c in contexts(s.initial, s.turns)
                    if triggered(c)]
            assert not hits, (s.id, hits)


@pytest.mark.parametrize("name", ["butterfly-40", "butterfly-hard", "butterfly-long",
                                  "butterfly-code"])
def test_frozen_suites_have_one_reading(name: str) -> None:
    assert_one_reading(load_suite(SCENARIOS / f"{name}.jsonl"))


def test_two_thousand_generated_scenarios_have_one_reading() -> None:
    suite = generate_mixed(2000, 2026)
    assert len(suite) == 2000
    assert_one_reading(suite)


def test_five_by_twelve_ladder_chains_have_one_reading() -> None:
    chains = generate_chains(LONG_LENGTHS, 12, 77)
    assert sorted({len(s.turns) for s in chains}) == list(LONG_LENGTHS)
    assert_one_reading(chains)


def test_butterfly_hard_still_defeats_every_flawed_agent() -> None:
    hard = load_suite(SCENARIOS / "butterfly-hard.jsonl")
    for agent, rules in FLAWED_AGENTS.items():
        passed = sum(oracle.replay(s, rules)[-1] == oracle.replay(s)[-1] for s in hard)
        assert passed / len(hard) <= 0.15, agent
    for s in hard:
        final = oracle.replay(s)[-1]
        assert any(oracle.replay(s, r)[-1] != final for r in FLAWED_AGENTS.values()), s.id
