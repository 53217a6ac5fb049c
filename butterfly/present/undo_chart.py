"""The report's undo recovery by op as small multiples: one panel per undo op (oracle.UNDO_OPS)
that some run played, one row per run, the dot at the run's undo recovery for that op (of the
op's turns whose previous turn matched, the share still matching) with the count k/n in words
(the scores carry no interval for it). A run that never played the op says "not played"; one
that played it with no turn after a match says so; neither is drawn as 0. Hand-written SVG,
each dot's figures in data- attributes (run, op, value, k, n)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, TypedDict, cast

from butterfly.present.svgdraw import Scale, axis, esc, open_svg
from oracle import UNDO_OPS

PANEL_W: Final = 170
ROW_H: Final = 22
AXIS_H: Final = 24
DOT_W: Final = 118
"""The part of a panel the dot's scale takes; the count k/n is written to its right."""


class OpFigures(TypedDict):
    """An op's entry of a run's ``by_op`` (``score --json``), as far as the chart reads it."""

    n: int
    answers: int


class Share(TypedDict):
    share: float | None
    n: int


class UndoRow(TypedDict):
    """What the chart reads of a run: its label, ``by_op`` and ``undo_recovery_by_op``."""

    label: str
    by_op: Mapping[str, OpFigures]
    undo_recovery_by_op: Mapping[str, Share]


def undo_row(entry: Mapping[str, object]) -> UndoRow:
    """A run entry of the report model as the chart reads it."""
    return cast(UndoRow, {k: entry[k] for k in UndoRow.__annotations__})


class UndoChart(TypedDict):
    """The ops shown, an axis per op, and per run one SVG per op (runs' order, ops' order)."""

    ops: list[str]
    axes: list[str]
    rows: list[list[str]]


def played(r: UndoRow, op: str) -> bool:
    """Whether the run answered any turn of ``op``."""
    x = r["by_op"].get(op)
    return x is not None and x["answers"] > 0


def _cell(s: Scale, r: UndoRow, op: str) -> str:
    label = esc(r["label"])
    mid = ROW_H / 2
    out = [open_svg(PANEL_W, ROW_H, "undo", f"undo recovery of {r['label']} on {op}")]
    u = r["undo_recovery_by_op"].get(op)
    if not played(r, op) or u is None:
        words, cls = "not played", "not-played"
    elif u["share"] is None or u["n"] == 0:
        words, cls = "no turn after a match", "not-scored"
    else:
        v, n = u["share"], u["n"]
        k = round(v * n)
        out.append(f'<line x1="{s.x(0)}" x2="{s.x(1)}" y1="{mid}" y2="{mid}" stroke="#ddd"/>'
                   f'<g class="point" data-run="{label}" data-op="{op}" data-value="{v:.6f}" '
                   f'data-k="{k}" data-n="{n}"><circle cx="{s.x(v)}" cy="{mid}" r="5" '
                   f'fill="#0b5394"/><text x="{DOT_W + 6}" y="{mid + 4}" font-size="11" '
                   f'fill="#333">{k}/{n}</text></g>')
        return "".join([*out, "</svg>"])
    out.append(f'<text class="{cls}" data-run="{label}" data-op="{op}" x="{s.pad}" '
               f'y="{mid + 4}" font-size="11" fill="#777">{words}</text>')
    return "".join([*out, "</svg>"])


def undo_chart(runs: Sequence[UndoRow]) -> UndoChart | None:
    """The small multiples of the report's runs (:func:`undo_row` of each); None when no run
    played an undo op."""
    ops = [op for op in UNDO_OPS if any(played(r, op) for r in runs)]
    if not ops:
        return None
    s = Scale(1.0, DOT_W, pad=16)  # room for the "100%" tick's label
    head = [axis(s, (0, 0.5, 1), "{:.0%}", AXIS_H, "undo-axis", f"undo recovery axis, {op}")
            + "</svg>" for op in ops]
    return UndoChart(ops=ops, axes=head, rows=[[_cell(s, r, op) for op in ops] for r in runs])
