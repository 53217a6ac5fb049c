"""The contract's v2 guards: settings made inapplicable, and undo-history wording after a redo.

One reject/accept pair per case, checked against the naive twin (``kind`` asserts agreement), and
a law over valid scenarios: no accepted turn makes a declared setting stop applying.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import naive
import pytest
import strategies as gen
from hypothesis import given, settings
from strategies import HISTORY_EARLIEST, drop_turn, make, set_turn, simple_turn, undo_ref_turn
from sweep import CI, examples

import oracle
from oracle.catalogue import APPLICABILITY, canonical_initial, inapplicable
from oracle.replay import HISTORY_WORDING_EXAMPLES, Rules, history_wording, played_before_v2

UNDO_LAST = simple_turn("undo_last")
UNDO_EARLIEST = simple_turn("undo_earliest")
REDO = simple_turn("redo")


kind = naive.agreed_violation


def with_(**changes: str) -> dict[str, str]:
    spec = canonical_initial()
    spec.update(changes)
    return spec


# ============================================================================ inapplicable


def test_the_declared_list_is_the_contracts() -> None:
    assert {k: (a.on, a.values, a.applies_in) for a in APPLICABILITY for k in a.settings} == {
        "delimiter": ("input_format", ("csv", "tsv"), True),
        "header_row": ("input_format", ("csv", "tsv"), True),
        "encoding": ("output_format", ("parquet",), False),
        "line_endings": ("output_format", ("parquet",), False),
        "quote_style": ("output_format", ("parquet",), False),
    }
    assert inapplicable(canonical_initial()) == {}
    assert set(inapplicable(with_(input_format="unspecified"))) == {"delimiter", "header_row"}
    assert inapplicable(with_(output_format="unspecified")) == {}


@pytest.mark.parametrize("fmt", ["json", "jsonl", "parquet"])
def test_reading_a_format_without_delimiter_is_rejected(fmt: str) -> None:
    """The write-up's 'Read JSON files instead of CSV'."""
    assert kind(make(set_turn("input_format", fmt))) == (1, "inapplicable")
    assert kind(make(set_turn("log_level", "debug"), set_turn("input_format", fmt))) == (
        2, "inapplicable")
    # csv -> tsv keeps them applicable
    assert kind(make(set_turn("input_format", "tsv"))) is None


def test_dropping_the_input_format_is_rejected_but_not_the_output_format() -> None:
    assert kind(make(drop_turn("input_format"))) == (1, "inapplicable")
    assert kind(make(drop_turn("output_format"))) is None


def test_writing_parquet_is_rejected_other_outputs_are_not() -> None:
    assert kind(make(set_turn("output_format", "parquet"))) == (1, "inapplicable")
    for fmt in ("csv", "jsonl", "html", "markdown"):
        assert kind(make(set_turn("output_format", fmt))) is None, fmt


def test_an_initial_spec_may_hold_the_state_but_no_turn_may_restore_it() -> None:
    """Given, not changed: JSON input from the start is valid; moving to CSV is too; an undo
    that brings JSON back makes the delimiter inapplicable again and is rejected."""
    start = with_(input_format="json")
    assert kind(make(set_turn("log_level", "debug"), initial=start)) is None
    csv = set_turn("input_format", "csv")
    assert kind(make(csv, initial=start)) is None
    assert kind(make(csv, UNDO_LAST, initial=start)) == (2, "inapplicable")
    assert kind(make(csv, undo_ref_turn("input_format"), initial=start)) == (2, "inapplicable")
    # while already inapplicable, other formats without a delimiter are fine
    assert kind(make(set_turn("input_format", "parquet"), initial=start)) is None


def test_a_redo_that_brings_parquet_back_is_rejected() -> None:
    start = with_(output_format="parquet")
    csv = set_turn("output_format", "csv")
    assert kind(make(csv, UNDO_LAST, initial=start)) == (2, "inapplicable")
    json_out = set_turn("output_format", "json")
    # parquet -> csv -> json, undo json (back to csv), redo: applicable throughout
    assert kind(make(csv, json_out, UNDO_LAST, REDO, initial=start)) is None


