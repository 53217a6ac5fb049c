"""The notebook's runner (butterfly/kaggle/runner.py) beside ``butterfly score``: the headline
it prints carries the horizon, computed and worded as the CLI does for the same conversations.
No server and no kaggle-benchmarks: the scripted agents' answers are handed to ``verdict``."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from fakeserver import FakeServer

import butterfly
from butterfly import RunOptions, api
from butterfly.core.agents import agent_specs
from butterfly.core.asking import ASKED_NOTE, asked_line, asked_turns
from butterfly.core.horizon_text import horizon_line
from butterfly.core.prompts import restate_message
from butterfly.kaggle import runner as bb
from butterfly.kaggle import settings as st
from butterfly.runs.run_flags import parse_ask_at
from butterfly.suite.load import load_manifest, load_suite
from oracle import replay

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
    by_id = {s.id: s for s in SCENARIOS}
    lines = bb.headline_text(f"script/{agent}", verdicts, scenarios=by_id).splitlines()
    first, second = lines[0], lines[-1]
    head = bb.headline(bb.figures(verdicts, by_id))  # butterfly score's aggregate
    assert first.startswith(f"script/{agent}: final match {head['final_match']:.1%} "
                            f"({head['final_matches']}/40), 95% interval [")
    assert second == horizon_line(cli) and second.startswith(f"horizon: {words}; ")


# -- restate mode asked at chosen turns, beside `butterfly run --mode restate --ask-at` ---------

LONG = load_suite(ROOT / "scenarios" / "butterfly-long.jsonl")
CHAINS = [next(s for s in LONG if len(s.turns) == n) for n in (5, 10, 20)]
WRONG = {(CHAINS[1].id, 10), (CHAINS[2].id, 10), (CHAINS[2].id, 12)}
"""Asks answered with the initial spec: the 10-turn chain fails at its end, and the 20-turn one
wobbles when asked at 10 or 12 (it matches at 20)."""


def _asker(body: dict[str, Any]) -> str:
    """The oracle's spec for the ask a request holds, except at :data:`WRONG`."""
    user = body["messages"][-1]["content"]
    sid, t = next((s.id, t) for s in CHAINS for t in range(1, len(s.turns) + 1)
                  if restate_message(s, t, "E", "json") == user)
    specs = replay(next(s for s in CHAINS if s.id == sid))
    return json.dumps(specs[0] if (sid, t) in WRONG else specs[t])


