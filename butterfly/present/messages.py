"""The lines the command line says about what a command did (on stderr), and the exit status
they go with: a run that ended incomplete or over its budget, a merge, a repair, an import of
an inspect log, a failed run scored. Built from the typed results of :mod:`butterfly.api`;
every string from a run or a model is made printable."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from butterfly.analysis.listing import RunLine
from butterfly.core.printable import printable
from butterfly.engine.tracks import track
from butterfly.runs.inspect_import import Imported
from butterfly.runs.observe import Observed
from butterfly.runs.reader import Run
from butterfly.runs.records import RunManifest
from butterfly.runs.repair import RepairResult
from butterfly.suite.load import dumps_suite
from oracle import Scenario


def one_line(text: str) -> str:
    """``text`` printable on one line (control characters and newlines escaped)."""
    return printable(text, newlines=False)


def printable_text(text: str) -> str:
    """A rendered text (newlines kept) whose strings came from runs, safe for a terminal."""
    return printable(text)


def run_end(run: Run, max_cost: float | None) -> tuple[int, list[str]]:
    """The exit status of a finished ``butterfly run`` and what to say: 6 stopped by the budget,
    4 incomplete after provider errors, else 0."""
    m = run.manifest
    if m.status == "budget":
        spent = m.usage.spent_usd if m.usage is not None else None
        last = next(reversed(run.records.values()), None)
        why = (f"the provider's usage of the last call cannot be right "
               f"({last.invalid_usage.reason}), so its cost is unknown and --max-cost cannot be "
               "enforced: run it without --max-cost, or fix the provider"
               if last is not None and last.invalid_usage is not None else
               "a call came back without a price (no token counts), so --max-cost cannot be "
               "enforced: run it without --max-cost" if spent is None else
               f"spent ${spent:.4f} of --max-cost ${max_cost:g}; the next call could exceed it")
        return 6, [f"butterfly: stopped by the budget ({why}). {len(m.incomplete_scenarios)} "
                   "scenario(s) are not finished; re-run the same command with a larger "
                   "--max-cost to complete them."]
    if m.incomplete_scenarios:
        return 4, [f"butterfly: {len(m.incomplete_scenarios)} scenario(s) incomplete after "
                   f"provider errors ({m.n_provider_errors} failed call(s) recorded): they are "
                   "excluded from the scores above. Re-run the same command to complete them."]
    return 0, []


def unobserved(runs: Sequence[Run]) -> list[str]:
    """One line per code run whose programs are not all observed: what is left out, and the
    command that observes them (reading never runs a program)."""
    out = []
    for run in {r.path: r for r in runs}.values():  # a run given twice is said once
        turns = run.unobserved
        if turns:
            convs = len({(t.scenario, t.layout, t.repeat) for t in turns})
            out.append(f"butterfly: {one_line(str(run.path))}: {len(turns)} turn(s) of {convs} "
                       "conversation(s) hold programs not yet observed: they are not scored "
                       "(counted apart, as incomplete conversations are); observe them with: "
                       f"butterfly observe {one_line(str(run.path))}")
    return out


def unobserved_runs(lines: Sequence[RunLine]) -> list[str]:
    """``butterfly runs``: one line per listed code run with programs not yet observed."""
    return [f"butterfly: {one_line(x.path)}: {x.unobserved} turn(s) hold programs not yet "
            "observed: not scored (counted apart); observe them with: butterfly observe "
            f"{one_line(x.path)}" for x in lines if x.unobserved]


def observed(result: Observed) -> list[str]:
    """What ``butterfly observe`` says it did."""
    run = one_line(result.run)
    if not result.observed:
        return [f"{run}: every program is observed already ({result.known} on file); "
                "nothing ran"]
    return [f"{run}: observed {result.observed} program(s) in the sandbox ({result.sandbox}) "
            f"in {result.seconds:.1f} s, each kept as it was made; {result.known} were on "
            "file already"]


def interrupted(where: Path) -> str:
    """What ``butterfly run`` says when interrupted (Ctrl-C)."""
    return (f"butterfly: interrupted; answers so far are kept in {where}. Re-run the same "
            "command to resume.")


def merged(out: str, manifest: RunManifest) -> list[str]:
    """What ``butterfly merge`` says about the run it wrote."""
    lines = [f"merged {len(manifest.merged_from)} shards into {out}: {manifest.n_calls} "
             f"answered and {manifest.n_provider_errors} failed call(s), status "
             f"{manifest.status}"]
    if manifest.status != "complete":
        lines.append(f"butterfly: the merged run is {manifest.status}: butterfly run --out "
                     f"{out} with the sweep's model, suite and flags (no --shard) completes it")
    return lines


def imported(log: str, result: Imported) -> list[str]:
    """What ``butterfly import-inspect`` says about the run it wrote."""
    m = result.manifest
    lines = [f"imported {result.samples} sample(s) of {one_line(log)} into {result.out}: "
             f"{m.n_calls} answered and {m.n_provider_errors} failed call(s), status "
             f"{m.status}"]
    if m.params.price is not None:
        lines[0] += f"; every call priced at the user's price ({m.params.price.label()})"
    if result.incomplete:
        lines.append(f"butterfly: {result.incomplete} of {result.conversations} "
                     "conversation(s) begun and not finished (an error, or the eval stopped): "
                     "score counts them as incomplete")
    if result.not_played:
        lines.append(f"butterfly: {result.not_played} of {result.conversations} "
                     "conversation(s) have no call in the log: score counts them as not played")
    if track(m.params.track).observes and m.n_calls:
        lines.append("butterfly: a code run's programs are not run by the import; observe them "
                     f"in the sandbox with: butterfly observe {one_line(str(result.out))}")
    return lines


def repaired(run: str, result: RepairResult) -> list[str]:
    """What ``butterfly repair`` says: nothing to do, or what it kept and dropped."""
    if result.found is None:
        return [f"{run} reads intact: nothing to repair"]
    return [f"repaired {run}: found: {one_line(result.found)}",
            *(f"  dropped {one_line(line)}" for line in result.dropped),
            f"kept {result.kept} record(s), dropped {len(result.dropped)}; the old files are "
            f"beside the new ones (*.before-repair); the run is interrupted: butterfly run "
            f"--out {run} with the run's flags completes it"]


def failed_run(run: str, manifest: RunManifest) -> str | None:
    """The line ``butterfly score`` adds (exit 5) for a run whose status is failed."""
    if manifest.status != "failed":
        return None
    why = one_line(manifest.failure or "no reason recorded")
    return (f"butterfly: error: {run}: this run failed ({why}); fix the cause and re-run its "
            "command to resume")


def suite_jsonl(scenarios: list[Scenario]) -> str:
    """A suite as the JSON Lines of its file."""
    return dumps_suite(scenarios)
