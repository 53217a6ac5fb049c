"""``butterfly import-inspect`` (issue 26): an inspect eval log built with inspect's own classes
from a butterfly run's answers (the shape butterfly's tasks write, docs/inspect.md), written
with ``write_eval_log`` as .eval and .json, imports into a run that scores, shows and reports
as the run it came from; a log that is not butterfly's, a changed or missing suite, a used
--out and an errored sample each give one line."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_in_process

pytest.importorskip("inspect_ai")

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalSample,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.model import GenerateConfig, ModelUsage
from inspect_ai.scorer import Score

from butterfly import api
from butterfly.core.user_price import UserPrice
from butterfly.errors import UserError
from butterfly.models.price_map import rates
from butterfly.present.messages import imported
from butterfly.runs.reader import Run, load_run
from butterfly.runs.records import RunParams

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """script/lifo on butterfly-40, one scenario per category, layouts E and Q."""
    out = tmp_path_factory.mktemp("played") / "lifo"
    return api.run(model="script/lifo", suite=str(SUITE), per_category=1, layouts="E,Q",
                   out=out, cache=None)


def _records(run: Run) -> list[dict[str, Any]]:
    lines = (run.path / "calls.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x) for x in lines]


def _turns(recs: list[dict[str, Any]], restate: bool) -> list[dict[str, Any]]:
    """The store entries butterfly's solver writes for one conversation's records."""
    out, sent, counted = [], 0, 0
    for r in sorted(recs, key=lambda r: (r["turn"], r["sample"])):
        if r["turn"] != counted:  # the samples of a turn share one prompt
            sent, counted = len(r["messages_added"]) + (0 if restate else sent), r["turn"]
        t = r["tokens"]
        out.append({"turn": r["turn"], "sample": r["sample"], "raw": r["raw"] or "",
                    "messages_sent": sent,
                    "usage": {"prompt_tokens": t["prompt"], "completion_tokens": t["completion"],
                              "reasoning_tokens": t["reasoning"]},
                    "latency_s": r["latency_s"], "finish_reason": r["finish_reason"],
                    "error": None})
    return out


def build_log(run: Run, suite_path: Path = SUITE, meta: bool = True) -> EvalLog:
    """The eval log inspect would write for ``run``'s answers (the CONTRACT of issue 26)."""
    p = run.params
    by_conv: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in _records(run):
        by_conv.setdefault((r["scenario"], r["layout"], r["repeat"]), []).append(r)
    category = {s.id: s.category for s in run.suite}
    samples = [
        EvalSample(id=f"{sid}/{lay}", epoch=rep + 1, input="", target="",
                   metadata={"scenario": sid, "layout": lay, "category": category[sid]},
                   store={"butterfly_turns": _turns(recs, p.mode == "restate")},
                   scores={"butterfly_scorer": Score(value=1)})
        for (sid, lay, rep), recs in by_conv.items()]
    butterfly = {"suite": "butterfly-40", "suite_path": str(suite_path),
                 "suite_sha256": hashlib.sha256(suite_path.read_bytes()).hexdigest(),
                 "mode": p.mode, "ask_at": p.ask_at, "strategy": p.strategy,
                 "samples": p.samples, "protocol": p.protocol,
                 "prompt_version": run.manifest.prompt_version, "track": p.track,
                 "layouts": list(p.layouts)}
    spec = EvalSpec(created="2026-12-01T10:00:00+00:00", task="butterflybench/butterfly_40",
                    eval_id="EVAL1", run_id="RUN1",
                    dataset=EvalDataset(name="butterfly-40", samples=len(samples),
                                        sample_ids=sorted({str(s.id) for s in samples})),
                    model="butterfly/script/lifo", config=EvalConfig(epochs=p.repeats),
                    model_generate_config=GenerateConfig(temperature=p.temperature,
                                                         max_tokens=p.max_tokens, seed=p.seed),
                    packages={"inspect_ai": "0.3.285"},
                    metadata={"butterfly": butterfly} if meta else {"other": 1})
    return EvalLog(status="success", eval=spec, samples=samples)


def _written(log: EvalLog, path: Path) -> Path:
    write_eval_log(log, str(path))
    return path


def _verdicts(run: Run | Path) -> list[tuple[Any, ...]]:
    """Each conversation's row of ``export`` but the run's path: its verdicts and figures."""
    return sorted(tuple((k, v) for k, v in row.items() if k != "run")
                  for row in api.export([run], "conversation"))


