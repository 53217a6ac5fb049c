"""What the terminal shows: a progress display while a run goes, and the score tables."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from butterfly.core.results import Aggregate, HorizonResult, ScoreReport, SuiteLabel
from butterfly.runs.play import Progress as RunProgress


class ProgressDisplay:
    """A rich progress bar on a terminal; a plain line every 10 s (and at the end) otherwise."""

    def __init__(self, total: int, label: str, *, tty: bool | None = None) -> None:
        self.total = total
        self.label = label
        self.tty = sys.stderr.isatty() if tty is None else tty
        self._last = 0.0
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> ProgressDisplay:
        if self.tty:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("calls  errors {task.fields[errors]}  {task.fields[tps]} tok/s"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total, errors=0, tps="-")
        else:
            print(f"{self.label}: {self.total} calls to make", file=sys.stderr, flush=True)
        return self

    def update(self, p: RunProgress) -> None:
        elapsed = max(time.perf_counter() - p.started, 1e-9)
        tps = p.completion_tokens / elapsed
        if self._bar is not None:
            self._bar.update(self._task, completed=p.done, errors=p.errors, tps=f"{tps:.1f}")
            return
        now = time.perf_counter()
        if now - self._last >= 10 or p.done == p.total:
            self._last = now
            rate = p.done / elapsed
            eta = (p.total - p.done) / rate if rate > 0 else float("nan")
            print(f"calls {p.done}/{p.total}  errors {p.errors}  {tps:.1f} tok/s  "
                  f"eta {eta:.0f} s", file=sys.stderr, flush=True)

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(et, e, tb)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ci(c: list[float] | None) -> str:
    return "-" if c is None else f"{100 * c[0]:.1f}-{100 * c[1]:.1f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def score_tables(result: ScoreReport) -> list[Table]:
    """The model beside the two trivial baselines, then final match per category."""
    convs = result.n_conversations
    extra = "" if convs == result.n_scenarios else f", {convs} conversations"
    title = (f"ButterflyBench: {result.model} ({result.n_scenarios} scenarios{extra} of "
             f"{suite_name(result.suite)})")
    main = Table(title=title)
    for col in ("agent", "final match", "95% CI", "turn match", "abstention", "change radius",
                "undo recovery", "wobble"):
        main.add_column(col, justify="left" if col == "agent" else "right")
    rows: list[tuple[str, Aggregate]] = [(result.model, result)] + [
        (f"baseline: {name}", b) for name, b in result.baselines.items()
    ]
    for name, r in rows:
        main.add_row(
            name,
            f"{_pct(r.final_match)} ({r.final_matches}/{r.n_conversations})",
            _ci(r.final_match_ci),
            _pct(r.turn_match),
            _pct(r.abstention),
            _num(r.change_radius),
            _pct(r.undo_recovery),
            str(r.wobbles),
        )
    cat = Table(title="final match by category")
    cat.add_column("category")
    cat.add_column("n", justify="right")
    for col in (result.model, "noop", "last-edit"):
        cat.add_column(col, justify="right")
    for c, r in result.by_category.items():
        cat.add_row(
            c,
            str(r.n_conversations),
            _pct(r.final_match),
            _pct(result.baselines["noop"].by_category[c].final_match),
            _pct(result.baselines["last-edit"].by_category[c].final_match),
        )
    return [main, cat]


def suite_name(suite: SuiteLabel) -> str:
    """``butterfly-40 v2``, or the suite file's name when it is not a frozen suite."""
    return suite.name if suite.version is None else f"{suite.name} v{suite.version}"


def horizon_line(h: HorizonResult | None) -> str | None:
    """The horizon and final match by chain length, on one line."""
    if h is None:
        return None
    rates = ", ".join(f"{n}: {_pct(r.final_match)} (n={r.n})" for n, r in h.by_length.items())
    if h.turns is None:
        head = f"horizon: none ({h.note})"
    else:
        lo, hi = ("-" if x is None else f"{x:.1f}" for x in h.ci)
        head = f"horizon: {h.turns:.1f} turns (95% CI {lo} to {hi})"
    return f"{head}; final match by chain length: {rates}"


def print_score(result: ScoreReport, console: Console | None = None) -> None:
    if console is None:
        console = Console() if sys.stdout.isatty() else Console(width=120)
    for t in score_tables(result):
        console.print(t)
    if len(result.by_layout) > 1:
        console.print("final match by layout: " + ", ".join(
            f"{lay} {_pct(r.final_match)} ({r.final_matches}/{r.n_conversations})"
            for lay, r in result.by_layout.items()))
    if result.incomplete:
        console.print(
            f"incomplete (a call failed after its retries or was cut off; excluded from every "
            f"figure): {result.incomplete} of {result.n_total} conversations "
            f"({_pct(result.incomplete_share)})"
        )
    if result.not_played:
        console.print(f"not played (never started: an interrupted run, or a sequential "
                      f"comparison that stopped early): {result.not_played} conversations")
    flips = result.flips.model_dump(by_alias=True)
    if result.n_conversations > result.n_scenarios:  # several per scenario
        console.print("flips (butterfly flips RUN for the table): "
                      + ", ".join(f"{k} {v}" for k, v in flips.items()))
    parts = [f"{op} {_pct(v.share)} (n={v.n})" for op, v in result.undo_recovery_by_op.items()
             if v.n]
    if parts:
        console.print("undo recovery by op: " + ", ".join(parts))
    line = horizon_line(result.horizon)
    if line is not None:
        console.print(line, markup=False, highlight=False)
