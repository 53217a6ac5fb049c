"""``butterfly report``: the report model, the HTML file, and the page in a real browser."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from browser import fresh, wait_ready
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from fakeserver import FakeServer

from butterfly.analysis.report import report_data
from butterfly.present.report import render_html
from butterfly.suite.load import load_suite

SUITE = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")
EVIL = ('<script>alert(1)</script><img src=x onerror="window.__pwned=1"> '
        '{{ m.title }} </script><b>bold</b>')
SHOTS = ROOT / "build" / "screenshots"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("runs")
    made = []
    for name, extra in (("oracle", ()),
                        ("noisy:p=0.3", ("--layouts", "E,Q", "--repeats", "2",
                                         "--temperature", "0.7"))):
        out = base / name.split(":")[0]
        r = run_cli("run", "--model", f"script/{name}", "--out", str(out), "--no-cache", *extra)
        assert r.returncode == 0, r.stderr
        made.append(out)
    out = base / "evil"
    with FakeServer(lambda body: EVIL) as srv:
        r = run_cli("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                    str(out), "--limit", "3", "--no-cache")
        assert r.returncode == 0, r.stderr
    made.append(out)
    return made


@pytest.fixture(scope="module")
def report(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    html = tmp_path_factory.mktemp("report") / "report.html"
    r = run_cli("report", *map(str, runs), "--html", str(html), "--title",
                "<img src=x onerror=alert(2)> & co")
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stderr and "MB" in r.stderr
    return html


def _page_data(html: str) -> Any:
    blob = re.search(r'<script id="report-data" type="application/octet-stream">([^<]*)</script>',
                     html)
    assert blob is not None
    return json.loads(gzip.decompress(base64.b64decode(blob.group(1))))


def test_model_has_every_part(runs: list[Path]) -> None:
    m = report_data(runs)
    labels = [r.label for r in m.runs]
    assert labels == ["script/oracle", "script/noisy:p=0.3", "openai/fake"]
    oracle, noisy, evil = (r.score for r in m.runs)
    assert oracle.final_match == 1.0 and oracle.final_match_ci is not None
    assert oracle.final_match_ci[1] == 1.0 and oracle.final_match_ci[0] < 1.0  # 40/40: an interval
    assert noisy.n_conversations == 4 * 40 and set(noisy.by_layout) == {"E", "Q"}
    assert evil.abstention == 1.0 and evil.n_scenarios == 3
    assert [b.name for b in m.baselines] == ["noop", "last-edit"]
    assert m.flips is not None and m.flips.columns == ["E", "Q"]  # the noisy run
    assert report_data(runs[:1]).flips is None  # one layout: no flip grid
    assert oracle.by_op["undo_earliest"].held == 1.0
    n_convs = 40 + 160 + 3
    assert len(m.conversations) == n_convs and len(m.scenarios) == 40


def test_html_is_self_contained_and_escaped(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=alert(2)&gt; &amp; co" in html  # the title, escaped
    assert "<img src=x" not in html and "alert(1)" not in html  # answers travel packed
    # nothing is fetched: no external script, stylesheet, image or font, and a CSP says so
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert "@import" not in html and "url(http" not in html
    assert "default-src 'none'" in html
    # the headline and the change-radius dot plot (each an axis and one row per run), the
    # undo small multiples (an axis per undo op, a panel per run and op), the first divergent
    # turn and the horizon (butterfly-40 has several lengths)
    undo_ops = 4
    assert html.count("<svg") == 2 * (1 + 3) + undo_ops * (1 + 3) + 2
    data = _page_data(html)
    evil = [c for c in data["conversations"] if c["r"] == 2]
    assert evil and all(t[1] == EVIL for c in evil for t in c["t"])


def test_strict_undefined(runs: list[Path]) -> None:
    """A field the template reads and the data lacks is an error, never an empty cell: here a
    run's score without its totals (the pooled figures alone)."""
    from jinja2 import UndefinedError

    m = report_data(runs[:1])
    thin = replace(m.runs[0], score=m.runs[0].score.overall)
    with pytest.raises(UndefinedError):
        render_html(replace(m, runs=(thin,)))


