"""The API's commands that read runs: ``show``, ``export``, ``runs``, ``flips``, ``audit``,
``compare``, ``calibrate`` and ``report`` (``butterfly score`` is ``analysis.score_run`` itself,
which takes a run or its directory). Each checks its arguments (a bad one is
one clear line, before any run is read) and returns a typed result; ``butterfly.present``
renders them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from butterfly.analysis.flips import AuditItem, FlipGrid, flip_grid, load_columns
from butterfly.analysis.flips import audit as audit_columns
from butterfly.analysis.listing import RunLine, list_runs
from butterfly.analysis.results import Calibration, CompareResult
from butterfly.analysis.tidy import Level, Row, tidy_rows
from butterfly.analysis.transcripts import ShowInfo, load
from butterfly.core.pooling import Result
from butterfly.core.transcript import Transcript
from butterfly.errors import UserError
from butterfly.runs.reader import Run

RunRef = str | Path | Run
"""A run: its directory, or a :class:`Run` already read."""


def _ref(run: RunRef) -> Path | Run:
    """A run already read as it is, a directory as its path (read where it is used)."""
    return run if isinstance(run, Run) else Path(run)


@dataclass(frozen=True)
class Shown:
    """What ``butterfly show`` prints: the run's heading and the transcripts asked for (one
    scenario's, or every scenario's for the listing of verdicts). A frozen dataclass, not a
    pydantic model: its transcripts (dicts read from the run, thousands of turns for a long
    chain) are handed on as read, not validated a second time."""

    info: ShowInfo
    conversations: list[Transcript]
    one: bool


def show(run: RunRef, scenario: str | None = None, layout: str | None = None,
         repeat: int = 0) -> Shown:
    """``butterfly show``: ``scenario``'s transcript in ``layout`` and ``repeat`` against the
    oracle, or (``scenario`` None) every scenario's verdict."""
    info, convs = load(_ref(run), scenario, layout, repeat)
    return Shown(info=info, conversations=convs, one=scenario is not None)


def export(runs: list[RunRef], level: Level = "conversation") -> list[Row]:
    """``butterfly export``: tidy rows of ``runs``, one per conversation or per turn."""
    if level not in ("turn", "conversation"):
        raise UserError(f"--level takes turn or conversation, got {level!r}")
    return tidy_rows(runs, level)


def runs(root: str | Path = "runs") -> list[RunLine]:
    """``butterfly runs``: one line per run directory under ``root``."""
    return list_runs(Path(root))


def flips(runs: list[RunRef]) -> FlipGrid:
    """``butterfly flips``: per scenario, one character per repeat of each run and layout,
    and its class (stable, layout-sensitive, runs-differ, noisy)."""
    scenarios, columns = load_columns([_ref(r) for r in runs])
    return flip_grid(scenarios, columns)


def audit(runs: list[RunRef]) -> list[AuditItem]:
    """``butterfly audit``: the scenarios whose verdict flips across repeats of a layout."""
    scenarios, columns = load_columns([_ref(r) for r in runs])
    return audit_columns(scenarios, columns)


def _check_q(q: float) -> None:
    if not 0 < q < 1:
        raise UserError("--q must be between 0 and 1")


def compare(run_a: RunRef, run_b: RunRef, method: str = "bh", q: float = 0.1, *,
            k: int | None = None, cap: int | None = None, stop_fine: bool = False,
            layout: str | None = None, seed: int = 0) -> CompareResult:
    """``butterfly compare``: the scenarios that regressed (and improved) from A to B, with
    false-discovery control (docs/statistics.md)."""
    from butterfly.analysis.compare import compare as compare_runs  # scipy: when asked
    from butterfly.analysis.compare import load_answers

    return compare_runs(load_answers(_ref(run_a), layout), load_answers(_ref(run_b), layout),
                        method, q, k=k, cap=cap, stop_fine=stop_fine, seed=seed)


class Calibrated(Result):
    """``butterfly calibrate``'s study and its title."""

    result: Calibration
    title: str


def calibrate(run: RunRef | None = None, *, simulate: bool = False, q: float = 0.1,
              reshuffles: int = 20, m: int = 60, reps: int = 200, seed: int = 0) -> Calibrated:
    """``butterfly calibrate``: false alarms, FDR, power and answers of every regression method,
    on a run's repeats or simulated (docs/statistics.md)."""
    from butterfly.analysis.calibrate import calibrate as calibrate_runs  # scipy: when asked

    result, title = calibrate_runs(None if run is None else _ref(run), simulate=simulate, q=q,
                                   reshuffles=reshuffles, m=m, reps=reps, seed=seed)
    return Calibrated(result=result, title=title)


def check_report(runs: Sequence[object], html: str | Path, q: float) -> None:
    """``report``'s arguments, checked before any run is read (as ``compare`` checks ``q``)."""
    if not runs:
        raise UserError("report: give at least one run directory")
    if not str(html).strip():
        raise UserError("--html must name a file, got ''")
    _check_q(q)


class Written(Result):
    """A file a command wrote: where, and its size in bytes."""

    path: Path
    size: int


def report(runs: list[RunRef], html: str | Path, title: str | None = None, *,
           compare_method: str = "bh", q: float = 0.1) -> Written:
    """Write the self-contained HTML report of ``runs`` to ``html`` (the file and its size).
    Runs of one suite are compared as ``butterfly compare`` does (``compare_method``, ``q``)."""
    check_report(runs, html, q)
    from butterfly.present.report import write_report  # jinja2 (scipy for a pair): when asked

    size = write_report([_ref(r) for r in runs], Path(html), title, compare_method, q)
    return Written(path=Path(html), size=size)
