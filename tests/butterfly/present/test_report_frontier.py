"""The report's efficiency frontier (issue 37, item 3) end to end: three runs of one budget sweep
(priced) and two scripted baselines (no price). The chart's data are ``score --json``'s, the
Pareto marks and the sweep's order are right, the sentences claim what the intervals allow,
the leaderboard ranks overlapping runs by cost and says so, and in Chromium the chart is in
the first viewport at 1400 x 900 and 1024 x 768."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from browser import fresh, viewport, wait_ready
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from frontier_runs import make_runs

from butterfly.analysis.report import ReportData, report_data
from butterfly.present.headline import frontier_sentences
from butterfly.present.report import render_html

SHOTS = ROOT / "build" / "screenshots"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_runs(tmp_path_factory.mktemp("frontier"))


@pytest.fixture(scope="module")
def data(runs: list[Path]) -> ReportData:
    return report_data(runs)


@pytest.fixture(scope="module")
def page(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    html = tmp_path_factory.mktemp("frontier-page") / "report.html"
    r = run_cli("report", *map(str, runs), "--html", str(html))
    assert r.returncode == 0, r.stderr
    return html


def test_the_points_are_score_json(runs: list[Path], page: Path, chromium: Any) -> None:
    """Each drawn point's x, y and interval are its run's ``score --json`` figures; the runs
    with no price are named apart, not drawn."""
    d = fresh(chromium)
    d.get(page.as_uri())
    wait_ready(d)
    got = d.execute_script(
        "return [...document.querySelectorAll('#chart-frontier g.fpoint')].map(g => "
        "[+g.dataset.run, +g.dataset.x, +g.dataset.y, +g.dataset.lo, +g.dataset.hi])")
    assert [g[0] for g in got] == [0, 1, 2]
    for run, x, y, lo, hi in got:
        s = json.loads(run_cli("score", str(runs[run]), "--json").stdout)
        assert x == pytest.approx(s["efficiency"]["cost_per_conversation_usd"], rel=1e-6)
        assert (y, lo, hi) == pytest.approx((s["final_match"], *s["final_match_ci"]), abs=1e-6)
    caption = d.find_element("css selector", "#chart-frontier figcaption").text
    assert "Not drawn: script/last-edit (no price), script/noop (no price)" in caption


def test_pareto_marks_and_the_sweep_in_budget_order(data: ReportData) -> None:
    f = data.frontier
    assert f is not None and f.x_metric == "cost" and f.y_metric == "final match"
    # low is cheapest, medium matches as high does for a fifth: high is beaten
    assert [(p.budget, p.pareto) for p in f.points] == [
        ("low", True), ("medium", True), ("high", False)]
    assert [(s.name, s.key, s.runs, s.budgets) for s in f.sweeps] == [
        ("effort", "reasoning_effort", (0, 1, 2), ("low", "medium", "high"))]
    html = render_html(data)
    assert 'id="frontier-line" data-runs="0 1"' in html
    assert 'data-runs="0 1 2"' in html


def test_the_sentences_claim_only_what_the_intervals_allow(data: ReportData) -> None:
    f = data.frontier
    assert f is not None
    said = frontier_sentences(f, [r.label for r in data.runs])
    # medium against high: not separated, high's 100% inside medium's interval, a fifth
    assert len(said) == 1 and said[0].startswith(
        f"{data.runs[1].label} matches as often as {data.runs[2].label} at a fifth of the cost")
    # low is cheaper, but high's final match lies outside low's interval: no claim
    assert not any(s.startswith(data.runs[0].label) for s in said)
    assert said[0] in render_html(data)


def test_the_leaderboard_ranks_overlapping_runs_by_cost(data: ReportData) -> None:
    order = [data.runs[i].label for i in data.ranking.order]
    # medium and high share 100% with overlapping intervals: the cheaper first
    assert order.index(data.runs[1].label) < order.index(data.runs[2].label)
    assert data.ranking.by_cost
    html = render_html(data)
    assert "ranked cheaper first" in html and "cost decided the order" in html
    assert ">per correct</th>" in html and ">latency p95</th>" in html


@pytest.mark.parametrize("size", [(1400, 900), (1024, 768)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_frontier_is_in_the_first_viewport(page: Path, chromium: Any, tmp_path: Path,
                                                size: tuple[int, int]) -> None:
    w, h = size
    d = fresh(chromium)
    d.get(page.as_uri())
    wait_ready(d)
    viewport(d, w, h)
    box = d.execute_script(
        "const r = document.querySelector('#chart-frontier svg').getBoundingClientRect(); "
        "return [r.top, r.bottom, r.left, r.right, window.innerHeight, "
        "document.documentElement.clientWidth, document.documentElement.scrollWidth]")
    top, bottom, left, right, inner, client_w, scroll_w = box
    assert top >= 0 and bottom <= inner, box
    assert left >= 0 and right <= client_w, box
    assert scroll_w <= client_w, box
    shot = tmp_path / f"report-frontier-{w}x{h}.png"
    assert d.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, SHOTS / shot.name)
    severe = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def test_the_sweep_is_joined_in_budget_order_whatever_the_order_given(
        runs: list[Path]) -> None:
    m = report_data([runs[2], runs[0], runs[1]])  # high, low, medium
    f = m.frontier
    assert f is not None
    assert [(s.runs, s.budgets) for s in f.sweeps] == [((1, 2, 0), ("low", "medium", "high"))]


def test_no_frontier_without_two_runs_that_differ_in_cost(runs: list[Path]) -> None:
    """One priced run and the unpriced ones: nothing to trade off, no chart (a run with no
    price is never drawn at 0); the ranking still stands."""
    m = report_data([runs[1], *runs[3:]])
    assert m.frontier is None
    html = render_html(m)
    assert 'id="chart-frontier"' not in html and "matches as often as" not in html
    assert m.ranking.order == (0, 1, 2)


def test_on_a_horizon_suite_y_is_the_horizon(data: ReportData) -> None:
    """Every run asked at chosen turns: y is the horizon with its interval (an open interval
    end is the horizon itself), and a censored horizon is named apart, not drawn."""
    from dataclasses import replace

    from butterfly.analysis.report.frontier import frontier

    h = data.runs[0].score.horizon
    assert h is not None
    turns = {0: (40.0, [30.0, None]), 1: (90.0, [60.0, 150.0]), 2: (None, [200.0, None])}
    entries = []
    for i, r in enumerate(data.runs[:3]):
        t, ci = turns[i]
        horizon = h.model_copy(update={"turns": t, "ci": ci,
                                       "censored": None if t else "above"})
        entries.append(replace(r, params=r.params.model_copy(update={"ask_at": (10, 20)}),
                               score=r.score.model_copy(update={"horizon": horizon})))
    f = frontier(entries, data.headline)
    assert f is not None and f.y_metric == "horizon"
    assert [(p.run, p.y, p.lo, p.hi) for p in f.points] == [(0, 40.0, 30.0, 40.0),
                                                            (1, 90.0, 60.0, 150.0)]
    assert f.apart == ((data.runs[2].label, "no horizon inside the tested lengths"),)
    assert f.claims == ()  # the sentences are about final match
    assert [p.pareto for p in f.points] == [True, True]  # a trade: cheaper against longer
    from butterfly.present.charts import frontier_chart

    drawn = frontier_chart(f)
    assert "horizon (turns)" in drawn and 'data-y="90.000000"' in drawn
