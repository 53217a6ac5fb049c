"""The metric registry: ``Aggregate`` is built from it (its typed view for mypy agrees), and a
metric registered alone, in a module of its own, reaches ``Aggregate``, ``score --json``, the
terminal's table and the report's data and leaderboard."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT

from butterfly.core import results
from butterfly.core.metric_registry import METRICS, aggregate_fields, metric
from butterfly.core.pooling import Count
from butterfly.present.board import board_columns
from butterfly.present.display import main_columns, secondary

RUN = ROOT / "runs" / "script-oracle__butterfly-40__v1"


def _typed_view() -> list[tuple[str, str]]:
    """(field, annotation) of the ``Aggregate`` mypy reads (under ``if TYPE_CHECKING:``)."""
    tree = ast.parse((ROOT / "butterfly/core/results.py").read_text(encoding="utf-8"))
    stub = next(node for top in tree.body if isinstance(top, ast.If)
                for node in top.body
                if isinstance(node, ast.ClassDef) and node.name == "Aggregate")
    return [(s.target.id, ast.unparse(s.annotation)) for s in stub.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def test_the_typed_view_of_aggregate_is_the_registrys() -> None:
    built = [(name, kind) for name, kind, _ in aggregate_fields()]
    typed = [(name, eval(kind, vars(results))) for name, kind in _typed_view()]
    assert typed == built
    assert list(results.Aggregate.model_fields) == [name for name, _ in built]
    assert list(results.RunScore.model_fields)[1:len(built) + 1] == [name for name, _ in built]


def test_a_metric_cannot_take_another_metrics_field() -> None:
    with pytest.raises(ValueError, match="wobbles"):
        metric("wobbles", "a clash", Count())(lambda s: (1,))
    assert "wobbles" not in METRICS


def test_the_tables_read_the_registry() -> None:
    assert [h for _, h in main_columns()] == [
        "agent", "final match", "95% CI", "turn match", "abstention", "change radius",
        "undo recovery", "wobble"]
    assert secondary() == ["wobble", "undo_recovery", "abstention", "turn_match",
                           "change_radius"]
    assert [c.header for c in board_columns()] == [
        "final match", "95% CI", "effective", "turn match", "abstention", "change radius",
        "undo recovery", "wobble", "scenarios", "conversations", "incomplete", "tokens",
        "reasoning", "cached", "cost", "saved"]


TOY = '''
"""A toy metric, registered alone: turns per conversation."""
from butterfly.core.metric_registry import Shown, metric
from butterfly.core.pooling import Mean


@metric("toy_turns", "turns per conversation (a toy)", Mean(), Shown(terminal=0))
def toy_turns(s):
    return (s.turns,)
'''

DRIVE = '''
import contextlib, io, json, sys
from pathlib import Path

import toy_metric  # registers the toy before butterfly.core.results builds Aggregate

from butterfly.cli import main
from butterfly.core.results import Aggregate
from butterfly.analysis.report import report_data

run, html = sys.argv[1], sys.argv[2]
out = {"aggregate": list(Aggregate.model_fields)}
for key, args in (("json", ["score", "--json", run]), ("terminal", ["score", run]),
                  ("html", ["report", run, "--html", html])):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(args) == 0
    out[key] = buf.getvalue()
out["json"] = json.loads(out["json"])
out["report"] = report_data([Path(run)]).runs[0].score.to_json()
print(json.dumps(out))
'''


def test_a_toy_metric_registered_alone_reaches_every_reader(tmp_path: Path) -> None:
    (tmp_path / "toy_metric.py").write_text(textwrap.dedent(TOY))
    (tmp_path / "drive.py").write_text(textwrap.dedent(DRIVE))
    html = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "COLUMNS": "200"}
    done = subprocess.run([sys.executable, str(tmp_path / "drive.py"), str(RUN), str(html)],
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    score = out["json"]
    mean = score["n_answers"] / score["n_conversations"]
    assert out["aggregate"][-1] == "toy_turns"
    assert score["toy_turns"] == pytest.approx(mean)
    assert list(score)[list(score).index("first_divergent_turn") + 1] == "toy_turns"
    assert all("toy_turns" in agg for agg in score["by_category"].values())
    assert all("toy_turns" in b for b in score["baselines"].values())
    assert "toy turns" in out["terminal"] and f"{mean:.3f}" in out["terminal"]
    assert out["report"]["toy_turns"] == score["toy_turns"]
    page = html.read_text(encoding="utf-8")
    assert '<th data-type="num">toy turns</th>' in page
    assert f'<td data-value="{score["toy_turns"]}">{mean:.3f}</td>' in page
