"""Efficiency end to end (contract v4, section 9; docs/metrics.md, "Efficiency"): a run played
through the loopback fake server, which reports known tokens and reasoning tokens and holds each
answer a known time, priced by the user's price; ``score --json``'s figures are what the
server's usage implies, and ``score``, ``runs``, ``export`` and ``compare`` show them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from fakeserver import FakeServer

from butterfly import api
from butterfly.analysis.listing import list_runs
from butterfly.core.efficiency_text import money, seconds
from butterfly.core.prompts import messages
from butterfly.present.text import compare_text, runs_text
from butterfly.suite.load import load_suite
from oracle import replay

SCENARIOS = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")[:4]
WRONG = frozenset({SCENARIOS[0].id})
"""The scenario the model answers UNSURE throughout: it does not match."""
PROMPT, ANSWER = 100, 20
SHORT, LONG = 0.02, 0.08
"""The server holds even requests SHORT seconds, odd ones LONG."""


def reasoning(turn: int) -> int:
    """The reasoning tokens the server reports for an ask at ``turn``."""
    return 4 * turn + 2


def _table() -> dict[tuple[str, ...], tuple[str, int, str]]:
    """The user messages of each ask -> its scenario, turn and the oracle's answer."""
    table = {}
    for s in SCENARIOS:
        answers = [json.dumps(x) for x in replay(s)[1:]]
        for t in range(1, len(s.turns) + 1):
            users = tuple(m["content"] for m in messages(s, t, answers[: t - 1])
                          if m["role"] == "user")
            table[users] = (s.id, t, answers[t - 1])
    return table


TABLE = _table()


def _ask(body: dict[str, Any]) -> tuple[str, int, str]:
    return TABLE[tuple(m["content"] for m in body["messages"] if m["role"] == "user")]


def respond(body: dict[str, Any]) -> str:
    sid, _, answer = _ask(body)
    return "UNSURE" if sid in WRONG else answer


def usage(_index: int, body: dict[str, Any]) -> dict[str, Any]:
    r = reasoning(_ask(body)[1])
    return {"prompt_tokens": PROMPT, "completion_tokens": ANSWER + r,
            "total_tokens": PROMPT + ANSWER + r,
            "completion_tokens_details": {"reasoning_tokens": r}}


def delay(index: int, _body: dict[str, Any]) -> float:
    return SHORT if index % 2 == 0 else LONG


def _play(out: Path, price: str | None) -> None:
    with FakeServer(respond, usage=usage, delay=delay) as srv:
        api.run(model="openai/selfhosted-unlisted-7b", api_base=srv.api_base, out=out,
                limit=len(SCENARIOS), cache=None, timeout=5, retries=0,
                **({} if price is None else {"price_per_mtok": price}))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    _play(root / "a", "2,8")
    _play(root / "b", "4,16")  # the same calls at twice the price
    _play(root / "c", None)  # unpriced
    return root


def _calls() -> list[int]:
    """The turn of every call a run makes (chat mode: every turn asked)."""
    return [t for s in SCENARIOS for t in range(1, len(s.turns) + 1)]


def test_score_json_holds_what_the_servers_usage_implies(runs: Path) -> None:
    e = api.score_run(runs / "a").efficiency
    assert e is not None
    turns = _calls()
    cost = sum(PROMPT * 2e-6 + (ANSWER + reasoning(t)) * 8e-6 for t in turns)
    tokens = sum(PROMPT + ANSWER + reasoning(t) for t in turns)
    correct = len(SCENARIOS) - len(WRONG)
    assert (e.conversations, e.correct) == (len(SCENARIOS), correct)
    assert e.cost_usd == pytest.approx(cost, abs=1e-8)
    assert e.cost_per_correct_usd == pytest.approx(cost / correct, abs=1e-8)
    assert e.tokens_per_correct == pytest.approx(tokens / correct, abs=1e-3)
    for t in set(turns):  # reasoning(t) on every ask at t, which restates t edits
        assert e.reasoning_per_edit_by_turn[str(t)] == pytest.approx(reasoning(t) / t, abs=1e-3)
    assert e.reasoning_per_edit == pytest.approx(
        sum(reasoning(t) for t in turns) / sum(turns), abs=1e-3)
    assert e.latency_calls == len(turns)
    assert e.latency_median_s is not None and e.latency_p95_s is not None
    assert SHORT <= e.latency_median_s <= e.latency_p95_s
    assert LONG <= e.latency_p95_s < LONG + 2  # the server held it LONG; the rest is overhead
    assert e.incomplete == 0 and e.incomplete_cost_usd is None


def test_an_unpriced_run_has_no_cost_but_its_tokens(runs: Path) -> None:
    e = api.score_run(runs / "c").efficiency
    assert e is not None and e.cost_per_correct_usd is None and e.cost_usd is None
    assert e.tokens_per_correct == api.score_run(runs / "a").efficiency.tokens_per_correct  # type: ignore[union-attr]


def test_runs_export_and_compare_show_them(runs: Path) -> None:
    a = api.score_run(runs / "a").efficiency
    c = api.score_run(runs / "c").efficiency
    assert a is not None and c is not None and a.cost_per_correct_usd is not None
    lines = list_runs(runs)
    listed = runs_text(lines)
    as_json = {Path(str(x.path)).name: x.to_json()["efficiency"] for x in lines}
    assert as_json["a"]["cost_per_correct_usd"] == a.cost_per_correct_usd  # type: ignore[index]
    assert as_json["c"]["cost_per_correct_usd"] is None  # type: ignore[index]
    assert "per correct" in listed and money(a.cost_per_correct_usd) in listed
    assert f"{c.tokens_per_correct:,.1f} tokens" in listed
    rows = api.export([runs / "a"], level="turn")
    assert len(rows) == len(_calls())
    assert all(r["latency_s"] is not None and float(r["latency_s"]) >= SHORT for r in rows)
    conv = api.export([runs / "a"], level="conversation")
    assert all(r["latency_s"] is not None for r in conv)
    ab = api.compare(runs / "a", runs / "b")
    assert ab.cost_ratio is not None and ab.cost_ratio.ratio == pytest.approx(2)
    assert ab.cost_ratio.ci == pytest.approx([2, 2])
    assert "cost B / A: 2x, 95% CI [2, 2]" in compare_text(ab)
    ac = api.compare(runs / "a", runs / "c").cost_ratio
    assert ac is not None and ac.ratio is None and ac.ci is None
    assert "run B has a call with no price" in (ac.note or "")
    assert "cost B / A: none (run B has a call with no price" in compare_text(
        api.compare(runs / "a", runs / "c"))


def test_score_prints_the_figures_under_its_table(runs: Path) -> None:
    from io import StringIO

    from rich.console import Console

    from butterfly.present.display import print_score

    result = api.score_run(runs / "a")
    e = result.efficiency
    assert e is not None and e.cost_per_correct_usd is not None and e.cost_usd is not None
    out = StringIO()
    print_score(result, Console(file=out, width=200))
    text = out.getvalue()
    assert (f"cost per correct conversation: {money(e.cost_per_correct_usd)} "
            f"({money(e.cost_usd)} / 3 of 4 complete conversations matched)") in text
    assert f"reasoning tokens per edit: {e.reasoning_per_edit:,.1f} over every ask" in text
    assert e.latency_median_s is not None
    assert f"latency per call: median {seconds(e.latency_median_s)}, 95th" in text