def test_clear_errors(tmp_path: Path, runs: list[Path]) -> None:
    r = run_cli("report", str(tmp_path), "--html", str(tmp_path / "r.html"))
    assert r.returncode == 1 and "not a run directory" in r.stderr
    r = run_cli("report", str(runs[0]), str(runs[0]), "--html", str(tmp_path / "r.html"))
    assert r.returncode == 1 and "each run directory once" in r.stderr
    assert "Traceback" not in r.stderr




def _shot(driver: Any, name: str, tmp: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = tmp / name
    assert driver.save_screenshot(str(path))
    assert path.stat().st_size > 10_000  # a real picture, not an empty page
    shutil.copyfile(path, SHOTS / name)


def test_in_a_real_browser(report: Path, tmp_path: Path, chromium: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    d = fresh(chromium)
    d.get(report.as_uri())
    assert wait_ready(d) == "1"
    # the leaderboard: 3 runs and 2 baselines, sortable
    rows = d.find_elements(By.CSS_SELECTOR, "#board tbody tr")
    assert len(rows) == 5
    assert rows[0].find_elements(By.TAG_NAME, "td")[0].text == "script/oracle"
    head = d.find_elements(By.CSS_SELECTOR, "#board th")[1]
    head.click()  # final match, descending first
    first = d.find_elements(By.CSS_SELECTOR, "#board tbody tr td:first-child")[0].text
    assert first == "script/oracle"
    head.click()
    last = d.find_elements(By.CSS_SELECTOR, "#board tbody tr td:first-child")[-1].text
    assert last == "script/oracle"
    # a chart, drawn
    bars = d.find_elements(By.CSS_SELECTOR, "#chart-first-divergent svg rect[id^=fdt-]")
    assert len(bars) == 3 * 11
    assert d.find_element(By.CSS_SELECTOR, "#chart-first-divergent svg").size["width"] > 200
    assert d.find_elements(By.CSS_SELECTOR, "#flips table tr")
    _shot(d, "report-top.png", tmp_path)
    # transcripts: filter, open, and the hostile answer stays text
    status = d.find_element(By.ID, "t-status").text
    assert status == "203 of 203 conversations"
    d.find_element(By.ID, "f-failed").click()
    assert d.find_element(By.ID, "t-status").text.startswith(
        f"{203 - 40 - 0 - int(_noisy_passes(d))} of")
    box = d.find_element(By.ID, "f-search")
    box.send_keys("alert(1)")
    assert d.find_element(By.ID, "t-status").text == "3 of 203 conversations"
    d.find_elements(By.CSS_SELECTOR, "#t-list tbody tr")[0].click()
    pres = d.find_elements(By.CSS_SELECTOR, "#t-view pre")
    assert pres and pres[0].text == EVIL
    assert "ABSTAINED" in d.find_element(By.ID, "t-view").text
    with pytest.raises(NoAlertPresentException):
        d.switch_to.alert.text  # noqa: B018
    assert d.execute_script("return window.__pwned === undefined")
    assert not d.find_elements(By.CSS_SELECTOR, "#t-view img, #t-view script, #t-view b.x")
    d.execute_script("document.getElementById('transcripts').scrollIntoView()")
    _shot(d, "report-transcript-hostile.png", tmp_path)
    # a wrong answer's transcript: the diff table names the first divergent turn
    box.clear()
    d.execute_script("const s=document.getElementById('f-search'); s.value=''; "
                     "s.dispatchEvent(new Event('input'))")
    Select = __import__("selenium.webdriver.support.select", fromlist=["Select"]).Select
    Select(d.find_element(By.ID, "f-run")).select_by_index(2)  # the noisy run
    d.find_elements(By.CSS_SELECTOR, "#t-list tbody tr")[0].click()
    view = d.find_element(By.ID, "t-view")
    assert "first divergent turn" in view.text
    assert view.find_elements(By.CSS_SELECTOR, ".turn.first table.diff tr.wrong, "
                                               ".turn.first table.diff tr.coll, "
                                               ".turn.first table.diff tr.missed")
    _shot(d, "report-transcript.png", tmp_path)
    severe = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def _noisy_passes(d: Any) -> int:
    """Passing conversations of the noisy run, read off its leaderboard row."""
    from selenium.webdriver.common.by import By

    for row in d.find_elements(By.CSS_SELECTOR, "#board tbody tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        if cells[0].text == "script/noisy:p=0.3":
            return int(cells[1].text.split("(")[1].split("/")[0])
    raise AssertionError("no noisy row")


def test_same_runs_same_bytes(runs: list[Path]) -> None:
    assert render_html(report_data(runs[:2])) == render_html(report_data(runs[:2]))


def test_chat_and_restate_side_by_side_with_the_horizon(tmp_path: Path) -> None:
    """Two runs of one model differing only in --mode get a memory-against-history table; a
    run over several chain lengths gets the horizon table and chart; suites are named with
    their version."""
    import butterfly

    suite = tmp_path / "ladder.jsonl"
    assert run_cli("generate", "--lengths", "3,8", "--per-length", "3", "--out",
                   str(suite)).returncode == 0
    chat = butterfly.run(model="script/last-edit", suite=str(suite), out=tmp_path / "chat",
                         cache=None)
    restate = butterfly.run(model="script/last-edit", suite=str(suite), mode="restate",
                            out=tmp_path / "restate", cache=None)
    model = report_data([chat.path, restate.path])
    assert len(model.modes) == 1
    pair = model.modes[0]
    assert pair.chat.score.model == "script/last-edit" and pair.restate.label.endswith("[restate]")
    assert pair.chat.score.final_match == butterfly.score_run(chat).final_match
    html = render_html(model)
    assert 'id="modes"' in html and 'id="horizon"' in html and 'id="chart-horizon"' in html
    assert "ladder (" in html
    alone = render_html(report_data([chat.path]))
    assert 'id="modes"' not in alone and 'id="horizon"' in alone
    v1 = render_html(report_data([ROOT / "runs" / "script-oracle__butterfly-40__v1"]))
    assert "butterfly-40 v1 (" in v1


RENDERING = ("report", "charts", "headline", "svgdraw", "board", "packing")
"""The report's modules in present/: they word and draw a ReportData, nothing more."""
COMPUTING = ("butterfly.analysis.scoring", "butterfly.analysis.compare",
             "butterfly.analysis.flips", "butterfly.analysis.regress", "butterfly.core.stats",
             "butterfly.core.metrics", "butterfly.core.logistic", "butterfly.core.horizon_metric",
             "numpy", "scipy", "matplotlib")
"""What scores or computes a statistic (issue 36: computed in analysis/report, then drawn)."""


def test_present_draws_the_report_and_computes_nothing() -> None:
    """The report's rendering modules import nothing that scores or computes a statistic (nor
    a chart library), and only ``svgdraw.py`` writes SVG elements: every chart comes from its
    pieces."""
    import ast

    present = ROOT / "butterfly" / "present"
    markup = re.compile(r"<(svg|line|circle|rect|path|text|g|polygon|polyline)[\s>/]")
    for name in RENDERING:
        source = (present / f"{name}.py").read_text(encoding="utf-8")
        tree = ast.parse(source)
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                     for a in n.names}
        bad = [m for m in imported if m in COMPUTING or m.startswith(tuple(
            f"{c}." for c in COMPUTING))]
        assert not bad, (name, bad)
        strings = [n.value for n in ast.walk(tree)
                   if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        drawn = [x for x in strings if markup.search(x)]
        assert (name == "svgdraw") == bool(drawn), (name, drawn[:3])
    assert "<svg" not in (present / "templates" / "report.html.j2").read_text(encoding="utf-8")
