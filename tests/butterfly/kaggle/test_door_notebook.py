"""The notebook executed headless (kaggle-benchmarks' own OpenAI actor against the loopback fake
server) beside ``butterfly run``: a prompt other than the default with an answer over the
response-size cap (few-shot examples and the amended answer in kaggle-benchmarks' chat), asks
over the context window recorded as abstentions, and a refusal in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_inproc
from fakeserver import FakeServer
from notebook_kernel import SharedKernel
from test_door import keys, spec_answer
from test_notebook import ANSWER_KEYS, _need_kbench, _notebook_env, execute

import butterfly
from butterfly.kaggle.settings import REFUSALS, settings_of
from butterfly.suite.load import load_suite
from oracle import Scenario, replay

FORTY = {s.id: s for s in load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")}
FEW = ("gen-drop-01", "gen-drop-03", "hw-indirect-same-format")
LONG = {s.id: s for s in load_suite(ROOT / "scenarios" / "butterfly-long.jsonl")}
LONG_IDS = ("long-005-01", "long-010-01", "long-020-01")


def _shown(nb: Any) -> str:
    return "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))


def _cli(tmp_path: Path, api_base: str, scenarios: list[Scenario], *flags: str
         ) -> dict[str, Any]:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(s.to_json() + "\n" for s in scenarios), encoding="utf-8")
    out = tmp_path / "cli"
    r = run_inproc("run", "--model", "openai/fake", "--api-base", api_base, "--suite",
                   str(suite), "--max-tokens", "300", "--no-cache", "--retries", "0", "--out",
                   str(out), *flags)
    assert r.returncode == 0, r.stderr
    s = run_inproc("score", str(out), "--json")
    assert s.returncode == 0, s.stderr
    return json.loads(s.stdout)  # type: ignore[no-any-return]


def _same_verdicts(score: dict[str, Any], verdicts: dict[str, Any]) -> None:
    assert {c["id"]: (c["final_match"], c["first_divergent_turn"], c["wobble"],
                      c["abstentions"]) for c in score["scenarios"]} == {
        v["id"]: (v["final_match"], v["first_divergent_turn"], v["wobble"], v["abstentions"])
        for v in verdicts["scenarios"]}
    assert verdicts["final_match"] == score["final_match"]
    assert verdicts["effective_final_match"] == score["effective_final_match"]


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
def test_the_notebook_plays_another_prompt_and_cuts_an_answer_as_the_cli(
        tmp_path: Path, notebook_kernel: SharedKernel) -> None:
    """Few-shot (its example answers are the model's messages in the chat), layout Q, protocol
    json-first, a cap of 2,000 characters and one longer answer: the same request bodies turn
    by turn as ``butterfly run``, the next turn's history holding the cut answer."""
    _need_kbench()
    scenarios = [FORTY[i] for i in FEW]
    given = {"strategy": "few-shot", "layout": "Q", "protocol": "json-first",
             "max_answer_chars": "2000"}
    settings = settings_of("spec", **given)
    by_last = keys(scenarios, settings)

    def respond(body: dict[str, Any]) -> str:
        sid, t = by_last[body["messages"][-1]["content"]]
        text = spec_answer("json-first", replay(FORTY[sid])[t])
        return text + " " + "x" * 3000 if (sid, t) == ("gen-drop-03", 1) else text

    cwd = tmp_path / "working"
    cwd.mkdir()
    env = {**_notebook_env("", "fake", FEW, 300),
           **{f"BUTTERFLY_{k.upper()}": v for k, v in given.items()}}
    with FakeServer(respond) as srv:
        env["BUTTERFLY_OPENAI_BASE_URL"] = srv.api_base
        nb, _ = execute(notebook_kernel, cwd, env)
        mine = list(srv.requests)
    with FakeServer(respond) as srv:
        score = _cli(tmp_path, srv.api_base, scenarios, "--strategy", "few-shot", "--layouts",
                     "Q", "--protocol", "json-first", "--max-answer-chars", "2000")
        theirs = list(srv.requests)
    cli_by_turn = {by_last[b["messages"][-1]["content"]]: b for b in theirs}
    assert len(mine) == len(theirs) == len(cli_by_turn)
    for body in mine:
        cli = cli_by_turn[by_last[body["messages"][-1]["content"]]]
        assert set(body) == set(cli) == set(ANSWER_KEYS)
        for field in ANSWER_KEYS:
            assert body[field] == cli[field], field
    cut = cli_by_turn[("gen-drop-03", 2)]["messages"][-2]
    assert cut["role"] == "assistant" and len(cut["content"]) == 2000
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    assert (verdicts["strategy"], verdicts["layout"], verdicts["protocol"],
            verdicts["max_answer_chars"]) == ("few-shot", "Q", "json-first", 2000)
    _same_verdicts(score, verdicts)
    assert score["abstention_by_reason"] == {"too_large": 1}
    assert "abstentions by reason: too_large 1" in _shown(nb)
    assert "strategy few-shot, protocol json-first, parse structured, layout Q" in _shown(nb)


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
def test_the_notebook_records_an_ask_over_the_context_window_as_the_cli(
        tmp_path: Path, notebook_kernel: SharedKernel) -> None:
    """Restate mode on butterfly-long, asked at its default points: kaggle-benchmarks' actor
    raises the SDK's 400 for each ask at turn 10 (over the context window); the notebook records
    it as an abstention (reason ``context``) where it used to fail, as the CLI does. (The CLI's
    run is scored as it was played, not read back: reading a spec-track run with a ``context``
    abstention back from disk fails its integrity check, ``runs/integrity.py``, which exempts
    such records on the code track only.)"""
    _need_kbench()
    chains = [LONG[i] for i in LONG_IDS]
    settings = settings_of("spec", mode="restate", default_ask_at=(5, 10, 20, 40, 80))
    by_last = keys(chains, settings)

    def respond(body: dict[str, Any]) -> str:
        sid, t = by_last[body["messages"][-1]["content"]]
        return json.dumps(replay(LONG[sid])[t])

    def fault(_i: int, body: dict[str, Any]) -> str | None:
        return "context" if by_last[body["messages"][-1]["content"]][1] == 10 else None

    cwd = tmp_path / "working"
    cwd.mkdir()
    env = {**_notebook_env("", "fake", LONG_IDS, 300), "BUTTERFLY_SUITE": "butterfly-long",
           "BUTTERFLY_MODE": "restate"}
    with FakeServer(respond, faults=fault) as srv:
        env["BUTTERFLY_OPENAI_BASE_URL"] = srv.api_base
        nb, _ = execute(notebook_kernel, cwd, env)
        assert len(srv.requests) == 6
    suite = tmp_path / "chains.jsonl"
    suite.write_text("".join(s.to_json() + "\n" for s in chains), encoding="utf-8")
    with FakeServer(respond, faults=fault) as srv:  # scored as it was played: see below
        run = butterfly.run(model="openai/fake", api_base=srv.api_base, suite=str(suite),
                            mode="restate", ask_at="5,10,20,40,80", protocol="json",
                            max_tokens=300, retries=0, out=tmp_path / "cli", cache=None)
    score = butterfly.score_run(run).model_dump()
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    _same_verdicts(score, verdicts)
    assert score["abstention_by_reason"] == {"context": 2}
    over = [(v["id"], a["turn"]) for v in verdicts["scenarios"] for a in v["answers"]
            if a["abstention"] == "context"]
    assert over == [("long-010-01", 10), ("long-020-01", 10)]
    assert "abstentions by reason: context 2" in _shown(nb)
    assert verdicts["final_matches"] == 2 and verdicts["n_scenarios"] == 3


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
def test_the_notebook_refuses_what_it_cannot_play_in_one_line(
        tmp_path: Path, notebook_kernel: SharedKernel) -> None:
    _need_kbench()
    from nbclient.exceptions import CellExecutionError

    cwd = tmp_path / "working"
    cwd.mkdir()
    env = {**_notebook_env("http://127.0.0.1:9/v1", "fake", FEW[:1], 300),
           "BUTTERFLY_PROTOCOL": "schema"}
    with pytest.raises(CellExecutionError) as info:
        execute(notebook_kernel, cwd, env)
    assert (info.value.ename, info.value.evalue) == ("Refused", REFUSALS["schema"])
    assert not (cwd / "butterflybench_verdicts.json").exists()
