"""The API's budget sweep: :func:`sweep` and :func:`sweep_dry_run` (``butterfly sweep``;
contract v4, section 9; docs/running.md, "Budget sweeps").

One model over one suite at several values of one budget (``reasoning_effort``,
``thinking_budget``, ``max_tokens``, any ``-M`` key): one ordinary run per value, each through
:func:`butterfly.api.run` (resumable, cached, its manifest naming the sweep), in the order
given, under one ``max_cost`` for the whole sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butterfly.analysis.scoring import score_run
from butterfly.analysis.sweep_records import (
    SweepBill,
    SweepBudget,
    SweepResult,
    budget_row,
    sweep_bill,
    sweep_result,
)
from butterfly.api.running import default_out, dry_run, options, run
from butterfly.core.options import RunOptions
from butterfly.errors import UserError
from butterfly.runs.budget import Budget
from butterfly.runs.budget_sweep import (
    Budgets,
    budget_dirs,
    budget_options,
    check_sweep,
    finished,
    parse_budget,
    spent,
    value_slug,
)
from butterfly.runs.reader import load_run
from butterfly.runs.records import BudgetSweep
from butterfly.runs.run_flags import check_out
from butterfly.runs.store import MANIFEST
from butterfly.suite.load import resolve

STOPPING = ("budget", "failed")
"""Run statuses after which a sweep plays no further budget: the sweep's money is spent, or
the provider refused the model."""


@dataclass(frozen=True)
class Plan:
    """A sweep resolved and checked once: its name and folder, the budgets, and each budget's
    run directory, options and link."""

    name: str
    folder: Path
    budgets: Budgets
    dirs: tuple[Path, ...]
    options: tuple[RunOptions, ...]
    links: tuple[BudgetSweep, ...]


def _plan(o: RunOptions, budget: str | Budgets, name: str | None) -> Plan:
    """The sweep ``o`` and ``budget`` describe: ``o.out`` is the sweep's folder (default
    ``runs/MODEL__SUITE__sweep-KEY``), each budget's run ``FOLDER/MODEL__SUITE__KEY=VALUE``."""
    if o.shard is not None:
        raise UserError("sweep plays whole runs: --shard is for butterfly run")
    budgets = parse_budget(budget) if isinstance(budget, str) else budget
    suite = resolve(o.suite)
    stem = default_out(o.model, suite.path, mode=o.mode).name
    folder = check_out(o.out) or Path("runs") / f"{stem}__sweep-{value_slug(budgets.key)}"
    label = folder.resolve().name if name is None else name.strip()
    if not label:
        raise UserError("a sweep's name must not be empty")
    dirs = budget_dirs(folder, stem, budgets)
    opts = tuple(budget_options(o, budgets, i, d) for i, d in enumerate(dirs))
    links = tuple(budgets.link(label, i) for i in range(len(dirs)))
    check_sweep(folder, dirs, links)
    return Plan(label, folder, budgets, dirs, opts, links)


def sweep_dry_run(opts: RunOptions | None = None, /, *, budget: str | Budgets,
                  name: str | None = None, **fields: Any) -> SweepBill:
    """What :func:`sweep` with the same arguments would send, per budget and in total,
    counted without playing or writing anything (each budget's bill as :func:`dry_run`'s; a
    budget already played: what its resume would still send)."""
    o = options(opts, **fields)
    p = _plan(o, budget, name)
    return sweep_bill(p.name, p.budgets.key, p.budgets.values, o.max_cost,
                      [dry_run(x) for x in p.options])


def sweep(opts: RunOptions | None = None, /, *, budget: str | Budgets, name: str | None = None,
          progress: bool = False, on_budget: Callable[[int, Path], None] | None = None,
          **fields: Any) -> SweepResult:
    """Run a budget sweep: ``opts`` (or ``fields``) as :func:`run` takes them, ``budget``
    ``KEY=V1,V2,..`` (``reasoning_effort=low,medium,high``, ``max_tokens=256,1024``, any -M
    key), ``out`` the sweep's folder, ``name`` the sweep's name (default: the folder's).
    Plays one run per budget in the order given, skipping those already complete (a re-run
    resumes the others); ``max_cost`` holds over the whole sweep: what the sweep's other runs
    spent counts against each. Stops after a run stopped by the budget or failed. Returns
    each budget's figures; ``on_budget(index, run_dir)`` is told before a budget is played."""
    o = options(opts, **fields)
    p = _plan(o, budget, name)
    stopped = None
    for i, (run_opts, out) in enumerate(zip(p.options, p.dirs, strict=True)):
        if finished(out):
            continue
        shown = f"{p.budgets.key}={p.budgets.values[i]}"
        limited = run_opts
        if o.max_cost is not None:
            left = o.max_cost - sum(spent(d) for d in p.dirs if d != out)
            if left <= 0:
                stopped = (f"--max-cost ${o.max_cost:g} was spent before budget {shown}: re-run "
                           "with a larger --max-cost to continue")
                break
            limited = run_opts.replace(max_cost=left)
        if on_budget is not None:
            on_budget(i, out)
        status = run(limited, progress=progress, budget_sweep=p.links[i]).manifest.status
        if status in STOPPING and i + 1 < len(p.dirs):
            stopped = f"budget {shown}'s run ended {status}: later budgets were not played"
            break
    suite = resolve(o.suite)
    rows = [_row(p, i, suite.by_length) for i in range(len(p.dirs))]
    return sweep_result(name=p.name, model=o.model, suite=suite.path.stem, key=p.budgets.key,
                        values=p.budgets.values, by_length=suite.by_length, max_cost=o.max_cost,
                        stopped=stopped, budgets=rows)


def _row(p: Plan, index: int, by_length: bool) -> SweepBudget:
    """Budget ``index``'s figures, read from its run directory (none when it holds no run)."""
    out, value = p.dirs[index], p.budgets.values[index]
    if not (out / MANIFEST).is_file():
        return budget_row(value, str(out), None, None, None, by_length)
    loaded = load_run(out)
    own = Budget.of(None, loaded.records.values()).spent
    return budget_row(value, str(out), loaded.manifest.status, score_run(loaded), own,
                      by_length)
