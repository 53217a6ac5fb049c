"""The efficiency figures in words (core/efficiency_text.py): each figure with its denominator,
"none" with why where there is nothing to divide, incomplete conversations apart."""

from __future__ import annotations

from butterfly.core.efficiency import Spent, efficiency
from butterfly.core.efficiency_text import (
    efficiency_lines,
    latency_line,
    per_correct_cell,
    per_correct_line,
    reasoning_line,
)
from butterfly.core.turns import ConversationKey

A, B, C = (ConversationKey(s, "E", 0) for s in ("a", "b", "c"))


def test_a_priced_run_says_its_cost_per_correct_conversation() -> None:
    calls = [Spent(A, 1, 0.002, 100, 10, 0.5), Spent(A, 2, 0.002, 100, 30, 1.5),
             Spent(B, 1, 0.004, 200, None, None)]
    e = efficiency(calls, {A: ("x", True), B: ("x", False)}, [C])
    assert per_correct_line(e) == ("cost per correct conversation: $0.008 "
                                   "($0.008 / 1 of 2 complete conversations matched)")
    assert per_correct_cell(e) == "$0.008"
    assert reasoning_line(e).startswith("reasoning tokens per edit: 13.3 over every ask")
    assert "turn 1 10, turn 2 15" in reasoning_line(e)
    assert latency_line(e) == ("latency per call: median 1 s, 95th percentile 1.5 s (2 calls "
                               "sent; answers from the cache apart)")
    assert efficiency_lines(e)[-1] == ("incomplete conversations, in no figure above: 1, "
                                       "their answered calls cost $0")


def test_nothing_to_divide_reads_none_with_why_never_zero() -> None:
    unpriced = efficiency([Spent(A, 1, None, 50, None, None)], {A: ("x", True)}, [])
    assert per_correct_line(unpriced) == (
        "cost per correct conversation: none (a call has no price); tokens per correct "
        "conversation: 50 (50 prompt + completion tokens / 1 of 1 complete conversations "
        "matched)")
    assert per_correct_cell(unpriced) == "50 tokens"
    assert reasoning_line(unpriced).endswith("none (no call reported reasoning tokens)")
    assert latency_line(unpriced).startswith("latency per call: none")
    failed = efficiency([Spent(A, 1, 0.001, 50, None, 0.1)], {A: ("x", False)}, [])
    assert per_correct_line(failed) == (
        "cost per correct conversation: none (no conversation matched)")
    assert per_correct_cell(failed) == "-"


def test_a_latency_under_a_second_reads_in_milliseconds() -> None:
    e = efficiency([Spent(A, 1, 0.001, 5, None, 0.0004), Spent(A, 2, 0.001, 5, None, 0.25)],
                   {A: ("x", True)}, [])
    assert latency_line(e).startswith("latency per call: median 125 ms, 95th percentile 250 ms")
