"""The Python API: every command of the command line, for notebooks and scripts.

>>> import butterfly
>>> run = butterfly.run(model="script/oracle", limit=3, out="/tmp/bb-oracle", cache=None)
>>> butterfly.score_run(run).final_match
1.0

One function per command, each taking typed arguments and returning a typed result (the
command line parses flags, calls one of these and renders the result through
``butterfly.present``; docs/api.md):

- playing and writing runs (:mod:`~butterfly.api.running`, :mod:`~butterfly.api.sequential`):
  ``run`` (options: :class:`RunOptions`), ``observe``, ``repair``, ``merge``,
  ``import_inspect``, ``sequential``, ``sweep`` / ``sweep_dry_run``
  (:mod:`~butterfly.api.sweeping`);
- reading runs (:mod:`~butterfly.api.reading`): ``load_run``, ``score_run``,
  ``show``, ``export`` / ``tidy_rows`` / ``load_runs``, ``runs``, ``flips``, ``audit``,
  ``compare``, ``calibrate``, ``report``;
- suites and answers (:mod:`~butterfly.api.suites`): ``generate``, ``validate``,
  ``audit_readings``, ``audit_depth``, ``oracle``, ``parse``, ``schema``, ``notebook``.

Nothing here imports litellm unless a run calls a provider that needs it.
"""

from __future__ import annotations

from butterfly.analysis.scoring import score_run
from butterfly.analysis.sweep_records import SweepBill, SweepBudget, SweepResult
from butterfly.analysis.tidy import load_runs, tidy_rows
from butterfly.api.reading import (
    Calibrated,
    Shown,
    audit,
    calibrate,
    compare,
    export,
    flips,
    report,
    runs,
    show,
)
from butterfly.api.running import (
    default_out,
    dry_run,
    import_inspect,
    merge,
    model_args,
    observe,
    options,
    repair,
    run,
    run_dir,
    run_params,
)
from butterfly.api.sequential import sequential
from butterfly.api.suites import (
    Generated,
    NotebookBuild,
    OracleSpec,
    ParseOutcome,
    ReadingsAudit,
    SuiteCheck,
    audit_depth,
    audit_readings,
    generate,
    notebook,
    oracle,
    parse,
    schema,
    validate,
)
from butterfly.api.sweeping import sweep, sweep_dry_run
from butterfly.core.options import FIELDS, RunOptions
from butterfly.core.scores import RunScore
from butterfly.runs.dryrun import Bill, DryRun
from butterfly.runs.inspect_import import Imported
from butterfly.runs.reader import Run, load_run

RUN_FIELDS = tuple(FIELDS)
"""The names of the fields of :class:`RunOptions`, in order."""

__all__ = ["RUN_FIELDS", "Bill", "Calibrated", "DryRun", "Generated", "Imported", "NotebookBuild",
           "OracleSpec", "ParseOutcome", "ReadingsAudit", "Run", "RunOptions", "RunScore",
           "Shown", "SuiteCheck", "SweepBill", "SweepBudget", "SweepResult",
           "audit", "audit_depth", "audit_readings", "calibrate", "compare", "default_out",
           "dry_run", "export", "flips", "generate", "import_inspect", "load_run", "load_runs",
           "merge", "model_args", "notebook", "observe", "options", "oracle", "parse", "repair",
           "report", "run", "run_dir", "run_params", "runs", "schema", "score_run",
           "sequential", "show", "sweep", "sweep_dry_run", "tidy_rows", "validate"]
