"""butterfly sequential in restate mode asked at chosen turns (--mode, --ask-at) and with a
price per model (--price-a / --price-b, --price-per-mtok-a / --price-per-mtok-b): only the asked
calls, the decisions chat mode reaches on scripted agents, the budget of a priced self-hosted
model, refusals in one line and resumes that keep the mode, ask points and prices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_inproc
from fakeserver import FakeServer

from butterfly import api
from butterfly.cli import main
from butterfly.core.asking import n_asked
from butterfly.errors import UserError
from butterfly.suite.load import load_suite, resolve_suite
from oracle import canonical_initial

LONG = ("sequential", "--model-a", "script/noisy:p=0.1", "--model-b", "script/noisy:p=0.8",
        "--suite", "butterfly-long", "--limit", "14", "--cap", "15", "--q", "0.2",
        "--stop-fine", "--no-cache", "--json")


def _seq(capsys: pytest.CaptureFixture[str], tmp: Path, *extra: str) -> dict[str, Any]:
    code = main([*LONG, "--out-a", str(tmp / "a"), "--out-b", str(tmp / "b"), *extra])
    assert code == 0, capsys.readouterr().err
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _params(run: Path) -> dict[str, Any]:
    params: dict[str, Any] = json.loads((run / "manifest.json").read_text())["params"]
    return params


def test_restate_asked_makes_only_the_asked_calls_and_decides_as_chat(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    asked = _seq(capsys, tmp_path / "asked", "--mode", "restate")  # the suite's ask points
    chat = _seq(capsys, tmp_path / "chat")
    lengths = {s.id: len(s.turns) for s in load_suite(resolve_suite("butterfly-long"))[:14]}
    assert sorted(set(lengths.values())) == [5, 10]  # chains longer than one ask point
    for side in ("a", "b"):
        run = tmp_path / "asked" / side
        assert (_params(run)["mode"], _params(run)["ask_at"]) == ("restate", [5, 10, 20, 40, 80])
        assert _params(tmp_path / "chat" / side)["ask_at"] is None
        records = _lines(run / "calls.jsonl")
        expected = sum(row["pairs"] * n_asked(lengths[row["id"]], (5, 10, 20, 40, 80))
                       for row in asked["scenarios"])
        assert len(records) == expected  # one call per asked turn of each conversation drawn
        assert {(r["scenario"][:8], r["turn"]) for r in records} <= {
            ("long-005", 5), ("long-010", 5), ("long-010", 10)}
        chat_calls = len(_lines(tmp_path / "chat" / side / "calls.jsonl"))
        assert chat_calls == sum(row["pairs"] * lengths[row["id"]] for row in chat["scenarios"])
        assert len(records) < chat_calls
    # a scripted agent's answer at a turn does not depend on the mode: the same final answers,
    # so the same decisions, pairs and statistics as chat mode
    assert {k: v for k, v in asked.items() if k not in ("run_a", "run_b")} == {
        k: v for k, v in chat.items() if k not in ("run_a", "run_b")}
    assert asked["regressed"] and {r["stopped"] for r in asked["scenarios"]} >= {"decided"}
    assert asked["answers_used"] < asked["answers_cap"]  # each scenario stopped at its own time


def test_ask_at_chosen_turns_and_last(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    d = _seq(capsys, tmp_path / "two", "--mode", "restate", "--ask-at", "2,4")
    records = _lines(tmp_path / "two" / "a" / "calls.jsonl")
    assert _params(tmp_path / "two" / "a")["ask_at"] == [2, 4]
    assert {r["turn"] for r in records if r["scenario"].startswith("long-005")} == {2, 4, 5}
    assert {r["turn"] for r in records if r["scenario"].startswith("long-010")} <= {2, 4, 10}
    assert len(records) == 3 * sum(row["pairs"] for row in d["scenarios"])
    _seq(capsys, tmp_path / "last", "--mode", "restate", "--ask-at", "last")
    assert _params(tmp_path / "last" / "b")["ask_at"] == []
    assert all(r["turn"] in (5, 10) for r in _lines(tmp_path / "last" / "b" / "calls.jsonl"))


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err


def test_refusals_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = ["--out-a", str(tmp_path / "a"), "--out-b", str(tmp_path / "b")]
    _refused(capsys, [*LONG, *outs, "--ask-at", "5"], "--ask-at is for --mode restate")
    _refused(capsys, [*LONG, *outs, "--mode", "restate", "--ask-at", "x"], "--ask-at takes")
    _refused(capsys, [*LONG, *outs, "--price-per-mtok-a", "1,2", "--price-a", "p.json"],
             "--price-a FILE or --price-per-mtok-a", "not both")
    _refused(capsys, [*LONG, *outs, "--price-per-mtok-b", "1"], "--price-per-mtok-b")
    _refused(capsys, [*LONG, *outs, "--price-b", str(tmp_path / "none.json")],
             "--price-b", "cannot read")
    _refused(capsys, [*LONG, *outs, "--max-cost", "1"], "--max-cost: no price is known for "
             "script/noisy:p=0.1", "--price-a FILE")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    with pytest.raises(UserError, match="--price-a / --price-b"):
        api.sequential("script/oracle", "script/noop", price_per_mtok="1,2", limit=1)
    with pytest.raises(UserError, match="one model: give it one price"):
        api.sequential("script/oracle", "script/oracle", price_per_mtok_a="1,2", limit=1,
                       out_a=tmp_path / "x", out_b=tmp_path / "y")


def test_resume_keeps_the_mode_and_ask_points(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _seq(capsys, tmp_path, "--mode", "restate")
    outs = ["--out-a", str(tmp_path / "a"), "--out-b", str(tmp_path / "b")]
    _refused(capsys, [*LONG, *outs], "other answer-changing parameters", "mode")
    _refused(capsys, [*LONG, *outs, "--mode", "restate", "--ask-at", "last"],
             "a resume keeps the run's ask points")


FAST = {"BUTTERFLY_BACKOFF_BASE": "0.01", "OPENAI_API_KEY": "sk-test"}


def _self_hosted(srv: FakeServer, tmp: Path, *extra: str) -> Any:
    """Two models no price map knows, served by a loopback server, each given its price."""
    price_b = tmp.parent / "price-b.json"
    price_b.write_text(json.dumps({"input_per_mtok": 3.0, "output_per_mtok": 9.0}))
    return run_inproc("sequential", "--model-a", "openai/selfhosted-a", "--model-b",
                      "openai/selfhosted-b", "--api-base", srv.api_base, "--per-category", "1",
                      "--cap", "2", "--no-cache", "--timeout", "5", "--out-a", str(tmp / "a"),
                      "--out-b", str(tmp / "b"), "--json", "--price-per-mtok-a", "1,2",
                      "--price-b", str(price_b), *extra, env=FAST)


def _manifests(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads((tmp / side / "manifest.json").read_text()) for side in ("a", "b")]


def _refused_offline(capsys: pytest.CaptureFixture[str], srv: FakeServer, tmp: Path,
                     *extra: str) -> str:
    """A refusal before any call (in this process): its one line."""
    code = main(["sequential", "--model-a", "openai/selfhosted-a", "--model-b",
                 "openai/selfhosted-b", "--api-base", srv.api_base, "--per-category", "1",
                 "--cap", "2", "--no-cache", "--out-a", str(tmp / "a"), "--out-b",
                 str(tmp / "b"), *extra])
    err = capsys.readouterr().err
    assert code == 1 and srv.count == 0 and len(err.strip().splitlines()) == 1, err
    return err


def test_priced_self_hosted_models_stop_at_the_budget(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = json.dumps(canonical_initial())
    with FakeServer(lambda body: spec) as srv:
        err = _refused_offline(capsys, srv, tmp_path / "x", "--max-cost", "1",
                               "--price-per-mtok-a", "1,2")
        assert "no price is known for openai/selfhosted-b" in err
        assert "--price-b FILE or --price-per-mtok-b" in err
        probe = _self_hosted(srv, tmp_path / "probe")
        assert probe.returncode == 0, probe.stderr
        total = srv.count
    probed = _manifests(tmp_path / "probe")
    assert [m["params"]["price"]["input_per_mtok"] for m in probed] == [1.0, 3.0]
    spent = [m["usage"]["spent_usd"] for m in probed]
    assert all(s > 0 for s in spent) and spent[1] > spent[0]  # B is dearer, per its price
    budget = 3.5 * sum(spent) / total
    with FakeServer(lambda body: spec) as srv:
        r = _self_hosted(srv, tmp_path / "run", "--max-cost", f"{budget:.10f}")
        first = srv.count
    assert r.returncode == 6 and "stopped by the budget" in r.stderr, r.stderr
    assert 1 <= first < total
    stopped = _manifests(tmp_path / "run")
    assert [m["status"] for m in stopped] == ["budget", "budget"]
    assert sum(m["usage"]["spent_usd"] or 0 for m in stopped) <= budget
    with FakeServer(lambda body: spec) as srv:
        err = _refused_offline(capsys, srv, tmp_path / "run", "--price-per-mtok-a", "5,6",
                               "--price-per-mtok-b", "3,9")
        assert "a resume keeps the run's price" in err  # another price for A
        again = _self_hosted(srv, tmp_path / "run", "--max-cost", "100")
        assert again.returncode == 0, again.stderr
        assert srv.count == total - first  # nothing asked twice