def _post(api_base: str, messages: list[dict[str, str]]) -> bb.Answer:
    """One stateless call, as the notebook's fresh chat sends it."""
    body = {"model": "fake", "messages": messages, "temperature": 0, "seed": 0,
            "max_tokens": 300}
    req = urllib.request.Request(f"{api_base}/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        got = json.load(r)
    return bb.Answer(got["choices"][0]["message"]["content"], got["usage"]["completion_tokens"])


@pytest.mark.parametrize("ask", ["5,10,20,40,80", "last", "7,12", "all"])
def test_asked_turns_send_and_score_what_the_cli_does(ask: str, tmp_path: Path) -> None:
    ask_at = st.ask_at_of(ask, "restate", None)
    assert ask_at == parse_ask_at(ask)
    with FakeServer(_asker) as srv:
        asking = st.Settings(mode="restate", ask_at=ask_at)
        answers = [bb.play(s, lambda m: _post(srv.api_base, m), settings=asking)
                   for s in CHAINS]
        mine = [b["messages"] for b in srv.requests]
    suite = tmp_path / "chains.jsonl"
    suite.write_text("".join(s.to_json() + "\n" for s in CHAINS), encoding="utf-8")
    with FakeServer(_asker) as srv:
        run = butterfly.run(model="openai/fake", api_base=srv.api_base, suite=str(suite),
                            mode="restate", ask_at=ask, protocol="json", max_tokens=300,
                            out=tmp_path / "cli", cache=None)
        theirs = [b["messages"] for b in srv.requests]
    asked = [(s, t) for s in CHAINS for t in asked_turns(len(s.turns), ask_at)]
    assert len(mine) == len(asked) and sorted(map(json.dumps, mine)) == sorted(
        map(json.dumps, theirs))  # the same asks, one call each, none for an unasked turn
    assert mine == [bb.messages_for(s, t, [], asking) for s, t in asked]
    verdicts = [bb.verdict(s, a, 300, ask_at) for s, a in zip(CHAINS, answers, strict=True)]
    score = butterfly.score_run(run)
    agg = bb.figures(verdicts, {s.id: s for s in CHAINS})
    for field in ("final_match", "final_matches", "turn_match", "n_answers", "wobbles",
                  "first_divergent_turn", "abstention"):
        assert getattr(agg, field) == getattr(score, field), field
    assert bb.horizon_of(verdicts) == score.horizon
    cli = {c.id: (c.final_match, c.first_divergent_turn, c.wobble, c.abstentions)
           for c in score.scenarios}
    assert cli == {v["id"]: (v["final_match"], v["first_divergent_turn"], v["wobble"],
                             v["abstentions"]) for v in verdicts}
    text = bb.headline_text("fake", verdicts, scenarios={s.id: s for s in CHAINS},
                            ask_at=ask_at)
    assert score.horizon is not None and text.splitlines()[-1] == horizon_line(score.horizon)
    line = next(x for x in text.splitlines() if x.startswith("baselines on the same"))
    assert line == "baselines on the same 3 scenarios: final match " + ", ".join(
        f"{name} {b.final_match:.1%}" for name, b in score.baselines.items())
    assert list(score.baselines) == ["noop", "last-edit"]  # no chain of 40 turns: no window
    if ask_at is not None:
        assert text.splitlines()[0] == asked_line(ask_at) and text.count(ASKED_NOTE) == 3
        assert [v["asked"] for v in verdicts] == [list(asked_turns(len(s.turns), ask_at))
                                                  for s in CHAINS]


def test_restate_settings_read_as_the_cli_reads_them() -> None:
    default = load_manifest(ROOT / "scenarios" / "butterfly-long.jsonl")
    assert default is not None and default.ask_at == [5, 10, 20, 40, 80]
    cli = api.run_params(RunOptions(model="script/oracle", suite="butterfly-long",
                                    mode="restate"))
    assert st.ask_at_of("", "restate", default.ask_at) == cli.ask_at == (5, 10, 20, 40, 80)
    assert st.ask_at_of("", "restate", None) is None and st.ask_at_of("", "chat", [5]) is None
    assert st.mode_of("") == "chat" and st.mode_of(" restate ") == "restate"
    for bad, match in [(("x", "restate"), "takes turns"), (("0", "restate"), "takes turns"),
                       (("5", "chat"), "for BUTTERFLY_MODE=restate")]:
        with pytest.raises(ValueError, match=match):
            st.ask_at_of(*bad, None)
    with pytest.raises(ValueError, match="plays chat or restate"):
        st.mode_of("asked")


def test_the_estimate_cell_picks_the_asked_run() -> None:
    estimate = json.loads((ROOT / "notebooks" / "estimate.json").read_text(encoding="utf-8"))
    ids = [s.id for s in LONG]
    for mode, ask_at, calls in [("chat", None, 1860), ("restate", None, 1860),
                                ("restate", (5, 10, 20, 40, 80), 12 * (1 + 2 + 3 + 4 + 5))]:
        what, rows = st.estimate_for(estimate, "butterfly-long",
                                     st.Settings(mode=mode, ask_at=ask_at))
        assert sum(rows[i]["calls"] for i in ids) == calls, what
    asked_at_7 = st.Settings(mode="restate", ask_at=(7,))
    assert st.estimate_for(estimate, "butterfly-long", asked_at_7)[1] == {}


def _priced(agent: str, cost: float | None) -> list[bb.Verdict]:
    """Every scenario answered by ``agent``, each call reporting 30 prompt and 10 completion
    tokens, ``cost`` and a latency of 0.1 s x its turn."""
    return [bb.verdict(s, [bb.Answer(json.dumps(spec), 10, 30, cost, 0.1 * t)
                           for t, spec in enumerate(agent_specs(agent, s)[1:], start=1)],
                       bb.MAX_TOKENS)
            for s in SCENARIOS[:8]]


def test_the_headline_carries_cost_per_correct_conversation_as_score_computes_it() -> None:
    verdicts = _priced("lifo", 0.002)
    calls = sum(len(v["answers"]) for v in verdicts)
    correct = sum(v["final_match"] for v in verdicts)
    assert 0 < correct < len(verdicts)  # a test that can fail
    e = bb.efficiency_of(verdicts)
    assert e.cost_per_correct_usd == pytest.approx(0.002 * calls / correct)
    assert e.tokens_per_correct == pytest.approx(40 * calls / correct, abs=1e-3)
    assert e.reasoning_per_edit is None  # kaggle-benchmarks reports none
    assert e.latency_calls == calls and e.latency_p95_s is not None
    assert e.latency_median_s is not None and 0.1 <= e.latency_median_s <= e.latency_p95_s
    text = bb.efficiency_text(verdicts)
    assert f"cost per correct conversation: ${0.002 * calls / correct:.4f}" in text
    assert text in bb.headline_text("m", verdicts, scenarios={s.id: s for s in SCENARIOS})


def test_without_a_reported_cost_the_headline_says_so_and_counts_tokens() -> None:
    verdicts = _priced("oracle", None)
    text = bb.efficiency_text(verdicts)
    assert "cost per correct conversation: none (a call has no price)" in text
    assert "kaggle-benchmarks reported no cost" in text
    calls = sum(len(v["answers"]) for v in verdicts)
    e = bb.efficiency_of(verdicts)
    assert e.cost_per_correct_usd is None
    assert e.tokens_per_correct == pytest.approx(40 * calls / len(verdicts), abs=1e-3)
    assert f"({40 * calls:,} prompt + completion tokens / 8 of 8 complete" in text
