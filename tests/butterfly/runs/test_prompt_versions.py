"""Prompt versions (contract v3, section 3): a new run records its prompt's version; runs made
before versions were recorded are read as the version their fingerprint names, stay readable,
and are labelled so in ``score``, ``runs`` and the report; resuming one is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

import butterfly
from butterfly.analysis.listing import find_runs
from butterfly.analysis.report import report_data
from butterfly.core.prompts import PROMPT_VERSION
from butterfly.core.scores import PromptLabel
from butterfly.core.vocab import PROTOCOLS, SC_BASES, STRATEGIES
from butterfly.engine.tracks import SPEC
from butterfly.present.display import score_tables
from butterfly.present.report import render_html
from butterfly.runs.digest import chain_of
from butterfly.runs.store import MANIFEST, read_manifest, write_manifest
from butterfly.runs.versions import V2, prompt_label

V2_ZERO_SHOT = "3ae59cc988c96eda4442230eec37b6df72f4ad1acc634584000748271bc4b92d"


@pytest.fixture(scope="module")
def v3_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("v3") / "oracle"
    butterfly.run(model="script/oracle", limit=2, out=out, cache=None)
    return out


def _as_v2(run: Path, out: Path) -> Path:
    """A copy of ``run`` as a run made before versions: v2's fingerprint and no version."""
    shutil.copytree(run, out)
    old = read_manifest(out)
    write_manifest(out, old.model_copy(update={"prompt_sha256": V2_ZERO_SHOT,
                                               "prompt_version": None}),
                   chain_of(out / "calls.jsonl"))  # sealed again, as a resume would
    assert "prompt_version" in (out / MANIFEST).read_text()  # written as null
    return out


def test_a_new_run_records_its_prompt_version(v3_run: Path) -> None:
    manifest = read_manifest(v3_run)
    assert manifest.prompt_version == PROMPT_VERSION == 3
    score = json.loads(run_cli("score", str(v3_run), "--json").stdout)
    assert score["prompt"] == {"version": 3, "recorded": True,
                               "sha256": manifest.prompt_sha256, "track": "spec"}


class Style(NamedTuple):
    """A run's settings as a track reads them (``engine.tracks.Played``)."""

    mode: str
    strategy: str
    protocol: str
    sc_base: str
    parse: str
    samples: int
    layouts: tuple[str, ...]
    ask_at: tuple[int, ...] | None


def test_a_new_prompt_is_a_new_fingerprint() -> None:
    v3 = {SPEC.prompt_sha256(Style("chat", s, p, b, "strict", 1, ("E",), None))
          for s in STRATEGIES for p in PROTOCOLS
          for b in (SC_BASES if s == "self-consistency" else ("zero-shot",))}
    assert len(v3) == len(V2) - 1  # V2 also holds the hash of its system message alone
    assert not v3 & V2


def test_committed_runs_are_prompt_v2_and_score_as_before() -> None:
    runs = find_runs(ROOT / "runs")
    assert len(runs) >= 10
    for path in runs:
        manifest = read_manifest(path)
        if manifest.params.track == "code":  # the code track's conversation, recorded
            assert prompt_label(manifest) == PromptLabel(
                version=1, recorded=True, sha256=manifest.prompt_sha256, track="code"), path
            continue
        assert manifest.prompt_version is None, path  # made before versions were recorded
        assert prompt_label(manifest) == PromptLabel(version=2, recorded=False,
                                                     sha256=manifest.prompt_sha256), path
    oracle = butterfly.score_run(ROOT / "runs" / "script-oracle__butterfly-40__v1")
    assert oracle.final_match == 1.0 and oracle.prompt.version == 2
    # the system message's hash
    first = read_manifest(ROOT / "runs" / "local-smollm2__butterfly-40__v1")
    assert prompt_label(first).version == 2


def test_an_unknown_fingerprint_without_a_version_is_not_guessed(v3_run: Path,
                                                                 tmp_path: Path) -> None:
    out = _as_v2(v3_run, tmp_path / "old")
    write_manifest(out, read_manifest(out).model_copy(update={"prompt_sha256": "0" * 64}),
                   chain_of(out / "calls.jsonl"))
    assert butterfly.score_run(out).prompt == PromptLabel(version=None, recorded=False,
                                                          sha256="0" * 64)
    assert "prompt before versions" in run_cli("score", str(out)).stdout


def test_resuming_a_v2_run_is_refused_in_one_line(v3_run: Path, tmp_path: Path) -> None:
    out = _as_v2(v3_run, tmp_path / "old")
    r = run_cli("run", "--model", "script/oracle", "--limit", "2", "--out", str(out),
                "--no-cache")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "different prompt (prompt v2, prompt_sha256 3ae59cc988c9)" in r.stderr
    assert "this version's prompt (prompt v3)" in r.stderr
    assert read_manifest(out).prompt_version is None  # left as it was


def test_score_runs_and_report_label_the_prompt_version(v3_run: Path, tmp_path: Path) -> None:
    old = _as_v2(v3_run, tmp_path / "runs" / "old")
    new = shutil.copytree(v3_run, tmp_path / "runs" / "new")
    title = score_tables(butterfly.score_run(old))[0].title
    assert title is not None and str(title).endswith(", prompt v2)")
    listing = run_cli("runs", str(tmp_path / "runs"))
    head, *rows = listing.stdout.splitlines()
    assert "prompt" in head.split()
    assert [row.split()[5] for row in rows] == ["v3", "v2"]  # new, old; suite: NAME vN
    lines = json.loads(run_cli("runs", str(tmp_path / "runs"), "--json").stdout)
    assert [x["prompt_version"] for x in lines] == [3, 2]
    model = report_data([old, new])
    assert [e.prompt for e in model.runs] == ["prompt v2", "prompt v3"]
    assert [e.label for e in model.runs] == ["script/oracle [prompt v2]",
                                                   "script/oracle [prompt v3]"]
    assert "<td>prompt v2</td>" in render_html(model)
    alone = report_data([new])  # one prompt version: labels as before
    assert alone.runs[0].label == "script/oracle"
