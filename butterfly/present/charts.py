"""Every chart of the report, drawn from its :class:`ReportData` with ``present/svgdraw.py``
(docs/report.md, "Charts"): the headline's dots and whiskers, undo recovery by op as small
multiples, the change-radius dot plot, the first-divergent-turn bars, the horizon beside its
Kaplan-Meier survival curves, the efficiency frontier, and the heatmap's colours. Nothing is
computed here but where a mark goes: each figure is the data's.

Each mark carries its figures for the tests: the dot charts' points in data- attributes, the
bars as ``fdt-I-BIN`` (run I, bin BIN) with ``data-share``, the horizon's series as
``points-I``, ``fit-I``, ``horizon-I``, ``censored-I`` (with ``data-direction``) and its label
``censored-label-I``, ``survival-I`` (with ``data-steps``), I the series' place among the
charted runs; the frontier's dots as ``g.fpoint`` (``data-run``, ``data-x``, ``data-y``,
``data-lo``, ``data-hi``, ``data-pareto``), its line ``frontier-line`` and each sweep's
``sweep-K`` (``data-runs``). A run's label in a chart is made printable (control characters
escaped)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from butterfly.analysis.report.data import (
    FirstDivergent,
    Frontier,
    Headline,
    HeatCell,
    HorizonSeries,
    Radius,
    ReportData,
    UndoCell,
    UndoPanels,
)
from butterfly.core.agents import window_k
from butterfly.core.horizon_text import horizon_words, value_text
from butterfly.core.printable import printable
from butterfly.present.svgdraw import (
    Scale,
    Span,
    arrow,
    axis,
    baseline_labels,
    baseline_lines,
    cividis,
    element,
    esc,
    frame,
    group,
    ink_on,
    legend,
    line,
    log_ticks,
    nice_top,
    path,
    point,
    polyline,
    series,
    steps,
    svg,
    text,
    whisker,
    x_ticks,
    y_ticks,
)
from butterfly.present.text import pct

ROW_H: Final = 22
"""A dot chart's row, in pixels."""
HEAD: Final = Scale(1.0, 420, 22)
"""The headline's shares in [0, 1] onto its 420 pixels."""
RADIUS_W: Final = 360
UNDO_W: Final = 170
UNDO_DOT: Final = Scale(1.0, 118, pad=16)
"""The part of an undo panel the dot's scale takes (the count k/n is written to its right;
room for the "100%" tick's label)."""
ARROW: Final = 1.45
"""How far a censored horizon's arrow reaches past its bound (a factor on the log axis)."""
NO_FIGURE: Final = ("#eeeeee", "#555")
"""A heatmap cell with no final match: grey, and its text."""


@dataclass(frozen=True, slots=True)
class Drawn:
    """The page's SVG (and the heatmap's colours: background and text per cell)."""

    headline_axis: str
    headline_rows: tuple[str, ...]
    radius_axis: str
    radius_rows: tuple[str, ...]
    undo_axes: tuple[str, ...]
    undo_rows: tuple[tuple[str, ...], ...]
    first_divergent: str
    horizon: str | None
    frontier: str | None
    heat: tuple[tuple[tuple[str, str], ...], ...]


def draw(data: ReportData) -> Drawn:
    """Every chart of the page."""
    labels = [r.label for r in data.runs]
    undo_axes, undo_rows = undo_chart(data.undo, labels)
    radius_axis, radius_rows = radius_chart(data.radius, labels)
    headline_axis, headline_rows = headline_chart(data.headline)
    return Drawn(headline_axis=headline_axis, headline_rows=headline_rows,
                 radius_axis=radius_axis, radius_rows=radius_rows,
                 undo_axes=undo_axes, undo_rows=undo_rows,
                 first_divergent=first_divergent_chart(data.first_divergent, labels),
                 horizon=horizon_chart(data.horizon) if data.horizon else None,
                 frontier=frontier_chart(data.frontier) if data.frontier else None,
                 heat=tuple(tuple(heat_colours(c) for c in row) for row in data.heat))


