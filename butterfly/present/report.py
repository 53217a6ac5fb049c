"""``butterfly report RUN [RUN ...] --html FILE``: one self-contained HTML report.

Two steps: ``analysis/report`` computes every figure the page shows (:class:`ReportData`, from
run records only), and :func:`render_html` words and draws it: the template
(``templates/report.html.j2``), the headline's sentences (``present/headline.py``), the charts
as inline SVG (``present/charts.py``), and the transcripts packed (``present/packing.py``), all
in one file with its CSS and script, so it opens from a file URL with no network.

Model answers are untrusted text. The page is rendered by Jinja2 with autoescape and strict
undefined variables; the transcripts travel as gzip-compressed JSON (base64) and the page's
script puts every string into the DOM with ``textContent``, never as HTML. Transcripts are
decompressed once and rendered lazily, one page of the list and one conversation at a time, so
a report of 5 runs x 2,000 scenarios stays usable (``bench/report.py`` measures it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from butterfly.analysis.report import ReportData, report_data
from butterfly.core.agents import baseline_label
from butterfly.core.asking import asked_line
from butterfly.core.horizon_text import horizon_words
from butterfly.files import write_text_atomic
from butterfly.present.board import board_columns
from butterfly.present.charts import draw
from butterfly.present.display import suite_name
from butterfly.present.headline import frontier_sentences, sentences
from butterfly.present.packing import pack
from butterfly.present.text import cannot_flag_note, pct
from butterfly.runs.reader import Run
from oracle import KEYS, UNDO_OPS

TEMPLATES: Final = Path(__file__).parent / "templates"


LONG_PIECE: Final = 24
"""A piece of a name (between ``/``, ``:`` and spaces) longer than this may break after a
hyphen; a shorter one is kept on one line."""


def breakable(name: str) -> Any:
    """A name as the page shows it (the ``name`` filter): a line may break after each ``/`` and
    ``:`` (a ``<wbr>``) and at a space, and nowhere else in a piece of up to
    :data:`LONG_PIECE` characters (``span.nb``, nowrap: ``script/last-edit`` breaks at its
    ``/``, not its hyphen); a longer piece may also break after a hyphen, never between two
    other characters (``script/noisy:p=0.2`` broke as ``script/noisy:p`` / ``=0.2`` under
    ``overflow-wrap: anywhere``). The whole is ``span.name``, which the tests measure."""
    from markupsafe import Markup, escape

    out = []
    for piece in re.split(r"(?<=[/: ])", str(name)):
        word = piece.rstrip(" ")
        kept = len(word) <= LONG_PIECE and re.search(r"[^\w.=]", word)
        out.append((f'<span class="nb">{escape(word)}</span>' if kept else str(escape(word)))
                   + ("<wbr>" if word.endswith(("/", ":")) and word == piece else "")
                   + piece[len(word):])
    return Markup(f'<span class="name">{"".join(out)}</span>')


def environment() -> Any:
    """The page's Jinja2 environment: autoescape, strict undefined variables, and the filters
    that word a figure (``pct``, ``num``, ``ci``) or a name (``name``)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined,
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["pct"] = lambda x: pct(x, "–")
    env.filters["num"] = lambda x: "–" if x is None else f"{x:.3f}"
    env.filters["name"] = breakable
    env.filters["ci"] = lambda c, scale=100: "" if c is None else (
        f"[{scale * c[0]:.1f}, {scale * c[1]:.1f}]" if scale == 100
        else f"[{c[0]:.2f}, {c[1]:.2f}]")
    env.globals.update(baseline_label=baseline_label, suite_name=suite_name,
                       horizon_words=horizon_words, asked_line=asked_line,
                       cannot_flag_note=cannot_flag_note)
    return env


def page_data(data: ReportData) -> dict[str, Any]:
    """What the page's script reads (``templates/report.js``): the scenarios, every
    conversation packed, the runs' labels and the spec's keys."""
    return {"scenarios": {k: s.to_json() for k, s in data.scenarios.items()},
            "conversations": [c.to_json() for c in data.conversations],
            "runs": [r.label for r in data.runs], "keys": list(KEYS)}


def render_html(data: ReportData) -> str:
    """The page of ``data``: one HTML text, everything inline."""
    return str(environment().get_template("report.html.j2").render(
        m=data,
        css=(TEMPLATES / "report.css").read_text(encoding="utf-8"),
        js=(TEMPLATES / "report.js").read_text(encoding="utf-8"),
        svg=draw(data),
        sentences=sentences(data.headline),
        frontier_sentences=frontier_sentences(data.frontier, [r.label for r in data.runs]),
        data=pack(page_data(data)),
        board=board_columns(),
        undo_ops=list(UNDO_OPS),
    ))


def write_report(runs: Sequence[Path | Run], html: Path, title: str | None = None,
                 compare_method: str = "bh", q: float = 0.1) -> int:
    """Compute the report's data, render it and write it; returns its size in bytes."""
    text = render_html(report_data(runs, title, compare_method, q))
    write_text_atomic(html, text, f"--html {html}")
    return len(text.encode("utf-8"))
