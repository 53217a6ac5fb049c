"""The report's leaderboard: its columns, read from the metric registry
(``core/metric_registry.py``), and the report's own (effective final match, incomplete
conversations, tokens, reasoning and cached tokens, cost, what the prompt cache saved, and the
efficiency figures: cost per correct conversation, reasoning tokens per edit, latency p50 and
p95).
``templates/report.html.j2`` draws a header and a cell per
column (its ``board_cell``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from markupsafe import Markup

from butterfly.core.metric_registry import METRICS, Metric

Cell = Literal["value", "value and count", "count", "interval", "effective", "incomplete",
               "tokens", "reasoning", "cached", "cost", "saved", "efficiency"]


@dataclass(frozen=True, slots=True)
class BoardColumn:
    """A column: its header (``title``: the header's tooltip), how it sorts (``type``) and how
    its cell is drawn (``cell``) from the field ``key`` of a run's entry; a metric's ``count``
    field, its ``inline`` interval's field, and ``unit`` (how its value reads) besides."""

    header: str
    cell: Cell
    key: str = ""
    type: Literal["num", "text"] = "num"
    title: str | None = None
    count: str = ""
    inline: str = ""
    unit: str = "share"

    @property
    def scale(self) -> int:
        """An interval's scale: in points for a share, as it is for a mean."""
        return 100 if self.unit == "share" else 1


EFFECTIVE = BoardColumn("effective", "effective", title=Markup(
    "final match x coverage (PromptAudit's effective score)"))
"""Beside final match: final match x coverage."""

OWN_LAST = (
    BoardColumn("incomplete", "incomplete"),
    BoardColumn("tokens", "tokens", title=Markup("prompt + completion tokens of the run's "
                                                  "answers")),
    BoardColumn("reasoning", "reasoning", title=Markup(
        "completion tokens spent on reasoning (inside the tokens and the cost, counted once)")),
    BoardColumn("cached", "cached", title=Markup(
        "prompt tokens served from the provider's prompt cache")),
    BoardColumn("cost", "cost", title=Markup(
        "USD, from litellm's offline price map, or the price the user gave (marked user)")),
    BoardColumn("saved", "saved", title=Markup(
        "USD the cached prompt tokens saved: cached x (input price - cached-input price)")),
    BoardColumn("per correct", "efficiency", "cost_per_correct_usd", unit="usd", title=Markup(
        "USD per complete conversation that ended in a final match (none when none did, or "
        "a call has no price)")),
    BoardColumn("reasoning/edit", "efficiency", "reasoning_per_edit", unit="tokens",
                title=Markup("reasoning tokens per edit: each ask's reasoning tokens / the "
                             "edits it restates (an ask at turn t restates t)")),
    BoardColumn("latency p50", "efficiency", "latency_median_s", unit="seconds",
                title=Markup("median latency of the calls the run sent (a cache hit sent none)")),
    BoardColumn("latency p95", "efficiency", "latency_p95_s", unit="seconds",
                title=Markup("95th percentile (nearest rank) of those calls' latency")),
)
"""After the metrics: the report's own columns (trusted text, written as it stands)."""


def metric_columns(m: Metric) -> list[BoardColumn]:
    """A shown metric's column, and its interval's when it has a column of its own."""
    if m.shown is None:
        return []
    ci = f"{m.name}_ci"
    out = [BoardColumn(m.label, m.shown.cell, m.name,
                       title=m.description if m.shown.tooltip else None, count=m.count,
                       inline=ci if m.interval == "inline" else "", unit=m.pool.unit)]
    if m.interval == "column":
        out.append(BoardColumn("95% CI", "interval", ci, type="text", unit=m.pool.unit))
    return out


def board_columns() -> list[BoardColumn]:
    """Every column after the run's name: the shown metrics in the registry's order, those the
    terminal's table shows first (effective final match beside final match), then the
    report's own."""
    shown = [m for m in METRICS.values() if m.shown is not None]
    out: list[BoardColumn] = []
    for m in sorted(shown, key=lambda m: m.shown is None or m.shown.terminal is None):
        out += metric_columns(m)
        if m.name == "final_match":
            out.append(EFFECTIVE)
    return [*out, *OWN_LAST]
