"""Budget sweeps with the scripted agent ``script/budget`` (no server, fast): one linked run
per budget, accuracy that follows the budget, a resume that plays nothing, a changed value list
refused, the dry-run bill of the whole sweep, and the refusals of ``--budget``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_inproc

import butterfly
from butterfly.core.agents import budget_drift_p
from butterfly.errors import UserError
from butterfly.runs.budget_sweep import parse_budget
from butterfly.runs.store import read_manifest

EFFORTS = ("low", "medium", "high")
STEM = "script-budget__butterfly-40"


def _sweep(out: Path, budget: str = "reasoning_effort=low,medium,high", limit: int = 6,
           **fields: Any) -> butterfly.SweepResult:
    return butterfly.sweep(model="script/budget", suite="butterfly-40", limit=limit,
                           out=str(out), cache=None, budget=budget, **fields)


def test_a_sweep_is_one_linked_run_per_budget_in_order(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    result = _sweep(out)
    assert [b.value for b in result.budgets] == list(EFFORTS) and result.stopped is None
    for i, (effort, row) in enumerate(zip(EFFORTS, result.budgets, strict=True)):
        run = out / f"{STEM}__reasoning_effort={effort}"
        assert row.run == str(run) and row.status == "complete"
        m = read_manifest(run)
        assert m.budget_sweep is not None
        assert (m.budget_sweep.name, m.budget_sweep.key, m.budget_sweep.values,
                m.budget_sweep.index, m.budget_sweep.value) == (
                    "sw", "reasoning_effort", EFFORTS, i, effort)
        assert m.params.model_args == {"reasoning_effort": effort}
        score = butterfly.score_run(butterfly.load_run(run))
        assert (row.final_match, row.final_match_ci, row.conversations) == (
            score.final_match, score.final_match_ci, score.n_conversations)
    low, _medium, high = (b.final_match for b in result.budgets)
    assert high == 1.0 and low is not None and low < high  # accuracy follows the budget
    assert result.spent_usd == 0.0 and all(b.cost_usd is None for b in result.budgets)


def test_the_budget_agent_reads_effort_then_thinking_budget_then_max_tokens() -> None:
    assert budget_drift_p("high", 8, 1024) == 0.0
    assert budget_drift_p(None, 16, 1024) == 0.5
    assert budget_drift_p(None, None, 48) == 0.25
    with pytest.raises(ValueError, match="reasoning_effort"):
        budget_drift_p("extreme", None, 1024)


def test_a_resume_plays_nothing_finished_and_refuses_other_values(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    first = _sweep(out)
    calls = {p: p.stat().st_mtime_ns for p in out.glob("*/calls.jsonl")}
    again = _sweep(out)
    assert again == first
    assert {p: p.stat().st_mtime_ns for p in out.glob("*/calls.jsonl")} == calls
    with pytest.raises(UserError, match="same --budget"):
        _sweep(out, "reasoning_effort=low,high")  # the medium run names low,medium,high
    with pytest.raises(UserError, match="same --budget"):
        _sweep(out, "reasoning_effort=low,medium,high,minimal")
    assert len(list(out.iterdir())) == 3  # nothing was played for the refused sweeps


def test_max_tokens_is_swept_as_the_harness_option(tmp_path: Path) -> None:
    result = _sweep(tmp_path / "mt", "max_tokens=16,4096", limit=4)
    runs = [Path(b.run) for b in result.budgets]
    assert [r.name for r in runs] == [f"{STEM}__max_tokens=16", f"{STEM}__max_tokens=4096"]
    assert [read_manifest(r).params.max_tokens for r in runs] == [16, 4096]
    assert all(read_manifest(r).params.model_args == {} for r in runs)


def test_the_dry_run_bills_the_whole_sweep_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    bill = butterfly.sweep_dry_run(model="script/budget", suite="butterfly-40", limit=3,
                                   out=str(out), budget="max_tokens=64,128")
    assert not out.exists()
    assert len(bill.budgets) == 2 and bill.total.calls == sum(b.total.calls for b in
                                                              bill.budgets)
    assert [b.max_tokens for b in bill.budgets] == [64, 128]
    assert bill.total.completion_tokens == sum(b.total.completion_tokens for b in bill.budgets)


@pytest.mark.parametrize(("budget", "why"), [
    ("reasoning_effort", "KEY=V1,V2"), ("reasoning_effort=low,,high", "KEY=V1,V2"),
    ("reasoning_effort=low,low", "given twice"), ("temperature=0,1", "--temperature"),
    ("max_completion_tokens=5,6", "max_tokens=5,6"), ("max_tokens=0,5", "whole numbers"),
    ("max_tokens=low", "whole numbers"), ("model=a,b", "harness"),
])
def test_budget_refusals_are_one_line(budget: str, why: str) -> None:
    with pytest.raises(UserError, match=why):
        parse_budget(budget)


def test_a_budget_also_given_as_a_model_argument_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="drop the -M"):
        _sweep(tmp_path / "x", model_args={"reasoning_effort": "low"})
    with pytest.raises(UserError, match="drop --max-tokens"):
        _sweep(tmp_path / "y", "max_tokens=8,16", max_tokens=32)
    with pytest.raises(UserError, match="--shard"):
        _sweep(tmp_path / "z", shard="1/2")


def test_the_command_prints_the_bill_then_the_table_or_json(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    args = ("sweep", "--model", "script/budget", "--suite", "butterfly-40", "--limit", "3",
            "--budget", "reasoning_effort=low,high", "--out", str(out), "--no-cache")
    dry = run_inproc(*args, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["values"] == ["low", "high"] and not out.exists()
    r = run_inproc(*args, "--json")
    assert r.returncode == 0, r.stderr
    assert "dry run of the sweep sw" in r.stderr and "(2 of 2)" in r.stderr
    assert [b["status"] for b in json.loads(r.stdout)["budgets"]] == ["complete", "complete"]
    text = run_inproc(*args)
    assert text.returncode == 0 and "reasoning_effort=high" in text.stdout
    bad = run_inproc(*args[:-3], "--out", str(out), "--budget", "reasoning_effort=low",
                     "--no-cache")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1


def test_on_a_suite_built_by_length_each_budget_has_its_horizon(tmp_path: Path) -> None:
    suite = tmp_path / "ladder.jsonl"
    made = run_inproc("generate", "--lengths", "4,8,16", "--per-length", "4", "--ask-at",
                      "4,8,16", "--out", str(suite))
    assert made.returncode == 0, made.stderr
    result = butterfly.sweep(model="script/budget", suite=str(suite), mode="restate",
                             out=str(tmp_path / "sw"), cache=None,
                             budget="reasoning_effort=low,high")
    assert result.by_length
    low, high = result.budgets
    assert high.horizon is None and high.horizon_censored == "above"  # never drifts
    assert low.horizon_censored == "below" or (low.horizon is not None and low.horizon < 16)
    score = butterfly.score_run(butterfly.load_run(low.run))
    assert score.horizon is not None and (low.horizon, low.horizon_ci) == (
        score.horizon.turns, score.horizon.ci)
