"""The horizon in words (butterfly/core/horizon_text.py), the one text ``butterfly score``, the
report and the Kaggle notebook print: never a crossing outside the tested lengths as a number,
open ends named by the tested length they pass, never two equal ends."""

from __future__ import annotations

import math
from typing import Any

import pytest

from butterfly.core.horizon_metric import Conversation, horizon
from butterfly.core.horizon_text import horizon_line, horizon_words, interval_text, value_text
from butterfly.core.scores import HorizonResult


def _result(convs: list[Conversation]) -> HorizonResult:
    return HorizonResult.model_validate(horizon(convs, resamples=200).to_json())


def _with(**fields: Any) -> HorizonResult:
    """A horizon over lengths 5 and 80 with the given fields."""
    base: dict[str, Any] = {
        "turns": None, "ci": [None, None], "censored": None, "bound": None, "note": None,
        "by_length": {"5": {"n": 10, "final_match": 0.9}, "80": {"n": 10, "final_match": 0.1}},
        "fit": None, "survival": [], "n_conversations": 20, "n_scenarios": 20,
        "bootstrap": {"resamples": 0, "drawn": 0, "above": 0, "below": 0, "seed": 0}}
    return HorizonResult.model_validate(base | fields)


def _passed(n: int, ok: bool, i: int) -> Conversation:
    return Conversation(f"s{n}-{i}", n, ok)


def test_the_seen_bugs_read_as_censored_bounds() -> None:
    """"52.0 turns (95% CI - to 52.0)", "at or below 50% from the first turn" (all matched at
    8 to 11 turns, or at two scenarios) and "2.3 turns (95% CI 2.3 to 2.3)"."""
    seen = {
        "above 40 turns (no conversation failed)":
            [_passed(n, True, i) for n in (20, 40) for i in range(12)],
        "above 11 turns (no conversation failed)":
            [_passed(n, True, i) for n in range(8, 12) for i in range(3)],
        "above 8 turns (no conversation failed)": [_passed(3, True, 0), _passed(8, True, 0)],
        "below 2 turns (every conversation failed)": [_passed(2, False, 0),
                                                      _passed(3, False, 0)],
    }
    for words, convs in seen.items():
        assert horizon_words(_result(convs)) == words


def test_one_length_with_mixed_outcomes_is_not_enough_data() -> None:
    h = _result([_passed(10, i % 2 == 0, i) for i in range(6)])
    assert horizon_words(h) == "not enough data (outcomes mixed at 10 turns only)"
    assert horizon_line(h) == ("horizon: not enough data (outcomes mixed at 10 turns only); "
                               "final match by chain length: 10: 50.0% (n=6)")


@pytest.mark.parametrize(("fields", "words"), [
    ({"turns": 12.37, "ci": [9.83, 15.11]}, "12.4 turns (95% CI 9.8 to 15.1)"),
    ({"turns": 12.37, "ci": [None, 15.11]}, "12.4 turns (95% CI below 5 to 15.1)"),
    ({"turns": 12.37, "ci": [9.83, None]}, "12.4 turns (95% CI 9.8 to above 80)"),
    ({"turns": 12.37, "ci": [None, None]}, "12.4 turns (95% CI below 5 to above 80)"),
    ({"turns": 12.3, "ci": [12.31, 12.34]}, "12.3 turns (95% CI 12.31 to 12.34)"),
    ({"turns": 12.3, "ci": [12.301, 12.304]}, "12.3 turns (95% CI 12.301 to 12.304)"),
    ({"censored": "above", "bound": 80, "ci": [80, None], "note": "why"},
     "above 80 turns (why)"),
    ({"censored": "above", "bound": 80, "ci": [31.5, None], "note": "why"},
     "above 80 turns (why; 95% CI 31.5 to above 80)"),
    ({"censored": "below", "bound": 5, "ci": [None, 5], "note": "why"}, "below 5 turns (why)"),
    ({"censored": "below", "bound": 5, "ci": [None, None], "note": "why"},
     "below 5 turns (why; 95% CI below 5 to above 80)"),
])
def test_the_words_of_each_case(fields: dict[str, Any], words: str) -> None:
    h = _with(**fields)
    assert horizon_words(h) == words
    assert words.startswith(value_text(h))
    text = interval_text(h)
    assert text is None or text in words


def test_a_censored_horizon_prints_no_crossing() -> None:
    """The fit crosses 50% beyond 40 turns: the words name the bound, not the crossing."""
    convs = [_passed(n, i < k, i) for n, k in ((5, 58), (40, 48)) for i in range(60)]
    h = _result(convs)
    assert h.censored == "above" and h.fit is not None
    beyond = math.exp(-h.fit.intercept / h.fit.slope)
    assert beyond > 40
    words = horizon_words(h)
    assert words.startswith("above 40 turns (the fitted final match is still above 50% at 40")
    assert f"{beyond:.1f}" not in words and f"{beyond:.0f}" not in words
