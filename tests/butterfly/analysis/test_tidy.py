"""``butterfly export`` (tidy CSV rows), ``butterfly.load_runs`` and ``butterfly runs``."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

import butterfly
from butterfly.analysis.tidy import CONVERSATION_COLUMNS, TURN_COLUMNS
from butterfly.present.text import mode_cell
from butterfly.suite.load import load_suite
from oracle import replay

SUITE = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")
SUITE_SHA = hashlib.sha256((ROOT / "scenarios" / "butterfly-40.jsonl").read_bytes()).hexdigest()
LIMIT = 6


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs")
    made = {}
    for name in ("oracle", "last-edit"):
        out = base / name
        r = run_cli("run", "--model", f"script/{name}", "--out", str(out), "--limit",
                    str(LIMIT), "--no-cache", "--layouts", "E,Q")
        assert r.returncode == 0, r.stderr
        made[name] = out
    return made


def _csv(*args: str) -> list[dict[str, str]]:
    r = run_cli("export", *args, "--csv", "-")
    assert r.returncode == 0, r.stderr
    return list(csv.DictReader(io.StringIO(r.stdout)))


def test_turn_rows(runs: dict[str, Path]) -> None:
    rows = _csv(str(runs["oracle"]), str(runs["last-edit"]), "--level", "turn")
    assert tuple(rows[0]) == TURN_COLUMNS
    turns = sum(len(s.turns) for s in SUITE[:LIMIT])
    assert len(rows) == 2 * 2 * turns  # two runs, two layouts
    oracle = [r for r in rows if r["model"] == "script/oracle"]
    assert {r["match"] for r in oracle} == {"1"} and {r["collateral"] for r in oracle} == {""}
    assert {r["layout"] for r in oracle} == {"E", "Q"}
    first = oracle[0]
    assert (first["scenario"], first["turn"], first["op"]) == (SUITE[0].id, "1",
                                                               SUITE[0].turns[0].op)
    assert len(first["suite_sha256"]) == 64
    last = [r for r in rows if r["model"] == "script/last-edit"]
    assert "0" in {r["match"] for r in last}


def test_conversation_rows_agree_with_score(runs: dict[str, Path]) -> None:
    rows = _csv(str(runs["last-edit"]))
    assert tuple(rows[0]) == CONVERSATION_COLUMNS
    assert len(rows) == 2 * LIMIT and {r["complete"] for r in rows} == {"1"}
    score = json.loads(run_cli("score", str(runs["last-edit"]), "--json").stdout)
    fm = sum(int(r["final_match"]) for r in rows) / len(rows)
    assert fm == pytest.approx(score["final_match"])
    by_id = {(r["scenario"], r["layout"]): r for r in rows}
    for s in SUITE[:LIMIT]:
        verdict = next(v for v in score["scenarios"] if v["id"] == s.id and v["layout"] == "E")
        row = by_id[(s.id, "E")]
        assert row["final_match"] == str(int(verdict["final_match"]))
        assert row["first_divergent_turn"] == ("" if verdict["first_divergent_turn"] is None
                                               else str(verdict["first_divergent_turn"]))
        assert row["n_turns"] == str(len(replay(s)) - 1)


def test_export_names_the_suite_and_no_price_source_for_a_scripted_agent(
        runs: dict[str, Path]) -> None:
    """The suite's name and version, never the absolute path it was read from on the machine
    that made the run (it was ``/work/.../scenarios/butterfly-40.jsonl``); no price source for
    a run no call of which was priced (it said ``litellm`` for a scripted agent)."""
    from butterfly.suite.load import frozen_version

    version = frozen_version(SUITE_SHA)
    assert version is not None and version[0] == "butterfly-40"
    for level in ("turn", "conversation"):
        rows = _csv(str(runs["oracle"]), "--level", level)
        assert {(r["suite"], r["suite_version"]) for r in rows} == {
            ("butterfly-40", str(version[1]))}
        assert {r["price"] for r in rows} == {""} and {r["cost_usd"] for r in rows} == {""}
        assert not any("/" in r["suite"] for r in rows)


def test_load_runs_is_a_dataframe(runs: dict[str, Path]) -> None:
    pytest.importorskip("pandas")
    df = butterfly.load_runs([runs["oracle"], runs["last-edit"]])
    assert list(df.columns) == list(CONVERSATION_COLUMNS) and len(df) == 4 * LIMIT
    means = df.groupby("model")["final_match"].mean()
    assert means["script/oracle"] == 1.0 and means["script/last-edit"] < 1.0
    turns = butterfly.load_runs([runs["oracle"]], level="turn")
    assert len(turns) == 2 * sum(len(s.turns) for s in SUITE[:LIMIT])
    assert butterfly.tidy_rows([runs["oracle"]])[0]["final_match"] == 1


def test_runs_lists_every_run_directory(runs: dict[str, Path], tmp_path: Path) -> None:
    base = runs["oracle"].parent
    r = run_cli("runs", str(base))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["run", "model", "suite"] and len(lines) == 3
    assert "script/oracle" in r.stdout and "100.0% (12)" in r.stdout
    assert "E,Q" in r.stdout and "complete" in r.stdout
    data = json.loads(run_cli("runs", str(base), "--json").stdout)
    version = data[0]["suite_version"]  # the suite's version beside its name
    assert data[0]["suite"] == "butterfly-40" and isinstance(version, int) and version >= 1
    assert f"butterfly-40 v{version}" in r.stdout
    assert [d["model"] for d in data] == ["script/last-edit", "script/oracle"]
    assert data[1]["final_match"] == 1.0 and data[1]["cost_usd"] is None
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{}")
    r = run_cli("runs", str(tmp_path))
    assert r.returncode == 0 and "unreadable" in r.stdout


def test_runs_shows_no_cost_when_no_answer_is_priced(runs: dict[str, Path],
                                                   tmp_path: Path) -> None:
    """Every call of a run failed: nothing was priced, so no cost (it showed $0.0000)."""
    from conftest import rewrite_calls, rewrite_manifest

    out = tmp_path / "failed"
    out.mkdir()
    for name in ("manifest.json", "suite.jsonl", "calls.jsonl"):
        (out / name).write_bytes((runs["oracle"] / name).read_bytes())
    failed = []
    for line in (out / "calls.jsonl").read_text().splitlines()[:2]:
        rec = json.loads(line)
        rec.update(raw=None, spec=None, abstention=None, cost_usd=None,
                   error={"kind": "connection", "message": "refused"})
        failed.append(json.dumps(rec))
    rewrite_calls(out, failed)
    rewrite_manifest(out, status="incomplete", n_calls=0, n_provider_errors=2)
    data = json.loads(run_cli("runs", str(tmp_path), "--json").stdout)
    assert data[0]["path"].endswith("failed") and data[0]["cost_usd"] is None, data[0]
    row = next(x for x in run_cli("runs", str(tmp_path)).stdout.splitlines() if "failed" in x)
    assert row.split()[-3] == "-" and "$" not in row  # cost; then cached, reasoning


def _copy(run: Path, to: Path) -> Path:
    to.mkdir()
    for name in ("manifest.json", "suite.jsonl", "calls.jsonl"):
        shutil.copyfile(run / name, to / name)
    return to


SOURCE = {"log": "logs/x.eval", "log_sha256": "0" * 64, "inspect_version": "0.3.285",
          "eval_id": "EVAL1", "run_id": "RUN1", "task": "butterflybench/butterfly_40",
          "created": "2026-12-01T10:00:00+00:00", "status": "success",
          "model": "butterfly/script/oracle", "samples": 12, "cost_usd": None}


def test_runs_shows_ask_points_and_an_imported_run(runs: dict[str, Path],
                                                   tmp_path: Path) -> None:
    """The mode with its ask points, and the source (butterfly, or an inspect log), in the
    table and in --json; version 1 and 2 manifests, which have neither, still list."""
    from conftest import rewrite_manifest

    r = run_cli("run", "--model", "script/oracle", "--out", str(tmp_path / "asked"), "--limit",
                "3", "--mode", "restate", "--ask-at", "2", "--no-cache", "--layouts", "E")
    assert r.returncode == 0, r.stderr
    rewrite_manifest(_copy(runs["oracle"], tmp_path / "imported"), imported_from=SOURCE)
    rewrite_manifest(_copy(runs["last-edit"], tmp_path / "v2"), schema_version=2)
    _copy(ROOT / "runs" / "local-smollm2__butterfly-40__restate-v2-cot-5", tmp_path / "v1")
    data = {Path(str(d["path"])).name: d
            for d in json.loads(run_cli("runs", str(tmp_path), "--json").stdout)}
    got = {k: (d["mode"], d["ask_at"], d["imported_from"], d["sealed"]) for k, d in data.items()}
    assert got == {"asked": ("restate", [2], None, True), "imported": ("chat", None, SOURCE, True),
                   "v2": ("chat", None, None, True), "v1": ("restate", None, None, False)}
    rows = {Path(x.split()[0]).name: x.split()
            for x in run_cli("runs", str(tmp_path)).stdout.splitlines()[1:]}
    assert {k: tuple(cells[8:10]) for k, cells in rows.items()} == {  # suite: NAME vN
        "asked": ("restate@2+last", "butterfly"), "imported": ("chat", "inspect"),
        "v2": ("chat", "butterfly"), "v1": ("restate", "butterfly")}


def test_the_mode_cell_is_compact() -> None:
    assert [mode_cell("chat", None), mode_cell("restate", None), mode_cell("restate", ())] == [
        "chat", "restate", "restate@last"]
    assert mode_cell("restate", (5, 10, 20, 40)) == "restate@5,10,20,40+last"
    assert mode_cell("restate", (10, 20, 50, 100, 5000)) == "restate@10,20,...,5000+last"


def test_export_refuses_an_unknown_level(runs: dict[str, Path]) -> None:
    r = run_cli("export", str(runs["oracle"]), "--csv", "-", "--level", "scenario")
    assert r.returncode == 2
