"""Second readings (contract v3, section 2): for each class of the registry, a crafted scenario
that validation rejects with one line naming the reading, the scenario and the turn, and its
rewording with one reading, accepted; the naive twin agrees on every verdict (``kind``)."""

from __future__ import annotations

import naive
import pytest
from strategies import make, set_turn, simple_turn, undo_ref_turn

import oracle
from oracle.readings import BY_NAME, READINGS, contexts, triggered, triggered_at

UNDO_LAST = simple_turn("undo_last")
UNDO_EARLIEST = simple_turn("undo_earliest")


kind = naive.agreed_violation


def redo(text: str) -> dict[str, str]:
    return {"op": "redo", "text": text}


def worded(turn: dict[str, str], text: str) -> dict[str, str]:
    return {**turn, "text": text}


def _stacked(text: str) -> oracle.Scenario:
    # two changes undone, then two redos: the second brings back the first change undone
    return make(set_turn("log_level", "debug"), set_turn("retries", "3"), UNDO_LAST,
                UNDO_EARLIEST, redo("Redo the change I just undid."), redo(text))


def _history(text: str) -> oracle.Scenario:
    # the timeout set twice, the second change undone: "my change to the timeout" is which?
    return make(set_turn("timeout_seconds", "60"), set_turn("timeout_seconds", "120"),
                UNDO_LAST, undo_ref_turn("timeout_seconds", text))


def _edit(text: str) -> oracle.Scenario:
    # undone by description, then redo: a new change instead would leave nothing to redo
    return make(set_turn("log_level", "debug"), set_turn("retries", "3"),
                undo_ref_turn("log_level", text), redo("Put that back."))


def _instead(text: str) -> oracle.Scenario:
    return make(set_turn("log_level", "debug"),
                worded(set_turn("retries", "3"), text))


def _link(text: str) -> oracle.Scenario:
    return make(set_turn("output_format", "markdown"),
                worded(set_turn("output_format", "csv"), text),
                set_turn("input_format", "tsv"))


def _earliest(text: str) -> oracle.Scenario:
    # the log change undone and brought back: made first, but in effect for less long
    return make(set_turn("log_level", "debug"), set_turn("retries", "3"),
                undo_ref_turn("log_level"), redo("Put that back."),
                {"op": "undo_earliest", "text": text})


def _kind(text: str) -> oracle.Scenario:
    # the output format and the compression both changed: which is "what kind of files"?
    return make(set_turn("output_format", "csv"), set_turn("compression", "gzip"),
                undo_ref_turn("output_format", text))


def _undo_then_last(text: str) -> oracle.Scenario:
    # an undo, a question, then "the change I just made": the undo, or the log change?
    return make(set_turn("log_level", "debug"), set_turn("retries", "3"), UNDO_LAST,
                simple_turn("distractor"), {"op": "undo_last", "text": text})


CASES = {
    # reading: (scenario with two readings, the turn, the same scenario worded with one)
    "stacked-redo": (_stacked("Bring back the change I undid most recently."), 6,
                     _stacked("Redo once more: bring back the change I undid before that one.")),
    "undo-ref-history": (_history("Revert my change to {desc}."), 4,
                         _history("Undo my change to {desc} that is still in effect.")),
    "undo-as-edit": (_edit("Put {desc} back the way it was before I changed it."), 3,
                     _edit("Undo my change to {desc} that is still in effect.")),
    "replacing-instead": (_instead("Let's go with three retries instead."), 2,
                          _instead("Let's go with three retries instead of none.")),
    "standing-link": (_link("Write the output in whatever format the input files are in."), 2,
                      _link("Set the output format to whatever the input format is right now.")),
    "earliest-after-redo": (_earliest("Go back on the earliest change that is still in place."),
                            5, _earliest("Of the changes still in effect, revert the one I made "
                                         "first.")),
    "output-kind": (_kind("Undo the change I made to what kind of files the tool writes."), 3,
                    _kind("Undo the change I made to which data format the output is written "
                          "in (CSV, JSON and so on).")),
    "undo-last-after-an-undo": (_undo_then_last("Scratch the change I just made."), 5,
                                _undo_then_last("Undo my most recent change that is still "
                                                "in effect.")),
}


