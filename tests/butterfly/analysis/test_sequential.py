"""butterfly sequential with scripted agents: pair-by-pair sampling into two run directories,
e-values at the stopping times, resume without new calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_inproc
from fakeserver import FakeServer

from butterfly.analysis import regress
from butterfly.analysis.compare import load_answers
from butterfly.cli import main
from oracle import canonical_initial

ARGS = ("sequential", "--model-a", "script/noisy:p=0.2", "--model-b", "script/noisy:p=0.6",
        "--per-category", "1", "--q", "0.1", "--no-cache", "--json")


def _run(capsys: pytest.CaptureFixture[str], tmp: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    code = main([*ARGS, "--out-a", str(tmp / "a"), "--out-b", str(tmp / "b"), *extra])
    assert code == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_sequential_ebh_stops_and_reports_answers(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    d = _run(capsys, tmp_path, "--cap", "30", "--stop-fine")
    assert d["method"] == "ebh" and d["n_scenarios"] == 10
    assert d["answers_used"] == 2 * sum(row["pairs"] for row in d["scenarios"])
    assert d["answers_used"] < d["answers_cap"] == 2 * 30 * 10
    assert {row["stopped"] for row in d["scenarios"]} <= {"decided", "fine", "cap"}
    assert set(d["regressed"]) == {r["id"] for r in d["scenarios"] if r["verdict"] == "REGRESSED"}
    # each e-value is the e-process at that scenario's stopping time, recomputed from the
    # answers kept in the two run directories
    a, b = load_answers(tmp_path / "a"), load_answers(tmp_path / "b")
    for row in d["scenarios"]:
        n = row["pairs"]
        x = np.array(a.passes[row["id"]][:n])
        y = np.array(b.passes[row["id"]][:n])
        assert len(x) == len(y) == n
        e = regress.mixture_e(np.array((x & ~y).sum()), np.array((~x & y).sum()))
        assert row["e_value"] == pytest.approx(float(e))
        assert row["a_pass"] == x.sum() and row["b_pass"] == y.sum()
    calls = (tmp_path / "a" / "calls.jsonl").read_text().count("\n")
    again = _run(capsys, tmp_path, "--cap", "30", "--stop-fine")
    assert again == d  # resumed from the recorded answers
    assert (tmp_path / "a" / "calls.jsonl").read_text().count("\n") == calls


def test_sequential_gs_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _run(capsys, tmp_path, "--cap", "25", "--method", "gs")
    assert max(row["pairs"] for row in d["scenarios"]) <= 25
    assert all(0 <= row["p_value"] <= 1 for row in d["scenarios"])
    code = main([*ARGS[:-1], "--out-a", str(tmp_path / "a"), "--out-b", str(tmp_path / "b"),
                 "--cap", "25", "--method", "gs"])
    assert code == 0
    assert "answers used:" in capsys.readouterr().out


def test_sequential_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    same = str(tmp_path / "x")
    assert main([*ARGS, "--out-a", same, "--out-b", same]) == 1
    assert "must differ" in capsys.readouterr().err
    assert main([*ARGS, "--out-a", same, "--out-b", str(tmp_path / "y"), "--cap", "0"]) == 1
    assert "--cap" in capsys.readouterr().err


def test_sequential_refuses_the_code_track(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # its answers are programs judged once observed; it counted every one a failure
    assert main(["sequential", "--model-a", "script/oracle", "--model-b", "script/noop",
                 "--suite", "butterfly-code", "--out-a", str(tmp_path / "a"),
                 "--out-b", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert "does not play the code track" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "a").exists()


FAST = {"BUTTERFLY_BACKOFF_BASE": "0.01", "OPENAI_API_KEY": "sk-test"}


def _against(srv: FakeServer, tmp: Path, *extra: str) -> Any:
    return run_inproc("sequential", "--model-a", "openai/fake", "--model-b", "script/noop",
                      "--api-base", srv.api_base, "--per-category", "1", "--cap", "2",
                      "--no-cache", "--timeout", "5", "--out-a", str(tmp / "a"),
                      "--out-b", str(tmp / "b"), *extra, env=FAST)


def test_sequential_sends_the_model_arguments_and_no_seed(tmp_path: Path) -> None:
    with FakeServer(lambda body: json.dumps(canonical_initial())) as srv:
        r = _against(srv, tmp_path, "-M", "top_p=0.5", "--no-seed", "--json")
        assert r.returncode == 0, r.stderr
        assert srv.count > 0
        assert all(body["top_p"] == 0.5 and "seed" not in body for body in srv.requests)
    for side in ("a", "b"):
        params = json.loads((tmp_path / side / "manifest.json").read_text())["params"]
        assert params["model_args"] == {"top_p": 0.5} and params["send_seed"] is False


def test_a_failed_sequential_says_which_call_failed_and_why(tmp_path: Path) -> None:
    with FakeServer(lambda body: "{}", faults=lambda i: "503") as srv:
        r = _against(srv, tmp_path, "--retries", "0")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "conversation(s) of repeat 0 failed" in lines[0]
    assert "(first: openai/fake:" in lines[0] and " turn 1: " in lines[0]
    assert "503" in lines[0] or "server" in lines[0].lower(), lines[0]
    assert "sk-test" not in r.stderr


def _priced(srv: FakeServer, tmp: Path, *extra: str) -> Any:
    return run_inproc("sequential", "--model-a", "openai/gpt-4o-mini", "--model-b",
                      "openai/gpt-4o", "--api-base", srv.api_base, "--per-category", "1",
                      "--cap", "2", "--no-cache", "--timeout", "5", "--out-a", str(tmp / "a"),
                      "--out-b", str(tmp / "b"), "--json", *extra, env=FAST)


def _manifests(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads((tmp / side / "manifest.json").read_text()) for side in ("a", "b")]


def test_max_cost_stops_both_runs_and_a_larger_budget_continues(tmp_path: Path) -> None:
    spec = json.dumps(canonical_initial())
    with FakeServer(lambda body: spec) as srv:
        probe = _priced(srv, tmp_path / "probe")
        assert probe.returncode == 0, probe.stderr
        total = srv.count
    per_call = sum(m["usage"]["spent_usd"] for m in _manifests(tmp_path / "probe")) / total
    budget = 3.5 * per_call
    with FakeServer(lambda body: spec) as srv:
        r = _priced(srv, tmp_path, "--max-cost", f"{budget:.10f}")
        first = srv.count
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 6 and len(lines) == 1, r.stderr
    assert "stopped by the budget" in lines[0] and "larger --max-cost" in lines[0]
    assert 1 <= first < total
    stopped = _manifests(tmp_path)
    assert [m["status"] for m in stopped] == ["budget", "budget"]
    assert sum(m["usage"]["spent_usd"] or 0 for m in stopped) <= budget
    with FakeServer(lambda body: spec) as srv:
        again = _priced(srv, tmp_path, "--max-cost", "100")
        assert again.returncode == 0, again.stderr
        assert srv.count == total - first  # nothing asked twice
    assert [m["status"] for m in _manifests(tmp_path)] == ["complete", "complete"]
    assert json.loads(again.stdout)["answers_used"] == json.loads(probe.stdout)["answers_used"]


def test_sequential_routes_each_model_over_its_group(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    spec = json.dumps(canonical_initial())
    with FakeServer(lambda body: spec) as a, FakeServer(lambda body: spec) as b:
        groups = [{"model_name": name, "litellm_params": {"model": "openai/fake",
                                                          "api_base": srv.api_base,
                                                          "api_key": "sk-router-test"}}
                  for name, srv in (("grp-a", a), ("grp-b", b))]
        file = tmp_path / "router.json"
        file.write_text(json.dumps({"model_list": groups}))
        argv = ["sequential", "--model-a", "grp-a", "--model-b", "grp-b", "--router", str(file),
                "--limit", "2", "--cap", "2", "--no-cache", "--json",  # each call is routed
                "--out-a", str(tmp_path / "a"), "--out-b", str(tmp_path / "b")]
        assert main(argv) == 0, capsys.readouterr().err
        assert a.count > 0 and b.count > 0
        assert a.count == b.count  # the same conversations, each model on its own group
    for side in ("a", "b"):
        manifest = json.loads((tmp_path / side / "manifest.json").read_text())
        assert manifest["params"]["router"]["models"] == ["openai/fake"]
        assert manifest["transports"] == ["litellm"]
        assert "sk-router-test" not in (tmp_path / side / "manifest.json").read_text()
    capsys.readouterr()
    assert main([*argv, "--api-base", "http://127.0.0.1:9/v1"]) == 1
    assert "not both" in capsys.readouterr().err
    assert main([*argv[:2], "nope", *argv[3:]]) == 1
    assert "nope" in capsys.readouterr().err
