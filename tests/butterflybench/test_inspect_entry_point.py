"""inspect finds ButterflyBench's tasks and model provider through the package's entry point
(``[project.entry-points.inspect_ai]`` in pyproject.toml), as ``pip install`` declares it: the
test declares the same entry point in a distribution of its own, on the path of a fresh
``inspect eval`` process, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT


def declared() -> dict[str, str]:
    """pyproject.toml's inspect_ai entry points."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found: dict[str, str] = project["entry-points"]["inspect_ai"]
    return found


def site_with_entry_point(tmp: Path) -> Path:
    """A folder holding a distribution that declares pyproject's inspect_ai entry points."""
    info = tmp / "site" / "butterflybench_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: butterflybench-entry\n"
                                   "Version: 0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in declared().items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    return info.parent


def test_the_entry_point_is_butterflybench_registry() -> None:
    assert declared() == {"butterflybench": "butterflybench._registry"}


def test_inspect_eval_finds_the_task_and_the_model_by_their_names(tmp_path: Path) -> None:
    site = site_with_entry_point(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    r = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "butterflybench/butterfly_40", "--model",
         "butterfly/script/oracle", "--limit", "2", "-T", "layouts=E,Q", "--log-dir",
         str(tmp_path / "logs"), "--display", "none", "--log-format", "json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    [log] = list((tmp_path / "logs").glob("*.json"))
    header = json.loads(log.read_text(encoding="utf-8"))
    assert header["status"] == "success" and header["eval"]["task"] == "butterflybench/butterfly_40"
    [score] = header["results"]["scores"]
    assert score["name"] == "butterfly_scorer" and score["scored_samples"] == 2
    assert score["metrics"]["final_match"]["value"] == 1.0
    assert header["eval"]["metadata"]["butterfly"]["layouts"] == ["E", "Q"]
    ids = [s["id"] for s in header["samples"]]  # --limit 2: the first scenario, both layouts
    assert ids == ["hw-undo-ref-dates/E", "hw-undo-ref-dates/Q"]
