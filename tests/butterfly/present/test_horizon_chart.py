"""The report's horizon (its series in analysis/report/figures.py, drawn by
present/charts.horizon_chart, and the Horizon section): the table and the chart's legend say
what ``butterfly score`` says, the points and the survival steps drawn are the score's, the
fitted curve is drawn over the tested lengths only and only where there is a fit, a censored
horizon is an arrow labelled in words, and no interval end outside the tested lengths is
printed as a number."""

from __future__ import annotations

import html as htmllib
import re
from itertools import pairwise
from pathlib import Path

import pytest
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

import butterfly
from butterfly.analysis.report import report_data
from butterfly.analysis.report.figures import fitted_curve, series_of
from butterfly.core.horizon_metric import Conversation, horizon
from butterfly.core.horizon_text import horizon_line, horizon_words, value_text
from butterfly.core.scores import HorizonResult
from butterfly.present.charts import horizon_chart
from butterfly.present.report import render_html


@pytest.fixture(scope="module")
def ladder_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """script/oracle (every turn matched), script/last-edit and script/drift:p=0.1 on chains of
    3, 8 and 20 turns."""
    base = tmp_path_factory.mktemp("ladder")
    suite = base / "ladder.jsonl"
    r = run_cli("generate", "--lengths", "3,8,20", "--per-length", "4", "--seed", "5", "--out",
                str(suite))
    assert r.returncode == 0, r.stderr
    return [butterfly.run(model=f"script/{a}", suite=str(suite), out=base / a, cache=None).path
            for a in ("oracle", "last-edit", "drift:p=0.1")]


def test_the_table_and_the_legend_say_what_score_says(ladder_runs: list[Path]) -> None:
    model = report_data(ladder_runs)
    page = render_html(model)
    svg = page.split('id="chart-horizon"')[1].split("</svg>")[0]
    said = [horizon_words(butterfly.score_run(p).horizon) for p in ladder_runs]  # type: ignore[arg-type]
    assert said[0] == "above 20 turns (no conversation failed)"
    for run, words in zip(model.runs, said, strict=True):
        assert run.score.horizon is not None and horizon_words(run.score.horizon) == words
        assert f'<td class="horizon-words">{htmllib.escape(words)}</td>' in page
        legend = f"{run.label}: horizon {words}"
        assert htmllib.escape(legend, quote=False) in svg, legend
    assert "to -" not in page and "– to –" not in page


def test_the_fitted_curve_spans_the_tested_lengths_only(ladder_runs: list[Path]) -> None:
    h = butterfly.score_run(ladder_runs[1]).horizon
    assert h is not None and h.fit is not None  # last-edit: outcomes mixed, a fit
    curve = fitted_curve(h)
    xs, ys = [x for x, _ in curve], [y for _, y in curve]
    assert xs[0] == pytest.approx(3) and xs[-1] == pytest.approx(8 * 2.5)
    assert all(3 - 1e-9 <= x <= 20 + 1e-9 for x in xs) and all(0 <= y <= 100 for y in ys)
    oracle = butterfly.score_run(ladder_runs[0]).horizon
    assert oracle is not None and oracle.fit is None and fitted_curve(oracle) == ()



def _figure_svg(runs: list[tuple[str, HorizonResult]]) -> str:
    return horizon_chart([series_of(i, label, h) for i, (label, h) in enumerate(runs)])


def _group(svg: str, gid: str) -> str:
    """The inside of the group with this id ('' if none)."""
    m = re.search(rf'<g id="{gid}"[^>]*>(.*?)</g>', svg, re.S)
    return "" if m is None else m.group(1)


def _element(svg: str, gid: str) -> str:
    """The opening tag of the element with this id ('' if none)."""
    m = re.search(rf'<\w+ [^>]*\bid="{gid}"[^>]*>', svg)
    return "" if m is None else m.group(0)


def _failing(lengths: tuple[int, ...]) -> HorizonResult:
    """A crafted horizon in which every conversation failed."""
    convs = [Conversation(f"s{n}-{k}", n, False) for n in lengths for k in range(3)]
    return HorizonResult.model_validate(horizon(convs).to_json())