def base_name(name: str) -> str:
    """A baseline's name over its line: short, the recency agent by its window."""
    k = window_k(name) if name.startswith("window:") else None
    return {"noop": "no-op"}.get(name, name) if k is None else f"last {k} msgs"


def dot_axis(s: Scale, ticks: Sequence[float], fmt: str, base: Mapping[str, float],
             figure: Callable[[float], str], what: str) -> str:
    """The axis above a dot chart's rows (the headline's, the change radius'): its ticks
    (``fmt`` formats one) and each baseline's label (``figure`` formats its value) over its
    dashed line."""
    return axis(s, ticks, fmt, 40, "dw-axis", f"{what} axis",
                [*baseline_labels(s, base, {b: base_name(b) for b in base}, figure),
                 *baseline_lines(s, base, 24)])


def dot_row(s: Scale, base: Mapping[str, float], cls: str, label: str, mark: str) -> str:
    """A run's row of a dot chart: the baselines' dashed lines, then the run's ``mark`` (its
    dot on its interval, words saying why it has none, or nothing)."""
    return svg(s.width, ROW_H, cls, label, [*baseline_lines(s, base, ROW_H), mark])


def headline_chart(h: Headline) -> tuple[str, tuple[str, ...]]:
    """The headline's axis (ticks at 0-100%, the baselines labelled) and per run its dot and
    whisker, its figures in data- attributes."""
    rows = []
    for r in h.rows:
        mark = ""
        if r.final_match is not None:
            fm = r.final_match
            lo, hi = (fm if r.lo is None else r.lo), (fm if r.hi is None else r.hi)
            mark = group(whisker(HEAD, fm, lo, hi, ROW_H / 2, "#0b5394"),
                         {"label": r.label, "fm": f"{fm:.6f}", "lo": f"{lo:.6f}",
                          "hi": f"{hi:.6f}"}, class_="run")
        rows.append(dot_row(HEAD, h.baselines, "dw", f"final match of {r.label}", mark))
    ticks = [t / 100 for t in range(0, 101, 25)]
    return dot_axis(HEAD, ticks, "{:.0%}", h.baselines, pct, "final match"), tuple(rows)


