"""``report_data(runs)``: the report's :class:`ReportData`, from run records only (``load_run``
and ``score_run``): each run scored once, each run's final-match verdicts read once (for the
headline's paired differences and the compare section alike), every figure the page shows
computed here, before any markup."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butterfly import __version__
from butterfly.analysis.flips import FlipGrid, flip_grid, load_columns
from butterfly.analysis.report.data import (
    BaselineEntry,
    ModePair,
    ReportData,
    RunEntry,
)
from butterfly.analysis.report.figures import (
    first_divergent,
    headline,
    heat,
    horizon_series,
    radius,
    undo_panels,
)
from butterfly.analysis.report.findings import comparisons
from butterfly.analysis.report.frontier import frontier, ranking
from butterfly.analysis.report.pages import page_conversations, page_scenario
from butterfly.analysis.scoring import score_run
from butterfly.core.asking import ask_label
from butterfly.core.metrics import effective_final_match
from butterfly.engine.tracks import track
from butterfly.errors import UserError
from butterfly.runs.reader import Run, check_same_scenarios, load_run
from butterfly.runs.records import RunManifest
from oracle import CATEGORIES, OPS

if TYPE_CHECKING:
    from butterfly.analysis.compare import RunAnswers

DEFAULT_TITLE = "ButterflyBench report"


def run_label(manifest: RunManifest) -> str:
    """A run's label: its model and, in brackets, what it was asked with that is not the
    default (a shard's figures are its conversations only: its label says so)."""
    p = manifest.params
    extras = [text for on, text in (
        (p.strategy != "zero-shot", p.strategy + (f" x{p.samples}" if p.samples > 1 else "")),
        (p.protocol != "schema", p.protocol), (p.mode != "chat", p.mode),
        (p.shard is not None, f"shard {p.shard}"),
        (p.ask_at is not None, ask_label(p.ask_at) or "")) if on]
    return str(manifest.model) + (f" [{', '.join(extras)}]" if extras else "")


def labels_apart(runs: Sequence[Run], prompts: Sequence[str]) -> list[str]:
    """The runs' labels, told apart: by prompt version when the runs were asked with several,
    then by directory where two are still equal; two equal after that are one directory
    given twice (refused)."""
    labels = [run_label(r.manifest) for r in runs]
    if len(set(prompts)) > 1:
        labels = [f"{label} [{p}]" for label, p in zip(labels, prompts, strict=True)]
    labels = [f"{label} ({r.path.name or r.path})" if labels.count(label) > 1 else label
              for label, r in zip(labels, runs, strict=True)]
    if len(set(labels)) != len(labels):
        raise UserError("report: give each run directory once")
    return labels


def mode_pairs(runs: Sequence[RunEntry]) -> tuple[ModePair, ...]:
    """Runs that differ only in ``--mode``, paired (the first of each mode per model, suite and
    prompt version)."""
    def key(e: RunEntry) -> tuple[Any, ...]:
        p = e.params
        return (e.score.model, e.suite_sha256, e.prompt, p.layouts, p.strategy, p.protocol,
                p.temperature, p.seed)

    by: dict[tuple[Any, ...], dict[str, RunEntry]] = {}
    for e in runs:
        by.setdefault(key(e), {}).setdefault(e.params.mode, e)
    return tuple(ModePair(chat=m["chat"], restate=m["restate"]) for m in by.values()
                 if "chat" in m and "restate" in m)


def _entries(loaded: Sequence[Run]) -> list[RunEntry]:
    scores = [score_run(run) for run in loaded]
    prompts = [track(s.prompt.track).version_name(s.prompt.version) for s in scores]
    labels = labels_apart(loaded, prompts)
    return [RunEntry(label=label, path=str(run.path), status=run.manifest.status,
                     params=run.params, suite_path=str(run.manifest.suite.path),
                     suite_sha256=run.manifest.suite.sha256, prompt=prompt, score=s,
                     budget_sweep=run.manifest.budget_sweep)
            for run, s, label, prompt in zip(loaded, scores, labels, prompts, strict=True)]


def _flips(loaded: Sequence[Run]) -> FlipGrid | None:
    """The flip grid of the runs posed under several layouts, when they share scenarios."""
    several = [r for r in loaded if len(r.params.layouts) > 1]
    if not several or not set.intersection(*({s.to_json() for s in r.scenarios}
                                              for r in several)):
        return None
    scenarios, columns = load_columns(several)
    return flip_grid(scenarios, columns)


def report_data(runs: Sequence[Path | Run], title: str | None = None,
                compare_method: str = "bh", q: float = 0.1) -> ReportData:
    """Every figure and transcript the page shows. Runs of one suite are compared
    (``compare_method``, ``q``: as ``butterfly compare``)."""
    if not runs:
        raise UserError("report: give at least one run directory")
    loaded = [r if isinstance(r, Run) else load_run(r) for r in runs]
    check_same_scenarios(loaded)  # scenarios are keyed by id: one id, one scenario
    entries = _entries(loaded)

    @cache
    def answers(i: int) -> RunAnswers:
        from butterfly.analysis.compare import load_answers  # scipy: only for a pair

        return load_answers(loaded[i])

    first = entries[0].score
    baselines = tuple(BaselineEntry(name=n, score=b, effective_final_match=effective_final_match(b))
                      for n, b in first.baselines.items())
    played = {s.id: s for run in loaded for s in run.scenarios}  # one id, one scenario
    suites = [e.suite_sha256 for e in entries]
    categories = tuple(c for c in CATEGORIES if any(c in e.score.by_category for e in entries))
    head = headline(entries, baselines, answers)
    return ReportData(
        title=title or DEFAULT_TITLE,
        butterfly_version=__version__,
        runs=tuple(entries),
        baselines=baselines,
        categories=categories,
        ops=tuple(op for op in OPS if any(op in e.score.by_op for e in entries)),
        headline=head,
        heat=heat(entries, categories),
        undo=undo_panels(entries),
        radius=radius(entries, baselines),
        first_divergent=first_divergent(entries),
        horizon=horizon_series(entries),
        frontier=frontier(entries, head),
        ranking=ranking(entries),
        modes=mode_pairs(entries),
        flips=_flips(loaded),
        compare=comparisons(suites, [e.label for e in entries], answers, compare_method, q),
        scenarios={sid: page_scenario(s) for sid, s in played.items()},
        conversations=tuple(c for i, run in enumerate(loaded) for c in page_conversations(i, run)),
    )
