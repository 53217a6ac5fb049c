"""Depth (contract v4, section 8): the ages of the changes that show, the recency agent and the
depth guard, each checked against a naive twin written again from the contract, on crafted
scenarios and on random valid ones."""

from __future__ import annotations

from typing import Any

import strategies as gen
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_readings import free_replay
from strategies import make, set_turn, simple_turn, undo_ref_turn
from sweep import CI, examples

import oracle
from oracle.catalogue import COUPLINGS
from oracle.depth import (
    AskDepth,
    ages,
    bands,
    chain_depth,
    half,
    missing_band,
    summarise,
    tenth,
    violation,
    window_spec,
)

UNDO_LAST = simple_turn("undo_last")
UNDO_EARLIEST = simple_turn("undo_earliest")
REDO = simple_turn("redo")
DISTRACTOR = simple_turn("distractor")


# ------------------------------------------------------------------------- the naive twin


def naive_ages(scenario: oracle.Scenario, t: int) -> list[int]:
    """The contract's words, replayed plainly: every change in the order made, each with the
    turn that made it and whether it is in effect; a redo brings one back without renewing it."""
    changes: list[dict[str, Any]] = []
    redo: list[int] = []
    for u, turn in enumerate(scenario.turns[:t], 1):
        live = [i for i, c in enumerate(changes) if c["on"]]
        d = turn.model_dump()
        if turn.op in ("set", "drop"):
            value = d["value"] if turn.op == "set" else oracle.UNSPECIFIED
            changes.append({"setting": d["setting"], "value": value, "made": u, "on": True})
            redo.clear()
        elif turn.op == "redo" and redo:
            changes[redo.pop()]["on"] = True
        elif turn.op in ("undo_last", "undo_earliest", "undo_ref"):
            if turn.op == "undo_ref":
                live = [i for i in live if changes[i]["setting"] == d["setting"]]
            if live:
                i = live[0] if turn.op == "undo_earliest" else live[-1]
                changes[i]["on"] = False
                redo.append(i)
    base = dict(scenario.initial)
    latest: dict[str, dict[str, Any]] = {}
    for c in changes:
        if c["on"]:
            base[c["setting"]] = c["value"]
            latest[c["setting"]] = c
    forced = {cp.forced for cp in COUPLINGS if base[cp.trigger] == cp.when}
    return sorted((t - c["made"] for k, c in latest.items()
                   if k not in forced and c["value"] != scenario.initial[k]), reverse=True)


def naive_window(scenario: oracle.Scenario, t: int, k: int) -> dict[str, str]:
    """The last k user messages replayed from the initial spec, nothing else."""
    turns = [turn.model_dump() for turn in scenario.turns]
    return free_replay(scenario.initial, turns[max(0, t - k):t])[-1]


# ------------------------------------------------------------------------- bands


def test_bands_halve_down_to_ten_turns() -> None:
    assert bands(40) == [(20, 40), (10, 20)]
    assert bands(39) == [(19.5, 39)]
    assert bands(19) == []
    assert [lo for lo, _ in bands(5000)] == [2500, 1250, 625, 312.5, 156.25, 78.125, 39.0625,
                                             19.53125]
    assert (half(5000), tenth(5000), half(45), tenth(45)) == (2500, 500, 23, 5)


def test_missing_band_names_the_oldest_band_without_an_age() -> None:
    assert missing_band(80, [45, 25, 12]) is None
    assert missing_band(80, [45, 12]) == (20, 40)
    assert missing_band(80, [39, 25, 12]) == (40, 80)
    assert missing_band(80, []) == (40, 80)


# ------------------------------------------------------------------------- what shows


def test_a_change_shows_only_with_a_value_of_its_own_that_no_rule_forces() -> None:
    s = make(
        set_turn("log_level", "debug"),        # 1: shows (age t-1)
        set_turn("retries", "3"),              # 2: undone at 5
        set_turn("timeout_seconds", "30"),     # 3: the initial value: does not show
        set_turn("progress_bar", "off"),       # 4: forced later by parallel=on
        undo_ref_turn("retries"),              # 5
        set_turn("parallel", "on"),            # 6: shows; progress_bar is now forced
        DISTRACTOR,                            # 7
    )
    assert ages(s, [7]) == {7: [6, 1]}
    assert naive_ages(s, 7) == [6, 1]


def test_a_redo_does_not_renew_a_change_and_a_later_change_shadows_an_earlier() -> None:
    s = make(set_turn("log_level", "debug"), set_turn("retries", "3"),
             undo_ref_turn("log_level"), REDO, set_turn("retries", "5"), DISTRACTOR)
    assert ages(s, [4, 6]) == {4: [3, 2], 6: [5, 1]}  # retries: the change of turn 5 shows
    assert naive_ages(s, 6) == [5, 1]


