"""Usage checked (issue 34): token counts a provider reports that cannot be right (negative,
not whole, absurd, over the model's context window) are kept in the record as they came and
flagged, never summed or priced, named by ``score``, kept out of the shared answer cache and
never replayed from it; ``--max-cost`` stops on them instead of pricing them; progress never
shows their tokens per second. Through the loopback fake server, on both transports (the fast
path and litellm)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_in_process
from fakeserver import FakeServer

from butterfly import api
from butterfly.core.wire import Request, Response, invalid
from butterfly.models.answer_cache import Cache, cache_key
from butterfly.runs.records import CallRecord

UNLISTED = "openai/selfhosted-unlisted-7b"
"""A model litellm's map does not know: only the ceiling checks its counts."""
ABSURD = {"prompt_tokens": -100, "completion_tokens": 10**15}
"""The issue's usage: "-400 prompt + 4000000000000000 completion tokens", "2.6e16 tok/s", $5e9."""


def responder(usage: dict[str, Any]) -> Any:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return {"content": "UNSURE", "usage": usage}
    return respond


def _records(out: Path) -> list[CallRecord]:
    return [CallRecord.model_validate_json(line)
            for line in (out / "calls.jsonl").read_text().splitlines()]


def _argv(srv: FakeServer, out: Path, *more: str, model: str = UNLISTED) -> list[str]:
    return ["run", "--model", model, "--api-base", srv.api_base, "--limit", "2", "--out",
            str(out), "--timeout", "5", "--retries", "0", *more]


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_absurd_usage_is_flagged_never_summed_priced_or_cached(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], via: str) -> None:
    cache = tmp_path / "cache.sqlite"
    with FakeServer(responder({**ABSURD, "total_tokens": 10**15 - 100})) as srv:
        code, out, err = cli_in_process(capsys, *_argv(srv, tmp_path / "run", "--via", via,
                                                       "--cache", str(cache),
                                                       "--price-per-mtok", "5,5"))
        sent = srv.count
        assert code == 0, err
        assert "e+" not in err and "- tok/s" in err  # progress: no 2.6e16 tok/s
        records = _records(tmp_path / "run")
        assert records and len(records) == sent
        for rec in records:
            assert rec.invalid_usage is not None and rec.raw == "UNSURE"
            assert "prompt_tokens is -100, below 0" in rec.invalid_usage.reason
            raw = json.loads(rec.invalid_usage.raw)
            assert raw["prompt_tokens"] == -100 and raw["completion_tokens"] == 10**15
            assert rec.tokens.prompt is None and rec.tokens.completion is None
            assert rec.cost_usd is None
        usage = api.score_run(tmp_path / "run").usage
        assert usage is not None and usage.invalid_usage_calls == len(records) == usage.calls
        assert usage.prompt_tokens == 0 and usage.completion_tokens == 0
        assert f"invalid usage: {len(records)} of {len(records)} calls" in out
        assert "-400" not in out and "4000000000000000" not in out
        # never in the shared answer cache: the same run elsewhere asks the server again
        rows = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        assert rows == 0
        code, _, err = cli_in_process(capsys, *_argv(srv, tmp_path / "again", "--via", via,
                                                     "--cache", str(cache),
                                                     "--price-per-mtok", "5,5"))
        assert code == 0, err
        assert srv.count == 2 * sent


@pytest.mark.parametrize("usage,why", [
    ({"prompt_tokens": 12.5, "completion_tokens": 3}, "prompt_tokens is 12.5, not a whole"),
    ({"prompt_tokens": 10, "completion_tokens": "7"}, "completion_tokens is '7', not a whole"),
    ({"prompt_tokens": 10, "completion_tokens": True}, "completion_tokens is True, not a whole"),
    ({"prompt_tokens": 10, "completion_tokens": 3,
      "completion_tokens_details": {"reasoning_tokens": -2}},
     "completion_tokens_details.reasoning_tokens is -2, below 0"),
    ({"prompt_tokens": 10**9, "completion_tokens": 3},
     "prompt_tokens is 1,000,000,000, above 100,000,000"),
])
def test_each_count_is_checked_on_the_fast_path(tmp_path: Path, usage: dict[str, Any],
                                                why: str) -> None:
    with FakeServer(responder(usage)) as srv:
        api.run(model=UNLISTED, api_base=srv.api_base, out=tmp_path / "run", limit=1,
                cache=None, retries=0)
    rec = _records(tmp_path / "run")[0]
    assert rec.invalid_usage is not None and why in rec.invalid_usage.reason
    assert rec.tokens.prompt is None and rec.cost_usd is None


