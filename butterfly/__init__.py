"""ButterflyBench harness: generate, prompt, call models, parse, score, report.

The Python API (docs/api.md) is importable from here: ``butterfly.run``, ``butterfly.load_run``,
``butterfly.score_run``, ``butterfly.report``, and the types ``Run`` and ``ScoreReport``. They
load on first use, so ``import butterfly`` stays cheap (the command line imports only what a
command needs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from butterfly.api import Run, ScoreReport, load_run, report, run, score_run

API = ("Run", "ScoreReport", "load_run", "report", "run", "score_run")
__all__ = ["Run", "ScoreReport", "__version__", "load_run", "report", "run", "score_run"]


def __getattr__(name: str) -> Any:
    if name in API:
        from butterfly import api

        return getattr(api, name)
    raise AttributeError(f"module 'butterfly' has no attribute {name!r}")