def test_every_reading_of_the_registry_has_a_case() -> None:
    assert list(CASES) == [r.name for r in READINGS]
    assert [r.number for r in READINGS] == [1, 2, 3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize("name", list(CASES))
def test_a_crafted_scenario_is_rejected_naming_reading_scenario_and_turn(name: str) -> None:
    ambiguous, turn, _ = CASES[name]
    reading = BY_NAME[name]
    assert kind(ambiguous) == (turn, f"reading_{reading.number}")
    v = oracle.check(ambiguous)
    assert v is not None and v.since == 3 and v.turn == turn
    line = str(v)
    assert "\n" not in line
    assert line.startswith(f"scenario {ambiguous.id}, turn {turn}: second reading "
                           f"{reading.number} ({name}")
    # a reading rejects the wording; the oracle's own answer stays what it was
    assert oracle.replay(ambiguous) == naive.naive(ambiguous, readings=False)


@pytest.mark.parametrize("name", list(CASES))
def test_its_rewording_with_one_reading_is_accepted(name: str) -> None:
    ambiguous, turn, clear = CASES[name]
    assert kind(clear) is None
    assert oracle.replay(clear) == oracle.replay(ambiguous)  # same ops, same answers
    ctx = next(c for t, c in contexts(clear.initial, clear.turns) if t == turn)
    assert BY_NAME[name] not in triggered(ctx)


def test_a_reading_that_changes_no_spec_is_not_a_violation() -> None:
    # "instead" at the last turn while another change is in effect, replacing a change to the
    # same setting: replaced or stacked, the spec is the same, and nothing comes after it
    s = make(set_turn("retries", "1"), worded(set_turn("retries", "3"), "Actually, make it 3."))
    ctx = next(c for t, c in contexts(s.initial, s.turns) if t == 2)
    assert BY_NAME["replacing-instead"] in triggered(ctx)
    assert kind(s) is None


def test_x_instead_of_y_has_one_reading_but_a_vague_y_does_not() -> None:
    named = make(set_turn("log_level", "debug"),
                 worded(set_turn("retries", "3"), "Three retries instead of none, please."))
    assert kind(named) is None
    vague = make(set_turn("log_level", "debug"),
                 worded(set_turn("retries", "3"), "Three retries instead of that, please."))
    assert kind(vague) == (2, "reading_4")


def test_a_redo_after_an_undo_is_not_stacked() -> None:
    s = make(set_turn("log_level", "debug"), set_turn("retries", "3"), UNDO_LAST, UNDO_EARLIEST,
             redo("Redo the change I just undid."))
    assert kind(s) is None


def test_readings_are_checked_after_every_other_guard() -> None:
    # an undo_ref with nothing to undo is reported as such, not as a reading
    s = make(set_turn("log_level", "debug"),
             undo_ref_turn("retries", "Put {desc} back the way it was before I changed it."))
    assert kind(s) == (2, "undo_ref_count")


def test_triggered_at_sees_the_state_before_the_turn() -> None:
    """The generator's question: "instead" on the first change has nothing to replace."""
    first = make(worded(set_turn("retries", "3"), "Let's go with three retries instead."))
    assert triggered_at(first.initial, (), first.turns[0]) == ()
    second = make(set_turn("log_level", "debug"),
                  worded(set_turn("retries", "3"), "Let's go with three retries instead."))
    assert triggered_at(second.initial, second.turns[:1], second.turns[1]) == (
        BY_NAME["replacing-instead"],)


def test_what_kind_of_files_the_tool_reads_is_not_the_output() -> None:
    # the input's description: compressing does not change what the tool reads
    s = make(set_turn("input_format", "tsv"), set_turn("compression", "gzip"),
             undo_ref_turn("input_format", "Undo the change I made to what kind of files the "
                           "tool reads."))
    ctx = next(c for t, c in contexts(s.initial, s.turns) if t == 3)
    assert BY_NAME["output-kind"] not in triggered(ctx)
    assert kind(s) is None


def test_what_kind_of_files_without_a_compression_change_has_one_reading() -> None:
    s = make(set_turn("output_format", "csv"),
             undo_ref_turn("output_format", "Undo the change I made to what kind of files the "
                           "tool writes."))
    ctx = next(c for t, c in contexts(s.initial, s.turns) if t == 2)
    assert BY_NAME["output-kind"] not in triggered(ctx)
    assert kind(s) is None


def test_what_kind_of_files_after_a_compression_change_was_undone_reads_two_ways() -> None:
    # the gzip change is undone: a reader who takes it as the one meant undoes nothing
    s = make(set_turn("output_format", "csv"), set_turn("compression", "gzip"),
             undo_ref_turn("compression"),
             undo_ref_turn("output_format", "Undo the change I made to what kind of files the "
                           "tool writes."))
    assert kind(s) == (4, "reading_7")


def test_an_undo_last_after_a_redo_has_one_reading() -> None:
    # undoing the redo and undoing the last change made are the same change (the undo-last
    # guard makes the redone change the one made last)
    s = make(set_turn("log_level", "debug"), UNDO_LAST, simple_turn("redo"),
             {"op": "undo_last", "text": "Scratch the change I just made."})
    ctx = next(c for t, c in contexts(s.initial, s.turns) if t == 4)
    assert BY_NAME["undo-last-after-an-undo"] not in triggered(ctx)
    assert kind(s) is None
