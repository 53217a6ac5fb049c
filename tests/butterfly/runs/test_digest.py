"""Tamper evidence over content (issue 21): the rolling digest of the records and the seal of
the manifest, the parse check of every stored spec, resumes that continue the digest, runs
made before it, and ``butterfly repair``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT, cli_in_process

from butterfly.cli import main
from butterfly.runs.digest import START, chain_of
from butterfly.runs.reader import load_run

ORACLE = ["--model", "script/oracle", "--no-cache"]
Edit = Callable[[Path], None]


cli = cli_in_process


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sealed") / "run"
    assert main(["run", *ORACLE, "--out", str(out), "--limit", "3"]) == 0
    return out


def _copy(src: Path, tmp_path: Path, name: str = "run") -> Path:
    shutil.copytree(src, tmp_path / name)
    return tmp_path / name


def _edit_record(n: int, change: Callable[[dict[str, object]], None]) -> Edit:
    def edit(out: Path) -> None:
        lines = (out / "calls.jsonl").read_text().splitlines()
        rec = json.loads(lines[n - 1])
        change(rec)
        lines[n - 1] = json.dumps(rec, separators=(",", ":"))
        (out / "calls.jsonl").write_text("".join(x + "\n" for x in lines))
    return edit


def _right_answer_of(rec: dict[str, object]) -> None:
    """The finding's edit: a wrong answer made right, raw and spec together (and the spec kept
    the parse of the raw, so only the digest can tell)."""
    spec = dict(rec["spec"])  # type: ignore[call-overload]
    spec["retries"] = "5" if spec["retries"] != "5" else "3"
    rec["spec"], rec["raw"] = spec, json.dumps(spec)


def _manifest_limit(out: Path) -> None:
    m = json.loads((out / "manifest.json").read_text())
    m["params"]["limit"] = 2
    (out / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")


EDITS: dict[str, tuple[Edit, str]] = {
    "raw and spec of record 5": (_edit_record(5, _right_answer_of), "calls.jsonl:5: the digest "
                                 "breaks: line 5 is not the record written there"),
    "raw and spec of the last record": (_edit_record(12, _right_answer_of),
                                        "calls.jsonl:12: the digest breaks: line 12"),
    "a scenario renamed in record 3": (_edit_record(3, lambda r: r.update(scenario="other")),
                                       "calls.jsonl:3: the digest breaks"),
    "a spec alone": (_edit_record(4, lambda r: r["spec"].update(retries="5")),  # type: ignore
                     "calls.jsonl:4: the stored spec is not the parse of the stored raw answer"),
    "the manifest's params.limit": (_manifest_limit, "manifest.json: the manifest differs "
                                    "from its seal"),
    "a record removed": (lambda out: (out / "calls.jsonl").write_text("".join(
        (out / "calls.jsonl").read_text().splitlines(keepends=True)[1:])),
        "line 1 links to lines that are not there"),
}


@pytest.mark.parametrize("what", sorted(EDITS))
def test_each_edit_is_refused_by_every_reader_naming_where(
        sealed_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str) -> None:
    out = _copy(sealed_run, tmp_path)
    edit, needle = EDITS[what]
    edit(out)
    for cmd in (["score", str(out), "--json"], ["show", str(out)], ["flips", str(out)],
                ["run", *ORACLE, "--out", str(out), "--limit", "3"]):
        code, _, err = cli(capsys, *cmd)
        assert code == 1 and needle in err and err.count("\n") == 1, (cmd, err)


def test_a_spec_edited_in_a_run_made_before_the_digest_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(ROOT / "runs" / "script-last-edit__butterfly-40__v1", tmp_path)
    assert load_run(out).digest.sealed is None  # the premise: unsealed
    lines = (out / "calls.jsonl").read_text().splitlines()
    n = next(i for i, x in enumerate(lines, 1) if json.loads(x)["turn"] == 2)
    _edit_record(n, lambda r: r["spec"].update(retries="5"))(out)  # type: ignore[index]
    code, _, err = cli(capsys, "score", str(out), "--json")
    assert code == 1 and f"calls.jsonl:{n}: the stored spec is not the parse" in err, err


@pytest.mark.parametrize("run", sorted(p.parent.name if p.parent.parent.name == "runs" else
                                       f"{p.parent.parent.name}/{p.parent.name}"
                                       for p in (ROOT / "runs").rglob("manifest.json")))
def test_committed_runs_read_as_made_before_the_digest(run: str) -> None:
    loaded = load_run(ROOT / "runs" / run)
    if run in SEALED_RUNS:  # committed after the digest: sealed, every record linked
        assert loaded.manifest.schema_version == 2 and loaded.manifest.seal is not None
        assert loaded.digest.sealed == loaded.digest.records
        return
    assert loaded.manifest.schema_version == 1 and loaded.manifest.seal is None
    assert loaded.digest.sealed is None and "made before the digest" in loaded.digest.label()


SEALED_RUNS = {"local-smollm2__butterfly-code__limit-4"}
"""Committed runs made after issue 21's digest (the code track's, issue 23)."""


def test_a_fresh_run_is_sealed_and_links_every_record(sealed_run: Path) -> None:
    m = json.loads((sealed_run / "manifest.json").read_text())
    lines = (sealed_run / "calls.jsonl").read_bytes().splitlines(keepends=True)
    assert m["schema_version"] == 3 and m["seal"]["records"] == len(lines) == 12
    assert m["seal"]["calls_sha256"] == chain_of(sealed_run / "calls.jsonl").sha256
    assert json.loads(lines[0])["chain_sha256"] == START
    assert load_run(sealed_run).digest.label() == "sealed (12 records)"


def test_a_resume_continues_the_digest(sealed_run: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(sealed_run, tmp_path)
    before = chain_of(out / "calls.jsonl")
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3",
                       "--layouts", "E,Q")
    assert code == 0, err
    lines = (out / "calls.jsonl").read_text().splitlines()
    assert len(lines) == 24 and json.loads(lines[12])["chain_sha256"] == before.sha256
    assert load_run(out).digest.label() == "sealed (24 records)"


def _made_before_the_digest(out: Path) -> None:
    """Rewrite a run as the harness wrote it before the digest: version 1, no links, no seal."""
    recs = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    for r in recs:
        r.update(schema_version=1)
        del r["chain_sha256"]
    (out / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    m = json.loads((out / "manifest.json").read_text())
    m.update(schema_version=1)
    for key in ("seal", "repaired"):
        del m[key]
    (out / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")


def test_a_run_made_before_the_digest_is_sealed_from_its_resume(
        sealed_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(sealed_run, tmp_path)
    _made_before_the_digest(out)
    assert load_run(out).digest.label().startswith("made before the digest")
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3",
                       "--layouts", "E,Q")
    assert code == 0, err
    run = load_run(out)
    assert run.digest.unlinked == 12 and run.manifest.schema_version == 3
    assert run.digest.sealed == 24 and "made before the digest" in run.digest.label()
    _edit_record(3, _right_answer_of)(out)  # an old record, edited after the resume sealed it
    code, _, err = cli(capsys, "score", str(out))
    assert code == 1 and "the digest breaks" in err, err
