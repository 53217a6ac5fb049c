"""Model arguments, tokens and cost, budgets: end to end through the fake OpenAI server, which
records what it receives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli, run_inproc
from fakeserver import FakeServer

import butterfly
from butterfly.core.prompts import messages
from butterfly.core.wire import Request
from butterfly.errors import UserError
from butterfly.models.answer_cache import cache_key
from butterfly.runs.run_flags import parse_model_args
from butterfly.runs.usage import LOCAL_NOTE, UNPRICED_NOTE
from butterfly.suite.load import load_suite
from oracle import replay

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"
SCENARIOS = load_suite(SUITE)[:4]
N_CALLS = sum(len(s.turns) for s in SCENARIOS)
FAST = {"BUTTERFLY_BACKOFF_BASE": "0.01", "OPENAI_API_KEY": "sk-test"}
THINK_OFF = {"chat_template_kwargs": {"enable_thinking": False}}


def oracle_responder(unsure: frozenset[str] = frozenset()) -> Any:
    table: dict[tuple[str, ...], tuple[str, str]] = {}
    for s in SCENARIOS:
        answers = [json.dumps(x) for x in replay(s)[1:]]
        for t in range(1, len(s.turns) + 1):
            users = tuple(m["content"] for m in messages(s, t, answers[: t - 1])
                          if m["role"] == "user")
            table[users] = (s.id, answers[t - 1])

    def respond(body: dict[str, Any]) -> str:
        sid, answer = table[tuple(m["content"] for m in body["messages"] if m["role"] == "user")]
        return "UNSURE" if sid in unsure else answer

    return respond


def _run(out: Path, srv: FakeServer, *extra: str, model: str = "openai/gpt-4o-mini",
         via: str = "auto") -> Any:
    """``--via auto`` (the fast path) in a subprocess; ``--via litellm`` in this process."""
    runner = run_inproc if via == "litellm" else run_cli
    return runner("run", "--model", model, "--api-base", srv.api_base, "--out", str(out),
                  "--limit", str(len(SCENARIOS)), "--no-cache", "--timeout", "5", "--via", via,
                  *extra, env=FAST)


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text())  # type: ignore[no-any-return]


def _score(out: Path) -> dict[str, Any]:
    r = run_cli("score", str(out), "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_model_arg_values_files_and_refusals(tmp_path: Path) -> None:
    yml = tmp_path / "args.yaml"
    yml.write_text("top_p: 0.9\nextra_body:\n  chat_template_kwargs:\n    enable_thinking: false\n"
                   "  cache_prompt: false\n")
    got = parse_model_args(["top_p=0.5", "stop=[\"###\"]", "reasoning_effort=low",
                            'extra_body={"chat_template_kwargs": {"enable_thinking": true}}'],
                           yml)
    assert got == {"top_p": 0.5, "stop": ["###"], "reasoning_effort": "low",
                   "extra_body": {"chat_template_kwargs": {"enable_thinking": True},
                                  "cache_prompt": False}}
    js = tmp_path / "args.json"
    js.write_text('{"top_k": 3}')
    assert parse_model_args([], js) == {"top_k": 3}
    for bad, why in ((["seed=3"], "--seed"), (["temperature=1"], "--temperature"),
                     (["model=x"], "harness"), (["novalue"], "KEY=VALUE"),
                     (["extra_body=3"], "JSON object")):
        with pytest.raises(UserError, match=why):
            parse_model_args(bad)
    (tmp_path / "bad.yaml").write_text("- a\n- b\n")
    with pytest.raises(UserError, match="one mapping"):
        parse_model_args([], tmp_path / "bad.yaml")


def test_model_args_and_the_seed_are_part_of_the_cache_key() -> None:
    base = Request(model="m", messages=({"role": "user", "content": "x"},), temperature=0.0,
                   max_tokens=10, seed=0)
    assert "extra" not in base.cache_key_fields()  # answers cached before model args still hit
    with_args = Request(model="m", messages=base.messages, temperature=0.0, max_tokens=10,
                        seed=0, extra={"top_p": 0.5})
    no_seed = Request(model="m", messages=base.messages, temperature=0.0, max_tokens=10,
                      seed=0, send_seed=False)
    keys = {cache_key(base), cache_key(with_args), cache_key(no_seed)}
    assert len(keys) == 3


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_model_args_reach_the_provider_the_manifest_and_the_answer_key(tmp_path: Path,
                                                                       via: str) -> None:
    out = tmp_path / "run"
    (tmp_path / "a.json").write_text(json.dumps({"extra_body": THINK_OFF}))
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv, "-M", "top_p=0.5", "--model-arg", 'stop=["###"]', "--model-args",
                 str(tmp_path / "a.json"), "--no-seed", model="openai/fake", via=via)
        assert r.returncode == 0, r.stderr
        assert srv.count == N_CALLS
        for body in srv.requests:
            assert body["top_p"] == 0.5 and body["stop"] == ["###"]
            assert body["chat_template_kwargs"] == {"enable_thinking": False}
            assert "seed" not in body
    params = _manifest(out)["params"]
    assert params["model_args"] == {"top_p": 0.5, "stop": ["###"], "extra_body": THINK_OFF}
    assert params["send_seed"] is False
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv, "-M", "top_p=0.9", "--no-seed", model="openai/fake")
        assert r.returncode == 1 and "answer-changing" in r.stderr and srv.count == 0


def test_both_paths_record_the_same_tokens_and_cost(tmp_path: Path) -> None:
    recs = {}
    for via in ("auto", "litellm"):
        with FakeServer(oracle_responder()) as srv:
            assert _run(tmp_path / via, srv, via=via).returncode == 0
        recs[via] = [(x["scenario"], x["turn"], x["tokens"], x["cost_usd"], x["raw"])
                     for x in map(json.loads, (tmp_path / via / "calls.jsonl").read_text()
                                  .splitlines())]
    assert sorted(recs["auto"]) == sorted(recs["litellm"])
    assert all(cost > 0 for *_, cost, _raw in recs["auto"])


def test_tokens_and_cost_per_call_and_per_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv)
        assert r.returncode == 0, r.stderr
    assert "usage:" in r.stdout and "cost $" in r.stdout
    recs = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    assert all(x["cost_usd"] > 0 and x["tokens"]["prompt"] > 0 for x in recs)
    usage = _score(out)["usage"]
    assert usage["prompt_tokens"] == sum(x["tokens"]["prompt"] for x in recs)
    assert usage["completion_tokens"] == sum(x["tokens"]["completion"] for x in recs)
    assert usage["cost_usd"] == pytest.approx(sum(x["cost_usd"] for x in recs))
    assert _manifest(out)["usage"] == usage


def test_an_unpriced_model_costs_null_with_a_note(tmp_path: Path) -> None:
    out = tmp_path / "run"
    unsure = frozenset({SCENARIOS[0].id})
    with FakeServer(oracle_responder(unsure)) as srv:
        assert _run(out, srv, model="openai/fake").returncode == 0
    score = _score(out)
    assert score["usage"]["cost_usd"] is None and "price" in score["usage"]["note"]
    assert score["usage"]["note"] == UNPRICED_NOTE  # it asks for a price (--price)
    local = tmp_path / "local"
    butterfly.run(model="script/oracle", out=local, limit=1, cache=None)
    usage = butterfly.score_run(local).usage
    assert usage.cost_usd is None and usage.note == LOCAL_NOTE  # nothing to pay, no price asked
    n_unsure = len(SCENARIOS[0].turns)
    assert score["abstention_by_reason"] == {"unsure": n_unsure}
    assert score["effective_final_match"] == pytest.approx(
        score["final_match"] * score["coverage"])
    assert score["effective_final_match"] < score["final_match"]


def test_max_cost_stops_before_the_budget_and_a_larger_one_completes(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    with FakeServer(oracle_responder()) as srv:
        assert _run(probe, srv).returncode == 0
    per_call = _score(probe)["usage"]["cost_usd"] / N_CALLS
    budget = 3.5 * per_call
    out = tmp_path / "run"
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv, "--max-cost", f"{budget:.10f}")
        first = srv.count
    assert r.returncode == 6, r.stderr
    assert "budget" in r.stderr and "larger --max-cost" in r.stderr
    m = _manifest(out)
    assert m["status"] == "budget" and m["incomplete_scenarios"]
    assert 1 <= first < N_CALLS
    assert m["usage"]["spent_usd"] <= budget
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv, "--max-cost", "100")
        assert r.returncode == 0, r.stderr
        assert srv.count == N_CALLS - first  # nothing asked twice
    m = _manifest(out)
    assert m["status"] == "complete" and m["n_calls"] == N_CALLS
    assert _score(out)["final_match"] == 1.0


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_max_cost_on_an_unpriced_model_is_refused_before_any_call(tmp_path: Path,
                                                                   via: str) -> None:
    """Issue 21: it made one call, then said the budget could not be enforced (one more call
    per re-run); now refused before anything is created or sent, on either path."""
    out = tmp_path / "run"
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv, "--max-cost", "1", model="openai/fake", via=via)
        assert srv.count == 0
    assert r.returncode == 1 and "no price is known for openai/fake" in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1 and not out.exists()