def radius_chart(radius: Radius, labels: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The change-radius dot plot: its axis (0 to the smallest 1, 2, 5 x 10^k above every
    interval end and baseline, with the baselines' labels) and one row per run."""
    highs = [r.hi for r in radius.rows if r.hi is not None]
    s = Scale(nice_top([*highs, *radius.baselines.values()]), RADIUS_W)
    rows = []
    for label, r in zip(labels, radius.rows, strict=True):
        if r.value is None or r.lo is None or r.hi is None:
            mark = text(s.pad, ROW_H / 2 + 4, "no complete conversation", fill="#666",
                        class_="no-figure", data_run=label)
        else:
            mark = group(whisker(s, r.value, r.lo, r.hi, ROW_H / 2, "#6c3483"),
                         {"run": label, "value": f"{r.value:.6f}", "lo": f"{r.lo:.6f}",
                          "hi": f"{r.hi:.6f}", "n": r.n}, class_="point")
        rows.append(dot_row(s, radius.baselines, "dw radius", f"change radius of {label}",
                            mark))
    return dot_axis(s, [s.top * k / 4 for k in range(5)], "{:g}", radius.baselines,
                    "{:.2f}".format, "change radius"), tuple(rows)


def undo_chart(undo: UndoPanels | None,
               labels: Sequence[str]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """Undo recovery by op: an axis per op, and per run one panel per op (none when no run
    played an undo op)."""
    if undo is None:
        return (), ()
    axes = tuple(axis(UNDO_DOT, (0, 0.5, 1), "{:.0%}", 24, "undo-axis",
                      f"undo recovery axis, {op}") for op in undo.ops)
    return axes, tuple(tuple(_undo_cell(label, c) for c in row)
                       for label, row in zip(labels, undo.rows, strict=True))


def _undo_cell(label: str, c: UndoCell) -> str:
    s, mid = UNDO_DOT, ROW_H / 2
    if c.state == "point" and c.share is not None:
        mark = (line(s.x(0), s.x(1), mid, mid, "#ddd")
                + group(element("circle", cx=s.x(c.share), cy=mid, r=5, fill="#0b5394")
                        + text(s.width + 6, mid + 4, f"{c.k}/{c.n}"),
                        {"run": label, "op": c.op, "value": f"{c.share:.6f}", "k": c.k,
                         "n": c.n}, class_="point"))
    else:
        words = "not played" if c.state == "not-played" else "no turn after a match"
        mark = text(s.pad, mid + 4, words, fill="#777", class_=c.state, data_run=label,
                    data_op=c.op)
    return svg(UNDO_W, ROW_H, "undo", f"undo recovery of {label} on {c.op}", [mark])


def heat_colours(c: HeatCell) -> tuple[str, str]:
    """A heatmap cell's background (its final match on the cividis scale) and text colour."""
    if c.final_match is None:
        return NO_FIGURE
    bg = cividis(c.final_match)
    return bg, ink_on(bg)


def _label(text_: str) -> str:
    return printable(text_, newlines=False)


def _title(x: float, y: float, words: str) -> str:
    """A chart's (or a panel's) title, centred on ``x``."""
    return text(x, y, words, size=13, anchor="middle", fill="#222")


def _caption(x: float, y: float, words: str, rotate: int | None = None) -> str:
    """An axis' caption centred on (x, y); ``rotate=-90`` for a y axis."""
    return text(x, y, words, size=12, anchor="middle", rotate=rotate)


def _keyed(width: int, cls: str, label: str, parts: list[str], keys: Sequence[tuple[str, str]],
           left: float, top: float, span: float, rows: bool = False) -> str:
    """A chart: its ``parts`` with the legend of ``keys`` below them from ``top``, the chart as
    tall as the legend needs."""
    drawn, height = legend(keys, left, top, span, rows=rows)
    return svg(width, round(top + height + 4), cls, label, [*parts, drawn])


def first_divergent_chart(fd: FirstDivergent, labels: Sequence[str]) -> str:
    """Bars: per bin, one bar per run, its height the share of the run's conversations whose
    first divergent turn is the bin's; the legend below."""
    width, left, right, top, bottom = 640, 52, 628, 30, 220
    peak = max((v for run in fd.shares for v in run), default=0.0)
    most = 100 if peak > 50 else nice_top([peak])
    y = Span(0, 1.05 * most, bottom, top)  # room above the tallest bar
    slot = (right - left) / len(fd.bins)
    bar = 0.8 * slot / max(1, len(fd.shares))
    parts = [frame(left, top, right, bottom),
             y_ticks(y, [(most * k / 5, f"{most * k / 5:g}") for k in range(6)], left, right)]
    for i, (label, shares) in enumerate(zip(labels, fd.shares, strict=True)):
        for b, (name, v) in enumerate(zip(fd.bins, shares, strict=True)):
            parts.append(element(
                "rect", element("title", esc(f"{_label(label)}: {name}: {v:.1f}%")),
                id=f"fdt-{i}-{name}", x=left + slot * (b + 0.1) + i * bar, y=y.at(v),
                width=round(bar, 2), height=round(bottom - y.at(v), 2), fill=series(i),
                data_share=f"{v:.6f}"))
    mid = Span(0, len(fd.bins), left, right)
    parts.append(x_ticks(mid, [(b + 0.5, name) for b, name in enumerate(fd.bins)], bottom))
    asked = " (over asked turns only where a run asked at chosen turns)" if fd.asked else ""
    parts += [_title(width / 2, 18, "Where conversations first go wrong"),
              _caption((left + right) / 2, bottom + 36,
                       f"first divergent turn{asked} (none = matched throughout)"),
              _caption(16, (top + bottom) / 2, "conversations (%)", rotate=-90)]
    return _keyed(width, "chart", "Where conversations first go wrong: the first divergent "
                  "turn of each run's conversations", parts,
                  [(series(i), _label(x)) for i, x in enumerate(labels)],
                  left, bottom + 48, right - left)


def spaced(lengths: Sequence[int]) -> list[int]:
    """The tested lengths to label on the log axis: the shortest, the longest, and those in
    between at least a tenth of the axis from the last one kept (labels would overlap)."""
    gap = 0.1 * math.log(lengths[-1] / lengths[0])
    out = [lengths[0]]
    for n in lengths[1:-1]:
        if math.log(n / out[-1]) >= gap and math.log(lengths[-1] / n) >= gap:
            out.append(n)
    return out + ([lengths[-1]] if lengths[-1] != lengths[0] else [])


def _turn_ticks(last: int) -> list[tuple[float, str]]:
    step = int(nice_top([last / 8]))
    return [(float(t), str(t)) for t in range(0, last + 1, step)]


def horizon_chart(runs: Sequence[HorizonSeries]) -> str:
    """Left, final match by chain length on a log axis with each run's fitted curve (none
    without a fit), the horizon a dotted line at its crossing or, censored, an arrow from its
    bound with its words; right, the Kaplan-Meier steps; one legend below for both."""
    width, top, bottom = 960, 30, 230
    (l0, l1), (r0, r1) = (56, 446), (546, 948)
    tested = sorted({n for s in runs for n, _ in s.points})
    x = Span(tested[0] / ARROW ** 1.3, tested[-1] * ARROW ** 1.3, l0, l1, log=True)
    y = Span(-2, 102, bottom, top)
    last = max([1, *(t for s in runs for t, _ in s.survival)])
    xs = Span(-0.05 * last, 1.05 * last, r0, r1)
    percents = [(float(v), str(v)) for v in range(0, 101, 20)]
    parts = [frame(l0, top, l1, bottom), frame(r0, top, r1, bottom),
             y_ticks(y, percents, l0, l1), y_ticks(y, percents, r0, r1),
             x_ticks(x, [(float(n), str(n)) for n in spaced(tested)], bottom),
             x_ticks(xs, _turn_ticks(last), bottom),
             line(l0, l1, y.at(50), y.at(50), "#999", stroke_dasharray="2 3")]
    for i, s in enumerate(runs):
        parts += _horizon_marks(i, s, x, y, top, bottom)
        parts.append(path(steps([(xs.at(t), y.at(v)) for t, v in s.survival]), series(i),
                          id=f"survival-{i}",
                          data_steps=";".join(f"{t} {v:.6f}" for t, v in s.survival)))
    parts += [_title((l0 + l1) / 2, 18, "Final match by chain length, logistic fit"),
              _title((r0 + r1) / 2, 18, "Survival of turn match (Kaplan-Meier)"),
              _caption((l0 + l1) / 2, bottom + 36, "chain length (turns, log scale)"),
              _caption((r0 + r1) / 2, bottom + 36, "turn (0: before the first)"),
              _caption(16, (top + bottom) / 2, "final match (%)", rotate=-90),
              _caption(r0 - 40, (top + bottom) / 2, "matched at every turn so far (%)",
                       rotate=-90)]
    return _keyed(width, "chart", "Final match by chain length with the horizon, and the "
                  "survival of turn match", parts,
                  [(series(i), f"{_label(s.label)}: horizon {horizon_words(s.horizon)}")
                   for i, s in enumerate(runs)], l0, bottom + 48, r1 - l0, rows=True)


def _horizon_marks(i: int, s: HorizonSeries, x: Span, y: Span, top: float,
                   bottom: float) -> list[str]:
    """Run i's points, fitted curve and horizon on the left panel."""
    colour, h = series(i), s.horizon
    out = [group("".join(element("circle", cx=x.at(n), cy=y.at(v), r=4, fill=colour,
                                 data_length=n, data_fm=f"{v:.6f}") for n, v in s.points),
                 None, id=f"points-{i}")]
    if s.curve:
        out.append(path(polyline([(x.at(n), y.at(v)) for n, v in s.curve]), colour, 1.2,
                        id=f"fit-{i}"))
    if h.turns is not None:
        out.append(line(x.at(h.turns), x.at(h.turns), top, bottom, colour,
                        stroke_dasharray="2 3", id=f"horizon-{i}", data_turns=f"{h.turns:.6f}"))
    elif h.censored is not None and h.bound is not None:
        tip = h.bound * ARROW if h.censored == "above" else h.bound / ARROW
        at = 50 - 10 * (i % 5)
        out += [arrow(x.at(h.bound), x.at(tip), y.at(at), colour, id=f"censored-{i}",
                      data_direction=h.censored, data_bound=h.bound),
                text(x.at(math.sqrt(h.bound * tip)), y.at(at) - 6, value_text(h), size=10,
                     anchor="middle", fill=colour, id=f"censored-label-{i}")]
    return out


def x_words(v: float, metric: str) -> str:
    """A tick's words on the frontier's x axis: dollars, or tokens (k for thousands)."""
    if metric == "cost":
        return f"${v:g}"
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


def frontier_chart(f: Frontier) -> str:
    """Cost per conversation (log axis) against final match or the horizon: one dot per run
    on its 95% interval (filled: on the frontier, no run beats it), the frontier's runs joined
    by a solid line, each sweep's runs by a dotted line in budget order with each budget
    written by its dot; the legend below."""
    width, left, right, top, bottom = 500, 58, 488, 28, 200
    xs = [p.x for p in f.points]
    lo_x, hi_x = min(xs), max(xs)
    pad = (hi_x / lo_x) ** 0.08 if hi_x > lo_x else 2.0
    x = Span(lo_x / pad, hi_x * pad, left, right, log=True)
    if f.y_metric == "final match":
        y = Span(-0.02, 1.02, bottom, top)
        yt = [(k / 5, f"{20 * k}%") for k in range(6)]
    else:
        most = nice_top([p.hi for p in f.points])
        y = Span(0, 1.04 * most, bottom, top)
        yt = [(most * k / 4, f"{most * k / 4:g}") for k in range(5)]
    ticks = log_ticks(x.lo, x.hi)
    parts = [frame(left, top, right, bottom), y_ticks(y, yt, left, right),
             x_ticks(x, [(v, x_words(v, f.x_metric)) for v in ticks], bottom)]
    by_run = {p.run: p for p in f.points}
    on = sorted((p for p in f.points if p.pareto), key=lambda p: p.x)
    parts.append(path(polyline([(x.at(p.x), y.at(p.y)) for p in on]), "#222", 1.5,
                      id="frontier-line", data_runs=" ".join(str(p.run) for p in on)))
    for k, s in enumerate(f.sweeps):
        pts = [by_run[i] for i in s.runs]
        parts.append(path(polyline([(x.at(p.x), y.at(p.y)) for p in pts]), "#7a7a7a", 1.2,
                          id=f"sweep-{k}", stroke_dasharray="2 3", data_sweep=s.name,
                          data_key=s.key, data_runs=" ".join(str(i) for i in s.runs)))
    for n, p in enumerate(f.points):
        colour = series(n)
        parts.append(group(point(x.at(p.x), y.at(p.y), y.at(p.lo), y.at(p.hi), colour,
                                 p.pareto),
                           {"run": p.run, "label": p.label, "x": f"{p.x:.8g}",
                            "y": f"{p.y:.6f}", "lo": f"{p.lo:.6f}", "hi": f"{p.hi:.6f}",
                            "pareto": "yes" if p.pareto else "no",
                            "budget": p.budget}, class_="fpoint"))
        if p.budget is not None:
            parts.append(text(x.at(p.x) + 8, y.at(p.y) - 6, p.budget, size=10, fill="#444"))
    what = "final match" if f.y_metric == "final match" else "horizon (turns)"
    per = "cost per conversation" if f.x_metric == "cost" else "tokens per conversation"
    unit = "USD, log scale" if f.x_metric == "cost" else "log scale"
    parts += [_title(width / 2, 16, f"What a run costs against its {what.split(' (')[0]}"),
              _caption((left + right) / 2, bottom + 34, f"{per} ({unit})"),
              _caption(14, (top + bottom) / 2, what, rotate=-90)]
    return _keyed(width, "chart frontier", f"{what} against {per}: the efficiency frontier",
                  parts, [(series(n), _label(p.label) + ("" if p.pareto else " (beaten)"))
                          for n, p in enumerate(f.points)], left, bottom + 44, right - left)
