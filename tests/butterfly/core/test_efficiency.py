"""Efficiency figures (contract v4, section 9; ``core/efficiency.py``): hand-counted cases, the
honest denominators (none when nothing matched, no cost when a call has no price, incomplete
conversations apart) and laws over random calls."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sweep import examples

from butterfly.core.efficiency import Spent, efficiency, nearest_rank
from butterfly.core.turns import ConversationKey

A, B, C, D = (ConversationKey(s, "json", 0) for s in ("a", "b", "c", "d"))


def call(key: ConversationKey, turn: int, cost: float | None = 0.01, tokens: int | None = 100,
         reasoning: int | None = None, latency: float | None = 1.0) -> Spent:
    return Spent(key, turn, cost, tokens, reasoning, latency)


def test_cost_per_correct_conversation_divides_what_every_complete_one_cost() -> None:
    calls = [call(A, 1), call(A, 2), call(B, 1, 0.03), call(B, 2, 0.01), call(C, 1, 0.5)]
    got = efficiency(calls, {A: ("undo", True), B: ("set", False)}, incomplete=[C])
    assert (got.conversations, got.correct) == (2, 1)
    assert got.cost_usd == pytest.approx(0.06)
    assert got.cost_per_conversation_usd == pytest.approx(0.03)
    assert got.cost_per_correct_usd == pytest.approx(0.06)
    assert (got.tokens, got.tokens_per_conversation, got.tokens_per_correct) == (400, 200, 400)
    assert (got.incomplete, got.incomplete_cost_usd) == (1, pytest.approx(0.5))
    assert got.by_category["undo"].cost_per_correct_usd == pytest.approx(0.02)
    assert got.by_category["set"].cost_per_correct_usd is None  # nothing matched: none
    assert got.by_category["set"].cost_per_conversation_usd == pytest.approx(0.04)


def test_nothing_matched_gives_no_cost_per_correct_and_an_unpriced_call_no_cost() -> None:
    none_right = efficiency([call(A, 1)], {A: ("set", False)}, [])
    assert none_right.cost_per_correct_usd is None and none_right.tokens_per_correct is None
    unpriced = efficiency([call(A, 1), call(A, 2, cost=None)], {A: ("set", True)}, [])
    assert unpriced.cost_usd is None and unpriced.cost_per_correct_usd is None
    assert unpriced.tokens_per_correct == 200  # tokens still count: the unpriced model's figure
    silent = efficiency([call(A, 1, tokens=None)], {A: ("set", True)}, [])
    assert silent.tokens is None and silent.tokens_per_correct is None
    empty = efficiency([], {}, [])
    assert empty.cost_usd is None and empty.conversations == 0 and empty.latency_median_s is None


def test_reasoning_per_edit_divides_each_asks_tokens_by_the_edits_it_restates() -> None:
    calls = [call(A, 10, reasoning=200), call(B, 10, reasoning=400), call(A, 20, reasoning=800),
             call(B, 20), call(C, 10, reasoning=9999)]  # C is incomplete: apart
    got = efficiency(calls, {A: ("set", True), B: ("set", True)}, [C])
    assert got.reasoning_per_edit_by_turn == {"10": 30.0, "20": 40.0}  # B's turn 20 reports none
    assert got.reasoning_per_edit == pytest.approx(1400 / 40)
    assert got.reasoning_tokens == 1400
    assert efficiency([call(A, 1)], {A: ("set", True)}, []).reasoning_per_edit is None


def test_latency_is_over_the_calls_sent_median_and_nearest_rank_95th() -> None:
    calls = [call(A, t, latency=float(t)) for t in range(1, 21)] + [call(A, 21, latency=None)]
    got = efficiency(calls, {A: ("set", True)}, [])
    assert got.latency_calls == 20  # the cache's answer sent no call
    assert (got.latency_median_s, got.latency_p95_s) == (10.5, 19.0)
    assert nearest_rank([3.0], 0.95) == 3.0 and nearest_rank([], 0.5) is None


spent = st.builds(call, st.sampled_from([A, B, C, D]), st.integers(1, 30),
                  st.one_of(st.none(), st.floats(0, 1)), st.one_of(st.none(), st.integers(0, 500)),
                  st.one_of(st.none(), st.integers(0, 500)),
                  st.one_of(st.none(), st.floats(0, 60)))


@settings(max_examples=examples(200), deadline=None, derandomize=True, database=None)
@given(st.lists(spent, max_size=40), st.dictionaries(st.sampled_from([A, B, C]),
                                                      st.tuples(st.sampled_from(["x", "y"]),
                                                                st.booleans())))
def test_laws(calls: list[Spent], verdicts: dict[ConversationKey, tuple[str, bool]]) -> None:
    incomplete = [D]
    got = efficiency(calls, verdicts, incomplete)
    complete = [c for c in calls if c.key in verdicts]
    assert got.conversations == len(verdicts)
    if any(c.cost_usd is None for c in complete) or not verdicts:
        assert got.cost_usd is None
    else:
        assert got.cost_usd == pytest.approx(sum(c.cost_usd or 0 for c in complete), abs=1e-7)
    if got.cost_per_correct_usd is not None:
        assert got.cost_per_correct_usd * got.correct == pytest.approx(got.cost_usd, abs=1e-6)
    assert (got.cost_per_correct_usd is None) or got.correct > 0
    # the categories split the conversations and the correct ones
    assert sum(s.conversations for s in got.by_category.values()) == got.conversations
    assert sum(s.correct for s in got.by_category.values()) == got.correct
    # an incomplete conversation's calls never reach a figure above
    again = efficiency([c for c in calls if c.key != D], verdicts, incomplete)
    assert again.model_dump(exclude={"incomplete_cost_usd"}) == got.model_dump(
        exclude={"incomplete_cost_usd"})
