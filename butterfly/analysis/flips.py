"""Flip analysis: does a verdict change when only the prompt's layout changes?

For each scenario, one character per conversation (layout x repeat): ``P`` final match, ``F``
final mismatch, ``A`` abstained at the final turn, ``-`` incomplete (a provider error or not yet
run). A scenario is (contract section 5, seed 000):

- **noisy** when the repeats of one layout disagree (pass vs not pass);
- **layout-sensitive** when each layout's repeats agree but two layouts of one run disagree;
- **runs-differ** (several runs) when each run's layouts agree but the runs disagree: a
  difference between models, strategies, protocols or modes, not a layout's;
- **stable** otherwise, split into stable-pass and stable-fail, because a model that always
  fails is perfectly stable and useless (seed 000's always-YES model);
- **incomplete** when any of its conversations is.

Several runs (other strategies or protocols on the same suite) are compared side by side: each
run's layouts become columns ``LABEL:LAYOUT``.

The ambiguity audit lists scenarios whose verdict flips between pass and fail across repeats of
the same layout, with the turn where the answers first split and the distinct answers: in seed
002 such scenarios were usually ambiguously worded, and this list is where an author looks first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import Field

from butterfly.core.asking import asked_turns
from butterfly.core.pooling import Result
from butterfly.core.turns import ConversationKey, Turn, TurnKey
from butterfly.errors import UserError
from butterfly.runs.reader import Run, check_same_scenarios, load_run
from oracle import KEYS, Scenario, Spec, replay

CLASSES: Final = ("stable-pass", "stable-fail", "layout-sensitive", "runs-differ", "noisy",
                  "incomplete")


@dataclass(frozen=True)
class Column:
    label: str
    layout: str
    repeats: int
    turns: dict[TurnKey, Turn]
    """The run's answered turns (``Run.turns``)."""
    played: frozenset[ConversationKey] | None = None
    """Conversations (scenario, layout, repeat) with any call record; the others were never
    started (a sequential comparison stops scenarios early) and get no character."""
    run: int = 0
    """Which run the column is a layout of (columns of one run differ by layout only)."""
    ask_at: tuple[int, ...] | None = None
    """The run's ask points (``--ask-at``): its conversations are complete when every asked
    turn is answered; None: every turn is asked."""

    def asked(self, s: Scenario) -> Sequence[int]:
        """The turns of ``s`` the column's run asked."""
        return asked_turns(len(s.turns), self.ask_at)

    def repeats_of(self, scenario_id: str) -> list[int]:
        return [r for r in range(self.repeats)
                if self.played is None
                or ConversationKey(scenario_id, self.layout, r) in self.played]

    @property
    def name(self) -> str:
        return self.layout if not self.label else f"{self.label}:{self.layout}"


def answers_of(s: Scenario, col: Column, repeat: int) -> list[Turn] | None:
    """The asked turns of one conversation (every turn, unless its run asked at chosen turns),
    or None if any of them lacks a successful answer."""
    out = []
    for t in col.asked(s):
        turn = col.turns.get(TurnKey(s.id, t, col.layout, repeat))
        if turn is None:
            return None
        out.append(turn)
    return out


def verdict(recs: list[Turn] | None, final: Spec) -> str:
    """One conversation's character: P, F, A (abstained at its last turn) or - (incomplete)."""
    if recs is None:
        return "-"
    last = recs[-1].spec
    if last is None:
        return "A"
    return "P" if last == final else "F"


def classify(cells: dict[str, str], runs: dict[str, int] | None = None) -> str:
    """The class of a scenario from its verdict strings, one per column (``runs``: the run of
    each column; one run when not given). An empty string is a column where the run plays none
    of the scenario's conversations (a shard holding only some of its layouts, a sequential
    comparison that stopped it): it takes no part."""
    played = {name: v for name, v in cells.items() if v}
    joined = "".join(played.values())
    if "-" in joined or not joined:
        return "incomplete"
    passes = {name: {c == "P" for c in v} for name, v in played.items()}
    if any(len(p) > 1 for p in passes.values()):
        return "noisy"
    by_run: dict[int, set[bool]] = {}
    for name, p in passes.items():
        by_run.setdefault((runs or {}).get(name, 0), set()).update(p)
    if any(len(v) > 1 for v in by_run.values()):
        return "layout-sensitive"
    if len(set().union(*by_run.values())) > 1:
        return "runs-differ"
    return "stable-pass" if joined[0] == "P" else "stable-fail"


class FlipRow(Result):
    """One scenario: a verdict string per column (one character per repeat), and its class
    (``class`` in the JSON)."""

    id: str
    category: str
    cells: dict[str, str]
    class_: str = Field(alias="class")


