"""The report's headline, first on the page: final match per run with its 95% interval as a
dot-and-whisker chart (inline SVG written here, no chart library), the no-op and last-edit
baselines as labelled reference lines, each run's effective final match and cost beside it, and
two or three sentences generated from the data (docs/report.md, "Headline").

The sentences claim a difference only where the statistics support it: for two runs of one
suite, the paired difference in final match of ``butterfly compare`` (its 95% interval, clustered
by scenario) must exclude zero; for runs of different suites (no pairing), their 95% intervals
must not overlap. Otherwise the runs are "within each other's intervals"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, TypedDict, cast

from butterfly.core.agents import window_k
from butterfly.present.svgdraw import (
    Scale,
    axis,
    baseline_labels,
    baseline_lines,
    esc,
    open_svg,
    whisker,
)
from butterfly.runs.reader import Run

if TYPE_CHECKING:  # compare imports scipy: loaded only when two runs share a suite
    from butterfly.analysis.compare import RunAnswers

WIDTH: Final = 420
"""The chart's width in pixels (each row's SVG and the axis share it)."""
PAD: Final = 22
ROW_H: Final = 22
def base_name(name: str) -> str:
    """A baseline's name over its line: short, the recency agent by its window."""
    k = window_k(name) if name.startswith("window:") else None
    return {"noop": "no-op"}.get(name, name) if k is None else f"last {k} msgs"


class HeadRow(TypedDict):
    """A run as the headline shows it (shares in [0, 1]; None where the run has no figure)."""

    label: str
    final_match: float | None
    lo: float | None
    hi: float | None
    effective: float | None
    cost_usd: float | None
    n: int


class RowIn(TypedDict):
    """What the headline reads of a report's run entry."""

    label: str
    final_match: float | None
    final_match_ci: list[float] | None
    effective_final_match: float | None
    usage: Mapping[str, object] | None
    n_conversations: int
    suite_sha256: str
    same_scenarios_as_baselines: bool


class Headline(TypedDict):
    rows: list[HeadRow]
    baselines: dict[str, float]
    sentences: list[str]
    axis_svg: str
    row_svgs: list[str]


SCALE: Final = Scale(1.0, WIDTH, PAD)
"""Shares in [0, 1] onto the chart's pixels."""


SIGN_ALPHA: Final = 0.05
"""A paired interval that excludes zero separates two runs only if the exact sign test over the
scenarios agrees (p below this): with few scenarios, or all differences equal, the normal
interval has no variance to go on and would call one scenario's difference certain."""


def separated(runs: Sequence[Run], rows: Sequence[HeadRow],
              suites: Sequence[str]) -> set[tuple[int, int]]:
    """The pairs (i, j) where run i's final match is above run j's with the statistics' support:
    the paired difference's 95% interval (runs of one suite) lies above zero, or (other suites)
    run i's 95% interval lies wholly above run j's."""
    answers: dict[int, RunAnswers] = {}
    out: set[tuple[int, int]] = set()
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            ci = _paired_ci(runs, rows, suites, answers, i, j)
            if ci is None:
                continue
            if ci[1] < 0:  # B - A below zero: A above B
                out.add((i, j))
            elif ci[0] > 0:
                out.add((j, i))
    return out


def _paired_ci(runs: Sequence[Run], rows: Sequence[HeadRow], suites: Sequence[str],
               answers: dict[int, RunAnswers], i: int, j: int) -> tuple[float, float] | None:
    """The 95% interval of j's final match minus i's: paired when they share a suite, else
    a conservative one from their own intervals (empty-overlap test); None if unknown."""
    a, b = rows[i], rows[j]
    if suites[i] != suites[j]:
        if a["lo"] is None or a["hi"] is None or b["lo"] is None or b["hi"] is None:
            return None
        return (b["lo"] - a["hi"], b["hi"] - a["lo"])
    from butterfly.analysis.compare import load_answers, paired_difference, paired_matrix
    from butterfly.errors import UserError

    try:
        for k in (i, j):
            if k not in answers:
                answers[k] = load_answers(runs[k])
        _, aa, bb = paired_matrix(answers[i], answers[j])
    except UserError:
        return None
    diff = paired_difference(aa.tolist(), bb.tolist())
    if diff.ci is None or diff.sign_p is None or diff.sign_p >= SIGN_ALPHA:  # too few moved
        return None
    return (diff.ci[0], diff.ci[1])