def test_usage_over_the_models_context_window_is_invalid(tmp_path: Path) -> None:
    """gpt-4o-mini takes 128,000 prompt tokens (litellm's map): a server that says 500,000 is
    wrong, as is one that answers with more than its 16,384 completion tokens."""
    for usage, why in (({"prompt_tokens": 500_000, "completion_tokens": 5},
                        "prompt_tokens is 500,000, over openai/gpt-4o-mini's context window "
                        "(max_input_tokens 128,000"),
                       ({"prompt_tokens": 500, "completion_tokens": 20_000},
                        "completion_tokens is 20,000, over openai/gpt-4o-mini's")):
        out = tmp_path / str(usage["prompt_tokens"])
        with FakeServer(responder(usage)) as srv:
            api.run(model="openai/gpt-4o-mini", api_base=srv.api_base, out=out, limit=1,
                    cache=None, retries=0)
        rec = _records(out)[0]
        assert rec.invalid_usage is not None and why in rec.invalid_usage.reason
        assert rec.cost_usd is None and rec.tokens.prompt is None
    with FakeServer(responder({"prompt_tokens": 500, "completion_tokens": 5})) as srv:
        api.run(model="openai/gpt-4o-mini", api_base=srv.api_base, out=tmp_path / "ok",
                limit=1, cache=None, retries=0)
    rec = _records(tmp_path / "ok")[0]
    assert rec.invalid_usage is None and rec.tokens.prompt == 500 and rec.cost_usd


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_max_cost_stops_on_absurd_usage_and_never_prices_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], via: str) -> None:
    """A $5e9 call that ``--max-cost 5`` stopped only afterwards: now it is priced at nothing
    and stops the run at once (status budget, exit 6), saying why."""
    with FakeServer(responder(ABSURD)) as srv:
        code, _, err = cli_in_process(capsys, *_argv(srv, tmp_path / "run", "--via", via,
                                                     "--no-cache", "--price-per-mtok", "5,5",
                                                     "--max-cost", "5"))
    assert code == 6, err
    assert "usage of the last call cannot be right (prompt_tokens is -100" in err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "budget" and srv.count == 1
    assert manifest["usage"]["spent_usd"] == 0 and manifest["usage"]["invalid_usage_calls"] == 1


def test_an_invalid_answer_cached_before_is_never_replayed(tmp_path: Path) -> None:
    """An answer put in the cache before usage was checked (negative tokens) is a miss."""
    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    request = Request(model="openai/x", messages=({"role": "user", "content": "hi"},),
                      temperature=0.0, max_tokens=10, seed=0)
    blob = json.dumps({"text": "old", "prompt_tokens": -100, "completion_tokens": 10**15})
    cache._db.execute("INSERT INTO answers VALUES (?, ?)", (cache_key(request), blob))
    assert cache.get(request) is None
    cache.put(request, invalid(Response("new", prompt_tokens=5, completion_tokens=5),
                               "over the window"))
    assert cache.get(request) is None  # refused by put too
    good = Response("fine", prompt_tokens=5, completion_tokens=5)
    cache.put(request, good)
    hit = cache.get(request)
    assert hit is not None and hit.text == "fine"


def test_records_made_before_the_check_are_not_summed(tmp_path: Path) -> None:
    """A run recorded before usage was checked, with -100 prompt tokens in its records: score
    counts those calls apart instead of summing them."""
    from butterfly.runs.usage import total_usage

    rec = CallRecord.model_validate({
        "scenario": "s", "turn": 1, "messages_sha256": "x", "messages_added": [],
        "raw": "UNSURE", "spec": None, "abstention": "unsure", "latency_s": 0.1,
        "tokens": {"prompt": -100, "completion": 10**15}, "cost_usd": 5e9, "attempts": 1,
        "at": "now", "schema_version": 1})
    usage = total_usage([rec])
    assert usage.invalid_usage_calls == 1 and usage.prompt_tokens == 0
    assert usage.cost_usd == 0


def test_sequential_stops_on_absurd_usage_and_says_why(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer(responder(ABSURD)) as srv:
        code, _, err = cli_in_process(
            capsys, "sequential", "--model-a", "openai/selfhosted-a", "--model-b",
            "openai/selfhosted-b", "--api-base", srv.api_base, "--per-category", "1", "--cap",
            "2", "--no-cache", "--timeout", "5", "--out-a", str(tmp_path / "a"), "--out-b",
            str(tmp_path / "b"), "--price-per-mtok-a", "5,5", "--price-per-mtok-b", "5,5",
            "--max-cost", "5")
    assert code == 6, err
    assert "usage of a call cannot be right (prompt_tokens is -100, below 0)" in err, err
    for side in ("a", "b"):
        manifest = json.loads((tmp_path / side / "manifest.json").read_text())
        assert manifest["status"] == "budget"
        assert (manifest["usage"]["spent_usd"] or 0) == 0