class FlipGrid(Result):
    """``butterfly flips --json``."""

    columns: list[str]
    repeats: dict[str, int]
    scenarios: list[FlipRow]
    counts: dict[str, int]
    pass_rate_by_column: dict[str, float | None]


class AuditAnswer(Result):
    answer: str
    repeats: int


class AuditItem(Result):
    """A scenario whose verdict flips across repeats of one column, and where answers split."""

    id: str
    category: str
    column: str
    verdicts: str
    split_turn: int
    op: str
    text: str
    answers: list[AuditAnswer]


def flip_grid(scenarios: Sequence[Scenario], columns: Sequence[Column]) -> FlipGrid:
    """The flip table: per scenario its cells and class, counts, pass rates."""
    rows: list[FlipRow] = []
    runs = {col.name: col.run for col in columns}
    for s in scenarios:
        final = replay(s)[-1]
        cells = {
            col.name: "".join(verdict(answers_of(s, col, r), final)
                              for r in col.repeats_of(s.id))
            for col in columns
        }
        rows.append(FlipRow.model_validate({"id": s.id, "category": s.category, "cells": cells,
                                            "class": classify(cells, runs)}))
    counts = Counter(r.class_ for r in rows)
    pass_rate: dict[str, float | None] = {}
    for col in columns:
        got = "".join(r.cells[col.name] for r in rows).replace("-", "")
        pass_rate[col.name] = None if not got else got.count("P") / len(got)
    return FlipGrid(
        columns=[c.name for c in columns],
        repeats={c.name: c.repeats for c in columns},
        scenarios=rows,
        counts={c: counts.get(c, 0) for c in CLASSES
                if c != "runs-differ" or len(set(runs.values())) > 1},
        pass_rate_by_column=pass_rate,
    )


def _diff(spec: Spec | None, oracle: Spec, rec: Turn) -> str:
    if spec is None:
        return f"abstained: {rec.abstention}"
    wrong = [f"{k}={spec[k]} (oracle {oracle[k]})" for k in KEYS if spec[k] != oracle[k]]
    return "matches the oracle" if not wrong else "; ".join(wrong)


def audit(scenarios: Sequence[Scenario], columns: Sequence[Column]) -> list[AuditItem]:
    """Scenarios whose verdict flips between pass and fail across repeats of one column."""
    items: list[AuditItem] = []
    for s in scenarios:
        oracle = replay(s)
        for col in columns:
            convs = [answers_of(s, col, r) for r in col.repeats_of(s.id)]
            done = [c for c in convs if c is not None]  # complete repeats only
            if len(done) < 2:
                continue
            verdicts = {verdict(c, oracle[-1]) == "P" for c in done}
            if len(verdicts) < 2:
                continue
            turns = col.asked(s)
            at = next(i for i in range(len(turns)) if len({repr(c[i].spec) for c in done}) > 1)
            split = turns[at]
            answers = Counter(_diff(c[at].spec, oracle[split], c[at]) for c in done)
            items.append(AuditItem(
                id=s.id,
                category=s.category,
                column=col.name,
                verdicts="".join(verdict(c, oracle[-1]) for c in done),
                split_turn=split,
                op=s.turns[split - 1].op,
                text=s.turns[split - 1].text,
                answers=[AuditAnswer(answer=a, repeats=n) for a, n in answers.most_common()],
            ))
    return items


def load_columns(runs: Sequence[Path | Run]) -> tuple[list[Scenario], list[Column]]:
    """The columns of one or more run directories (or runs already read), over the scenarios
    all of them play (matched by content: one id must mean one scenario in every run)."""
    loaded = [r if isinstance(r, Run) else load_run(r) for r in runs]
    check_same_scenarios(loaded)
    columns: list[Column] = []
    scenarios: list[Scenario] | None = None
    for i, run in enumerate(loaded):
        path, manifest = run.path, run.manifest
        chosen = run.scenarios
        scenarios = chosen if scenarios is None else [s for s in scenarios if s in chosen]
        p = run.params
        answered = run.turns()
        played = run.attempted
        label = "" if len(runs) == 1 else (
            f"{path}[{manifest.model},{p.strategy},{p.protocol},{p.mode}]"
        )
        for layout in p.layouts:
            columns.append(Column(label, layout, p.repeats, answered, played, i, p.ask_at))
    names = [c.name for c in columns]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UserError(f"two columns would both be named {dupes[0]}: give each run once")
    if not scenarios:
        raise UserError("these runs play no scenario in common: flips compares the answers "
                        "of one scenario across runs")
    return scenarios, columns
