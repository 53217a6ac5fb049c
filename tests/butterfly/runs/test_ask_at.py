"""Asking at chosen turns (``run --ask-at``, contract v3 section 4): the flag and its refusals,
the suite's default ask points, one stateless call per ask (k asks, k calls a chain), and resume,
the answer cache, shards and repair on a run with unasked turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import rewrite_calls, rewrite_manifest, run_inproc
from fakeserver import FakeServer

import butterfly
from butterfly.api.running import options, run_params
from butterfly.core.asking import asked_turns
from butterfly.core.prompts import restate_message
from butterfly.errors import UserError
from butterfly.runs.merge import merge
from butterfly.runs.records import RunParams
from butterfly.runs.repair import repair
from butterfly.runs.run_flags import parse_ask_at
from butterfly.suite.load import ask_at_of, load_suite, resolve_suite
from oracle import replay

LONG = load_suite(resolve_suite("butterfly-long"))
FIRST_24 = LONG[:24]  # 12 chains of 5 turns, 12 of 10
RUN: dict[str, Any] = {"model": "script/oracle", "suite": "butterfly-long", "mode": "restate",
                       "limit": 24, "cache": None}


def _calls(out: Path) -> list[dict[str, Any]]:
    lines = (out / "calls.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines]


def _asked(out: Path) -> list[tuple[str, int]]:
    return sorted((c["scenario"], c["turn"]) for c in _calls(out))


def test_asked_turns_keep_the_points_within_the_chain_and_always_its_last_turn() -> None:
    assert asked_turns(7, (5, 10)) == (5, 7)
    assert asked_turns(5, (5, 10)) == (5,)
    assert asked_turns(80, (5, 10, 20, 40, 80)) == (5, 10, 20, 40, 80)
    assert asked_turns(3, ()) == (3,)
    assert list(asked_turns(4, None)) == [1, 2, 3, 4]


@pytest.mark.parametrize(("text", "turns"), [
    ("5,10,20", (5, 10, 20)), ("20, 5,5", (5, 20)), ("last", ()), ("all", None), (None, None),
    ([40, 10], (10, 40))])
def test_ask_at_parses(text: Any, turns: tuple[int, ...] | None) -> None:
    assert parse_ask_at(text) == turns


@pytest.mark.parametrize("text", ["0", "5,x", "", "-3", "last,5"])
def test_bad_ask_points_are_one_line(text: str) -> None:
    with pytest.raises(UserError, match="--ask-at takes turns from 1"):
        parse_ask_at(text)


def test_only_restate_mode_asks_at_chosen_turns() -> None:
    with pytest.raises(UserError, match="--ask-at is for --mode restate"):
        run_params(options(suite="butterfly-long", ask_at="5,10"))
    with pytest.raises(UserError, match=r"code track .*--ask-at"):
        run_params(options(suite="butterfly-code", ask_at="last"))
    with pytest.raises(ValueError, match="ask_at is only for mode 'restate'"):
        RunParams(ask_at=(5,))
    r = run_inproc("run", "--model", "script/oracle", "--suite", "butterfly-long", "--ask-at",
                   "5", "--out", "/nonexistent/never-made")
    assert r.returncode != 0 and "--ask-at is for --mode restate" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["run", "dry-run", "sequential"])
def test_ask_points_beyond_every_chain_are_refused_in_one_line(tmp_path: Path,
                                                                command: str) -> None:
    """Issue 34: ``--ask-at 999999`` was taken where no chain reaches it (every ask point beyond
    a chain is ignored for that chain, so it asked nothing). An ask point beyond every chain
    the run plays is refused in one line, before anything is created; one within some chains
    is still taken, as are points beyond every chain beside one that is not (FIRST_24: chains
    of 5 and 10 turns)."""
    out = tmp_path / "run"
    argv = {"run": ["run", "--model", "script/oracle", "--out", str(out)],
            "dry-run": ["run", "--model", "script/oracle", "--out", str(out), "--dry-run"],
            "sequential": ["sequential", "--model-a", "script/oracle", "--model-b",
                           "script/noop", "--out-a", str(out), "--out-b", str(tmp_path / "b"),
                           "--cap", "2"]}[command]
    common = ["--suite", "butterfly-long", "--mode", "restate", "--limit", "24", "--no-cache"]
    for points in ("999999", "11,999999"):
        r = run_inproc(*argv, *common, "--ask-at", points)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"--ask-at {points.replace(',', ', ')}: " in r.stderr
        assert "the longest has 10 turns" in r.stderr
        assert not out.exists()
    if command == "run":
        r = run_inproc(*argv, *common, "--ask-at", "5,10,20,40,80")
        assert r.returncode == 0, r.stderr


def test_the_suites_default_ask_points_apply_in_restate_mode_only() -> None:
    assert ask_at_of("butterfly-long") == [5, 10, 20, 40, 80]
    assert ask_at_of("butterfly-40") is None
    assert run_params(options(suite="butterfly-long", mode="restate")).ask_at == (
        5, 10, 20, 40, 80)
    assert run_params(options(suite="butterfly-long", mode="restate", ask_at="all")).ask_at is None
    assert run_params(options(suite="butterfly-long", mode="restate", ask_at="last")).ask_at == ()
    assert run_params(options(suite="butterfly-long")).ask_at is None  # chat: every turn
    assert run_params(options(suite="butterfly-40", mode="restate")).ask_at is None


def test_k_asks_are_k_stateless_calls_holding_every_edit_so_far(tmp_path: Path) -> None:
    run = butterfly.run(**RUN, out=tmp_path / "r")
    assert run.manifest.status == "complete" and run.params.ask_at == (5, 10, 20, 40, 80)
    expected = sorted((s.id, t) for s in FIRST_24 for t in asked_turns(len(s.turns),
                                                                       run.params.ask_at))
    assert _asked(tmp_path / "r") == expected and len(expected) == 12 * 1 + 12 * 2
    ten = next(c for c in _calls(tmp_path / "r") if c["turn"] == 10)
    s = next(x for x in LONG if x.id == ten["scenario"])
    roles = [m["role"] for m in ten["messages_added"]]
    user = ten["messages_added"][-1]["content"]
    assert roles == ["system", "user"]  # stateless: no earlier answer in it
    assert all(f"{t}. {s.turns[t - 1].text}" in user for t in range(1, 11))
    last = butterfly.run(**RUN, ask_at="last", out=tmp_path / "l")
    assert last.manifest.n_calls == 24 and {t for _, t in _asked(tmp_path / "l")} == {5, 10}


def test_a_resume_keeps_the_ask_points_and_calls_only_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "r"
    butterfly.run(**RUN, out=out)
    lines = (out / "calls.jsonl").read_text().splitlines(keepends=True)
    rewrite_calls(out, lines[:-5])  # five asks lost (killed): the resume asks those again
    rewrite_manifest(out, status="interrupted", n_calls=len(lines) - 5)
    again = butterfly.run(**RUN, out=out)
    assert again.manifest.status == "complete" and again.manifest.n_calls == len(lines)
    assert _asked(out) == sorted((c["scenario"], c["turn"]) for c in map(json.loads, lines))
    for other in ("all", "5", "last"):
        with pytest.raises(UserError, match="a resume keeps the run's ask points"):
            butterfly.run(**RUN, ask_at=other, out=out)


def _restate_oracle(body: dict[str, Any]) -> str:
    """A perfect model of FIRST_24 in restate mode, found from the one user message."""
    return ANSWERS[body["messages"][-1]["content"]]


ANSWERS = {restate_message(s, t): json.dumps(replay(s)[t])
           for s in FIRST_24 for t in range(1, len(s.turns) + 1)}


def test_the_answer_cache_serves_asks_a_whole_restate_run_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ask sends exactly what the same turn of a restate run sends: the cache holds it, and
    a server is asked once per ask (k asks, k requests a chain)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    cache = str(tmp_path / "cache.sqlite")
    with FakeServer(_restate_oracle) as srv:
        over = {**RUN, "model": "openai/fake", "api_base": srv.api_base}
        asked = butterfly.run(**over, out=tmp_path / "asked")
        assert srv.count == 36 and asked.manifest.status == "complete"
        butterfly.run(**{**over, "cache": cache}, ask_at="all", out=tmp_path / "whole")
        sent = srv.count  # every turn (equal prompts of two chains are sent once)
        assert 36 + 12 * 5 < sent <= 36 + 12 * 5 + 12 * 10
        again = butterfly.run(**{**over, "cache": cache}, out=tmp_path / "cached")
        assert srv.count == sent  # every ask served from the cache
    assert all(rec.cached for rec in again.records.values()) and len(again.records) == 36
    assert butterfly.score_run(again).final_match == 1.0


def test_shards_of_an_asked_run_merge_into_the_whole_run(tmp_path: Path) -> None:
    over = {**RUN, "model": "script/drift:p=0.1", "limit": 36}
    whole = butterfly.score_run(butterfly.run(**over, out=tmp_path / "w")).to_json()
    parts = [tmp_path / f"s{i}" for i in (1, 2)]
    for i, out in enumerate(parts, 1):
        butterfly.run(**over, shard=f"{i}/2", out=out)
    counts = [len(_calls(p)) for p in parts]
    assert sum(counts) == 12 * (1 + 2 + 3) and abs(counts[0] - counts[1]) <= 3  # by asks
    merge(parts, tmp_path / "m")
    merged = butterfly.score_run(tmp_path / "m").to_json()
    for k in ("final_match", "turn_match", "horizon", "by_op", "n_answers", "ask_at"):
        assert merged[k] == whole[k], k


def test_repair_drops_a_call_at_a_turn_the_run_does_not_ask(tmp_path: Path) -> None:
    out = tmp_path / "r"
    butterfly.run(**RUN, out=out)
    lines = (out / "calls.jsonl").read_text().splitlines(keepends=True)
    stray = json.loads(lines[0])
    stray["turn"] = 3  # not an ask point of a 5-turn chain asked at 5, 10, ...
    rewrite_calls(out, [*lines, json.dumps(stray) + "\n"])
    result = repair(out)
    assert len(result.dropped) == 1 and "turn 3" in result.dropped[0]
    assert butterfly.run(**RUN, out=out).manifest.status == "complete"


def test_an_ask_over_the_context_window_is_an_abstention_not_a_provider_fault(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract v3, section 4: the horizon then shows where the window ends."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ten = {restate_message(s, 10) for s in FIRST_24 if len(s.turns) == 10}

    def fault(_i: int, body: dict[str, Any]) -> str | None:
        return "context" if body["messages"][-1]["content"] in ten else None

    with FakeServer(_restate_oracle, faults=fault) as srv:
        run = butterfly.run(**{**RUN, "model": "openai/fake"}, api_base=srv.api_base,
                            retries=0, out=tmp_path / "r")
    assert run.manifest.status == "complete"
    over = [rec for rec in run.records.values() if rec.abstention == "context"]
    assert len(over) == 12 and {rec.turn for rec in over} == {10}
    score = butterfly.score_run(run)
    assert score.abstention_by_reason == {"context": 12} and score.incomplete == 0
    assert score.horizon is not None and score.horizon.by_length["10"].final_match == 0.0
    # read back from disk (each record checked: an ask over the window has no answer to
    # parse) and read again in another parse mode, it is the same abstention
    read = butterfly.load_run(tmp_path / "r")
    assert butterfly.score_run(read).model_dump() == score.model_dump()
    assert butterfly.score_run(read, "lenient").abstention_by_reason == {"context": 12}


def test_each_sample_of_a_self_consistency_ask_over_the_window_is_its_own_abstention(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sample of an ask over the window is recorded as itself (sample k, not sample 0
    three times: a resume would call the others again and the integrity check refuse the run)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ten = {restate_message(s, 10) for s in FIRST_24 if len(s.turns) == 10}

    def fault(_i: int, body: dict[str, Any]) -> str | None:
        return "context" if body["messages"][-1]["content"] in ten else None

    with FakeServer(_restate_oracle, faults=fault) as srv:
        run = butterfly.run(**{**RUN, "model": "openai/fake", "limit": 12},
                            strategy="self-consistency", samples=3, temperature=0.7,
                            api_base=srv.api_base,
                            retries=0, out=tmp_path / "r")
    assert run.manifest.status == "complete"
    over = sorted((rec.scenario, rec.sample) for rec in run.records.values()
                  if rec.abstention == "context")
    assert over == sorted((s.id, k) for s in FIRST_24[:12] if len(s.turns) == 10
                          for k in range(3))
    read = butterfly.load_run(tmp_path / "r")
    assert butterfly.score_run(read).model_dump() == butterfly.score_run(run).model_dump()
