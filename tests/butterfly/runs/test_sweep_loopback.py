"""Issue 37's done-when, end to end over the loopback server: a sweep of three reasoning
efforts gives three linked runs whose ``score --json`` efficiency is what the server's usage
implies (every call's tokens are fixed by the budget it carries: ``fakeserver.budget_responder``),
and the sweep's result lists them; ``--max-cost`` holds over the whole sweep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from fakeserver import FakeServer, budget_responder
from test_model_args_cost import SCENARIOS, oracle_responder

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"
REASONING = {"low": 10, "medium": 40, "high": 160}
PROMPT, VISIBLE = 100, 20
IN_USD, OUT_USD = 1.0, 2.0  # per million tokens
N_CALLS = sum(len(s.turns) for s in SCENARIOS)
EDITS = sum(t for s in SCENARIOS for t in range(1, len(s.turns) + 1))
"""A chat run asks at every turn: the ask at turn t restates t edits."""
WRONG_AT_LOW = SCENARIOS[0].id
FAST = {"BUTTERFLY_BACKOFF_BASE": "0.01", "OPENAI_API_KEY": "sk-test"}


def _server() -> FakeServer:
    right, unsure = oracle_responder(), oracle_responder(frozenset({WRONG_AT_LOW}))

    def answer(body: dict[str, Any]) -> str:
        return str((unsure if body["reasoning_effort"] == "low" else right)(body))

    return FakeServer(budget_responder(answer, REASONING, prompt_tokens=PROMPT,
                                       completion_tokens=VISIBLE))


def _call_usd(effort: str) -> float:
    return (PROMPT * IN_USD + (VISIBLE + REASONING[effort]) * OUT_USD) / 1e6


def _sweep(srv: FakeServer, out: Path, *extra: str) -> Any:
    return run_cli("sweep", "--model", "openai/fake", "--api-base", srv.api_base, "--suite",
                   str(SUITE), "--limit", str(len(SCENARIOS)), "--budget",
                   "reasoning_effort=low,medium,high", "--out", str(out), "--no-cache",
                   "--price-per-mtok", f"{IN_USD},{OUT_USD}", "--timeout", "5", "--json",
                   *extra, env=FAST)


def _score(run: str) -> dict[str, Any]:
    r = run_cli("score", run, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_three_budgets_give_three_linked_runs_with_the_servers_efficiency(
        tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    with _server() as srv:
        r = _sweep(srv, out)
        assert r.returncode == 0, r.stderr
        efforts = [body["reasoning_effort"] for body in srv.requests]
    assert sorted(efforts) == sorted(e for e in REASONING for _ in range(N_CALLS))
    result = json.loads(r.stdout)
    assert [b["value"] for b in result["budgets"]] == list(REASONING)
    spent = 0.0
    for i, (effort, row) in enumerate(zip(REASONING, result["budgets"], strict=True)):
        manifest = json.loads((Path(row["run"]) / "manifest.json").read_text())
        assert manifest["budget_sweep"] == {"name": "sweep", "key": "reasoning_effort",
                                            "values": list(REASONING), "index": i}
        eff = _score(row["run"])["efficiency"]
        correct = len(SCENARIOS) - (effort == "low")
        cost = N_CALLS * _call_usd(effort)
        assert eff["correct"] == correct and eff["conversations"] == len(SCENARIOS)
        assert eff["cost_usd"] == pytest.approx(cost)
        assert eff["cost_per_correct_usd"] == pytest.approx(cost / correct)
        assert eff["reasoning_tokens"] == N_CALLS * REASONING[effort]
        assert eff["reasoning_per_edit"] == pytest.approx(N_CALLS * REASONING[effort] / EDITS,
                                                          abs=5e-4)  # score rounds to 3 places
        assert (row["cost_usd"], row["cost_per_correct_usd"], row["reasoning_per_edit"]) == (
            eff["cost_usd"], eff["cost_per_correct_usd"], eff["reasoning_per_edit"])
        assert row["final_match"] == correct / len(SCENARIOS)
        spent += cost
    assert result["spent_usd"] == pytest.approx(spent)


def test_max_cost_holds_over_the_whole_sweep(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    limit = 1.5 * N_CALLS * _call_usd("low")  # low fits; medium cannot finish on what is left
    with _server() as srv:
        r = _sweep(srv, out, "--max-cost", f"{limit!r}", "--concurrency", "1")
        assert r.returncode == 6, r.stderr
        assert "high" not in {body["reasoning_effort"] for body in srv.requests}
    result = json.loads(r.stdout)
    assert [b["status"] for b in result["budgets"]] == ["complete", "budget", None]
    assert result["spent_usd"] <= limit and result["stopped"] is not None
    with _server() as srv:  # a larger budget continues: low is not asked again
        r = _sweep(srv, out, "--max-cost", "1")
        assert r.returncode == 0, r.stderr
        assert "low" not in {body["reasoning_effort"] for body in srv.requests}
    result = json.loads(r.stdout)
    assert [b["status"] for b in result["budgets"]] == ["complete"] * 3
    total = N_CALLS * sum(_call_usd(e) for e in REASONING)
    assert result["spent_usd"] == pytest.approx(total) and result["stopped"] is None