def test_the_reason_is_one_line_naming_the_setting_and_the_format() -> None:
    v = oracle.check(make(set_turn("input_format", "json")))
    assert v is not None and "\n" not in str(v)
    assert str(v).startswith("scenario hyp-0000, turn 1: set makes delimiter inapplicable")
    assert "input_format becomes json" in v.reason


@settings(CI, max_examples=examples(300))
@given(gen.valid_scenarios())
def test_no_valid_turn_makes_a_declared_setting_inapplicable(scenario: oracle.Scenario) -> None:
    specs = oracle.replay(scenario)
    for before, after in itertools.pairwise(specs):
        assert set(inapplicable(after)) <= set(inapplicable(before))


# ============================================================================ history wording


@pytest.mark.parametrize("phrase", HISTORY_WORDING_EXAMPLES)
def test_every_documented_history_phrase_is_caught(phrase: str) -> None:
    assert history_wording(f"Undo the earliest change, the one {phrase}.") is not None


@pytest.mark.parametrize("text", [
    "Undo the earliest change that is still in effect.",
    "Of the changes still in effect, revert the one I made first.",
    "Take back the first of my changes that still stands.",
    "Roll back the oldest change still in place.",
])
def test_in_effect_wordings_are_not_history(text: str) -> None:
    assert history_wording(text) is None


def test_history_wording_after_a_redo_of_its_target_is_rejected() -> None:
    t60 = set_turn("timeout_seconds", "60")
    debug = set_turn("log_level", "debug")
    for text in HISTORY_EARLIEST:
        hist = {"op": "undo_earliest", "text": text}
        # the target (timeout) was undone and redone: "not undone yet" reads two ways
        assert kind(make(t60, debug, undo_ref_turn("timeout_seconds"), REDO, hist)) == (
            5, "undo_earliest_history")
        # the same history with in-effect wording is valid, and undoes the timeout
        ok = make(t60, debug, undo_ref_turn("timeout_seconds"), REDO, UNDO_EARLIEST)
        assert kind(ok) is None
        assert oracle.replay(ok)[-1] == with_(log_level="debug")
        # history wording is fine when the target was never undone ...
        assert kind(make(t60, debug, UNDO_LAST, REDO, hist)) is None
        # ... and when another change was undone and redone
        assert kind(make(t60, debug, undo_ref_turn("log_level"), REDO, hist)) is None
        assert kind(make(t60, debug, hist)) is None


def test_history_wording_with_a_typographic_apostrophe() -> None:
    t60 = set_turn("timeout_seconds", "60")
    hist = {"op": "undo_earliest", "text": "Undo my oldest change that hasn\u2019t been undone."}
    debug = set_turn("log_level", "debug")
    assert kind(make(t60, debug, undo_ref_turn("timeout_seconds"), REDO, hist)) == (
        5, "undo_earliest_history")


# ============================================================================ records played on v1

V1_SUITE = Path(__file__).resolve().parents[2] / "runs/script-oracle__butterfly-40__v1/suite.jsonl"
"""A committed run's copy of the suite it played: butterfly-40 v1."""


def test_butterfly40_v1_records_stay_replayable_but_invalid() -> None:
    """Committed runs hold butterfly-40 v1: its three records that v2 rejects still replay (the
    v2 guards never change a spec), check() still reports them, and only those exact records."""
    v1 = [oracle.Scenario.model_validate_json(x) for x in V1_SUITE.read_text().splitlines()]
    rejected = [s for s in v1 if oracle.check(s, readings=False) is not None]
    assert {s.id for s in rejected} == {
        "hw-indirect-same-format", "hw-undo-earliest-after-undo", "gen-long-chain-03"}
    for s in rejected:
        v = oracle.check(s, readings=False)
        assert v is not None and v.since == 2 and naive.oracle_kind(v.reason) == "inapplicable"
        assert played_before_v2(s)
        specs = oracle.replay(s)
        assert specs == oracle.replay(s, Rules(v2=False))
        other = s.model_copy(update={"id": s.id + "-copy"})
        assert not played_before_v2(other)
        with pytest.raises(oracle.InvalidScenario):
            oracle.replay(other)
    assert all(oracle.check(s, readings=False) is None or played_before_v2(s) for s in v1)
