"""The report's horizon (butterfly/present/horizon_chart.py and the Horizon section): the table
and the chart's legend say what ``butterfly score`` says, and the fitted curve is drawn over
the tested lengths only."""

from __future__ import annotations

import html as htmllib
from pathlib import Path

import pytest
from conftest import run_cli

import butterfly
from butterfly.core.horizon_text import horizon_words
from butterfly.present.horizon_chart import fitted_curve
from butterfly.present.report import build, charts, render_html


@pytest.fixture(scope="module")
def ladder_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """script/oracle (every turn matched) and script/last-edit on chains of 3, 8 and 20 turns."""
    base = tmp_path_factory.mktemp("ladder")
    suite = base / "ladder.jsonl"
    r = run_cli("generate", "--lengths", "3,8,20", "--per-length", "4", "--seed", "5", "--out",
                str(suite))
    assert r.returncode == 0, r.stderr
    return [butterfly.run(model=f"script/{a}", suite=str(suite), out=base / a, cache=None).path
            for a in ("oracle", "last-edit")]


def test_the_table_and_the_legend_say_what_score_says(ladder_runs: list[Path]) -> None:
    model = build(ladder_runs)
    page = render_html(model)
    svg = charts(model)["horizon"]
    said = [horizon_words(butterfly.score_run(p).horizon) for p in ladder_runs]  # type: ignore[arg-type]
    assert said[0] == "above 20 turns (no conversation failed)"
    for run, words in zip(model["runs"], said, strict=True):
        assert run["horizon_words"] == words
        assert f'<td class="horizon-words">{htmllib.escape(words)}</td>' in page
        legend = f"{run['label']}: horizon {words}"
        assert htmllib.escape(legend, quote=False) in svg, legend
    assert "to -" not in page and "– to –" not in page


def test_the_fitted_curve_spans_the_tested_lengths_only(ladder_runs: list[Path]) -> None:
    h = butterfly.score_run(ladder_runs[1]).horizon
    assert h is not None and h.fit is not None  # last-edit: outcomes mixed, a fit
    xs, ys = fitted_curve(h)
    assert xs[0] == pytest.approx(3) and xs[-1] == pytest.approx(8 * 2.5)
    assert all(3 - 1e-9 <= x <= 20 + 1e-9 for x in xs) and all(0 <= y <= 100 for y in ys)
    oracle = butterfly.score_run(ladder_runs[0]).horizon
    assert oracle is not None and oracle.fit is None and fitted_curve(oracle) == ([], [])

