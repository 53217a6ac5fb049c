"""What an imported inspect log played (``butterfly import-inspect``): its suite file, checked
by sha256, and its scope (``--per-category`` and ``--limit``) found from the samples it selected
(docs/inspect.md, "Importing an inspect log")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from butterfly.errors import UserError
from butterfly.runs.inspect_log import LoggedEval
from butterfly.runs.records import RunParams
from butterfly.runs.scope import select
from butterfly.runs.store import suite_sha256
from butterfly.suite.load import SCENARIOS_DIR, resolve_suite
from oracle import Scenario


def find_suite(logged: LoggedEval, given: Path | None) -> Path:
    """The suite file the log played: ``given`` (``--suite``: a file, or a suite's name as
    ``run --suite`` takes it), else the path the log names, else (that path missing) the frozen
    suite of the log's suite name; its sha256 must be the log's."""
    want, named = logged.meta.suite_sha256, Path(logged.meta.suite_path)
    if given is None and not named.is_file():
        frozen = SCENARIOS_DIR / f"{logged.meta.suite}.jsonl"
        if "/" in logged.meta.suite or not frozen.is_file() or suite_sha256(frozen) != want:
            raise UserError(f"{logged.path}: the suite it played, {named}, is missing: give "
                            "that suite with --suite FILE")
        return frozen
    path = named if given is None else resolve_suite(str(given))  # a file, or a suite's name
    sha = suite_sha256(path)
    if sha != want:
        raise UserError(f"{path} is not the suite the log played (its sha256 is {sha[:12]}, "
                        f"the log's {want[:12]}): give that suite with --suite FILE")
    return path


def _scenario_ids(logged: LoggedEval) -> set[str]:
    ids = {x.rsplit("/", 1)[0] for x in logged.selected or ()}
    return ids | {s.scenario for s in logged.samples}


def scope_of(logged: LoggedEval, suite: Sequence[Scenario], base: RunParams
             ) -> tuple[int | None, int | None]:
    """(limit, per_category) of the run: the log's metadata's when it names them, else the
    ones whose selection of the suite is the scenarios the eval selected; refused when none
    is."""
    meta = logged.meta
    if meta.limit is not None or meta.per_category is not None:
        return meta.limit, meta.per_category
    ids = _scenario_ids(logged)
    unknown = sorted(ids - {s.id for s in suite})
    if unknown:
        raise UserError(f"{logged.path}: scenario {unknown[0]} is not in the suite "
                        f"{meta.suite_path}")
    most = max(Counter(s.category for s in suite).values(), default=0)
    for per_category in (None, *range(1, most + 1)):
        for limit in (None, len(ids)):
            p = base.model_copy(update={"limit": limit, "per_category": per_category})
            if {s.id for s in select(suite, p)} == ids:
                return limit, per_category
    raise UserError(f"{logged.path}: its {len(ids)} scenarios are not a selection a run can "
                    "make (the first N of each category, then the first M): import a log of "
                    "the whole suite, or of such a selection")
