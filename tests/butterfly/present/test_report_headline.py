"""The report's headline: its chart's data against the scores, its sentences against the compare
statistics on crafted runs, its heatmap's cells and colours, and the page as a person sees it in
Chromium (the shared session)."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from browser import fresh, viewport, wait_ready
from conftest import ROOT

import butterfly
from butterfly.analysis.compare import compare, load_answers
from butterfly.analysis.report import report_data
from butterfly.analysis.report.data import Headline, HeadRow
from butterfly.present.headline import sentences
from butterfly.present.report import render_html
from butterfly.present.svgdraw import CIVIDIS, cividis, ink_on

SUITE = str(ROOT / "scenarios" / "butterfly-40.jsonl")
SHOTS = ROOT / "build" / "screenshots"
LONG = "openai/" + "a-very-long-fine-tuned-model-name-" * 4 + "v2"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("headline")
    made = {}
    for name, model in (("oracle", "script/oracle"), ("noop", "script/noop"),
                        ("noop2", "script/noop"), ("last", "script/last-edit")):
        made[name] = butterfly.run(model=model, suite=SUITE, out=base / name, cache=None).path
    return made


def _diff_ci(a: Path, b: Path) -> list[float]:
    ci = compare(load_answers(a), load_answers(b), "bh", 0.1).final_match.ci
    assert ci is not None
    return ci


def test_a_real_difference_is_claimed(runs: dict[str, Path]) -> None:
    assert _diff_ci(runs["oracle"], runs["noop"])[1] < 0  # compare: noop below oracle
    said = sentences(report_data([runs["noop"], runs["oracle"]]).headline)
    assert said[0].startswith("script/oracle leads script/noop in final match")
    assert not any("within each other's intervals" in s for s in said)


def test_no_difference_is_not_claimed(runs: dict[str, Path]) -> None:
    lo, hi = _diff_ci(runs["noop"], runs["noop2"])
    assert lo <= 0 <= hi  # compare: two runs of one agent are not told apart
    said = sentences(report_data([runs["noop"], runs["noop2"]]).headline)
    assert not any("leads" in s for s in said)
    assert "script/noop (noop) and script/noop (noop2) are within each other's intervals" in said[0]


def test_a_difference_on_too_few_scenarios_is_not_claimed(runs: dict[str, Path],
                                                          tmp_path: Path) -> None:
    """Two runs of three scenarios, where the oracle passes all three and no-op none: compare's
    normal interval of the difference has no variance and excludes zero, but three scenarios
    that all moved one way are p = 0.25 by the exact sign test, so the headline claims
    nothing; on the suite's forty the same agents are told apart (the test above)."""
    few = [butterfly.run(model=f"script/{a}", suite=SUITE, limit=3, out=tmp_path / a,
                         cache=None).path for a in ("oracle", "noop")]
    assert _diff_ci(few[0], few[1]) == [-1.0, -1.0]  # degenerate: "certain" from 3 scenarios
    said = sentences(report_data(few).headline)
    assert not any("leads" in s for s in said)
    assert "script/oracle and script/noop are within each other's intervals" in said[0]


def test_the_no_op_baseline_is_named(runs: dict[str, Path]) -> None:
    m = report_data([runs["oracle"], runs["noop"], runs["last"]])
    noop = next(b.score.final_match for b in m.baselines if b.name == "noop")
    said = sentences(m.headline)
    at = [s for s in said if "at the no-op baseline" in s]
    assert len(at) == 1 and at[0].startswith("script/noop is at the no-op baseline")
    assert noop is not None and f"{100 * noop:.1f}%" in at[0]
    assert len(said) <= 3


def test_unpaired_runs_need_intervals_apart() -> None:
    """Sentences claim a lead only over the runs the statistics separate from the leader."""
    rows = [HeadRow(label=x, final_match=fm, lo=fm - 0.1, hi=fm + 0.1, effective=fm,
                    cost_usd=None, n=40) for x, fm in (("A", 0.8), ("B", 0.75), ("C", 0.3))]
    said = sentences(Headline(rows=tuple(rows), baselines={"noop": 0.0},
                              above=frozenset({(0, 2), (1, 2)}), on_baseline_scenarios=(True,) * 3))
    assert said[0] == ("A leads C in final match (the 95% interval of each difference "
                       "excludes zero).")
    assert said[1].startswith("A and B are within each other's intervals")
    assert len(said) == 2  # no run's interval holds the no-op's 0%


def test_a_run_within_a_recency_baseline_is_named() -> None:
    """A run above the no-op baseline whose interval holds a recency baseline's figure is said
    to read no more than the last K messages, as far as the data show; one below it is not."""
    rows = (HeadRow(label="A", final_match=0.6, lo=0.5, hi=0.7, effective=0.6, cost_usd=None,
                    n=60),
            HeadRow(label="B", final_match=0.2, lo=0.1, hi=0.3, effective=0.2, cost_usd=None,
                    n=60))
    said = sentences(Headline(rows=rows, baselines={"noop": 0.0, "window:k=20": 0.55},
                              above=frozenset({(0, 1)}), on_baseline_scenarios=(True, True)))
    assert said[-1] == ("A: its 95% interval includes the 55.0% of reading only the last 20 "
                        "messages (the recency baseline window:k=20).")
    assert not any(s.startswith("B:") for s in said)


