"""The report at 1400 x 900 and 1024 x 768 (issue 34, item 12), measured in Chromium, never
judged by eye: no table wider than the window without its own scroll and a visible cue; names
broken only after ``/`` or ``:`` (or at a space, or after a hyphen), never between two other
characters; the transcript list's scenario ids on one line, cut with an ellipsis and whole in
their title; every header whole (not clipped by its cell or by the list's column). The page is
the committed runs' report (tools/screenshots.py builds the same one), with every ``details``
open."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from browser import fresh, viewport, wait_ready
from conftest import ROOT

from butterfly.analysis.report import report_data
from butterfly.present.report import LONG_PIECE, render_html

SHOTS = ROOT / "build" / "screenshots"
RUNS = ["local-smollm2__butterfly-40__v1-layouts-repeats-2",
        "local-smollm2__butterfly-40__v1-sc3-per-category-1", "script-oracle__butterfly-40__v1",
        "script-last-edit__butterfly-40__v1", "script-lifo__butterfly-40__v1",
        "script-no-coupling__butterfly-40__v1",
        "script-noisy-p-0.2__butterfly-40__v1-layouts-repeats-2"]
VIEWPORTS = ((1400, 900), (1024, 768))

MEASURE = r"""
const vw = document.documentElement.clientWidth;
document.querySelectorAll('details').forEach(d => { d.open = true; });
window.dispatchEvent(new Event('resize'));
function breaks(node) {  // where node's text starts a new line: indices into textContent
  const out = [], r = document.createRange();
  const walk = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
  let top = null, at = 0;
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    for (let i = 0; i < t.length; i++, at++) {
      if (/\s/.test(t.data[i])) continue;
      r.setStart(t, i); r.setEnd(t, i + 1);
      const rect = r.getClientRects()[0];
      if (!rect) continue;
      if (top !== null && rect.top > top + 2) out.push(at);
      top = rect.top;
    }
  }
  return out;
}
function lines(node) {
  const r = document.createRange(); r.selectNodeContents(node);
  return new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size;
}
const boxes = [...document.querySelectorAll('.twrap')].filter(w => w.offsetParent).map(w => {
  const box = w.querySelector(':scope > .tscroll'), cue = w.querySelector(':scope > .tcue');
  const c = cue.getBoundingClientRect(), b = box.getBoundingClientRect();
  return {id: box.firstElementChild.id || box.firstElementChild.className,
          right: b.right, sw: box.scrollWidth, cw: box.clientWidth,
          cue: c.height > 0 && c.right <= vw && getComputedStyle(cue).visibility === 'visible',
          fade: getComputedStyle(box).maskImage !== 'none'};
});
const loose = [...document.querySelectorAll('table')].filter(
  t => t.offsetParent && !t.closest('.tscroll') && !t.closest('#t-view')).map(t => t.id);
const names = [...document.querySelectorAll('span.name')].filter(n => n.offsetParent)
  .map(n => [n.textContent, breaks(n)]);
const heads = [...document.querySelectorAll('th')].filter(
  th => th.offsetParent && !th.classList.contains('chartcell')).map(th => {
  const box = th.closest('.tscroll') || th.closest('table').parentElement;
  const b = box.getBoundingClientRect();
  const r = th.getBoundingClientRect();
  return [th.textContent, th.scrollWidth <= th.clientWidth + 1, breaks(th),
          (box.classList.contains('tscroll') && box.scrollWidth > box.clientWidth + 1)
          || r.right <= b.right + 1];
});
const ids = [...document.querySelectorAll('#t-list tbody tr')].map(tr => {
  const td = tr.cells[1], s = getComputedStyle(td);
  return [td.textContent, lines(td), td.title, s.whiteSpace, s.textOverflow,
          td.scrollWidth > td.clientWidth];
});
return {vw: vw, page: document.documentElement.scrollWidth, boxes: boxes, loose: loose,
        names: names, heads: heads, ids: ids};
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    html = tmp_path_factory.mktemp("layout") / "report.html"
    html.write_text(render_html(report_data([ROOT / "runs" / r for r in RUNS])), encoding="utf-8")
    return html


@pytest.fixture(scope="module", params=VIEWPORTS, ids=lambda v: f"{v[0]}x{v[1]}")
def measured(request: pytest.FixtureRequest, page: Path, chromium: Any) -> dict[str, Any]:
    """The page's measurements at one viewport (and its screenshot in build/screenshots)."""
    w, h = request.param
    fresh(chromium).get(page.as_uri())
    wait_ready(chromium)
    viewport(chromium, w, h)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"report-layout-{w}x{h}.png"
    assert chromium.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    m: dict[str, Any] = chromium.execute_script(MEASURE)
    assert m["vw"] <= w
    return m


def _mid_word(text: str, breaks: list[int]) -> list[str]:
    """The line breaks of ``text`` (each before the character at its index) inside a word:
    not at a space, nor after a ``/`` or ``:``, nor after a hyphen of a piece (between those)
    longer than the report's LONG_PIECE characters; each shown as ``before|after``."""
    bad = []
    for i in breaks:
        before = text[:i]
        piece = re.split(r"[/:\s]", before)[-1] + re.split(r"[/:\s]", text[i:])[0]
        if before[-1:].isspace() or before[-1:] in ("/", ":") or (
                before.endswith("-") and len(piece) > LONG_PIECE):
            continue
        bad.append(f"{before}|{text[i:]}")
    return bad


def test_no_table_is_wider_than_the_window_without_its_scroll_and_cue(
        measured: dict[str, Any]) -> None:
    assert measured["page"] <= measured["vw"]  # the page itself never scrolls sideways
    assert not measured["loose"]  # every table in its own scroll box
    for b in measured["boxes"]:
        assert b["right"] <= measured["vw"] + 0.5, b
        if b["sw"] > b["cw"] + 1:  # columns hidden to the right: said and shown
            assert b["cue"] and b["fade"], b
        else:
            assert not b["cue"], b
    assert any(b["sw"] > b["cw"] + 1 for b in measured["boxes"]), "a test that can fail"


def test_names_break_only_after_a_slash_or_colon(measured: dict[str, Any]) -> None:
    bad = [_mid_word(text, b) for text, b in measured["names"] if _mid_word(text, b)]
    assert not bad, bad
    assert any(b for _, b in measured["names"]), "some name wraps: the check can fail"
    assert any(t == "script/noisy:p=0.2" for t, _ in measured["names"])
    assert _mid_word("script/noisy:p=0.2", [14]) == ["script/noisy:p|=0.2"]  # as it broke
    assert _mid_word("script/last-edit", [12]) == ["script/last-|edit"]


def test_scenario_ids_are_one_line_with_their_title(measured: dict[str, Any]) -> None:
    assert measured["ids"]
    for text, lines, title, white, overflow, cut in measured["ids"]:
        assert lines == 1 and title == text and white == "nowrap", text
        assert overflow == "ellipsis" or not cut, text


def test_headers_are_whole(measured: dict[str, Any]) -> None:
    for text, fits, breaks, seen in measured["heads"]:
        assert fits and not _mid_word(text, breaks), (text, breaks)
        assert seen, text  # inside its box, or its box scrolls with a cue (test above)
    heads = [h[0].strip() for h in measured["heads"]]
    assert "first divergent" in heads

