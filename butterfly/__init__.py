"""ButterflyBench harness: generate, prompt, call models, parse, score, report.

The Python API (docs/api.md) is importable from here: ``butterfly.run``, ``butterfly.load_run``,
``butterfly.score_run``, ``butterfly.report``, ``butterfly.sweep`` and ``butterfly.sweep_dry_run``
(a budget sweep), ``butterfly.load_runs`` (a pandas DataFrame of tidy rows) and
``butterfly.tidy_rows``, and the types ``Run``, ``RunOptions``, ``RunScore`` and ``SweepResult``
(every command's function is in :mod:`butterfly.api`). They load on first use, so ``import
butterfly`` stays cheap (the command line imports only what a command needs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from butterfly.api import (
        Run,
        RunOptions,
        RunScore,
        SweepResult,
        load_run,
        load_runs,
        report,
        run,
        score_run,
        sweep,
        sweep_dry_run,
        tidy_rows,
    )

API = ("Run", "RunOptions", "RunScore", "SweepResult", "load_run", "load_runs",
       "report", "run", "score_run", "sweep", "sweep_dry_run", "tidy_rows")
__all__ = ["Run", "RunOptions", "RunScore", "SweepResult", "__version__",
           "load_run", "load_runs", "report", "run", "score_run", "sweep", "sweep_dry_run",
           "tidy_rows"]


def __getattr__(name: str) -> Any:
    if name in API:
        from butterfly import api

        return getattr(api, name)
    raise AttributeError(f"module 'butterfly' has no attribute {name!r}")
