"""Shards (``run --shard I/N``) and ``butterfly merge``: a sweep split into shards merges into
exactly the numbers of one run, in any order; every way shards can fail to be one sweep is
refused in one line; the merged run is a normal run (read, scored, resumed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, rewrite_calls, rewrite_manifest, same_answers

import butterfly
from butterfly.analysis.scoring import score_run
from butterfly.cli import main
from butterfly.errors import UserError
from butterfly.runs import merge as merge_module
from butterfly.runs.merge import merge
from butterfly.runs.records import RunManifest, RunParams, Shard
from butterfly.runs.scope import conversations, select
from butterfly.runs.shards import owners, parse_shard
from butterfly.suite.load import load_suite

AGENT = "script/noisy:p=0.3"
SWEEP: dict[str, Any] = {"model": AGENT, "suite": "butterfly-40", "layouts": "E,Q",
                         "repeats": 2, "limit": 12, "cache": None}


def _score(out: Path) -> dict[str, Any]:
    return same_answers(score_run(out).to_json())


def _shards(tmp: Path, n: int = 2, **over: Any) -> list[Path]:
    outs = [tmp / f"s{i}" for i in range(1, n + 1)]
    for i, out in enumerate(outs, 1):
        butterfly.run(**{**SWEEP, **over}, shard=f"{i}/{n}", out=out)
    return outs


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """One whole run and the same sweep in two shards."""
    tmp = tmp_path_factory.mktemp("sweep")
    butterfly.run(**SWEEP, out=tmp / "whole")
    return tmp / "whole", _shards(tmp)


def test_shards_are_disjoint_cover_the_run_and_balance_calls() -> None:
    suite = load_suite(ROOT / "scenarios" / "butterfly-long.jsonl")
    every = RunParams(layouts=("E", "Q"), repeats=2)
    whole = conversations(select(suite, every), every)
    for n in (1, 2, 3, 5):
        parts = [conversations(suite, every.model_copy(update={"shard": Shard(index=i,
                                                                             count=n)}))
                 for i in range(1, n + 1)]
        keys = [(s.id, lay, r) for part in parts for s, lay, r in part]
        assert sorted(keys) == sorted((s.id, lay, r) for s, lay, r in whole)  # each once
        calls = [sum(len(s.turns) for s, _, _ in part) for part in parts]
        assert max(calls) - min(calls) <= max(len(s.turns) for s in suite)
    assert owners([5, 5, 1, 9], 2) == [1, 1, 0, 0]  # longest first: 9 | 5, then 5 | 1


def test_shard_flag_refusals() -> None:
    assert parse_shard("2/3") == Shard(index=2, count=3)
    for bad in ("0/2", "3/2", "2", "a/b", "1/0", "-1/2"):
        with pytest.raises(UserError, match="--shard takes I/N"):
            parse_shard(bad)


def test_two_shards_merge_into_exactly_one_run_in_any_order(
        sweep: tuple[Path, list[Path]], tmp_path: Path) -> None:
    whole, (s1, s2) = sweep
    merge([s2, s1], tmp_path / "m21")
    merge([s1, s2], tmp_path / "m12")
    assert _score(tmp_path / "m21") == _score(tmp_path / "m12") == _score(whole)
    assert ((tmp_path / "m21" / "calls.jsonl").read_bytes()
            == (tmp_path / "m12" / "calls.jsonl").read_bytes())
    m = RunManifest.model_validate_json((tmp_path / "m21" / "manifest.json").read_text())
    assert m.params.shard is None and m.status == "complete"
    assert [str(x.shard) for x in m.merged_from] == ["1/2", "2/2"]
    w = RunManifest.model_validate_json((whole / "manifest.json").read_text())
    assert (m.n_calls, m.usage) == (w.n_calls, w.usage)
    assert not list(tmp_path.glob(".*merging*"))  # the temp directory is gone


def test_a_shard_alone_says_so_with_honest_denominators(sweep: tuple[Path, list[Path]],
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    _, (s1, s2) = sweep
    one, two = score_run(s1), score_run(s2)
    assert (one.shard, two.shard) == ("1/2", "2/2")
    assert one.sweep_conversations == two.sweep_conversations == 12 * 2 * 2
    assert one.n_total + two.n_total == 48 and one.not_played == two.not_played == 0
    assert main(["score", str(s1)]) == 0
    assert "shard 1/2 of a sweep" in capsys.readouterr().out
    assert main(["show", str(s1)]) == 0 and main(["runs", str(s1.parent)]) == 0
    from butterfly.analysis.transcripts import load

    suite = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")[:12]
    theirs = {(s.id, lay, r) for s, lay, r in conversations(suite, RunParams(
        layouts=("E", "Q"), repeats=2, shard=Shard(index=2, count=2)))}
    sid, lay, rep = sorted(theirs)[0]
    with pytest.raises(UserError, match="shard 1/2 played no conversation of"):
        load(s1, sid, lay, rep)
    _, shown = load(s2, sid, lay, rep)
    assert shown[0]["verdict"] != "-"
    from butterfly.analysis.report import report_data

    page = report_data([s1])
    assert page.runs[0].label == f"{AGENT} [shard 1/2]"
    assert len(page.conversations) == one.n_total  # its own, not the sweep's


def test_a_resume_keeps_the_shard(sweep: tuple[Path, list[Path]]) -> None:
    _, (s1, _) = sweep
    for shard, why in ((None, "no --shard"), ("2/2", "--shard 2/2"), ("1/3", "--shard 1/3")):
        with pytest.raises(UserError, match=f"was run with --shard 1/2; this is {why}"):
            butterfly.run(**{**SWEEP, "shard": shard}, out=s1)
    with pytest.raises(UserError, match="a shard resumes with exactly those"):
        butterfly.run(**{**SWEEP, "repeats": 3}, shard="1/2", out=s1)
    butterfly.run(**SWEEP, shard="1/2", out=s1)  # the same command resumes (nothing to do)


def _refused(shards: list[Path], out: Path, match: str) -> None:
    with pytest.raises(UserError, match=match):
        merge(shards, out)
    assert not out.exists() or not any(p.name != "writer.lock" for p in out.iterdir())


def test_merge_refuses_what_is_not_one_sweep(sweep: tuple[Path, list[Path]],
                                             tmp_path: Path) -> None:
    whole, (s1, s2) = sweep
    out = tmp_path / "m"
    _refused([s1, whole], out, "is not a shard")
    _refused([s1, s1], out, "are the same directory")
    _refused([s1], out, r"shard\(s\) 2/2 missing")
    other = tmp_path / "other"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"suite": "butterfly-hard"}, "suite"),
        ({"model": "script/oracle"}, "model"),
        ({"temperature": 0.5}, "answer-changing"),
        ({"strategy": "few-shot"}, "answer-changing"),
        ({"parse": "strict"}, "--parse"),
        ({"limit": 10}, "--limit"),
        ({"repeats": 1}, "--repeats"),
    ]
    for n, (over, why) in enumerate(cases):
        butterfly.run(**{**SWEEP, **over}, shard="2/2", out=other / str(n))
        _refused([s1, other / str(n)], out, f"not shards of one sweep: .*{why}")
    three = _shards(tmp_path / "three", 3)
    _refused([s1, three[1]], out, "2 shards vs 3 shards")
    _refused([three[0], three[0].parent / "s1"], out, "same directory")
    butterfly.run(**SWEEP, shard="2/2", out=other / "again")
    _refused([s2, other / "again"], out, "are both shard 2/2")
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("x")
    with pytest.raises(UserError, match="is not empty"):
        merge([s1, s2], full)
    assert sorted(p.name for p in full.iterdir()) == ["notes.txt", "writer.lock"]


def test_merge_prompt_and_version_must_match(sweep: tuple[Path, list[Path]],
                                             tmp_path: Path) -> None:
    _, (s1, s2) = sweep
    for field, value, why in (("prompt_sha256", "0" * 64, "prompt"),
                              ("butterfly_version", "0.0.1", "butterfly 0.0.1")):
        edited = tmp_path / field
        subprocess.run(["cp", "-r", str(s2), str(edited)], check=True)
        rewrite_manifest(edited, **{field: value})
        _refused([s1, edited], tmp_path / "m", f"not shards of one sweep: .*{why}")


def test_merge_refuses_a_call_in_two_shards(sweep: tuple[Path, list[Path]],
                                            tmp_path: Path) -> None:
    _, (s1, s2) = sweep
    dup = tmp_path / "dup"
    subprocess.run(["cp", "-r", str(s2), str(dup)], check=True)
    first = (s1 / "calls.jsonl").read_text().splitlines()[0]
    rewrite_calls(dup, [*(dup / "calls.jsonl").read_text().splitlines(), first])
    data = json.loads((dup / "manifest.json").read_text())
    rewrite_manifest(dup, n_calls=data["n_calls"] + 1)  # the shard alone reads as intact
    _refused([s1, dup], tmp_path / "m", "not in shard 2/2's slice: a call copied between "
             "shards")


def test_merge_reads_each_shard_through_the_integrity_checks(
        sweep: tuple[Path, list[Path]], tmp_path: Path) -> None:
    _, (s1, s2) = sweep
    cut = tmp_path / "cut"
    subprocess.run(["cp", "-r", str(s2), str(cut)], check=True)
    lines = (cut / "calls.jsonl").read_text().splitlines(keepends=True)
    (cut / "calls.jsonl").write_text("".join(lines[:-3]))
    _refused([s1, cut], tmp_path / "m", "the manifest's seal covers")


def test_a_killed_merge_leaves_no_run(sweep: tuple[Path, list[Path]], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _, (s1, s2) = sweep
    real = os.replace
    out = tmp_path / "m"

    def dies_before_the_manifest(src: Any, dst: Any) -> None:
        if Path(dst) == out / "manifest.json":  # killed as the last file is moved in
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(merge_module.os, "replace", dies_before_the_manifest)
    with pytest.raises(KeyboardInterrupt):
        merge([s1, s2], out)
    assert not out.exists()  # interrupted before the manifest: nothing left behind
    out.mkdir()
    with pytest.raises(KeyboardInterrupt):
        merge([s1, s2], out)  # an --out that was there: its moved-in files stay, no manifest
    assert not (out / "manifest.json").exists() and (out / "calls.jsonl").exists()
    with pytest.raises(UserError, match="not a run directory"):
        butterfly.load_run(out)


def test_an_incomplete_shard_makes_an_incomplete_merge_that_a_run_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakeserver import FakeServer

    whole, flaky = tmp_path / "whole", tmp_path / "s1"
    common = {**SWEEP, "model": "openai/fake", "limit": 3, "layouts": "E", "repeats": 1,
              "retries": 0, "timeout": 5}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(lambda body: '{"a": 1}', faults=lambda i: "500" if i == 0 else None
                    ) as bad, FakeServer(lambda body: '{"a": 1}') as good:
        butterfly.run(**common, api_base=bad.api_base, shard="1/2", out=flaky)
        butterfly.run(**common, api_base=good.api_base, shard="2/2", out=tmp_path / "s2")
        butterfly.run(**common, api_base=good.api_base, out=whole)
        merged = tmp_path / "merged"
        m = merge([flaky, tmp_path / "s2"], merged)
        assert m.status == "incomplete" and m.n_provider_errors >= 1
        assert m.incomplete_scenarios
        run = butterfly.run(**common, api_base=good.api_base, out=merged)
    assert run.manifest.status == "complete" and run.manifest.merged_from == m.merged_from
    assert _score(merged) == _score(whole)


def test_merge_never_imports_litellm(sweep: tuple[Path, list[Path]], tmp_path: Path) -> None:
    _, (s1, s2) = sweep
    code = ("import sys\nfrom butterfly.cli import main\n"
            f"rc = main(['merge', {str(s1)!r}, {str(s2)!r}, '--out', "
            f"{str(tmp_path / 'm')!r}])\n"
            "assert rc == 0 and 'litellm' not in sys.modules, 'litellm was imported'\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "merged 2 shards" in r.stderr


def test_the_merged_run_reads_as_one_run_everywhere(sweep: tuple[Path, list[Path]],
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    whole, (s1, s2) = sweep
    merged = tmp_path / "merged"
    assert main(["merge", str(s1), str(s2), "--out", str(merged)]) == 0
    for run in (whole, merged):
        assert main(["export", str(run), "--csv", str(tmp_path / f"{run.name}.csv"),
                     "--level", "turn"]) == 0
    # the same rows but the model name (first) and the seconds each call took (latency_s, last)
    rows = [(tmp_path / f"{r}.csv").read_text().splitlines() for r in ("whole", "merged")]
    assert rows[0][0].endswith(",latency_s")
    assert [x.split(",", 1)[1].rsplit(",", 1)[0] for x in rows[0]] == [
        x.split(",", 1)[1].rsplit(",", 1)[0] for x in rows[1]]
    assert main(["report", str(merged), str(s1), "--html", str(tmp_path / "r.html")]) == 0
    assert main(["compare", str(whole), str(merged), "--json"]) == 0
    capsys.readouterr()
    assert main(["runs", str(s1.parent)]) == 0
    listing = capsys.readouterr().out
    assert "complete (shard 1/2)" in listing and "complete (shard 2/2)" in listing
    assert main(["show", str(merged), "--scenario", load_suite(ROOT / "scenarios" /
                                                               "butterfly-40.jsonl")[0].id]) == 0


def test_merge_refuses_other_layouts_and_a_shard_being_written(
        sweep: tuple[Path, list[Path]], tmp_path: Path) -> None:
    from butterfly.runs.lock import writer_lock

    _, (s1, s2) = sweep
    butterfly.run(**{**SWEEP, "layouts": "E"}, shard="2/2", out=tmp_path / "e")
    _refused([s1, tmp_path / "e"], tmp_path / "m", "not shards of one sweep: .*--layouts E,Q")
    live = tmp_path / "live"
    subprocess.run(["cp", "-r", str(s2), str(live)], check=True)
    rewrite_manifest(live, status="running")
    with writer_lock(live):
        _refused([s1, live], tmp_path / "m", "still being written")
    merge([s1, live], tmp_path / "m")  # its writer died: read as interrupted, and merged
    m = RunManifest.model_validate_json((tmp_path / "m" / "manifest.json").read_text())
    assert m.status == "interrupted"


def test_merge_takes_str_paths(sweep: tuple[Path, list[Path]], tmp_path: Path) -> None:
    _, (s1, s2) = sweep
    m = merge([str(s2), str(s1)], str(tmp_path / "m"))  # it raised AttributeError on a str
    assert m.status == "complete" and len(m.merged_from) == 2


def test_cli_refusals_are_one_line_with_exit_1(sweep: tuple[Path, list[Path]], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    whole, (s1, _) = sweep
    assert main(["merge", str(s1), str(whole), "--out", str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a shard" in err and "Traceback" not in err
    assert main(["run", "--model", "script/oracle", "--shard", "3/2", "--out",
                 str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--shard takes I/N" in err and not (tmp_path / "x").exists()


def _content(run: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in json.loads(x).items() if k != "chain_sha256"}
            for x in (run / "calls.jsonl").read_text().splitlines()]


def test_merge_links_the_records_anew_and_keeps_their_content(
        sweep: tuple[Path, list[Path]], tmp_path: Path) -> None:
    from butterfly.runs.reader import load_run

    _, (s1, s2) = sweep
    merge([s2, s1], tmp_path / "m")
    assert _content(tmp_path / "m") == _content(s1) + _content(s2)
    n = len(_content(tmp_path / "m"))
    assert load_run(tmp_path / "m").digest.label() == f"sealed ({n} records)"
    old = tmp_path / "old"  # shard 2 as the harness wrote it before the digest
    subprocess.run(["cp", "-r", str(s2), str(old)], check=True)
    recs = [{**r, "schema_version": 1} for r in _content(old)]
    (old / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    m = json.loads((old / "manifest.json").read_text())
    m.update(schema_version=1)
    del m["seal"], m["repaired"]
    (old / "manifest.json").write_text(json.dumps(m))
    _refused([s1, old], tmp_path / "m2", "not shards of one sweep: a manifest of version 3 vs "
             "a manifest of version 1")
