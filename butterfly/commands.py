"""What each ``butterfly`` command does: call its function of the Python API
(:mod:`butterfly.api`), render the result through :mod:`butterfly.present`, print.

The API is imported when a command runs, so ``butterfly --help`` stays quick, and commands that
call no provider never import litellm (it takes seconds to import). The argument parser is
:mod:`butterfly.cli`; this module imports only the API, ``present``, ``errors``, ``files`` and
``core.vocab`` (tests/butterfly/test_layers.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from butterfly.errors import UserError
from butterfly.files import write_text_atomic

if TYPE_CHECKING:
    from butterfly.api import Run, RunOptions

T = TypeVar("T")


def _write(path: str | None, text: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    if not path.strip():
        raise UserError("an output file must be named (or - for stdout), got ''")
    write_text_atomic(Path(path), text, path)


def _json(result: Any, *, line: bool = False) -> str:
    """The one JSON writer of every ``--json`` (and of ``oracle``'s lines): an API result as
    plain data (pydantic models dumped by alias, dataclasses field by field, tuples and paths
    as lists and strings), indented; ``line``: on one line, its text as written (JSONL)."""
    from pydantic import TypeAdapter

    data = TypeAdapter(type(result)).dump_python(result, mode="json", by_alias=True)
    if line:
        return json.dumps(data, ensure_ascii=False)
    return json.dumps(data, indent=2)


def _call(fn: Callable[..., T], a: argparse.Namespace, *args: Any, **made: Any) -> T:
    """``fn`` of the API called with ``args`` and, by name, the flags named as its parameters
    (a flag's dest is the API's name for it), ``made`` over them (what the command made of
    them, e.g. the runs it read)."""
    import inspect

    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = [n for n, p in inspect.signature(fn).parameters.items() if p.kind in by_name]
    return fn(*args, **{n: getattr(a, n) for n in names if hasattr(a, n)} | made)


def _print(a: argparse.Namespace, result: Any, text: Callable[[Any], str]) -> None:
    """``result`` on stdout: as JSON with --json, else as ``text`` renders it, made printable."""
    print(_json(result) if a.json else _printable(text(result)))


def _say(lines: list[str]) -> None:
    """Lines on stderr, each made printable (paths and names may hold control characters)."""
    from butterfly.present.messages import one_line

    for line in lines:
        print(one_line(line), file=sys.stderr)


def cmd_generate(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.messages import suite_jsonl

    to_stdout = a.out in (None, "-")
    if a.ask_at is not None and to_stdout and not a.manifest:
        raise UserError("generate: with --ask-at, give --out FILE (the manifest that names the "
                        "ask points is written beside it) or --manifest FILE")
    made = _call(api.generate, a)
    _write(a.out, suite_jsonl(made.scenarios))
    manifest, where = made.manifest, a.manifest
    if manifest is not None and a.suite is None:  # chains with ask points: name them by --out
        out = Path("-" if to_stdout else a.out)
        manifest = manifest.model_copy(update={"name": out.stem, "file": str(out)})
        where = where or str(out.with_name(f"{out.stem}.manifest.json"))
    if manifest is not None and where:
        _write(where, manifest.to_json())
    if a.out not in (None, "-"):
        _say([f"wrote {len(made.scenarios)} scenarios to {a.out}"])
    return 0


def cmd_validate(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.readings import depth_table, readings_table

    if a.readings:
        for r in api.audit_readings(a.files):
            print(_printable(readings_table(str(r.path), r.scenarios, r.tallies)))
        return 0
    if a.depth:
        reports = api.audit_depth(a.files)
        for d in reports:
            print(depth_table(str(d.path), d.guarded, d.ask_at, d.rows,
                              None if d.violation is None else str(d.violation)))
        return 1 if any(d.violation is not None for d in reports) else 0
    for c in api.validate(a.files, track=a.track):
        print(_printable(f"{c.path}: {c.scenarios} scenarios, {c.turns} turns: valid"))
    return 0


def cmd_oracle(a: argparse.Namespace) -> int:
    from butterfly import api

    out = sys.stdout
    for row in api.oracle(a.file):
        out.write(_json(row, line=True))
        out.write("\n")
    return 0


def cmd_schema(a: argparse.Namespace) -> int:
    from butterfly import api

    for path in api.schema(a.out_dir):
        _say([f"wrote {path}"])
    return 0


def run_options(a: argparse.Namespace) -> RunOptions:
    """The :class:`RunOptions` the flags of ``butterfly run`` (or ``sequential``) give."""
    from butterfly import api
    from butterfly.api import RunOptions

    given = {name: getattr(a, name) for name in api.RUN_FIELDS
             if name not in ("model_args", "cache") and hasattr(a, name)}
    return RunOptions(**given, model_args=api.model_args(a.model_arg or (), a.model_args),
                      cache=None if a.no_cache else a.cache)


def cmd_run(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.bill import bill_text
    from butterfly.present.display import failure_lines, print_score
    from butterfly.present.messages import interrupted, run_end

    if a.dry_run:
        bill = api.dry_run(run_options(a))
        print(_json(bill) if a.json else bill_text(bill))
        return 0
    if a.json:
        raise UserError("--json goes with --dry-run (a run's JSON is butterfly score RUN "
                        "--json)")
    opts = run_options(a)
    try:
        result = api.run(opts, progress=True)
    except KeyboardInterrupt:
        _say([interrupted(api.run_dir(opts))])
        return 130
    print_score(api.score_run(result))
    _say([f"butterfly: {line}" for line in failure_lines(result)])
    code, lines = run_end(result, opts.max_cost)
    _say(lines)
    return code


def cmd_sweep(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.messages import interrupted
    from butterfly.present.sweep import sweep_bill_text, sweep_text

    opts = run_options(a)
    bill = api.sweep_dry_run(opts, budget=a.budget, name=a.name)  # the whole bill first
    if a.dry_run:
        print(_json(bill) if a.json else sweep_bill_text(bill))
        return 0
    _say([*sweep_bill_text(bill).splitlines(), ""])
    where: list[Path] = []

    def told(index: int, out: Path) -> None:
        where[:] = [out]
        _say([f"butterfly: budget {a.budget.partition('=')[0].strip()}="
              f"{bill.values[index]} ({index + 1} of {len(bill.values)}): {out}"])

    try:
        result = api.sweep(opts, budget=a.budget, name=a.name, progress=True, on_budget=told)
    except KeyboardInterrupt:
        _say([interrupted(where[0]) if where else "butterfly: interrupted"])
        return 130
    _print(a, result, sweep_text)
    statuses = {b.status for b in result.budgets}
    if "budget" in statuses or (result.stopped or "").startswith("--max-cost"):
        _say([f"butterfly: stopped by the budget: {result.stopped or 'see the table'}; re-run "
              "the same command with a larger --max-cost to continue"])
        return 6
    return 5 if "failed" in statuses else 4 if statuses - {"complete"} else 0


def cmd_merge(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.messages import merged

    _say(merged(a.out, api.merge(a.shards, a.out)))
    return 0


def cmd_import_inspect(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.messages import imported

    _say(imported(a.log, _call(api.import_inspect, a)))
    return 0


def cmd_repair(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.messages import repaired

    flags = None if a.run_args is None else run_options(a.run_args)
    _say(repaired(a.run, api.repair(a.run, flags)))
    return 0


def cmd_score(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.display import content_line, print_score
    from butterfly.present.messages import failed_run

    run = api.load_run(Path(a.run))
    result = api.score_run(run, a.parse, a.protocol)
    if a.json:
        print(_json(result))
    else:
        print_score(result)
        print(_printable(content_line(run)))
    _unobserved([run])
    failed = failed_run(a.run, run.manifest)
    if failed is not None:  # scored what there is, but say so: exit 5
        _say([failed])
        return 5
    return 0


def cmd_export(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.text import to_csv

    runs = _loaded(a.runs)
    rows = api.export(list(runs), a.level)
    _write(a.csv, to_csv(rows, a.level))
    if a.csv not in (None, "-"):
        _say([f"wrote {len(rows)} {a.level} rows to {a.csv}"])
    _unobserved(runs)
    return 0


def cmd_runs(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.messages import unobserved_runs
    from butterfly.present.text import runs_text

    lines = api.runs(a.dir)
    print(_json(lines) if a.json else runs_text(lines))
    _say(unobserved_runs(lines))
    return 0


def cmd_flips(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.text import flips_text

    return _over_runs(a, api.flips, flips_text)


def cmd_audit(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.text import audit_text

    return _over_runs(a, api.audit, audit_text)


def _over_runs(a: argparse.Namespace, fn: Callable[[list[Any]], T],
               text: Callable[[T], str]) -> int:
    """A reading command over the runs RUN..: ``fn`` of them printed (``text``, or --json),
    then which of them await ``observe``."""
    runs = _loaded(a.runs)
    _print(a, fn(runs), text)
    _unobserved(runs)
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.show import print_shown

    if a.lines < 1:
        raise UserError("--lines must be at least 1")
    runs = _loaded([a.run])
    shown = api.show(runs[0], a.scenario, a.layout, a.repeat)
    code = print_shown(shown.info, shown.conversations, shown.one, full=a.full, lines=a.lines)
    _unobserved(runs)
    return code


def cmd_report(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.api.reading import check_report

    check_report(a.runs, a.html, a.q)  # before any run is read
    runs = _loaded(a.runs)
    written = _call(api.report, a, runs=runs)
    _say([f"wrote {a.html} ({written.size / 1e6:.2f} MB)"])
    _unobserved(runs)
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.text import compare_text

    run_a, run_b = _loaded([a.run_a, a.run_b])
    result = _call(api.compare, a, run_a=run_a, run_b=run_b)
    _print(a, result, compare_text)
    _unobserved([run_a, run_b])
    return 0


def cmd_calibrate(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.text import calibration_text

    study = _call(api.calibrate, a)
    print(_json(study.result) if a.json
          else _printable(calibration_text(study.result, study.title)))
    return 0


def cmd_notebook(a: argparse.Namespace) -> int:
    from butterfly import api

    built = api.notebook(a.out, a.check)
    print(_printable(f"{built.path}: up to date" if built.checked
                     else f"wrote {built.path} ({built.size} bytes)"))
    return 0


def cmd_sequential(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.text import sequential_text

    result = _call(api.sequential, a, a.model_a, a.model_b, run_options(a), quiet=a.json)
    _print(a, result, sequential_text)
    return 0


def cmd_parse(a: argparse.Namespace) -> int:
    from butterfly import api

    outcome = api.parse(sys.stdin.read(), a.parse, a.protocol)
    print(outcome.text, file=sys.stdout if outcome.code == 0 else sys.stderr)
    return outcome.code


def cmd_observe(a: argparse.Namespace) -> int:
    from butterfly import api
    from butterfly.present.display import ObservingDisplay
    from butterfly.present.messages import observed

    told = ObservingDisplay(f"observing the programs of {a.run}")
    _say(observed(api.observe(a.run, allow_fallback=a.allow_fallback, on_done=told)))
    return 0


def _loaded(paths: Sequence[str]) -> list[Run]:
    """The runs a reading command reads, each read once (the API is given them)."""
    from butterfly import api

    return [api.load_run(Path(p)) for p in paths]


def _unobserved(runs: Sequence[Run]) -> None:
    """Say which code runs hold programs not yet observed (on stderr)."""
    from butterfly.present.messages import unobserved

    _say(unobserved(runs))


def _printable(text: str) -> str:
    """A rendered text whose strings came from runs, made safe for the terminal."""
    from butterfly.present.messages import printable_text

    return printable_text(text)
