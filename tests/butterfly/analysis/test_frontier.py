"""The frontier's pure parts (``analysis/report/frontier.py``, ``svgdraw.log_ticks``): who beats
whom with the margins, the ratio's words only inside its interval, and log ticks. The whole
chart on real runs is ``tests/butterfly/present/test_report_frontier.py``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from butterfly.analysis.compare import RunAnswers, cost_ratio
from butterfly.analysis.report.data import RunEntry
from butterfly.analysis.report.frontier import (
    COST_MARGIN,
    MATCH_MARGIN,
    beats,
    fraction_in,
    pareto,
    scenario_costs,
)
from butterfly.core.efficiency import paired_means
from butterfly.core.scores import ConversationScore
from butterfly.core.stats import ratio_bootstrap
from butterfly.present.svgdraw import log_ticks


def test_a_run_is_beaten_only_when_materially_better_on_one_axis() -> None:
    a = (1.0, 0.80)
    assert beats((0.5, 0.80), a, "final match")  # half the cost, as good
    assert beats((1.0, 0.80 + MATCH_MARGIN), a, "final match")  # as dear, a point better
    assert not beats((1.0 * (1 - COST_MARGIN / 2), 0.80), a, "final match")  # 5%: not material
    assert not beats((1.0, 0.805), a, "final match")  # half a point: not material
    assert not beats((0.5, 0.79), a, "final match")  # cheaper but worse: a trade, not a win
    assert not beats(a, a, "final match")
    assert beats((1.05, 0.82), a, "final match")  # 5% dearer is the same cost; 2 points up
    assert not beats((1.2, 0.9), a, "final match")  # 20% dearer: a trade
    assert beats((1.0, 22.0), (1.0, 20.0), "horizon")  # 10% longer
    assert not beats((1.0, 21.0), (1.0, 20.0), "horizon")


def test_the_frontier_keeps_the_runs_no_other_beats() -> None:
    xy = [(0.1, 0.5), (1.0, 0.9), (2.0, 0.9), (0.5, 0.4), (3.0, 0.95), (1.02, 0.9)]
    # (2.0, 0.9) is beaten by (1.0, 0.9); (0.5, 0.4) by (0.1, 0.5); (1.0, 0.9) and (1.02, 0.9)
    # differ by 2%: neither beats the other
    assert pareto(xy, "final match") == (True, True, False, False, True, True)
    assert pareto([(1.0, 0.5)], "final match") == (True,)


def test_a_fraction_is_named_only_inside_the_interval() -> None:
    assert fraction_in(0.18, 0.22) == 5
    assert fraction_in(0.45, 0.55) == 2
    assert fraction_in(0.21, 0.24) is None  # between a fifth and a quarter: no name
    assert fraction_in(0.04, 0.05) is None  # below a tenth
    assert fraction_in(0.2, 0.34) in (3, 4)


@pytest.mark.parametrize(("lo", "hi", "want"), [
    (0.0008, 0.02, [0.001, 0.002, 0.005, 0.01, 0.02]),
    (150.0, 900.0, [200.0, 500.0]),
    (1.0, 1e6, [1.0, 10.0, 100.0, 1000.0, 1e4, 1e5, 1e6]),
    (3.0, 4.0, [3.0, 4.0]),
])
def test_log_ticks(lo: float, hi: float, want: list[float]) -> None:
    assert log_ticks(lo, hi) == pytest.approx(want)


def _conversation(sid: str, repeat: int, cost: float | None) -> ConversationScore:
    return ConversationScore(id=sid, layout="E", repeat=repeat, category="set", final_match=True,
                             first_divergent_turn=None, change_radius=0, wobble=False,
                             abstentions=0, cost_usd=cost, tokens=None)


def test_the_frontier_pairs_costs_as_compare_does_when_repeats_differ() -> None:
    # One pairing for both (core.efficiency.paired_means): each scenario's mean per complete
    # conversation. Summing instead would weigh run B's three repeats of s2 three times.
    a = {"s1": (0.01, 0.03), "s2": (0.02,)}
    b = {"s1": (0.04,), "s2": (0.06, 0.06, 0.06)}

    def entry(costs: dict[str, tuple[float, ...]]) -> RunEntry:
        rows = [_conversation(s, r, c) for s, cs in costs.items() for r, c in enumerate(cs)]
        return cast(RunEntry, SimpleNamespace(score=SimpleNamespace(scenarios=rows)))

    pairs = paired_means(scenario_costs(entry(a), "cost"), scenario_costs(entry(b), "cost"),
                         ["s1", "s2"])
    assert pairs == pytest.approx([(0.02, 0.04), (0.02, 0.06)])
    got = ratio_bootstrap([(x, y) for x, y in pairs if x is not None and y is not None])
    assert got is not None
    answers = [RunAnswers(n, "m", "sha", "E", tuple(c), {}, {i: (True,) * len(v)
                          for i, v in c.items()}, 0.0, 0, costs=c)
               for n, c in (("a", a), ("b", b))]
    assert cost_ratio(*answers, ["s1", "s2"]).ratio == pytest.approx(got[0])
    unpriced = scenario_costs(entry({"s1": (0.01,), "s2": (0.02,)}), "cost")
    unpriced["s2"].append(None)  # one conversation with no price: the scenario has no mean
    assert paired_means(unpriced, unpriced, ["s2"]) == [(None, None)]
