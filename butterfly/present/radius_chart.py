"""The report's change-radius dot plot: each run's mean change radius (settings wrong at the end
that no turn asked to change) as a dot with its 95% interval as a whisker, the baselines as
labelled dashed reference lines. Hand-written SVG, one row per run on a shared axis (so long
run names wrap in the page's table); each dot's figures in data- attributes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, TypedDict, cast

from butterfly.present.headline import base_name
from butterfly.present.svgdraw import (
    Scale,
    axis,
    baseline_labels,
    baseline_lines,
    esc,
    nice_top,
    open_svg,
    whisker,
)

WIDTH: Final = 360
ROW_H: Final = 22
AXIS_H: Final = 40


class RadiusRow(TypedDict):
    """What the chart reads of a run (or, without ``_ci`` and ``_n``, a baseline): its label
    (a baseline's is "baseline: NAME") and change radius (None without a complete
    conversation), its 95% interval and its count of conversations."""

    label: str
    change_radius: float | None
    change_radius_ci: list[float] | None
    change_radius_n: int


def radius_row(entry: Mapping[str, object]) -> RadiusRow:
    """A run or baseline entry of the report model as the chart reads it."""
    return cast(RadiusRow, {k: entry.get(k) for k in RadiusRow.__annotations__})


class RadiusChart(TypedDict):
    """The axis (with the baselines' labels) and one SVG per run, in the runs' order."""

    axis_svg: str
    row_svgs: list[str]
    top: float


def _ends(r: RadiusRow) -> tuple[float, float, float] | None:
    v, ci = r["change_radius"], r["change_radius_ci"]
    if v is None:
        return None
    lo, hi = (v, v) if ci is None else (ci[0], ci[1])
    return float(v), float(lo), float(hi)


def _baselines(baselines: Sequence[RadiusRow]) -> dict[str, float]:
    return {b["label"].removeprefix("baseline: ").split(" (")[0]: v for b in baselines
            if (v := b["change_radius"]) is not None}


def _row(s: Scale, r: RadiusRow, base: dict[str, float]) -> str:
    label = esc(r["label"])
    parts = [open_svg(WIDTH, ROW_H, "dw radius", f"change radius of {r['label']}"),
             *baseline_lines(s, base, ROW_H)]
    ends, mid = _ends(r), ROW_H / 2
    if ends is None:
        parts.append(f'<text class="no-figure" data-run="{label}" x="{s.pad}" y="{mid + 4}" '
                     'font-size="11" fill="#666">no complete conversation</text>')
    else:
        v, lo, hi = ends
        parts.append(f'<g class="point" data-run="{label}" data-value="{v:.6f}" '
                     f'data-lo="{lo:.6f}" data-hi="{hi:.6f}" data-n="{r["change_radius_n"]}">'
                     f'{whisker(s, v, lo, hi, mid, "#6c3483")}</g>')
    return "".join([*parts, "</svg>"])


def _axis(s: Scale, base: dict[str, float]) -> str:
    ticks = [s.top * k / 4 for k in range(5)]
    return "".join([axis(s, ticks, "{:g}", AXIS_H, "dw-axis", "change radius axis"),
                    *baseline_labels(s, base, {b: base_name(b) for b in base}, "{:.2f}".format),
                    *baseline_lines(s, base, AXIS_H - 16), "</svg>"])


def radius_chart(runs: Sequence[RadiusRow], baselines: Sequence[RadiusRow]) -> RadiusChart:
    """The dot plot of the report's runs and baselines (:func:`radius_row` of each)."""
    base = _baselines(baselines)
    highs = [e[2] for e in map(_ends, runs) if e is not None]
    s = Scale(nice_top([*highs, *base.values()]), WIDTH)
    return RadiusChart(axis_svg=_axis(s, base), row_svgs=[_row(s, r, base) for r in runs],
                       top=s.top)
