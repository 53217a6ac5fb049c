"""Issue 21, item 3, end to end through ``butterfly run`` on both transports: an answer over
the response-size cap is recorded cut (with its length), is an abstention (too_large) that a
re-parse keeps, and is sent back cut in the history; a long Retry-After waits at most
``--max-retry-wait`` and the progress line says so; content parts are joined before parsing;
reasoning and reasoning tokens are recorded and shown by ``butterfly show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_inproc
from fakeserver import FakeServer
from test_model_args_cost import SCENARIOS, oracle_responder

from butterfly.runs.calls import read_calls

LIMIT = 2
N_CALLS = sum(len(s.turns) for s in SCENARIOS[:LIMIT])
FAST = {"BUTTERFLY_BACKOFF_BASE": "0.01"}


@pytest.fixture(params=["auto", "litellm"])
def via(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _run(out: Path, srv: FakeServer, via: str, *extra: str) -> Any:
    return run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                      str(out), "--limit", str(LIMIT), "--no-cache", "--timeout", "5",
                      "--via", via, *extra, env=FAST)


def _score(out: Path, *extra: str) -> dict[str, Any]:
    r = run_inproc("score", str(out), "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_an_answer_over_the_cap_is_stored_and_sent_back_cut(tmp_path: Path, via: str) -> None:
    oracle = oracle_responder()
    pad = 30_000
    cap = 1_200  # a spec is about 700 characters: the cut answer still holds it whole

    def padded(body: dict[str, Any]) -> str:
        return oracle(body) + " " * pad + "x"

    out = tmp_path / "run"
    with FakeServer(padded) as srv:
        r = _run(out, srv, via, "--max-answer-chars", str(cap))
        sent = srv.requests
    assert r.returncode == 0, r.stderr
    recs = read_calls(out / "calls.jsonl")
    assert len(recs) == N_CALLS
    for rec in recs:
        assert rec.raw is not None and len(rec.raw) == cap
        assert rec.raw_chars == len(rec.raw.rstrip()) + pad + 1  # the spec, the pad, "x"
        assert rec.abstention == "too_large" and "--max-answer-chars" in rec.abstention_detail
    for body in sent:  # the history holds the cut answers, never the whole ones
        answers = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
        assert all(len(a) == cap for a in answers)
    assert (out / "calls.jsonl").stat().st_size < 10 * N_CALLS * cap
    for mode in ("structured", "lenient"):  # a re-parse would find the spec in the cut text
        score = _score(out, "--parse", mode)
        assert score["abstention_by_reason"] == {"too_large": N_CALLS}
        assert score["final_match"] == 0.0
    assert json.loads((out / "manifest.json").read_text())["params"]["max_answer_chars"] == cap


def test_the_default_cap_is_the_parsers_limit(tmp_path: Path) -> None:
    huge = "{" + "x" * 1_500_000

    out = tmp_path / "run"
    with FakeServer(lambda body: huge) as srv:
        r = run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                       str(out), "--limit", "1", "--no-cache", env=FAST)
        longest = max(len(m["content"]) for b in srv.requests for m in b["messages"])
    assert r.returncode == 0, r.stderr
    rec = read_calls(out / "calls.jsonl")[0]
    assert (len(rec.raw or ""), rec.raw_chars, rec.abstention) == (1_000_000, 1_500_001,
                                                                    "too_large")
    assert longest == 1_000_000


def test_a_long_retry_after_waits_the_cap_and_says_so(tmp_path: Path, via: str) -> None:
    with FakeServer(oracle_responder(), faults=["429:3600"]) as srv:
        r = _run(tmp_path / "run", srv, via, "--max-retry-wait", "1")
        assert srv.count == N_CALLS + 1
    assert r.returncode == 0, r.stderr
    assert "rate-limited, waiting 1 s" in r.stderr


def test_content_parts_and_reasoning_are_recorded_and_shown(tmp_path: Path, via: str) -> None:
    oracle = oracle_responder()

    def parts(body: dict[str, Any]) -> dict[str, Any]:
        text = oracle(body)
        half = len(text) // 2
        return {"content": [{"type": "text", "text": text[:half]},
                            {"type": "text", "text": text[half:]}],
                "reasoning_content": "the user moved one setting\nso I move only it",
                "usage": {"completion_tokens_details": {"reasoning_tokens": 11}}}

    out = tmp_path / "run"
    with FakeServer(parts) as srv:
        r = _run(out, srv, via)
        history = [m["content"] for b in srv.requests for m in b["messages"]
                   if m["role"] == "assistant"]
    assert r.returncode == 0, r.stderr
    assert _score(out)["final_match"] == 1.0  # not a Python repr: the joined text
    recs = read_calls(out / "calls.jsonl")
    assert all(x.reasoning_content == "the user moved one setting\nso I move only it"
               and x.tokens.reasoning == 11 for x in recs)
    assert all(h.startswith("{") for h in history)  # the answers, never the reasoning
    shown = run_inproc("show", str(out), "--scenario", SCENARIOS[0].id)
    assert shown.returncode == 0, shown.stderr
    assert "reasoning (11 tokens): the user moved one setting" in shown.stdout
    assert "so I move only it" in shown.stdout


def test_the_progress_line_says_when_calls_wait(capsys: pytest.CaptureFixture[str]) -> None:
    from butterfly.present.display import ProgressDisplay
    from butterfly.runs.play import Progress

    progress = Progress(total=4)
    with ProgressDisplay(4, "m on out", tty=False) as display:
        progress.on_update = display.update
        progress.waiting(60.0, "rate_limit")
        progress.waiting(60.0, "rate_limit")  # the same note again: not repeated
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["m on out: 4 calls to make",
                       "calls 0/4  errors 0  rate-limited, waiting 60 s"]
    assert sum("waiting" in line for line in err) == 1
    assert "nan" not in " ".join(err)  # no answer yet: no pace, and the line says so
    assert err[2] == "calls 0/4  errors 0  - tok/s  eta unknown (no call answered yet)"


def test_the_eta_is_a_number_of_seconds_or_a_word() -> None:
    from butterfly.present.display import eta_text

    assert eta_text(0, 4, 30.0) == "eta unknown (no call answered yet)"
    assert eta_text(1, 4, 10.0) == "eta 30 s"
    assert eta_text(4, 4, 10.0) == eta_text(5, 4, 0.0) == "eta 0 s"
