"""The oracle on the shipped suites (butterfly-40, the ladder's long, hard and horizon tiers): it
agrees with the naive twin on every turn, and the laws of test_laws hold on every scenario."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import naive
import pytest

import oracle
from oracle.catalogue import SPEC_VALUES, apply_couplings, inapplicable

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SUITES = ("butterfly-40", "butterfly-long", "butterfly-hard", "butterfly-code")
LONG_SUITES = ("butterfly-horizon",)
"""Chains of thousands of edits: the laws are checked on a sample of two chains (all twelve
take about ten seconds); the naive twin, quadratic in the length, is compared on a long prefix
(tests/butterfly/suite/test_horizon_suite.py)."""


def _load(name: str) -> list[oracle.Scenario]:
    lines = (SCENARIOS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    lines = lines[:2] if name in LONG_SUITES else lines
    return [oracle.Scenario.model_validate_json(line) for line in lines]


@pytest.mark.parametrize("name", SUITES)
def test_oracle_agrees_with_the_naive_twin(name: str) -> None:
    for s in _load(name):
        assert oracle.check(s) is None, s.id
        assert oracle.replay(s) == naive.naive(s), s.id


@pytest.mark.parametrize("name", SUITES + LONG_SUITES)
def test_laws_hold_on_every_scenario(name: str) -> None:
    for s in _load(name):
        record = s.to_json()
        specs = oracle.replay(s)
        assert oracle.replay(s) == specs and s.to_json() == record  # deterministic, pure
        for spec in specs:
            assert apply_couplings(dict(spec)) == spec
            assert all(spec[k] in SPEC_VALUES[k] for k in spec)
        for before, after in itertools.pairwise(specs):
            assert set(inapplicable(after)) <= set(inapplicable(before))
        for t, turn in enumerate(s.turns, 1):
            if turn.op == "distractor":
                assert specs[t] == specs[t - 1]
        # every prefix is valid and replays to the same specs (guards look only backwards)
        for n in (1, len(s.turns) // 2, len(s.turns) - 1):
            if n >= 1:
                prefix = s.model_copy(update={"turns": s.turns[:n]})
                assert oracle.replay(prefix) == specs[: n + 1]
        # a distractor appended changes nothing
        d = json.loads(record)
        d["turns"].append({"op": "distractor", "text": "By the way, nothing to change."})
        extended = oracle.Scenario.model_validate_json(json.dumps(d))
        assert oracle.replay(extended)[-1] == specs[-1]
