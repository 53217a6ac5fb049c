"""Once for real: the embedded SmolLM2 through the whole pipeline, on two short scenarios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from butterfly.suite.load import load_suite

# `make test` runs two pytest workers; every test that starts a llama.cpp server is in one
# xdist group, so they run on one worker, one at a time (two servers on two cores starve).
pytestmark = pytest.mark.xdist_group("llama")


@pytest.mark.timeout(900)
def test_smollm2_run_on_two_short_scenarios(tmp_path: Path) -> None:
    short = [s for s in load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")
             if len(s.turns) == 1][:2]
    assert len(short) == 2
    suite = tmp_path / "short.jsonl"
    suite.write_text("".join(s.to_json() + "\n" for s in short))
    out = tmp_path / "run"
    net_log = tmp_path / "net.log"
    # under the socket guard: no connection attempt may leave loopback (litellm included)
    r = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "netguard.py"), str(net_log), "run", "--model",
         "local/smollm2", "--suite", str(suite), "--out", str(out), "--no-cache",
         "--max-tokens", "400"],
        cwd=ROOT, capture_output=True, text=True, timeout=800,
    )
    assert r.returncode == 0, r.stderr
    assert not net_log.exists(), net_log.read_text()
    assert "local/smollm2" in r.stdout and "baseline: noop" in r.stdout
    records = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for rec in records:
        assert rec["error"] is None
        assert rec["raw"], "the raw answer is kept"
        assert rec["tokens"]["completion"] and rec["tokens"]["completion"] > 0
        # the spec's schema is sent as response_format: the grammar keeps the answer parseable
        # unless it was cut by max tokens
        assert rec["spec"] is not None or rec["abstention"] == "truncated"
    s = json.loads(run_cli("score", str(out), "--json").stdout)
    assert s["n_scenarios"] == 2 and s["incomplete"] == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"] == "local/smollm2" and manifest["status"] == "complete"
