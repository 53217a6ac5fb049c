"""The report's charts (undo recovery by op as small multiples, the change-radius dot plot, the
first-divergent-turn bars): each mark's data- attributes, and the bars' drawn heights, against
``score_run``'s figures on perfect, failing, noisy and thin runs; and, in Chromium (the shared
session), the detailed tables sorted by a click, the charts at 1024 x 768 with no horizontal
scrollbar."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from browser import fresh, viewport, wait_ready
from conftest import ROOT

import butterfly
from butterfly.analysis.report import report_data
from butterfly.analysis.report.data import FDT_BINS, Radius, RadiusRow
from butterfly.analysis.report.figures import undo_panels
from butterfly.present.charts import radius_chart
from butterfly.present.report import render_html
from oracle import UNDO_OPS

SUITE = str(ROOT / "scenarios" / "butterfly-40.jsonl")
SHOTS = ROOT / "build" / "screenshots"
POINT = re.compile(r'<g class="point" data-run="([^"]+)" data-op="([^"]+)" data-value="([^"]+)" '
                   r'data-k="(\d+)" data-n="(\d+)">')
WORDS = re.compile(r'<text class="(not-played|not-scored)" data-run="([^"]+)" '
                   r'data-op="([^"]+)"[^>]*>([^<]+)</text>')
BAR = re.compile(r'<rect id="fdt-(\d+)-(\w+)" x="[^"]+" y="([^"]+)" width="[^"]+" '
                 r'height="([^"]+)" fill="[^"]+" data-share="([^"]+)">')


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Perfect, failing, noisy, and thin (the first 2 scenarios: one undo op played)."""
    base = tmp_path_factory.mktemp("charts")
    made = {}
    for name, model, extra in (("oracle", "script/oracle", {}), ("noop", "script/noop", {}),
                               ("noisy", "script/noisy:p=0.3", {}),
                               ("thin", "script/lifo", {"limit": 2})):
        made[name] = butterfly.run(model=model, suite=SUITE, out=base / name, cache=None,
                                   **extra).path
    return made


def _scores(paths: list[Path]) -> list[Any]:
    return [butterfly.score_run(butterfly.load_run(p)) for p in paths]


def test_undo_points_are_the_scores(runs: dict[str, Path]) -> None:
    order = [runs[k] for k in ("oracle", "noop", "noisy", "thin")]
    m = report_data(order)
    html = render_html(m)
    chart = html.split('id="chart-undo"')[1].split("</figure>")[0]
    labels = [r.label for r in m.runs]
    points = {(run, op): (float(v), int(k), int(n)) for run, op, v, k, n in POINT.findall(chart)}
    words = {(run, op): (cls, text) for cls, run, op, text in WORDS.findall(chart)}
    assert len(points) + len(words) == len(labels) * len(UNDO_OPS)  # one mark per run and op
    for label, s, r in zip(labels, _scores(order), m.runs, strict=True):
        for op in UNDO_OPS:
            u = s.undo_recovery_by_op[op]
            if u.n:
                assert u.share is not None
                assert points[label, op] == (pytest.approx(u.share), round(u.share * u.n), u.n)
                assert f"{round(u.share * u.n)}/{u.n}</text>" in chart  # k/n in words
            elif op in r.score.by_op:  # played, but no turn of it came after a match
                assert words[label, op] == ("not-scored", "no turn after a match")
            else:
                assert words[label, op] == ("not-played", "not played")
    assert words[labels[1], "redo"][0] == "not-scored"  # noop: never matches before an undo
    assert words[labels[3], "redo"][0] == "not-played"  # thin: no redo among 2 scenarios
    assert points[labels[0], "redo"][0] == 1.0 and points[labels[3], "undo_ref"][2] == 2


def test_first_divergent_bars_are_the_scores(runs: dict[str, Path]) -> None:
    """Each bar's share is the share of the run's conversations whose first divergent turn is
    the bar's (score_run's figures), and its drawn height is in proportion to it; the perfect
    run's are all at "none"."""
    order = [runs[k] for k in ("oracle", "noop", "noisy", "thin")]
    html = render_html(report_data(order))
    chart = html.split('id="chart-first-divergent"')[1].split("</figure>")[0]
    bars = {(int(i), b): (float(y), float(h), float(v)) for i, b, y, h, v in BAR.findall(chart)}
    assert len(bars) == len(order) * len(FDT_BINS)
    per_point = {h / v for _, h, v in bars.values() if v > 0}
    assert max(per_point) - min(per_point) < 0.02  # pixels per point: one scale for every bar
    bottom = {y + h for y, h, _ in bars.values()}
    assert max(bottom) - min(bottom) < 0.02  # every bar stands on the axis
    for i, s in enumerate(_scores(order)):
        convs = s.scenarios  # one ConversationScore per complete conversation
        for b in FDT_BINS:
            want = sum(1 for c in convs if str(c.first_divergent_turn or "none") == b)
            assert bars[i, b][2] == pytest.approx(100 * want / len(convs), abs=1e-6), (i, b)
    assert bars[0, "none"][2] == 100.0 and bars[1, "none"][2] == 0.0


