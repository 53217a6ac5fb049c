"""The code track in ``butterfly report``: each turn's program diff and observed-spec marks in
the page's data (as ``butterfly show`` computes them), the code-track figures, and the viewer in
Chromium (a hostile program shows as text)."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from browser import fresh, wait_ready
from conftest import ROOT
from fakeserver import FakeServer

from butterfly import api
from butterfly.analysis.report import report_data
from butterfly.analysis.report.pages import broken_keys
from butterfly.analysis.transcripts import with_program_diffs
from butterfly.core.transcript import conversation_of
from butterfly.present.report import breakable, render_html
from butterfly.runs.reader import load_run

pytestmark = pytest.mark.xdist_group("code-runs")  # the code runs' sandboxes, one worker

SUITE = ROOT / "tests/butterfly/code/code_suite.jsonl"
SHOTS = ROOT / "build" / "screenshots"
HOSTILE = """Here it is <img src=x onerror="window.__pwned=1">
```python
import sys
print("<script>alert(1)</script>")
sys.exit("</script><script>window.__pwned=2</script>")
```"""
AGENTS = ("oracle", "collateral", "last-edit")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, code_runs: Path) -> list[Path]:
    """Three scripted code runs (12 turns each, shared with code/test_code_runs.py) and a
    hostile model's (one scenario)."""
    tmp = tmp_path_factory.mktemp("code-report")
    made = [code_runs / a for a in AGENTS]
    with FakeServer(lambda body: HOSTILE) as srv:
        made.append(api.run(model="openai/fake", api_base=srv.api_base, suite=str(SUITE),
                            limit=1, track="code", out=tmp / "hostile", cache=None).path)
    return made


@pytest.fixture(scope="module")
def model(runs: list[Path]) -> Any:
    return report_data(runs)


def _blob(html: str) -> str:
    """The page's packed data (base64 of gzip of JSON)."""
    blob = re.search(r'<script id="report-data" type="application/octet-stream">([^<]*)</script>',
                     html)
    assert blob is not None
    return blob.group(1)


def _page_data(html: str) -> Any:
    return json.loads(gzip.decompress(base64.b64decode(_blob(html))))


def test_each_turn_carries_its_program_diff_and_the_marks_show_computes(
        runs: list[Path], model: Any) -> None:
    seen = {"diff": 0, "unchanged": 0, "collateral": 0, "broken": 0, "missed": 0}
    for c in [c.to_json() for c in model.conversations]:  # as the page carries them
        run = load_run(runs[c["r"]])
        scenario = next(s for s in run.scenarios if s.id == c["id"])
        want = with_program_diffs(conversation_of(scenario, run.turns(), c["l"], c["k"]),
                                  scenario)
        assert len(c["c"]) == len(c["t"]) == len(want["turns"])
        for t, code, row in zip(c["t"], c["c"], want["turns"], strict=True):
            diff = row.get("program_diff")
            assert code[0] == (None if diff is None else "\n".join(diff))
            assert code[1] == broken_keys(row)
            assert (sorted(t[2]), t[3], t[4]) == (sorted(row["wrong"]), row["collateral"],
                                                  row["missed"])
            seen["diff"] += bool(code[0])
            seen["unchanged"] += code[0] == ""
            seen["collateral"] += bool(row["collateral"])
            seen["broken"] += bool(code[1])
            seen["missed"] += bool(row["missed"])
    assert all(seen.values()), seen  # every kind of mark is exercised
    hostile = [c for c in model.conversations if c.run == 3]
    assert hostile and all(code[1] for c in hostile for code in c.code or ())  # broken every turn


def test_a_spec_track_run_carries_no_code_entries() -> None:
    m = report_data([ROOT / "runs" / "script-noop__butterfly-40__v1"])
    assert not any("c" in c.to_json() for c in m.conversations)


def test_the_summary_has_the_code_track_figures(runs: list[Path], model: Any) -> None:
    html = render_html(model)
    section = html[html.index('<section id="code-track">'):]
    section = section[:section.index("</section>")]
    assert "<caption" in section
    for path, entry in zip(runs, model.runs, strict=True):
        code = api.score_run(path).code
        assert code is not None and entry.score.code == code
        label = re.escape(str(breakable(entry.label)))  # the name, breakable at / and :
        row = re.search(r"<tr><td>" + label + r"</td>(.*?)</tr>", section)
        assert row is not None
        assert re.findall(r"<td>([^<]*)</td>", row.group(1))[:3] == [
            str(code.turns_observed), f"{code.broken_per_turn:.3f}", str(code.turns_broken)]


