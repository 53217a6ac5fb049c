"""The published JSON Schemas of every record and result format, generated from the pydantic
models.

``docs/schemas/`` holds the committed files; a test fails when they differ from the models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from butterfly.analysis.results import Calibration, CompareResult, SequentialResult
from butterfly.analysis.sweep_records import SweepBill, SweepResult
from butterfly.core.scores import RunScore
from butterfly.core.user_price import UserPrice
from butterfly.files import write_text_atomic
from butterfly.runs.dryrun import DryRun
from butterfly.runs.observe import Observation, ObservationSeal
from butterfly.runs.records import CallRecord, RunManifest
from oracle import Scenario, SuiteManifest, spec_json_schema


def _titled(schema: dict[str, Any], title: str, description: str) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        **{k: v for k, v in schema.items() if k not in {"title", "description"}},
    }


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "scenario.schema.json": lambda: _titled(
        Scenario.model_json_schema(),
        "ButterflyBench scenario",
        "One line of a suite file (JSON Lines): an initial spec and 1 to 200 user turns "
        "(1 to 10 in butterfly-40).",
    ),
    "suite-manifest.schema.json": lambda: _titled(
        SuiteManifest.model_json_schema(),
        "ButterflyBench suite manifest",
        "Provenance of a frozen suite: seed, generator version and content hash.",
    ),
    "run-manifest.schema.json": lambda: _titled(
        RunManifest.model_json_schema(),
        "ButterflyBench run manifest",
        "manifest.json of a run directory: suite, model and every parameter; never a secret.",
    ),
    "price.schema.json": lambda: _titled(
        UserPrice.model_json_schema(),
        "ButterflyBench price",
        "butterfly run --price FILE: a model's price in USD per million input, output and "
        "(optionally) cached-input tokens, used for every call's cost (docs/cost.md).",
    ),
    "call-record.schema.json": lambda: _titled(
        CallRecord.model_json_schema(),
        "ButterflyBench call record",
        "One line of calls.jsonl: what was sent, the raw answer, the parse, timing and errors.",
    ),
    "observation.schema.json": lambda: _titled(
        Observation.model_json_schema(),
        "ButterflyBench observation",
        "One line of observations.jsonl (code track): a program observed in the sandbox against "
        "the turn's expected spec, kept by program hash, linked into the digest of the lines "
        "before it.",
    ),
    "observation-seal.schema.json": lambda: _titled(
        ObservationSeal.model_json_schema(),
        "ButterflyBench observation seal",
        "observations.seal (code track): the lines of observations.jsonl it covers and their "
        "rolling sha256 (docs/code-track.md, \"Observations on disk\").",
    ),
    "spec.schema.json": lambda: _titled(
        spec_json_schema(),
        "ButterflyBench spec",
        "The complete spec: 20 settings, each a string of its domain or 'unspecified'.",
    ),
    "score-report.schema.json": lambda: _titled(
        RunScore.model_json_schema(by_alias=True),
        "ButterflyBench score report",
        "butterfly score --json: the metrics of a run, its baselines, breakdowns and verdicts.",
    ),
    "compare-result.schema.json": lambda: _titled(
        CompareResult.model_json_schema(),
        "ButterflyBench comparison",
        "butterfly compare --json: scenarios that regressed or improved from run A to run B.",
    ),
    "sequential-result.schema.json": lambda: _titled(
        SequentialResult.model_json_schema(),
        "ButterflyBench sequential comparison",
        "butterfly sequential --json: the regressions found and the answers spent.",
    ),
    "dry-run.schema.json": lambda: _titled(
        DryRun.model_json_schema(),
        "ButterflyBench dry run",
        "butterfly run --dry-run --json: the calls, tokens and cost a run would send, per slice "
        "of the suite and in total (docs/cost.md).",
    ),
    "sweep-bill.schema.json": lambda: _titled(
        SweepBill.model_json_schema(),
        "ButterflyBench budget sweep bill",
        "butterfly sweep --dry-run --json: each budget's dry-run bill and their sum "
        "(docs/cost.md, \"A sweep's bill\").",
    ),
    "sweep-result.schema.json": lambda: _titled(
        SweepResult.model_json_schema(),
        "ButterflyBench budget sweep",
        "butterfly sweep --json: per budget, its run, final match (or horizon), cost and "
        "reasoning tokens per edit (docs/running.md, \"Budget sweeps\").",
    ),
    "calibration.schema.json": lambda: _titled(
        Calibration.model_json_schema(by_alias=True),
        "ButterflyBench calibration",
        "butterfly calibrate --json: per regression method, its false alarms, FDR and power.",
    ),
}


def render(name: str) -> str:
    return json.dumps(SCHEMAS[name](), indent=2, ensure_ascii=False) + "\n"


def write_schemas(out_dir: Path) -> list[Path]:
    written = []
    for name in SCHEMAS:
        path = out_dir / name
        write_text_atomic(path, render(name), f"--out-dir {out_dir}")
        written.append(path)
    return written