@settings(CI, max_examples=examples(400))
@given(gen.valid_scenarios(max_turns=12), st.data())
def test_ages_agree_with_the_naive_twin(scenario: oracle.Scenario, data: st.DataObject) -> None:
    n = len(scenario.turns)
    asked = sorted(set(data.draw(st.lists(st.integers(1, n), min_size=1, max_size=4))))
    assert ages(scenario, asked) == {t: naive_ages(scenario, t) for t in asked}


# ------------------------------------------------------------------------- the recency agent


def test_an_undo_whose_target_is_before_the_window_does_nothing() -> None:
    s = make(set_turn("log_level", "debug"), DISTRACTOR, DISTRACTOR, UNDO_EARLIEST, REDO)
    spec = dict(s.initial)
    assert window_spec(s, 4, 2) == spec  # undo of nothing, then nothing
    assert window_spec(s, 5, 1) == spec  # a redo with nothing undone in its window
    assert window_spec(s, 5, 5)["log_level"] == "debug"  # the whole chain: the oracle's


def test_the_window_plays_the_oracle_s_rules_inside_it() -> None:
    s = make(set_turn("log_level", "debug"), set_turn("retries", "3"),
             set_turn("input_format", "tsv"), UNDO_EARLIEST, UNDO_LAST, REDO)
    o = oracle.replay(s)
    assert window_spec(s, 6, 6) == o[6]
    w = window_spec(s, 6, 4)  # turns 3-6: tsv, undo earliest (tsv), undo last (none), redo
    assert (w["input_format"], w["delimiter"], w["log_level"]) == ("tsv", "tab", "info")


@settings(CI, max_examples=examples(400))
@given(gen.valid_scenarios(max_turns=12), st.data())
def test_the_window_agrees_with_the_naive_twin(scenario: oracle.Scenario,
                                               data: st.DataObject) -> None:
    n = len(scenario.turns)
    t = data.draw(st.integers(1, n))
    k = data.draw(st.integers(1, n + 2))
    assert window_spec(scenario, t, k) == naive_window(scenario, t, k)
    if k >= t:  # a window that reaches the first message is the oracle
        assert window_spec(scenario, t, k) == oracle.replay(scenario)[t]


# ------------------------------------------------------------------------- the guard


def _row(sid: str, t: int, chain_ages: tuple[int, ...], half_match: bool = False,
         tenth_match: bool = False) -> AskDepth:
    return AskDepth(sid, t, chain_ages, half_match, tenth_match, missing_band(t, chain_ages))


def test_the_guard_names_chain_ask_point_and_band() -> None:
    v = violation([_row("a", 40, (25, 12)), _row("b", 40, (25,))])
    assert v is not None and (v.scenario, v.turn) == ("b", 40)
    assert ("no change that shows there was made 10 to 19 turns earlier (age band [10, 20))"
            in str(v))
    assert str(v).startswith("scenario b, ask point 40: ")


def test_the_guard_allows_a_tenth_of_chains_to_the_half_window_and_none_to_the_tenth() -> None:
    deep = (25, 12)
    ten = [_row(f"c{i}", 40, deep, half_match=i == 0) for i in range(10)]
    assert violation(ten) is None
    two = [_row(f"c{i}", 40, deep, half_match=i < 2) for i in range(10)]
    v = violation(two)
    assert v is not None and "window:k=20" in str(v) and "2 of 10 chains" in str(v)
    v = violation([_row(f"c{i}", 40, deep, tenth_match=i == 3) for i in range(10)])
    assert v is not None and v.scenario == "c3" and "window:k=4" in str(v)


def test_a_shallow_chain_breaks_the_guard_and_its_summary_says_so() -> None:
    # 40 turns that only ever set, then undo, the same two settings: nothing old shows
    turns: list[dict[str, Any]] = []
    for _ in range(20):
        turns += [set_turn("log_level", "debug"), UNDO_LAST]
    s = make(*turns)
    rows = list(chain_depth(s, oracle.replay(s), [40]))
    assert rows[0].ages == () and rows[0].half_match and rows[0].tenth_match
    v = violation(rows)
    assert v is not None and v.turn == 40 and "[20, 40)" in str(v)
    (summary,) = summarise(rows)
    assert (summary.turn, summary.chains, summary.bands_covered, summary.half_matches,
            summary.tenth_matches, summary.oldest) == (40, 1, 0, 1, 1, 0)
