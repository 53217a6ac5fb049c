"""What the terminal shows: a progress display while a run goes, and the score tables."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Final

from rich.console import Console
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from butterfly.code.judge import figures_line
from butterfly.core.agents import baseline_label
from butterfly.core.asking import asked_line, asked_only
from butterfly.core.efficiency_text import efficiency_lines
from butterfly.core.horizon_text import horizon_line
from butterfly.core.metric_registry import METRICS, Metric
from butterfly.core.printable import printable
from butterfly.core.scores import (
    Aggregate,
    RunScore,
    SuiteLabel,
    Usage,
)
from butterfly.core.wire import redact
from butterfly.engine.tracks import track
from butterfly.present.text import pct
from butterfly.runs.calls import CallView
from butterfly.runs.play import Progress as RunProgress
from butterfly.runs.reader import Run


class ObservingDisplay:
    """What observing a code run's programs says on stderr: how many there are, then how many
    are done, every ``every`` seconds and at the end."""

    def __init__(self, label: str, every: float = 10.0) -> None:
        self.label = printable(label, newlines=False)
        self.every = every
        self._last: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if self._last is None:
            print(f"{self.label}: {total} program(s) to observe in the sandbox",
                  file=sys.stderr, flush=True)
            self._last = now
        if done == total or now - self._last >= self.every:
            print(f"{self.label}: {done} of {total} observed", file=sys.stderr, flush=True)
            self._last = now


def eta_text(done: int, total: int, elapsed: float) -> str:
    """The time left at the pace so far; before the first answer (every call rate-limited, say)
    there is no pace, and the line says so rather than "eta nan s"."""
    if done >= total:
        return "eta 0 s"
    if done <= 0 or elapsed <= 0:
        return "eta unknown (no call answered yet)"
    return f"eta {(total - done) * elapsed / done:.0f} s"


class ProgressDisplay:
    """A rich progress bar on a terminal; a plain line every 10 s (and at the end) otherwise.
    A wait before a retry ("rate-limited, waiting 60 s") is shown at once either way (as a
    plain line at most once a second)."""

    def __init__(self, total: int, label: str, *, tty: bool | None = None) -> None:
        self.total = total
        self.label = printable(label, newlines=False)
        self.tty = sys.stderr.isatty() if tty is None else tty
        self._last = 0.0
        self._note = ""
        self._noted = float("-inf")
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> ProgressDisplay:
        if self.tty:
            self._bar = Progress(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("calls  errors {task.fields[errors]}  {task.fields[tps]} tok/s"
                           "  {task.fields[note]}", markup=False),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total, errors=0, tps="-",
                                            note="")
        else:
            print(f"{self.label}: {self.total} calls to make", file=sys.stderr, flush=True)
        return self

    def update(self, p: RunProgress) -> None:
        elapsed = max(time.perf_counter() - p.started, 1e-9)
        # tokens only where a model generated them (scripted agents and cache hits report none)
        tps = f"{p.completion_tokens / elapsed:.1f}" if p.completion_tokens else "-"
        if self._bar is not None:
            self._bar.update(self._task, completed=p.done, errors=p.errors, tps=tps,
                             note=p.note)
            return
        now = time.perf_counter()
        if p.note and p.note != self._note and now - self._noted >= 1:  # at most 1 a second
            self._note, self._noted = p.note, now
            print(f"calls {p.done}/{p.total}  errors {p.errors}  {p.note}", file=sys.stderr,
                  flush=True)
        elif now - self._last >= 10 or p.done == p.total:
            self._last = now
            print(f"calls {p.done}/{p.total}  errors {p.errors}  {tps} tok/s  "
                  f"{eta_text(p.done, p.total, elapsed)}", file=sys.stderr, flush=True)

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(et, e, tb)


FAILURE_CLASS: Final = {"connection": "connection", "timeout": "timeout",
                         "server": "HTTP status (5xx)", "rate_limit": "HTTP status (429)",
                         "bad_response": "bad response"}
"""How a call's error class is named on the terminal."""


def failure_lines(run: Run) -> list[str]:
    """The calls still failed after their retries, by class, with the first message of each
    (server text: secrets redacted, control characters escaped); [] when none failed."""
    failed = [r for r in run.records.values() if r.error is not None]
    if not failed:
        return []
    by_class: dict[str, list[CallView]] = {}
    for r in failed:
        assert r.error is not None
        by_class.setdefault(FAILURE_CLASS.get(r.error.kind, r.error.kind), []).append(r)
    lines = [f"{len(failed)} call(s) failed after their retries: " + ", ".join(
        f"{len(v)} {k}" for k, v in sorted(by_class.items(), key=lambda kv: -len(kv[1])))]
    for name, recs in by_class.items():
        first = recs[0]
        assert first.error is not None
        text = printable(redact(first.error.message), newlines=False)
        lines.append(f"  {name}, e.g. {first.scenario} turn {first.turn}: {text[:300]}")
    return lines