def test_in_chromium(runs: dict[str, Path], tmp_path: Path, chromium: Any) -> None:
    from selenium.webdriver.common.by import By

    order = [runs["oracle"], runs["noop"], runs["last"]]
    m = report_data(order)
    labels = [r.label for r in m.runs]
    assert labels[2] == "script/last-edit"
    h = m.headline  # a long name wraps
    m = replace(m, runs=(*m.runs[:2], replace(m.runs[2], label=LONG)),
                headline=replace(h, rows=(*h.rows[:2], replace(h.rows[2], label=LONG))))
    html = tmp_path / "report.html"
    html.write_text(render_html(m), encoding="utf-8")
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html.read_text(encoding="utf-8"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    d = fresh(chromium)
    d.get(html.as_uri())
    wait_ready(d)
    # the chart's data: each run's dot and interval ends are its score's
    got = d.execute_script(
        "return [...document.querySelectorAll('#headline svg g.run')].map(g => "
        "[g.dataset.label, +g.dataset.fm, +g.dataset.lo, +g.dataset.hi])")
    assert [g[0] for g in got] == [*labels[:2], LONG]
    for (_, fm, lo, hi), path in zip(got, order, strict=True):
        s = butterfly.score_run(butterfly.load_run(path))
        assert s.final_match is not None and s.final_match_ci is not None
        assert (fm, lo, hi) == pytest.approx((s.final_match, *s.final_match_ci), abs=1e-6)
    bases = d.execute_script(
        "return Object.fromEntries([...document.querySelectorAll("
        "'#headline-table thead line.baseline')].map(l => [l.dataset.baseline, "
        "+l.dataset.value]))")
    assert bases == pytest.approx({b.name: b.score.final_match for b in m.baselines})
    assert "no-op" in d.find_element(By.CSS_SELECTOR, "#headline-table thead svg").text
    for w, h in ((1400, 900), (1024, 768)):
        viewport(d, w, h)
        top = d.execute_script(
            "const s = document.getElementById('headline'); "
            "return [s.getBoundingClientRect().top, "
            "document.getElementById('headline-table').getBoundingClientRect().bottom, "
            "document.getElementById('leaderboard').getBoundingClientRect().top, "
            "window.innerHeight, document.documentElement.scrollWidth, "
            "document.documentElement.clientWidth]")
        first, bottom, board, inner, scroll_w, client_w = top
        assert first < board  # the headline comes before the leaderboard
        if w == 1400:
            assert bottom <= inner, (bottom, inner)  # the chart is in the first viewport
        assert scroll_w <= client_w, (w, scroll_w, client_w)  # no horizontal scrollbar
        name = d.find_elements(By.CSS_SELECTOR, "#headline-table td.runname")[2]
        assert name.size["height"] > 30 and name.size["width"] < 0.5 * w  # wrapped
        path = tmp_path / f"report-headline-{w}.png"
        assert d.save_screenshot(str(path)) and path.stat().st_size > 10_000
        shutil.copyfile(path, SHOTS / path.name)
    severe = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def test_heatmap_cells_are_the_scores(runs: dict[str, Path]) -> None:
    order = [runs["oracle"], runs["last"]]
    html = render_html(report_data(order))
    cells = re.findall(r'<td class="heat" data-category="([^"]+)" data-run="(\d+)" '
                       r'data-fm="([^"]*)" data-k="(\d+)" data-n="(\d+)" '
                       r'style="background: (#[0-9a-f]{6})', html)
    scores = [butterfly.score_run(butterfly.load_run(p)).to_json()["by_category"] for p in order]
    assert len(cells) == sum(len(s) for s in scores) and len(cells) > 2 * 5
    colours = {}
    for cat, run, fm, k, n, bg in cells:
        want = scores[int(run)][cat]
        assert float(fm) == pytest.approx(want["final_match"])
        assert (int(k), int(n)) == (want["final_matches"], want["n_conversations"])
        colours[float(fm)] = bg
        assert bg == cividis(float(fm))
    assert colours[0.0] != colours[1.0]  # the scale runs from 0% to 100%
    assert html.index('id="heatmap"') < html.index("<details><summary>Final match by category")


def test_every_chart_has_a_caption(runs: dict[str, Path]) -> None:
    html = render_html(report_data([runs["oracle"], runs["last"]]))
    figures = re.findall(r'<figure class="chart"[^>]*>.*?</figure>', html, re.S)
    assert len(figures) >= 3 and all("<figcaption" in f for f in figures)
    assert '<p class="note caption">' in html.split('id="headline"')[1].split("</section>")[0]


def test_the_heatmap_s_scale_is_cividis() -> None:
    """The heatmap's colours: cividis's 256 stops (Nuñez et al. 2018, as matplotlib ships them),
    looked up as matplotlib looked them up (0% the first stop, 100% the last, a share times
    256 cut to a stop), dark blue to yellow with the lightness never falling (the scale
    reads in grey), and a text colour readable on each."""
    stops = [CIVIDIS[6 * i:6 * i + 6] for i in range(256)]
    assert len(CIVIDIS) == 6 * 256 and stops[0] == "00224e" and stops[-1] == "fee838"
    assert stops[128] == "7d7c78"  # matplotlib's cividis(0.5)
    assert (cividis(0.0), cividis(0.5), cividis(1.0)) == ("#00224e", "#7d7c78", "#fee838")
    assert cividis(1 / 256 - 1e-9) == "#00224e" and cividis(1 / 256) == "#" + stops[1]

    def luminance(hex6: str) -> float:
        r, g, b = (int(hex6[k:k + 2], 16) for k in (0, 2, 4))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    lum = [luminance(x) for x in stops]
    assert all(b >= a for a, b in pairwise(lum)), "lightness never falls (one tie at 8 bits)"
    assert lum[-1] - lum[0] > 180
    assert ink_on("#00224e") == "#fff" and ink_on("#fee838") == "#000"
