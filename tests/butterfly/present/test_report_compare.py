"""The report's compare view: runs of one suite compared as ``butterfly compare`` does, each
scenario linked to both transcripts; the leaderboard's effective final match and cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser import fresh, wait_ready
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly.analysis.compare import compare, load_answers
from butterfly.analysis.report import report_data
from butterfly.present.report import render_html
from butterfly.present.text import cannot_flag_note

LIMIT = 8


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("runs")
    made = []
    for name in ("oracle", "last-edit", "noop"):
        out = base / name
        r = run_cli("run", "--model", f"script/{name}", "--out", str(out), "--limit",
                    str(LIMIT), "--no-cache")
        assert r.returncode == 0, r.stderr
        made.append(out)
    return made


def test_compare_section_lists_what_compare_finds(runs: list[Path]) -> None:
    m = report_data(runs, compare_method="diff", q=0.1)
    assert [(c.a, c.b) for c in m.compare] == [
        ("script/oracle", "script/last-edit"), ("script/oracle", "script/noop")]
    for j, c in enumerate(m.compare, 1):
        want = compare(load_answers(runs[0]), load_answers(runs[j]), "diff", 0.1)
        assert [x.id for x in c.regressed] == want.regressed and want.regressed
        assert [x.id for x in c.improved] == want.improved == []
        assert c.method == "diff" and c.q == 0.1 and c.result == want
        x = c.regressed[0]
        assert x.a.href == f"#t/0/{x.id}/E/0" and x.b.href == f"#t/{j}/{x.id}/E/0"
    html = render_html(m)
    assert 'id="compare"' in html and "method diff, q = 0.1" in html
    sid = m.compare[0].regressed[0].id
    assert f'href="#t/0/{sid}/E/0"' in html and f'href="#t/1/{sid}/E/0"' in html


def test_the_default_is_compare_s_default_and_one_run_has_no_section(runs: list[Path]) -> None:
    m = report_data(runs[:2])
    assert m.compare[0].method == "bh" and m.compare[0].q == 0.1
    assert report_data(runs[:1]).compare == ()
    assert 'id="compare"' not in render_html(report_data(runs[:1]))


def test_leaderboard_shows_effective_final_match_and_cost(runs: list[Path]) -> None:
    m = report_data(runs)
    e = m.runs[1].score.to_json()
    score = json.loads(run_cli("score", str(runs[1]), "--json").stdout)
    assert e["effective_final_match"] == score["effective_final_match"]
    assert e["usage"] == score["usage"]
    html = render_html(m)
    assert ">effective</th>" in html and ">cost</th>" in html


def test_a_compare_link_opens_the_transcript(runs: list[Path], tmp_path: Path,
                                             chromium: Any) -> None:
    from selenium.webdriver.common.by import By

    html = tmp_path / "r.html"
    r = run_cli("report", *map(str, runs), "--html", str(html), "--compare-method", "diff")
    assert r.returncode == 0, r.stderr
    d = fresh(chromium)
    d.get(html.as_uri())
    assert wait_ready(d) == "1"
    links = d.find_elements(By.CSS_SELECTOR, "#compare a.tlink")
    assert links
    row = links[1].find_element(By.XPATH, "./ancestor::tr")
    sid = row.find_elements(By.TAG_NAME, "td")[1].text
    links[1].click()  # B of the first regressed scenario
    view = d.find_element(By.ID, "t-view")
    assert sid in view.find_element(By.TAG_NAME, "h3").text
    assert "script/last-edit" in view.text


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A (the oracle) and B (a noisy oracle), four repeats each: B fails some repeats."""
    base = tmp_path_factory.mktemp("repeated")
    made = []
    for name in ("oracle", "noisy:p=0.5"):
        out = base / name.replace(":", "-")
        r = run_cli("run", "--model", f"script/{name}", "--out", str(out), "--limit",
                    str(LIMIT), "--repeats", "4", "--no-cache")
        assert r.returncode == 0, r.stderr
        made.append(out)
    return made


def _verdicts(m: Any) -> dict[tuple[int, str, int], str]:
    return {(c.run, c.id, c.repeat): c.verdict for c in m.conversations}


def test_compare_links_open_the_repeats_that_show_the_regression(repeated: list[Path]) -> None:
    m = report_data(repeated, compare_method="bh", q=0.5)
    verdicts = _verdicts(m)
    found = m.compare[0].regressed
    assert found
    for x in found:
        a, b = x.a, x.b
        assert verdicts[(0, x.id, a.repeat)] == "P" and a.passed
        assert verdicts[(1, x.id, b.repeat)] == "F" and not b.passed
        assert b.href == f"#t/1/{x.id}/E/{b.repeat}"
        assert [y.repeat for y in x.b_all] == [0, 1, 2, 3]
        assert all(verdicts[(1, x.id, y.repeat)] == ("P" if y.passed else "F") for y in x.b_all)
    # the premise of the defect (bh reads every pair; diff reads the first only, so the
    # scenarios it finds fail at repeat 0): repeat 0 of B passes in a regressed scenario
    assert any(verdicts[(1, x.id, 0)] == "P" for x in found)


def test_a_compare_link_opens_a_failing_repeat_of_b_in_chromium(repeated: list[Path],
                                                                tmp_path: Path,
                                                                chromium: Any) -> None:
    from selenium.webdriver.common.by import By

    html = tmp_path / "r.html"
    r = run_cli("report", *map(str, repeated), "--html", str(html), "--compare-method", "bh",
                "--q", "0.5")
    assert r.returncode == 0, r.stderr
    m = report_data(repeated, compare_method="bh", q=0.5)
    verdicts = _verdicts(m)
    x = next(x for x in m.compare[0].regressed if verdicts[(1, x.id, 0)] == "P")
    d = fresh(chromium)
    d.get(html.as_uri())
    assert wait_ready(d) == "1"
    link = d.find_element(By.CSS_SELECTOR, f'#compare a.tlink[href="{x.b.href}"]')
    link.click()
    view = d.find_element(By.ID, "t-view")
    assert x.id in view.find_element(By.TAG_NAME, "h3").text
    note = view.find_element(By.CSS_SELECTOR, "p.note").text
    assert f"repeat {x.b.repeat}: final answer wrong" in note, note
    every = d.find_elements(By.CSS_SELECTOR, f'#compare a.rlink[href^="#t/1/{x.id}/"]')
    assert [e.text for e in every] == [f"{y.repeat}{'✓' if y.passed else '✗'}"
                                       for y in x.b_all]
    every[0].click()  # repeat 0 of B, which passed
    assert "repeat 0: final match" in view.find_element(By.CSS_SELECTOR, "p.note").text


def test_the_report_says_what_compare_says_when_its_method_cannot_flag(runs: list[Path]) -> None:
    """One pair per scenario: the report's compare section carries compare's own note (one
    function writes both), naming the report's --compare-method."""
    m = report_data(runs[:2])
    res = m.compare[0].result
    assert res is not None
    want = cannot_flag_note(compare(load_answers(runs[0]), load_answers(runs[1]), "bh", 0.1),
                            "--compare-method")
    assert want is not None and cannot_flag_note(res, "--compare-method") == want
    assert "--compare-method diff" in want and want in render_html(m)
    diff = report_data(runs[:2], compare_method="diff").compare[0].result
    assert diff is not None and cannot_flag_note(diff, "--compare-method") is None
