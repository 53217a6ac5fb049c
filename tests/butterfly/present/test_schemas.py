"""Published JSON Schemas agree with the pydantic models, and with each other on real records."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from conftest import ROOT
from pydantic import ValidationError

from butterfly.present.schemas import SCHEMAS, render
from oracle import Scenario

SCHEMA_DIR = ROOT / "docs" / "schemas"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schema_equals_model(name: str) -> None:
    committed = (SCHEMA_DIR / name).read_text()
    assert committed == render(name), f"run: butterfly schema  (docs/schemas/{name} is stale)"


def _scenario_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / "scenario.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_every_suite_line_validates_against_schema() -> None:
    v = _scenario_validator()
    for line in (ROOT / "scenarios" / "butterfly-40.jsonl").read_text().splitlines():
        v.validate(json.loads(line))


def _mutations(rec: dict) -> list[dict]:  # type: ignore[type-arg]
    out = []

    def mut(f):  # type: ignore[no-untyped-def]
        r = copy.deepcopy(rec)
        f(r)
        out.append(r)

    mut(lambda r: r.__setitem__("extra", 1))
    mut(lambda r: r.pop("initial"))
    mut(lambda r: r["initial"].pop("encoding"))
    mut(lambda r: r["initial"].__setitem__("encoding", "ascii"))
    mut(lambda r: r["initial"].__setitem__("speed", "fast"))
    mut(lambda r: r.__setitem__("turns", []))
    # over 10,000 turns (the record's limit; a suite's own, 200 without ask points, is load_suite's)
    mut(lambda r: r.__setitem__("turns", r["turns"] * (10_000 // len(r["turns"]) + 1)))
    mut(lambda r: r["turns"][0].__setitem__("op", "undo_all"))
    mut(lambda r: r["turns"][0].__setitem__("colour", "red"))
    mut(lambda r: r["turns"][0].pop("text"))
    mut(lambda r: r.__setitem__("category", "other"))
    mut(lambda r: r.__setitem__("schema_version", 2))
    mut(lambda r: r.__setitem__("source", "llm"))
    return out


def test_schema_and_model_reject_the_same_mutations() -> None:
    v = _scenario_validator()
    rec = json.loads((ROOT / "scenarios" / "butterfly-40.jsonl").read_text().splitlines()[0])
    for bad in _mutations(rec):
        schema_ok = v.is_valid(bad)
        try:
            Scenario.model_validate_json(json.dumps(bad))
            model_ok = True
        except ValidationError:
            model_ok = False
        assert schema_ok == model_ok == False, bad  # noqa: E712


def test_run_records_validate_against_their_schemas(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

    out = tmp_path / "run"
    assert run_cli("run", "--model", "script/lifo", "--out", str(out), "--limit", "6",
                   "--no-cache").returncode == 0
    manifest = json.loads((SCHEMA_DIR / "run-manifest.schema.json").read_text())
    calls = json.loads((SCHEMA_DIR / "call-record.schema.json").read_text())
    jsonschema.validate(json.loads((out / "manifest.json").read_text()), manifest)
    v = jsonschema.Draft202012Validator(calls)
    lines = (out / "calls.jsonl").read_text().splitlines()
    assert lines
    for line in lines:
        v.validate(json.loads(line))


@pytest.mark.parametrize("run", ["script-noisy-p-0.2__butterfly-40__v1-layouts-repeats-2",
                                 "local-smollm2__butterfly-40__v1-layouts-repeats-2"])
def test_score_json_of_committed_runs_validates_against_the_report_schema(run: str) -> None:
    from butterfly.analysis.scoring import score_run

    schema = json.loads((SCHEMA_DIR / "score-report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(score_run(ROOT / "runs" / run).to_json())