def test_an_op_no_run_played_is_left_out(runs: dict[str, Path]) -> None:
    m = report_data([runs["thin"]])
    played = [op for op in UNDO_OPS if op in m.runs[0].score.by_op]
    assert played == ["undo_ref"]
    assert m.undo is not None and m.undo.ops == ("undo_ref",)
    chart = render_html(m).split('id="chart-undo"')[1].split("</figure>")[0]
    assert chart.count('<div class="op">') == 1 and "undo_last" not in chart
    none = replace(m.runs[0], score=m.runs[0].score.model_copy(update={"by_op": {}}))
    assert undo_panels([none]) is None  # no undo op played: no chart


def test_radius_points_are_the_scores(runs: dict[str, Path]) -> None:
    order = [runs[k] for k in ("oracle", "noop", "noisy", "thin")]
    m = report_data(order)
    chart = render_html(m).split('id="chart-change-radius"')[1].split("</figure>")[0]
    got = re.findall(r'<g class="point" data-run="([^"]+)" data-value="([^"]+)" '
                     r'data-lo="([^"]+)" data-hi="([^"]+)" data-n="(\d+)">', chart)
    assert [g[0] for g in got] == [r.label for r in m.runs]
    for (_, v, lo, hi, n), s in zip(got, _scores(order), strict=True):
        assert s.change_radius is not None and s.change_radius_ci is not None
        assert (float(v), float(lo), float(hi)) == pytest.approx(
            (s.change_radius, *s.change_radius_ci), abs=1e-6)
        assert int(n) == s.change_radius_n
    assert float(got[2][1]) > 0  # the noisy run moves settings nobody asked about
    lines = dict(re.findall(r'<line class="baseline" data-baseline="([^"]+)" '
                            r'data-value="([^"]+)"', chart))
    want = {b.name: b.score.change_radius for b in m.baselines}
    assert {k: float(v) for k, v in lines.items()} == pytest.approx(want)
    assert "no-op" in chart.split("<tbody>")[0]  # the baselines are labelled on the axis


def test_a_run_without_a_figure_says_so() -> None:
    _, rows = radius_chart(Radius(rows=(RadiusRow(None, None, None, 0),), baselines={}),
                           ["empty"])
    assert 'class="no-figure"' in rows[0] and "<circle" not in rows[0]


def _column(d: Any, table: Any, col: int) -> list[str]:
    from selenium.webdriver.common.by import By

    return [r.find_elements(By.TAG_NAME, "td")[col].text
            for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]


def _number(text: str) -> float:
    return float(text.split("%")[0].split()[0])


def test_in_chromium(runs: dict[str, Path], tmp_path: Path, chromium: Any) -> None:
    from selenium.webdriver.common.by import By

    html = tmp_path / "report.html"
    paths = [runs[k] for k in ("oracle", "noop", "noisy", "thin")]
    html.write_text(render_html(report_data(paths)), encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    d = fresh(chromium)
    d.get(html.as_uri())
    wait_ready(d)
    # every table in a <details> section is sortable
    tables = d.find_elements(By.CSS_SELECTOR, "details table")
    assert tables and all("sortable" in t.get_attribute("class").split() for t in tables)
    held = d.find_element(By.ID, "op-table")
    held.find_element(By.XPATH, "ancestor::details").click()  # open it
    head = held.find_elements(By.TAG_NAME, "th")
    thin_col = len(head) - 4  # the thin run's "held": 4 columns per run, last run
    assert head[thin_col].text.endswith(": held")
    for order in ("desc", "asc"):
        head[thin_col].click()
        cells = _column(d, held, thin_col)
        known = [c for c in cells if c != "–"]
        assert known and len(known) < len(cells)  # the thin run has ops it never played
        assert cells[len(known):] == ["–"] * (len(cells) - len(known))  # "–" last
        values = [_number(c) for c in known]
        assert values == sorted(values, reverse=order == "desc")
    ops = _column(d, held, 0)
    head[0].click()  # text: descending, then ascending
    assert _column(d, held, 0) == sorted(ops, reverse=True)
    head[0].click()
    assert _column(d, held, 0) == sorted(ops)
    # the dot charts, drawn, at 1024 x 768 with no horizontal scrollbar
    viewport(d, 1024, 768)
    for chart in ("#chart-undo", "#chart-change-radius"):
        assert d.find_elements(By.CSS_SELECTOR, f"{chart} svg circle")
    width = d.execute_script("return [document.documentElement.scrollWidth, "
                             "document.documentElement.clientWidth]")
    assert width[0] <= width[1], width
    d.execute_script("document.getElementById('chart-undo').scrollIntoView()")
    path = tmp_path / "report-charts-1024.png"
    assert d.save_screenshot(str(path)) and path.stat().st_size > 10_000
    shutil.copyfile(path, SHOTS / path.name)
    severe = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe
