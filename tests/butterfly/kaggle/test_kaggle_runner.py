"""The notebook's runner (butterfly/kaggle/runner.py) beside ``butterfly score``: the headline
it prints carries the horizon, computed and worded as the CLI does for the same conversations.
No server and no kaggle-benchmarks: the scripted agents' answers are handed to ``verdict``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

import butterfly
from butterfly.core.agents import agent_specs
from butterfly.kaggle import runner as bb
from butterfly.present.display import horizon_line
from butterfly.suite.load import load_suite

SCENARIOS = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")


def _verdicts(agent: str) -> list[bb.Verdict]:
    return [bb.verdict(s, [bb.Answer(json.dumps(spec), 100)
                           for spec in agent_specs(agent, s)[1:]], bb.MAX_TOKENS)
            for s in SCENARIOS]


@pytest.mark.parametrize(("agent", "words"), [
    ("oracle", "above 10 turns (no conversation failed)"),
    ("noop", "below 1 turn (every conversation failed)"),
    ("lifo", "7.6 turns (95% CI 5.3 to above 10)"),
])
def test_the_headline_says_what_score_says(agent: str, words: str, tmp_path: Path) -> None:
    verdicts = _verdicts(agent)
    run = butterfly.run(model=f"script/{agent}", out=tmp_path / agent, cache=None)
    cli = butterfly.score_run(run).horizon
    assert cli is not None and bb.horizon_of(verdicts) == cli
    first, second = bb.headline_text(f"script/{agent}", verdicts).splitlines()
    head = bb.headline([v["final_match"] for v in verdicts])
    assert first.startswith(f"script/{agent}: final match {head['final_match']:.1%} "
                            f"({head['final_matches']}/40), 95% interval [")
    assert second == horizon_line(cli) and second.startswith(f"horizon: {words}; ")