def _score(run: Run | Path) -> dict[str, Any]:
    got = api.score_run(run).to_json()
    return {k: v for k, v in got.items() if k not in ("run",)}


@pytest.mark.parametrize("ext", ["eval", "json"])
def test_an_imported_log_scores_as_the_run_it_came_from(played: Run, tmp_path: Path,
                                                        ext: str) -> None:
    log = _written(build_log(played), tmp_path / f"lifo.{ext}")
    result = api.import_inspect(log, tmp_path / "imported")
    assert result.manifest.status == "complete" and result.not_played == 0
    run = load_run(tmp_path / "imported")  # every integrity check of any run
    assert run.model == "script/lifo" and run.manifest.schema_version == 3
    source = run.manifest.imported_from
    assert source is not None and (source.eval_id, source.run_id) == ("EVAL1", "RUN1")
    assert source.inspect_version == "0.3.285" and source.model == "butterfly/script/lifo"
    assert _score(run) == _score(played)
    assert _verdicts(run) == _verdicts(played)
    assert [r["raw"] for r in _records(run)] == [r["raw"] for r in _records(played)]


def test_show_report_flips_and_compare_read_an_imported_run(played: Run, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    out = tmp_path / "imported"
    api.import_inspect(_written(build_log(played), tmp_path / "l.eval"), out)
    code, text, _ = cli_in_process(capsys, "show", str(out))
    assert code == 0 and played.scenarios[0].id in text
    sid = played.scenarios[0].id
    code, text, _ = cli_in_process(capsys, "show", str(out), "--scenario", sid)
    assert code == 0
    code, _, err = cli_in_process(capsys, "report", str(out), "--html",
                                  str(tmp_path / "r.html"))
    assert code == 0 and (tmp_path / "r.html").is_file(), err
    grid = api.flips([played.path, out])
    assert grid.counts["runs-differ"] == 0
    diff = api.compare(played.path, out, "diff")
    assert diff.n_scenarios == len(played.scenarios) and diff.final_match.diff == 0
    assert not diff.regressed and not diff.improved


def test_the_cli_imports_and_refuses_a_used_out(played: Run, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    log = str(_written(build_log(played), tmp_path / "l.json"))
    out = str(tmp_path / "imported")
    code, _, err = cli_in_process(capsys, "import-inspect", log, "--out", out)
    assert code == 0 and "status complete" in err, err
    code, text, _ = cli_in_process(capsys, "score", out)
    assert code == 0 and f"imported from the inspect log {log} (eval EVAL1" in text
    code, _, err = cli_in_process(capsys, "import-inspect", log, "--out", out)
    assert code == 1 and "--out" in err and "holds a run" in err and err.count("\n") == 1
    code, _, err = cli_in_process(capsys, "run", "--model", "script/lifo", "--suite",
                                  str(SUITE), "--per-category", "1", "--layouts", "E,Q",
                                  "--out", out)
    assert code == 1 and "imported from the inspect log" in err, err


def _one_line(f: Callable[[], object], *words: str) -> None:
    with pytest.raises(UserError) as e:
        f()
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_refusals_are_one_line(played: Run, tmp_path: Path) -> None:
    other = _written(build_log(played, meta=False), tmp_path / "other.eval")
    _one_line(lambda: api.import_inspect(other, tmp_path / "a"),
              "not a log of ButterflyBench's tasks")
    changed = tmp_path / "suite.jsonl"
    changed.write_bytes(SUITE.read_bytes())
    log = _written(build_log(played, suite_path=changed), tmp_path / "copy.eval")
    changed.write_bytes(SUITE.read_bytes() + b"\n")
    _one_line(lambda: api.import_inspect(log, tmp_path / "b"), "not the suite the log played",
              "--suite")
    changed.unlink()
    assert api.import_inspect(log, tmp_path / "c").manifest.suite.path == str(SUITE)  # by name
    _one_line(lambda: api.import_inspect(log, tmp_path / "d", suite=tmp_path / "no.jsonl"),
              "no such file")
    _one_line(lambda: api.import_inspect(log, tmp_path / "d", suite="butterfly-hard"),
              "not the suite the log played")
    by_name = api.import_inspect(log, tmp_path / "h", suite="butterfly-40")
    assert by_name.manifest.suite.path == str(SUITE)
    shutil.copyfile(SUITE, tmp_path / "elsewhere.jsonl")
    run = api.import_inspect(log, tmp_path / "e", suite=tmp_path / "elsewhere.jsonl")
    assert run.manifest.suite.path == str(tmp_path / "elsewhere.jsonl")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "x").write_text("x")
    _one_line(lambda: api.import_inspect(log, tmp_path / "f"), "not empty")
    _one_line(lambda: api.import_inspect(tmp_path / "none.eval", tmp_path / "g"),
              "no such file")
    empty = build_log(played)
    empty.samples = None
    path = _written(empty, tmp_path / "empty.eval")
    _one_line(lambda: api.import_inspect(path, tmp_path / "g"), "holds no samples")
    (tmp_path / "junk.eval").write_text("not a zip")
    _one_line(lambda: api.import_inspect(tmp_path / "junk.eval", tmp_path / "g"),
              "not an inspect eval log")
    for left in ("a", "b", "d", "g"):
        assert not (tmp_path / left).exists()


def test_a_missing_suite_is_one_line(played: Run, tmp_path: Path) -> None:
    gone = tmp_path / "mine.jsonl"
    gone.write_bytes(SUITE.read_bytes())
    log = build_log(played, suite_path=gone)
    log.eval.metadata["butterfly"]["suite"] = "mine"  # type: ignore[index]
    path = _written(log, tmp_path / "l.eval")
    gone.unlink()
    _one_line(lambda: api.import_inspect(path, tmp_path / "a"), "is missing", "--suite FILE")


def test_errors_and_a_stopped_eval_are_counted_honestly(played: Run, tmp_path: Path) -> None:
    log = build_log(played)
    assert log.samples is not None
    first, second, third = log.samples[0], log.samples[1], log.samples[2]
    turns = first.store["butterfly_turns"]
    turns[-1] = {**turns[-1], "raw": "", "error": "RateLimitError: 429 too many requests"}
    second.store["butterfly_turns"] = []
    second.error = EvalError(message="boom", traceback="", traceback_ansi="")
    log.samples.remove(third)  # selected, never played: the eval was cancelled
    log.status = "cancelled"
    result = api.import_inspect(_written(log, tmp_path / "l.eval"), tmp_path / "r")
    assert result.manifest.status == "interrupted"
    assert (result.incomplete, result.not_played) == (2, 1)
    assert result.manifest.n_provider_errors == 2
    score = api.score_run(tmp_path / "r")
    assert score.not_played == 1 and score.incomplete == 2
    failed = [r for r in _records(load_run(tmp_path / "r")) if r["error"]]
    assert [r["error"]["kind"] for r in failed] == ["rate_limit", "server"]
    assert failed[1]["turn"] == 1 and failed[1]["error"]["message"] == "boom"
    log.status = "success"  # inspect says done, yet a selected sample is missing
    again = api.import_inspect(_written(log, tmp_path / "s.eval"), tmp_path / "s")
    assert again.manifest.status == "interrupted" and again.not_played == 1
    log.status, log.error = "error", EvalError(message="quota", traceback="", traceback_ansi="")
    failed_run = api.import_inspect(_written(log, tmp_path / "e.eval"), tmp_path / "e")
    assert failed_run.manifest.status == "failed" and "quota" in str(failed_run.manifest.failure)


def test_messages_that_are_not_butterfly_s_are_refused(played: Run, tmp_path: Path) -> None:
    log = build_log(played)
    assert log.samples is not None
    entry = log.samples[0].store["butterfly_turns"][0]
    entry["messages_sent"] += 1
    path = _written(log, tmp_path / "l.eval")
    _one_line(lambda: api.import_inspect(path, tmp_path / "a"), "message(s) where butterfly")
    assert not (tmp_path / "a").exists() and not (tmp_path / ".a.importing").exists()


def test_tokens_are_carried_and_priced_as_butterfly_prices_them(played: Run,
                                                                tmp_path: Path) -> None:
    log = build_log(played)
    log.eval.model = "openai/gpt-4o-mini"
    log.stats.model_usage = {"openai/gpt-4o-mini": ModelUsage(input_tokens=9, output_tokens=9,
                                                              total_tokens=18, total_cost=0.5)}
    assert log.samples is not None
    for n, entry in enumerate(e for s in log.samples for e in s.store["butterfly_turns"]):
        entry["usage"] = {"prompt_tokens": 1000 + n, "completion_tokens": 200,
                          "reasoning_tokens": None, "cached_tokens": 100}
    run = load_run(api.import_inspect(_written(log, tmp_path / "l.eval"), tmp_path / "r").out)
    assert run.model == "openai/gpt-4o-mini" and run.manifest.imported_from is not None
    assert run.manifest.imported_from.cost_usd == 0.5
    recs = _records(run)
    assert recs[0]["tokens"] == {"prompt": 1000, "completion": 200, "cached": 100,
                                 "reasoning": None, "cache_write": None}
    mini = rates("openai/gpt-4o-mini")
    assert mini is not None
    assert all(r["cost_usd"] == mini.usd(r["tokens"]["prompt"], 200, 100) for r in recs)
    usage = run.manifest.usage
    assert usage is not None and usage.cost_usd is not None and usage.cost_usd > 0


def test_cache_writes_are_carried_and_charged_at_the_write_rate(played: Run,
                                                                tmp_path: Path) -> None:
    """A Claude log's cache writes (inspect's input_tokens_cache_write, which the solver keeps
    as cache_write_tokens) are recorded and charged as butterfly run charges them."""
    from butterfly.models.price_map import rates_for

    model = "anthropic/claude-sonnet-4-5"
    log = build_log(played)
    log.eval.model = model
    assert log.samples is not None
    for entry in (e for s in log.samples for e in s.store["butterfly_turns"]):
        entry["usage"] = {"prompt_tokens": 3000, "completion_tokens": 200,
                          "reasoning_tokens": None, "cached_tokens": 1000,
                          "cache_write_tokens": 1500}
    run = load_run(api.import_inspect(_written(log, tmp_path / "l.eval"), tmp_path / "r").out)
    rates = rates_for(model, None)
    assert rates is not None and rates.write_rate > rates.prompt  # Anthropic: 1.25x input
    for r in _records(run):
        assert r["tokens"]["cache_write"] == 1500
        assert r["cost_usd"] == rates.usd(3000, 200, 1000, 1500)
        assert r["cost_usd"] > rates.usd(3000, 200, 1000)  # the write premium is charged


def _unpriced_log(played: Run, tmp_path: Path) -> str:
    """A log of a self-hosted model (the price map has no price for it), tokens counted."""
    log = build_log(played)
    log.eval.model = "openai/self-hosted-7b"
    assert log.samples is not None
    for n, entry in enumerate(e for s in log.samples for e in s.store["butterfly_turns"]):
        entry["usage"] = {"prompt_tokens": 1000 + n, "completion_tokens": 200,
                          "reasoning_tokens": None, "cached_tokens": 100}
    return str(_written(log, tmp_path / "l.eval"))


def test_a_price_given_prices_every_call_and_is_recorded(played: Run, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """--price-per-mtok (or --price FILE) as run takes it: the manifest records it, each call
    costs its tokens at it, and score and runs say the cost is by the user's price."""
    log, out = _unpriced_log(played, tmp_path), tmp_path / "runs" / "priced"
    code, _, err = cli_in_process(capsys, "import-inspect", log, "--out", str(out),
                                  "--price-per-mtok", "2,8,0.5")
    assert code == 0 and "the user's price ($2 in, $8 out, $0.5 cached" in err, err
    run = load_run(out)
    price = UserPrice(input_per_mtok=2, output_per_mtok=8, cached_input_per_mtok=0.5)
    assert run.params.price == price and run.manifest.imported_from is not None
    recs = _records(run)
    for r in recs:  # uncached prompt tokens at 2, cached at 0.5, completion at 8 per million
        p = r["tokens"]["prompt"]
        assert r["cost_usd"] == pytest.approx(((p - 100) * 2 + 100 * 0.5 + 200 * 8) / 1e6)
        assert r["saved_usd"] == pytest.approx(100 * (2 - 0.5) / 1e6)
    usage = run.manifest.usage
    assert usage is not None and usage.price == price
    assert usage.cost_usd == pytest.approx(sum(r["cost_usd"] for r in recs))
    code, text, _ = cli_in_process(capsys, "score", str(out))
    text = " ".join(text.split())  # the terminal's width wraps the usage line
    assert code == 0 and f"cost ${usage.cost_usd:.4f} at the user's price ($2 in, $8 out, " \
        "$0.5 cached per million tokens)" in text
    code, text, _ = cli_in_process(capsys, "runs", str(tmp_path / "runs"))
    assert code == 0 and "(user price)" in text and "inspect" in text.splitlines()[1].split()
    assert {r["price"] for r in api.export([out], "turn")} == {"user"}
    file = tmp_path / "price.json"
    file.write_text(json.dumps(price.model_dump(exclude={"schema_version"})))
    by_file = api.import_inspect(log, tmp_path / "by-file", price=file)
    assert by_file.manifest.params.price == price
    assert _records(load_run(by_file.out)) == recs
    bare = api.import_inspect(log, tmp_path / "bare")  # the map has no price: no cost
    assert bare.manifest.params.price is None
    assert {r["cost_usd"] for r in _records(load_run(bare.out))} == {None}


@pytest.mark.parametrize("flags", [
    ["--price-per-mtok", "2,x"], ["--price-per-mtok", "2"], ["--price-per-mtok=-1,2"],
    ["--price", "PRICE", "--price-per-mtok", "1,2"], ["--price", "PRICE"]])
def test_a_malformed_price_is_refused_in_one_line(played: Run, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  flags: list[str]) -> None:
    (tmp_path / "price.json").write_text('{"input_per_mtok": 1, "output": 2}')
    flags = [str(tmp_path / "price.json") if f == "PRICE" else f for f in flags]
    out = tmp_path / "r"
    code, _, err = cli_in_process(capsys, "import-inspect", _unpriced_log(played, tmp_path),
                                  "--out", str(out), *flags)
    assert code == 1 and err.count("\n") == 1 and "--price" in err, err
    assert not out.exists()


@pytest.mark.parametrize("flags", [
    {"mode": "restate", "ask_at": "2"},
    {"strategy": "self-consistency", "samples": 3, "temperature": 0.7, "per_category": None,
     "limit": 4}])
def test_restate_asked_at_chosen_turns_and_self_consistency_import_alike(
        flags: dict[str, Any], tmp_path: Path) -> None:
    played = api.run(**{"model": "script/last-edit", "suite": str(SUITE), "per_category": 1,
                        "out": tmp_path / "p", "cache": None, **flags})
    log = build_log(played)
    log.eval.model = "butterfly/script/last-edit"
    got = api.import_inspect(_written(log, tmp_path / "l.eval"), tmp_path / "i")
    mine, theirs = got.manifest.params, played.params
    assert mine.answer_key() == theirs.answer_key()

    def scope(p: RunParams) -> tuple[object, ...]:
        return p.limit, p.per_category, p.layouts, p.repeats, p.ask_at, p.parse

    assert scope(mine) == scope(theirs)
    assert len(_records(load_run(got.out))) == len(_records(played))
    assert _score(tmp_path / "i") == _score(played)
    assert _verdicts(tmp_path / "i") == _verdicts(played)


def test_a_code_track_log_imports_and_scores_as_its_run(tmp_path: Path) -> None:
    suite = ROOT / "tests" / "butterfly" / "code" / "code_suite.jsonl"
    played = api.run(model="script/oracle", suite=str(suite), track="code", limit=1,
                     out=tmp_path / "p", cache=None)
    log = build_log(played, suite_path=suite)
    log.eval.model = "butterfly/script/oracle"
    got = api.import_inspect(_written(log, tmp_path / "l.eval"), tmp_path / "i")
    assert got.manifest.params.track == "code" and got.manifest.status == "complete"
    waiting = api.score_run(tmp_path / "i").code  # the import runs no program
    assert waiting is not None and waiting.unobserved_turns == 5
    assert f"butterfly observe {tmp_path / 'i'}" in " ".join(imported("l.eval", got))
    api.observe(tmp_path / "i")
    assert _score(tmp_path / "i") == _score(played)


def test_another_prompt_version_is_refused(played: Run, tmp_path: Path) -> None:
    log = build_log(played)
    log.eval.metadata["butterfly"]["prompt_version"] = 1  # type: ignore[index]
    path = _written(log, tmp_path / "l.eval")
    _one_line(lambda: api.import_inspect(path, tmp_path / "a"), "prompt version 1",
              "the butterfly version that made it")