def test_in_chromium(runs: list[Path], model: Any, tmp_path: Path, chromium: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    html = tmp_path / "report.html"
    html.write_text(render_html(model), encoding="utf-8")
    assert "alert(1)" not in html.read_text(encoding="utf-8")  # the programs travel packed
    data = _page_data(html.read_text(encoding="utf-8"))
    hostile = next(c for c in data["conversations"] if c["r"] == 3)
    first = hostile["c"][0][0].split("\n")
    assert len(first) > 24 and '+print("<script>alert(1)</script>")' in first
    d = fresh(chromium)
    d.set_window_size(1024, 768)
    iw, ih = d.execute_script("return [window.innerWidth, window.innerHeight]")
    d.set_window_size(2 * 1024 - iw, 2 * 768 - ih)  # a 1024 x 768 viewport
    d.get(html.as_uri() + f"#t/3/{hostile['id']}/E/0")
    assert wait_ready(d) == "1"
    view = d.find_element(By.ID, "t-view")
    pre = view.find_elements(By.CSS_SELECTOR, "pre.pdiff")[0]
    spans = pre.find_elements(By.TAG_NAME, "span")
    assert [s.get_attribute("textContent") for s in spans] == first[:24]  # folded
    view.find_element(By.CSS_SELECTOR, ".pside button.more").click()
    lines = d.execute_script("return [...arguments[0].children].map(s => "
                             "[s.className, s.textContent])", pre)
    assert [x[1] for x in lines] == first  # unfolded: every line, as text
    assert ["add", '+print("<script>alert(1)</script>")'] in lines
    assert {x[0] for x in lines if x[1].startswith("-")} >= {"del"}
    assert "program: unchanged" in view.text  # turn 2 answered the same program
    assert view.find_elements(By.CSS_SELECTOR, ".turn table.diff tr.broken")
    with pytest.raises(NoAlertPresentException):
        d.switch_to.alert.text  # noqa: B018
    assert d.execute_script("return window.__pwned === undefined")
    assert not view.find_elements(By.CSS_SELECTOR, "script, img")
    d.execute_script("location.hash = '#t/1/code-undo-last/E/0'")  # the collateral run
    side = d.find_element(By.CSS_SELECTOR, "#t-view .turn .codepair")
    assert side.find_elements(By.CSS_SELECTOR, "pre.pdiff span.add")
    assert d.find_elements(By.CSS_SELECTOR, "#t-view table.diff tr.coll")
    d.execute_script("document.getElementById('transcripts').scrollIntoView()")
    scroll_w, client_w = d.execute_script(
        "return [document.documentElement.scrollWidth, "
        "document.documentElement.clientWidth]")
    assert scroll_w <= client_w  # no horizontal scrollbar at 1024
    right, bottom, left, top = d.execute_script(
        "const a = document.querySelector('#transcripts .split > div')"
        ".getBoundingClientRect(), b = document.getElementById('t-view')"
        ".getBoundingClientRect(); return [a.right, a.bottom, b.left, b.top]")
    assert bottom <= top or right <= left  # the list and the transcript never overlap
    assert bottom <= top  # below 1200 px the transcript is under the list (docs/report.md)
    SHOTS.mkdir(parents=True, exist_ok=True)
    d.execute_script("document.querySelector('#t-view .sside table.diff')"
                     ".scrollIntoView({block: 'end'})")  # the diff's end, the spec's marks
    shot = tmp_path / "report-code-1024.png"
    assert d.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    shutil.copyfile(shot, SHOTS / shot.name)
    severe = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe



TURN_BUDGET = 400
"""Bytes of packed page data a code-track turn may cost (docs/report.md, "Size"): at that rate
10 runs of butterfly-code (3,490 turns) carry 1.4 MB of transcripts, and their page, with its
charts and tables (about 0.25 MB for 10 runs), stays under 2 MB. Measured: 116 to 220."""


def test_a_code_turn_costs_the_page_at_most_its_budget(model: Any) -> None:
    data = _blob(render_html(model))
    turns = sum(len(c.turns) for c in model.conversations)
    assert turns == 3 * 12 + 5 and all(c.code for c in model.conversations)
    assert len(data) <= TURN_BUDGET * turns