def _names(labels: Sequence[str]) -> str:
    if len(labels) <= 2:
        return " and ".join(labels)
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def sentences(rows: Sequence[HeadRow], above: set[tuple[int, int]],
              baselines: dict[str, float], on_baseline_scenarios: Sequence[bool]) -> list[str]:
    """Two or three sentences a careful reader would say: who leads (only over the runs it is
    separated from), who is within the leader's interval, who sits at the no-op baseline."""
    scored = sorted((i for i, r in enumerate(rows) if r["final_match"] is not None),
                    key=lambda i: -(rows[i]["final_match"] or 0.0))
    out: list[str] = []
    if not scored:
        return ["No run has a complete conversation: there is no final match to show."]
    top = scored[0]
    lead = rows[top]["label"]
    beaten = [rows[j]["label"] for j in scored[1:] if (top, j) in above]
    tied = [rows[j]["label"] for j in scored[1:] if (top, j) not in above]
    if len(scored) == 1:
        r = rows[top]
        out.append(f"{lead} has a final match of {_pct(r['final_match'])} "
                   f"(95% interval {_pct(r['lo'])} to {_pct(r['hi'])}).")
    elif beaten:
        out.append(f"{lead} leads {_names(beaten)} in final match "
                   "(the 95% interval of each difference excludes zero).")
    if tied:
        out.append(f"{_names([lead, *tied])} are within each other's intervals: "
                   "the data do not separate them.")
    noop = baselines.get("noop")
    if noop is not None:
        at = [rows[i]["label"] for i in scored if on_baseline_scenarios[i]
              and (rows[i]["lo"] or 0.0) <= noop <= (rows[i]["hi"] or 0.0)]
        if at:
            verb = "is" if len(at) == 1 else "are"
            whose = "its" if len(at) == 1 else "each one's"
            out.append(f"{_names(at)} {verb} at the no-op baseline: {whose} 95% interval "
                       f"includes the no-op's {_pct(noop)} (answering the initial spec every "
                       "turn).")
    out += _recency(rows, scored, baselines, on_baseline_scenarios, noop)
    return out


def _recency(rows: Sequence[HeadRow], scored: Sequence[int], baselines: dict[str, float],
             on_baseline_scenarios: Sequence[bool], noop: float | None) -> list[str]:
    """Runs above the no-op baseline whose interval includes a recency baseline's figure: the
    data do not show them remembering more than the last K messages."""
    out = []
    for name, v in baselines.items():
        k = window_k(name) if name.startswith("window:") else None
        if k is None:
            continue
        at = [rows[i]["label"] for i in scored if on_baseline_scenarios[i]
              and (noop is None or (rows[i]["lo"] or 0.0) > noop)
              and (rows[i]["lo"] or 0.0) <= v <= (rows[i]["hi"] or 0.0)]
        if at:
            whose = "its" if len(at) == 1 else "each one's"
            out.append(f"{_names(at)}: {whose} 95% interval includes the {_pct(v)} of reading "
                       f"only the last {k} messages (the recency baseline window:k={k}).")
    return out


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def row_svg(r: HeadRow, baselines: dict[str, float]) -> str:
    """One run's dot and whisker on the shared axis, its figures in data- attributes."""
    parts = [open_svg(WIDTH, ROW_H, "dw", f"final match of {r['label']}"),
             *baseline_lines(SCALE, baselines, ROW_H)]
    fm, lo, hi = r["final_match"], r["lo"], r["hi"]
    if fm is not None:
        lo_, hi_ = (fm if lo is None else lo), (fm if hi is None else hi)
        parts.append(f'<g class="run" data-label="{esc(r["label"])}" data-fm="{fm:.6f}" '
                     f'data-lo="{lo_:.6f}" data-hi="{hi_:.6f}">'
                     f'{whisker(SCALE, fm, lo_, hi_, ROW_H / 2, "#0b5394")}</g>')
    parts.append("</svg>")
    return "".join(parts)


def axis_svg(baselines: dict[str, float]) -> str:
    """The axis above the rows: ticks at 0-100% and each baseline's label over its line."""
    h = 40
    return "".join([axis(SCALE, [t / 100 for t in range(0, 101, 25)], "{:.0%}", h, "dw-axis",
                         "final match axis"),
                    *baseline_labels(SCALE, baselines, {b: base_name(b) for b in baselines},
                                     _pct),
                    *baseline_lines(SCALE, baselines, h - 16), "</svg>"])


def head_row(entry: Mapping[str, object]) -> RowIn:
    """A run entry of the report model (its open dict) as the headline reads it."""
    return cast(RowIn, {k: entry[k] for k in RowIn.__annotations__})


def _cost(usage: Mapping[str, object] | None) -> float | None:
    cost = None if usage is None else usage.get("cost_usd")
    return float(cost) if isinstance(cost, int | float) else None


def headline(runs: Sequence[Run], entries: Sequence[RowIn],
             baselines: Mapping[str, float | None]) -> Headline:
    """The headline's figures, sentences and SVG (the SVG strings are escaped here).
    ``baselines``: name to final match. Runs of one suite (``suite_sha256``) are paired."""
    rows = [HeadRow(label=e["label"], final_match=e["final_match"],
                    lo=None if e["final_match_ci"] is None else e["final_match_ci"][0],
                    hi=None if e["final_match_ci"] is None else e["final_match_ci"][1],
                    effective=e["effective_final_match"],
                    cost_usd=_cost(e["usage"]),
                    n=e["n_conversations"]) for e in entries]
    base = {k: v for k, v in baselines.items() if v is not None}
    above = separated(runs, rows, [e["suite_sha256"] for e in entries])
    same = [e["same_scenarios_as_baselines"] for e in entries]
    return Headline(rows=rows, baselines=base, sentences=sentences(rows, above, base, same),
                    axis_svg=axis_svg(base), row_svgs=[row_svg(r, base) for r in rows])