def _ci(c: list[float] | None) -> str:
    return "-" if c is None else f"{100 * c[0]:.1f}-{100 * c[1]:.1f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


Column = tuple[str, str]
"""A column of the score table: its key (a metric's name, ``<name>_ci`` for its interval, or
``agent``) and its header."""


def _terminal() -> list[Metric]:
    """The metrics the terminal's table shows (``Shown.terminal``), in the registry's order."""
    return [m for m in METRICS.values() if m.shown is not None and m.shown.terminal is not None]


def main_columns() -> list[Column]:
    """Every column of the score table, the agent's first."""
    out: list[Column] = [("agent", "agent")]
    for m in _terminal():
        out.append((m.name, m.label))
        if m.interval == "column":
            out.append((f"{m.name}_ci", "95% CI"))
    return out


def secondary() -> list[str]:
    """The metrics dropped in this order, one by one, until the table fits the terminal."""
    ranked = [(m.shown.terminal, m.name) for m in _terminal() if m.shown and m.shown.terminal]
    return [name for _, name in sorted(ranked)]


def _cell(m: Metric, r: Aggregate) -> str:
    """A metric's cell in the score table (``Shown.cell``)."""
    cell = "value" if m.shown is None else m.shown.cell
    if cell == "count":
        return str(getattr(r, m.count))
    value = getattr(r, m.name)
    text = {"share": pct, "mean": _num}.get(m.pool.unit, str)(value)
    if cell == "value and count":
        text += f" ({getattr(r, m.count)}/{r.n_conversations})"
    return text


def _row(name: str, r: Aggregate) -> dict[str, str]:
    row = {"agent": printable(name)}
    for m in _terminal():
        row[m.name] = _cell(m, r)
        if m.interval == "column":
            row[f"{m.name}_ci"] = _ci(getattr(r, f"{m.name}_ci"))
    return row


def _main_table(result: RunScore, columns: Sequence[Column]) -> Table:
    convs = result.n_conversations
    extra = "" if convs == result.n_scenarios else f", {convs} conversations"
    title = (f"ButterflyBench: {printable(result.model)} ({result.n_scenarios} scenarios{extra} "
             f"of {printable(suite_name(result.suite))}, "
             f"{track(result.prompt.track).version_name(result.prompt.version)})")
    rows: list[tuple[str, Aggregate]] = [(result.model, result)] + [
        (f"baseline: {baseline_label(name)}", b) for name, b in result.baselines.items()
    ]
    table = [_row(name, r) for name, r in rows]
    main = Table(title=Text(title))  # a Text: a name's "[red]" is shown, never a style
    for key, header in columns:  # figures keep their width; the agent folds, never loses a letter
        if key == "agent":
            longest = max(len(w) for row in table for w in row[key].split(" "))
            main.add_column(header, overflow="fold", min_width=min(longest, 24))
        else:
            main.add_column(header, justify="right", no_wrap=True,
                            min_width=max(len(row[key]) for row in table))
    for row in table:
        main.add_row(*(Text(row[key]) for key, _ in columns))
    return main


def _fits(console: Console, table: Table) -> bool:
    """The table's natural width (unclipped by the console) is at most the console's."""
    natural = Measurement.get(console, console.options.update_width(10_000), table)
    return natural.maximum <= console.width


def score_tables(result: RunScore, console: Console | None = None) -> list[Table]:
    """The model beside the baselines (the two trivial ones, and the recency baseline on a suite
    with chains of 40 turns or more), then final match per category. On a
    narrow ``console`` the secondary columns are dropped (:func:`secondary`) until the main
    table fits; a model name is folded, never cut, and an interval is never cut."""
    columns = main_columns()
    main = _main_table(result, columns)
    for name in secondary():
        if console is None or _fits(console, main):
            break
        columns = [c for c in columns if c[0] not in (name, f"{name}_ci")]
        main = _main_table(result, columns)
    cat = Table(title=Text("final match by category"))
    cat.add_column("category", overflow="fold")
    cat.add_column("n", justify="right")
    for col in (printable(result.model), *result.baselines):
        cat.add_column(Text(col), justify="right", overflow="fold")
    for c, r in result.by_category.items():
        cat.add_row(
            Text(printable(c)),
            str(r.n_conversations),
            pct(r.final_match),
            *(pct(b.by_category[c].final_match) for b in result.baselines.values()),
        )
    return [main, cat]


def suite_name(suite: SuiteLabel) -> str:
    """``butterfly-40 v2``, or the suite file's name when it is not a frozen suite."""
    return suite.name if suite.version is None else f"{suite.name} v{suite.version}"


