"""Prices, reasoning tokens and prompt caching end to end, through the loopback fake server on
both transports: a user's price prices every call of a model litellm's map does not price, is
recorded in the manifest and kept by a resume; ``--max-cost`` works with it and is refused
before any call without one; reasoning tokens are charged once whether the server counts them
inside completion tokens (OpenAI) or apart; cached prompt tokens and their savings are shown by
``score``, ``runs``, ``export`` and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from fakeserver import FakeServer

from butterfly import api
from butterfly.analysis.listing import list_runs
from butterfly.analysis.report import report_data
from butterfly.core.user_price import UserPrice
from butterfly.errors import UserError
from butterfly.present.display import usage_line
from butterfly.present.text import runs_text
from butterfly.runs.records import CallRecord
from butterfly.runs.store import read_manifest

UNLISTED = "openai/selfhosted-unlisted-7b"
"""A model litellm's offline price map does not price (a self-hosted one)."""
PRICE = UserPrice(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
PROMPT, CACHED, BILLED, REASONING = 1000, 600, 50, 30
COST = (PROMPT - CACHED) * 2e-6 + CACHED * 0.5e-6 + BILLED * 8e-6
SAVED = CACHED * (2e-6 - 0.5e-6)
SHAPES = {
    "inside": {"completion_tokens": BILLED, "total_tokens": PROMPT + BILLED},
    "apart": {"completion_tokens": BILLED - REASONING, "total_tokens": PROMPT + BILLED},
}
"""How a server reports 30 reasoning tokens of 50 billed: inside completion_tokens (OpenAI,
vLLM), or apart from them, the total counting both (Gemini's OpenAI-compatible usage)."""


def responder(shape: str = "inside") -> Any:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return {"content": "UNSURE", "reasoning_content": "let me think",
                "usage": {"prompt_tokens": PROMPT, **SHAPES[shape],
                          "prompt_tokens_details": {"cached_tokens": CACHED},
                          "completion_tokens_details": {"reasoning_tokens": REASONING}}}
    return respond


def _run(srv: FakeServer, out: Path, **fields: Any) -> api.Run:
    opts: dict[str, Any] = {"model": UNLISTED, "api_base": srv.api_base, "out": out,
                            "limit": 2, "cache": None, "timeout": 5, "retries": 0, **fields}
    return api.run(**opts)


def _records(out: Path) -> list[CallRecord]:
    return [CallRecord.model_validate_json(line)
            for line in (out / "calls.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("via", ["auto", "litellm"])
@pytest.mark.parametrize("shape", ["inside", "apart"])
def test_a_users_price_prices_every_call_and_reasoning_once(tmp_path: Path, via: str,
                                                            shape: str) -> None:
    with FakeServer(responder(shape)) as srv:
        run = _run(srv, tmp_path / "run", price_per_mtok="2,8,0.5", via=via)
    records = _records(tmp_path / "run")
    assert records and len(records) == srv.count
    for rec in records:
        assert rec.tokens.completion == BILLED and rec.tokens.reasoning == REASONING
        assert rec.tokens.cached == CACHED and rec.reasoning_content == "let me think"
        assert rec.cost_usd == pytest.approx(COST) and rec.saved_usd == pytest.approx(SAVED)
    assert run.manifest.params.price == PRICE
    usage = api.score_run(tmp_path / "run").usage
    assert usage is not None and usage.price == PRICE
    assert usage.cost_usd == pytest.approx(COST * len(records))
    assert usage.saved_usd == pytest.approx(SAVED * len(records))
    assert usage.reasoning_tokens == REASONING * len(records)


def test_without_a_price_the_model_stays_unpriced(tmp_path: Path) -> None:
    with FakeServer(responder()) as srv:
        _run(srv, tmp_path / "run")
    rec = _records(tmp_path / "run")[0]
    assert rec.cost_usd is None and rec.saved_usd is None
    usage = api.score_run(tmp_path / "run").usage
    assert usage is not None and usage.cost_usd is None and usage.price is None
    assert usage.cached_tokens > 0 and "--price" in usage_line(usage)


def test_max_cost_without_a_price_is_refused_before_any_call(tmp_path: Path) -> None:
    with FakeServer(responder()) as srv:
        with pytest.raises(UserError, match=r"no price is known.*--price") as e:
            _run(srv, tmp_path / "run", max_cost=1.0)
        assert srv.count == 0
    assert "\n" not in str(e.value)
    assert not (tmp_path / "run").exists()


def test_max_cost_works_for_a_priced_self_hosted_model(tmp_path: Path) -> None:
    with FakeServer(responder()) as srv:
        run = _run(srv, tmp_path / "run", price_per_mtok="2,8,0.5", max_cost=COST * 3.5)
    assert run.manifest.status == "budget"
    spent = sum(r.cost_usd or 0 for r in _records(tmp_path / "run"))
    assert 0 < spent <= COST * 3.5 and srv.count == 3


def test_a_resume_keeps_the_runs_price(tmp_path: Path) -> None:
    price = tmp_path / "price.json"
    price.write_text(json.dumps({"input_per_mtok": 2, "output_per_mtok": 8,
                                 "cached_input_per_mtok": 0.5}))
    with FakeServer(responder()) as srv:
        _run(srv, tmp_path / "run", price=str(price), max_cost=COST * 2.5)
        sent = srv.count
        with pytest.raises(UserError, match="keeps the run's price"):
            _run(srv, tmp_path / "run", price_per_mtok="2,9")
        with pytest.raises(UserError, match="keeps the run's price"):
            _run(srv, tmp_path / "run")
        assert srv.count == sent
        run = _run(srv, tmp_path / "run", price_per_mtok="2,8,0.5")
    assert run.manifest.status == "complete"
    assert all(r.cost_usd == pytest.approx(COST) for r in _records(tmp_path / "run"))


def test_score_runs_export_and_report_show_reasoning_caching_and_the_price(
        tmp_path: Path) -> None:
    with FakeServer(responder("apart")) as srv:
        _run(srv, tmp_path / "runs" / "one", price_per_mtok="2,8,0.5")
    n = srv.count
    usage = api.score_run(tmp_path / "runs" / "one").usage
    assert usage is not None
    line = usage_line(usage)
    assert f"{CACHED * n} of them cached" in line and f"{REASONING * n} of them reasoning" in line
    assert "at the user's price ($2 in, $8 out, $0.5 cached" in line
    assert f"the prompt cache saved ${SAVED * n:.4f}" in line
    listed = runs_text(list_runs(tmp_path / "runs"))
    assert "(user price)" in listed and f"{CACHED * n} (${SAVED * n:.4f})" in listed
    rows = api.export([tmp_path / "runs" / "one"], level="turn")
    assert {r["price"] for r in rows} == {"user"}
    assert all(r["reasoning_tokens"] == REASONING and r["cached_tokens"] == CACHED
               and r["completion_tokens"] == BILLED for r in rows)
    assert sum(float(r["saved_usd"] or 0) for r in rows) == pytest.approx(SAVED * n)
    html = tmp_path / "report.html"
    api.report([tmp_path / "runs" / "one"], html)
    page = html.read_text()
    for text in (">reasoning<", ">cached<", ">saved<", f"${SAVED * n:.4f}", "the user's price"):
        assert text in page
    turn = report_data([tmp_path / "runs" / "one"]).conversations[0].turns[0]
    assert turn[9:] == ("let me think", REASONING, len("let me think"))  # the transcript's


def test_shards_priced_differently_are_not_merged(tmp_path: Path) -> None:
    with FakeServer(responder()) as srv:
        one = _run(srv, tmp_path / "s1", shard="1/2", price_per_mtok="2,8,0.5")
        two = _run(srv, tmp_path / "s2", shard="2/2", price_per_mtok="2,9")
    assert one.manifest.status == two.manifest.status == "complete"
    with pytest.raises(UserError, match=r"--price \$2 in, \$8 out.* vs --price \$2 in, \$9"):
        api.merge([tmp_path / "s1", tmp_path / "s2"], tmp_path / "merged")


def test_the_command_line_takes_a_price_file_and_refuses_max_cost_without_one(
        tmp_path: Path) -> None:
    price = tmp_path / "price.json"
    price.write_text('{"input_per_mtok": 2, "output_per_mtok": 8, "cached_input_per_mtok": 0.5}')
    with FakeServer(responder()) as srv:
        common = ("run", "--model", UNLISTED, "--api-base", srv.api_base, "--limit", "1",
                  "--no-cache", "--timeout", "5")
        refused = run_cli(*common, "--out", str(tmp_path / "no"), "--max-cost", "1")
        assert refused.returncode != 0 and srv.count == 0
        assert refused.stderr.strip().count("\n") == 0 and "--price" in refused.stderr
        ran = run_cli(*common, "--out", str(tmp_path / "yes"), "--price", str(price),
                      "--max-cost", "1")
    assert ran.returncode == 0, ran.stderr
    said = " ".join(ran.stdout.split())  # the terminal's table wraps lines
    assert "at the user's price ($2 in, $8 out, $0.5 cached per million tokens)" in said
    manifest = json.loads((tmp_path / "yes" / "manifest.json").read_text())
    assert manifest["params"]["price"] == {"schema_version": 1, "input_per_mtok": 2.0,
                                           "output_per_mtok": 8.0,
                                           "cached_input_per_mtok": 0.5}


def test_answers_from_the_cache_are_priced_by_the_runs_price(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache.sqlite")
    with FakeServer(responder()) as srv:
        _run(srv, tmp_path / "unpriced", cache=cache)
        asked = srv.count
        _run(srv, tmp_path / "priced", cache=cache, price_per_mtok="2,8,0.5")
        assert srv.count == asked  # every answer came from the cache
    unpriced, priced = _records(tmp_path / "unpriced"), _records(tmp_path / "priced")
    assert all(r.cost_usd is None for r in unpriced)
    assert priced and all(r.cached and r.cost_usd == pytest.approx(COST)
                          and r.saved_usd == pytest.approx(SAVED) for r in priced)


def test_runs_recorded_before_prices_still_read_sealed() -> None:
    old = ROOT / "runs" / "script-oracle__butterfly-40__v1"
    assert '"price"' not in (old / "manifest.json").read_text()
    manifest = read_manifest(old)  # its seal checked
    assert manifest.params.price is None
    usage = api.score_run(old).usage
    assert usage is not None and usage.price is None and usage.saved_usd is None
