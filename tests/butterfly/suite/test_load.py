"""load_suite holds equal parts of scenarios once (Sharer) and changes nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT

from butterfly.core.agents import agent_specs
from butterfly.core.metrics import score_scenario
from butterfly.core.prompts import messages
from butterfly.suite.generate import generate
from butterfly.suite.load import dumps_suite, load_suite
from oracle import Scenario, replay

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"


def _generated(tmp_path: Path) -> Path:
    path = tmp_path / "g.jsonl"
    path.write_text(dumps_suite(generate({"undo_last": 30, "distractor": 30}, 5)))
    return path


def test_shared_suite_equals_a_fresh_parse_and_dumps_the_same_bytes(tmp_path: Path) -> None:
    for path in (SUITE, _generated(tmp_path)):
        text = path.read_text()
        loaded = load_suite(path)
        fresh = [Scenario.model_validate_json(line) for line in text.splitlines()]
        assert loaded == fresh
        assert [replay(s) for s in loaded] == [replay(s) for s in fresh]
        for s in loaded:  # the agents, the prompts and the scorer leave the shared parts alone
            score_scenario(s, agent_specs("last-edit", s)[1:])
            messages(s, len(s.turns), ["{}"] * (len(s.turns) - 1))
        assert dumps_suite(loaded) == text
        assert [s.model_fields_set for s in loaded] == [s.model_fields_set for s in fresh]


def test_equal_turns_and_initial_specs_are_one_object(tmp_path: Path) -> None:
    loaded = load_suite(_generated(tmp_path))
    turns = [t for s in loaded for t in s.turns]
    assert len({id(t) for t in turns}) == len(set(turns)) < len(turns)
    initials = {json.dumps(s.initial) for s in loaded}
    assert len({id(s.initial) for s in loaded}) == len(initials)
    assert len({id(s.model_fields_set) for s in loaded}) == len({frozenset(s.model_fields_set)
                                                                 for s in loaded})


def test_a_copy_of_a_shared_scenario_leaves_the_others_alone(tmp_path: Path) -> None:
    first, second, *_ = load_suite(_generated(tmp_path))
    fields = set(second.model_fields_set)
    changed = first.model_copy(update={"seed": None})
    assert changed.seed is None and first.seed is not None
    assert second.model_fields_set == fields
    assert second.initial == first.initial and second.initial is first.initial


def test_a_line_without_a_newline_at_the_end_is_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(SUITE.read_text().rstrip("\n"))
    assert load_suite(path) == load_suite(SUITE)