def test_a_run_without_a_fit_draws_no_curve(ladder_runs: list[Path]) -> None:
    """Issue 25: a run that matched every turn was drawn as a logistic curve rising from 87%.
    A run with every point at 100% (or at 0%) has no fit: no curve, only its points and its
    censored horizon."""
    perfect = butterfly.score_run(ladder_runs[0]).horizon
    mixed = butterfly.score_run(ladder_runs[1]).horizon
    failing = _failing((3, 8, 20))
    assert perfect is not None and mixed is not None
    assert perfect.fit is None and failing.fit is None and mixed.fit is not None
    assert {v.final_match for v in perfect.by_length.values()} == {1.0}
    assert {v.final_match for v in failing.by_length.values()} == {0.0}
    svg = _figure_svg([("perfect", perfect), ("mixed", mixed), ("failing", failing)])
    for i, h in enumerate((perfect, mixed, failing)):  # one marker per tested length, the score's
        drawn = re.findall(r'data-length="(\d+)" data-fm="([^"]+)"', _group(svg, f"points-{i}"))
        assert [(int(n), float(v)) for n, v in drawn] == pytest.approx(
            [(int(n), 100 * v.final_match) for n, v in h.by_length.items()])
        assert len(drawn) == 3
    assert not _element(svg, "fit-0") and not _element(svg, "fit-2")
    assert _element(svg, "fit-1").startswith("<path")  # the mixed run's fit is drawn


def _arrow_ends(svg: str, gid: str) -> tuple[float, float]:
    """The x of an arrow's tail and of its head's tip."""
    arrow = _group(svg, gid)
    shaft = re.search(r'<line x1="([-\d.]+)"', arrow)
    head = re.search(r'<path d="M([-\d.]+) ', arrow)
    assert shaft is not None and head is not None, gid
    return float(shaft.group(1)), float(head.group(1))


def test_censored_horizons_are_arrows_labelled_in_words(ladder_runs: list[Path]) -> None:
    above = butterfly.score_run(ladder_runs[0]).horizon
    below = _failing((3, 8, 20))
    assert above is not None and (above.censored, below.censored) == ("above", "below")
    svg = _figure_svg([("above", above), ("below", below)])
    words = [re.search(rf'id="censored-label-{i}"[^>]*>([^<]*)</text>', svg).group(1)  # type: ignore[union-attr]
             for i in range(2)]
    assert words == [value_text(above), value_text(below)] == ["above 20 turns", "below 3 turns"]
    assert horizon_words(above).startswith(words[0])  # the words score prints
    tail, tip = _arrow_ends(svg, "censored-0")
    assert tip > tail  # above the longest length: the arrow points right
    tail, tip = _arrow_ends(svg, "censored-1")
    assert tip < tail  # below the shortest: left


def test_no_interval_end_beyond_the_tested_lengths(ladder_runs: list[Path]) -> None:
    """Issue 25: the horizon table printed 43.7 turns for chains of at most 10. An interval end
    beyond the tested lengths is words ("above 20", "below 3"), never a number outside them,
    in the report's table and in ``butterfly score``'s line."""
    page = render_html(report_data(ladder_runs))
    rows = re.findall(r'<td class="horizon-words">([^<]*)</td>', page)
    drift = butterfly.score_run(ladder_runs[2]).horizon
    assert drift is not None and drift.turns is not None
    assert drift.ci == [None, None]  # the interval is open at both ends...
    assert "95% CI below 3 to above 20" in rows[2]  # ...and says so in words
    for text in [*rows, *(horizon_line(butterfly.score_run(p).horizon)  # type: ignore[arg-type]
                          .split(";")[0] for p in ladder_runs)]:
        lengths = re.sub(r"[\d.]+%", "", text)  # "50%" is a share, not a length
        numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", lengths)]
        assert numbers and all(3 <= x <= 20 for x in numbers), text


def test_the_survival_curves_are_the_scores(ladder_runs: list[Path]) -> None:
    """Each run's Kaplan-Meier steps are drawn from score's survival points, starting at 100% at
    turn 0, and never rise; the perfect run's stays at 100%, the failing ones fall."""
    runs = [(p.name, butterfly.score_run(p).horizon) for p in ladder_runs]
    svg = _figure_svg(runs)  # type: ignore[arg-type]
    drawn = {}
    for i, (_, h) in enumerate(runs):
        assert h is not None
        tag = _element(svg, f"survival-{i}")
        steps = [tuple(map(float, x.split())) for x in
                 re.search(r'data-steps="([^"]+)"', tag).group(1).split(";")]  # type: ignore[union-attr]
        assert [t for t, _ in steps] == [0] + [s.turn for s in h.survival]
        ys = [y for _, y in steps]
        assert ys == pytest.approx([100.0] + [100 * s.still_matched for s in h.survival])
        assert all(b <= a for a, b in pairwise(ys))
        levels = [float(v) for v in re.findall(r"V([-\d.]+)", tag)]  # pixels grow downwards
        assert all(b >= a for a, b in pairwise(levels)), levels
        drawn[i] = ys
    assert set(drawn[0]) == {100.0}
    assert drawn[1][-1] < 100
