"""Layouts, repeats and modes: identical content in another order, seeds per repeat, resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from fakeserver import FakeServer

from butterfly.core.prompts import HEDGE, messages
from butterfly.core.vocab import LAYOUTS, MODES
from butterfly.suite.load import load_suite

SCENARIOS = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")


def _parts(text: str) -> list[str]:
    return text.split("\n\n")


@pytest.mark.parametrize("mode", MODES)
def test_layouts_differ_only_in_order_and_the_hedge(mode: str) -> None:
    for s in SCENARIOS:
        answers = ["{}"] * len(s.turns)
        for t in range(1, len(s.turns) + 1):
            rendered = {lay: messages(s, t, answers[: t - 1], lay, mode) for lay in LAYOUTS}
            e, q, h = (rendered[x] for x in LAYOUTS)
            assert [m["role"] for m in e] == [m["role"] for m in q] == [m["role"] for m in h]
            for me, mq, mh in zip(e, q, h, strict=True):
                if me["role"] != "user":
                    assert me == mq == mh
                    continue
                pe, pq, ph = _parts(me["content"]), _parts(mq["content"]), _parts(mh["content"])
                assert sorted(pe) == sorted(pq) and pe != pq  # same content, other order
                assert ph == [*pe, HEDGE]  # E plus the hedge sentence
            assert e[-1]["content"].endswith("JSON object only.")
            assert q[-1]["content"].split("\n\n")[0].startswith("Reply with") or mode == "restate"


def test_restate_mode_is_stateless_and_lists_every_edit() -> None:
    s = next(x for x in SCENARIOS if len(x.turns) >= 4)
    for t in range(1, len(s.turns) + 1):
        msgs = messages(s, t, [], "E", "restate")
        assert [m["role"] for m in msgs] == ["system", "user"]
        body = msgs[1]["content"]
        for i in range(1, t + 1):
            assert f"{i}. {s.turns[i - 1].text}" in body
        assert f"{t + 1}. " not in body


def _echo_spec(body: dict[str, Any]) -> str:
    return json.dumps(SCENARIOS[0].initial)


def test_repeats_use_seed_plus_r_and_layouts_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    n_turns = sum(len(s.turns) for s in SCENARIOS[:2])
    with FakeServer(_echo_spec) as srv:
        base = ["run", "--model", "openai/fake", "--api-base", srv.api_base, "--out", str(out),
                "--limit", "2", "--no-cache", "--seed", "5", "--repeats", "2"]
        r = run_cli(*base, "--layouts", "E")
        assert r.returncode == 0, r.stderr
        assert srv.count == 2 * n_turns
        assert sorted({b["seed"] for b in srv.requests}) == [5, 6]
        assert all("meta" not in b for b in srv.requests)
        r = run_cli(*base, "--layouts", "E,Q,H")
        assert r.returncode == 0, r.stderr
        assert srv.count == 2 * n_turns * 3  # only the new layouts were asked
        hedged = [b for b in srv.requests if HEDGE in b["messages"][-1]["content"]]
        assert len(hedged) == 2 * n_turns
    score = json.loads(run_cli("score", str(out), "--json").stdout)
    assert set(score["by_layout"]) == {"E", "Q", "H"}
    assert score["n_scenarios"] == 2 and score["n_conversations"] == 12
    for lay in LAYOUTS:
        assert score["by_layout"][lay]["n_conversations"] == 4
    recs = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    assert {(x["layout"], x["repeat"]) for x in recs} == {(a, b) for a in LAYOUTS for b in (0, 1)}


def test_unsure_under_h_is_an_abstention(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeServer(lambda body: "UNSURE") as srv:
        r = run_cli("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                    str(out), "--limit", "1", "--no-cache", "--layouts", "H")
        assert r.returncode == 0, r.stderr
    score = json.loads(run_cli("score", str(out), "--json").stdout)
    assert score["abstention"] == 1.0 and score["by_layout"]["H"]["abstention"] == 1.0
    rec = json.loads((out / "calls.jsonl").read_text().splitlines()[0])
    assert rec["abstention"] == "unsure" and rec["raw"] == "UNSURE"


def test_bad_layouts_are_a_clear_error(tmp_path: Path) -> None:
    r = run_cli("run", "--model", "script/oracle", "--layouts", "E,X", "--out", str(tmp_path))
    assert r.returncode == 1 and "--layouts" in r.stderr and "Traceback" not in r.stderr


def test_mode_is_answer_changing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_cli("run", "--model", "script/oracle", "--out", str(out), "--limit", "1",
                   "--no-cache").returncode == 0
    r = run_cli("run", "--model", "script/oracle", "--out", str(out), "--limit", "1",
                "--mode", "restate")
    assert r.returncode == 1 and "answer-changing" in r.stderr