def usage_line(u: Usage) -> str:
    """Tokens and cost of a run, one line: cached prompt tokens and reasoning tokens apart
    (each counted once in the cost), the price's source when the user gave it, and what the
    prompt cache saved (docs/cost.md)."""
    cost = (f"cost ${u.cost_usd:.4f}" if u.cost_usd is not None else f"cost - ({u.note})")
    if u.cost_usd is not None and u.price is not None:
        cost += f" at the user's price ({u.price.label()})"
    if u.cost_usd is not None and u.spent_usd is not None and u.spent_usd != u.cost_usd:
        cost += f" (${u.spent_usd:.4f} sent by this run, the rest from the answer cache)"
    if u.cached_tokens and u.saved_usd is not None:
        cost += f"; the prompt cache saved ${u.saved_usd:.4f}"
    cached = f" ({u.cached_tokens} of them cached)" if u.cached_tokens else ""
    reasoning = f" ({u.reasoning_tokens} of them reasoning)" if u.reasoning_tokens else ""
    return (f"usage: {u.calls} calls, {u.prompt_tokens} prompt{cached} + "
            f"{u.completion_tokens} completion{reasoning} tokens; {cost}")


def invalid_usage_line(u: Usage) -> str | None:
    """How many calls had token counts that cannot be right, when any did (issue 34)."""
    if not u.invalid_usage_calls:
        return None
    return (f"invalid usage: {u.invalid_usage_calls} of {u.calls} calls had token counts from "
            "the provider that cannot be right (negative, not whole, absurd, or over the "
            "model's context window): their tokens and cost are unknown, not in the usage "
            "above (each call's record keeps them in invalid_usage; docs/running.md, \"Tokens "
            "and cost\")")


def content_line(run: Run) -> str:
    """What a reader verified of a run's records (docs/running.md, "Tamper evidence"), each
    repair it went through, and the inspect log it was imported from (docs/inspect.md)."""
    text = f"records: {run.digest.label()}"
    for r in run.manifest.repaired:
        rebuilt = ", its manifest rebuilt from the flags given" if r.rebuilt_manifest else ""
        text += f"; repaired {r.at} ({len(r.dropped)} line(s) dropped{rebuilt})"
    source = run.manifest.imported_from
    if source is not None:
        text += (f"; imported from the inspect log {printable(source.log, newlines=False)} "
                 f"(eval {printable(source.eval_id, newlines=False)}, status {source.status})")
    return text


def _say(console: Console, text: str, *, highlight: bool = True) -> None:
    """One line under the score tables: control characters escaped, never read as markup (a
    price note or a label may come from a user's file or a model's name)."""
    console.print(printable(text), markup=False, highlight=highlight)


def print_score(result: RunScore, console: Console | None = None) -> None:
    if console is None:
        console = Console() if sys.stdout.isatty() else Console(width=120)
    if result.shard is not None:
        own = result.n_total + result.not_played
        _say(console, f"shard {result.shard} of a sweep: every figure below covers this "
                      f"shard's {own} of the sweep's {result.sweep_conversations} "
                      "conversations (butterfly merge joins the shards)")
    asked = asked_line(result.ask_at)
    if asked is not None:
        _say(console, asked, highlight=False)
    for t in score_tables(result, console):
        console.print(t)
    _say(console, f"effective final match (final match x coverage): "
                  f"{pct(result.effective_final_match)}")
    if result.code is not None:
        _say(console, figures_line(result.code))  # worded once, for the notebook too
    if result.abstention_by_reason:
        _say(console, "abstentions by reason: " + ", ".join(
            f"{k} {v}" for k, v in result.abstention_by_reason.items()))
    if result.usage is not None and result.usage.calls:
        _say(console, usage_line(result.usage))
        invalid = invalid_usage_line(result.usage)
        if invalid is not None:
            _say(console, invalid)
    if result.efficiency is not None and result.usage is not None and result.usage.calls:
        for said in efficiency_lines(result.efficiency):
            _say(console, said, highlight=False)
    if len(result.by_layout) > 1:
        _say(console, "final match by layout: " + ", ".join(
            f"{lay} {pct(r.final_match)} ({r.final_matches}/{r.n_conversations})"
            for lay, r in result.by_layout.items()))
    if result.incomplete:
        _say(console, f"incomplete (a call failed after its retries or was cut off; excluded "
                      f"from every figure): {result.incomplete} of {result.n_total} "
                      f"conversations ({pct(result.incomplete_share)})")
    if result.not_played:
        _say(console, f"not played (never started: an interrupted run, or a sequential "
                      f"comparison that stopped early): {result.not_played} conversations")
    flips = result.flips.model_dump(by_alias=True)
    if result.n_conversations > result.n_scenarios:  # several per scenario
        _say(console, "flips (butterfly flips RUN for the table): "
                      + ", ".join(f"{k} {v}" for k, v in flips.items()))
    parts = [f"{op} {pct(v.share)} (n={v.n})" for op, v in result.undo_recovery_by_op.items()
             if v.n]
    if parts:
        _say(console, asked_only("undo recovery by op", result.ask_at) + ": "
                      + ", ".join(parts))
    if result.horizon is not None:  # worded once, for the notebook too
        _say(console, horizon_line(result.horizon), highlight=False)
