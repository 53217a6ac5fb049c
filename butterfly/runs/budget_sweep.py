"""``butterfly sweep``: one model over one suite at several values of one budget (contract v4,
section 9; docs/running.md, "Budget sweeps").

A budget is the provider's own knob: a model argument (``-M reasoning_effort=low``,
``-M thinking_budget=1024``; any ``-M`` key the harness does not own) or the harness's own
``max_tokens``. This module reads ``--budget KEY=V1,V2,..`` (each value as ``-M`` reads one),
gives each value its run options, and keeps a sweep's runs linked: each run's manifest names
the sweep (:class:`~butterfly.runs.records.BudgetSweep`), and a resume with other values is
refused before anything is played. What a sweep's earlier runs spent is what ``--max-cost``
counts against the later ones (:func:`spent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from butterfly.core.options import RunOptions
from butterfly.errors import UserError
from butterfly.runs.budget import Budget
from butterfly.runs.records import BudgetSweep, RunManifest
from butterfly.runs.run_flags import OWNED, arg_value, check_model_args
from butterfly.runs.store import MANIFEST, check_link, read_manifest

HARNESS_KEY = "max_tokens"
"""The one budget the harness owns (``--max-tokens``): swept as the run option, not a model
argument."""


@dataclass(frozen=True)
class Budgets:
    """``--budget KEY=V1,V2,..``: the key, each value as given and as sent."""

    key: str
    values: tuple[str, ...]
    sent: tuple[JsonValue, ...]

    def link(self, name: str, index: int) -> BudgetSweep:
        """What budget ``index``'s manifest records of the sweep ``name``."""
        return BudgetSweep(name=name, key=self.key, values=self.values, index=index)


def parse_budget(text: str) -> Budgets:
    """``KEY=V1,V2,..`` checked: a key ``-M`` accepts (or ``max_tokens``, whole numbers from
    1), at least one value, none given twice; one clear line otherwise."""
    key, sep, rest = str(text).partition("=")
    key = key.strip()
    values = tuple(v.strip() for v in rest.split(","))
    if not sep or not key or not all(values):
        raise UserError(f"--budget takes KEY=V1,V2,.. (e.g. reasoning_effort=low,medium,high), "
                        f"got {text!r}")
    if len(set(values)) < len(values):
        raise UserError(f"--budget {key}: a value is given twice ({','.join(values)})")
    sent = tuple(arg_value(v) for v in values)
    if key == HARNESS_KEY:
        bad = [v for v, s in zip(values, sent, strict=True)
               if isinstance(s, bool) or not isinstance(s, int) or s < 1]
        if bad:
            raise UserError(f"--budget max_tokens takes whole numbers from 1, got {bad[0]!r}")
        return Budgets(key, values, sent)
    if key in OWNED and OWNED[key][1] == "--max-tokens":
        raise UserError(f"--budget {key}: the harness owns the answer's length; sweep it as "
                        f"--budget max_tokens={','.join(values)}")
    for s in sent:
        try:
            check_model_args({key: s})
        except UserError as e:
            raise UserError(f"--budget {key}={','.join(values)}: {e}") from None
    return Budgets(key, values, sent)


def budget_options(base: RunOptions, budgets: Budgets, index: int, out: Path) -> RunOptions:
    """The options of budget ``index``: ``base`` with that value set, into ``out``. A budget
    also given as -M (or --max-tokens) is refused: the sweep sets it."""
    value = budgets.sent[index]
    if budgets.key == HARNESS_KEY:
        if base.max_tokens is not None:
            raise UserError("--budget max_tokens and --max-tokens: the sweep sets each run's "
                            "max tokens; drop --max-tokens")
        return base.replace(max_tokens=value, out=out)
    args = dict(base.model_args or {})
    if budgets.key in args:
        raise UserError(f"--budget {budgets.key} and -M {budgets.key}: the sweep sets each "
                        f"run's {budgets.key}; drop the -M")
    return base.replace(model_args={**args, budgets.key: value}, out=out)


def value_slug(value: str) -> str:
    """A budget value as a directory name holds it."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in value).strip("-") or "-"


def budget_dirs(folder: Path, stem: str, budgets: Budgets) -> tuple[Path, ...]:
    """Each budget's run directory: ``FOLDER/STEM__KEY=VALUE`` (STEM: ``MODEL__SUITE``, as a
    lone run's directory is named). Two values that name one directory are refused."""
    dirs = tuple(folder / f"{stem}__{value_slug(budgets.key)}={value_slug(v)}"
                 for v in budgets.values)
    if len(set(dirs)) < len(dirs):
        raise UserError(f"--budget {budgets.key}: two values name one run directory "
                        f"({','.join(budgets.values)}); give values that differ in letters "
                        "or digits")
    return dirs


def _manifest(out: Path) -> RunManifest | None:
    return read_manifest(out) if (out / MANIFEST).is_file() else None


def check_sweep(folder: Path, dirs: Sequence[Path], links: Sequence[BudgetSweep]) -> None:
    """Before anything is played: each budget's directory holds nothing, or this budget of this
    sweep; and no other run in ``folder`` names this sweep with other budgets (a changed
    value list is refused, not half played)."""
    for out, link in zip(dirs, links, strict=True):
        old = _manifest(out)
        if old is not None:
            check_link(out, old.budget_sweep, link)
    if not folder.is_dir():
        return
    first = links[0]
    for out in sorted(p for p in folder.iterdir() if p.is_dir() and p not in dirs):
        try:
            old = _manifest(out)
        except UserError:  # another run, damaged: not this sweep's business
            continue
        found = None if old is None else old.budget_sweep
        if found is not None and found.name == first.name:
            check_link(out, found, first.model_copy(update={"index": found.index}))


def finished(out: Path) -> bool:
    """The run in ``out`` is complete: the sweep reads it and plays nothing."""
    old = _manifest(out)
    return old is not None and old.status == "complete"


def spent(out: Path) -> float:
    """What the calls recorded in ``out`` spent (answers the cache served cost nothing), as
    ``--max-cost`` counts it; 0 for a directory with no run."""
    from butterfly.runs.reader import load_run  # the reader imports the store: read when asked

    if _manifest(out) is None:
        return 0.0
    return Budget.of(None, load_run(out).records.values()).spent
