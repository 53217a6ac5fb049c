"""The metric registry: every metric one registered function, with its name, a one-line
description and its aggregation (``core/pooling.py``).

``Aggregate`` (``core/scores.py``) has a line for each of its fields (a test holds them to
the registry: names, types, descriptions, order), and so ``score --json`` and its published
schema; the terminal's score table (``present/display.py``) and the report's leaderboard and
data (``present/report.py``) read the registry. A new metric is one function here, registered
with :func:`metric`, and its typed lines in ``results.Aggregate``::

    @metric("turn_match", "share of answers matching the oracle at their turn",
            Proportion(interval=True), Shown(terminal=4))
    def turn_match(s: ScenarioScore) -> Sequence[bool]:
        return s.turn_match

A function returns a complete conversation's items; its pool says how they make its fields.
A metric registered without its lines in ``Aggregate`` is refused when a run is scored. The
figures are contract section 4's (``core/metrics.py``, docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from butterfly.core.pooling import (
    ByGroup,
    Complement,
    Count,
    Figures,
    Histogram,
    Mean,
    Pool,
    Proportion,
    Spec,
)
from oracle import KEYS, UNDO_OPS

if TYPE_CHECKING:
    from butterfly.core.metrics import ScenarioScore

Cell = Literal["value", "value and count", "count"]
"""What a table's cell of a metric shows: its value (a percentage for a share), the value with
``(count/conversations)``, or its count."""


@dataclass(frozen=True, slots=True)
class Shown:
    """How the score tables show a metric, under ``label`` (default: its name in words): the
    report's leaderboard always; the terminal's table when ``terminal`` is not None (0: always;
    k > 0: dropped k-th when the table is too wide for the terminal). Both in the registry's
    order, the leaderboard's report-only metrics last. ``interval``: its interval in a "95% CI"
    column of its own (both tables) or beside its value (the report only). ``tooltip``: the
    report's header carries the description."""

    cell: Cell = "value"
    interval: Literal["column", "inline"] | None = None
    terminal: int | None = 0
    tooltip: bool = False
    label: str | None = None


@dataclass(frozen=True, slots=True)
class Metric:
    """A registered metric: ``values`` gives a complete conversation's items, ``pool`` makes
    ``Aggregate``'s fields of them, ``shown`` says how the score tables show it (None: not)."""

    name: str
    description: str
    pool: Pool
    values: Callable[[ScenarioScore], Sequence[Any]]
    shown: Shown | None = None

    @property
    def label(self) -> str:
        """Its column header: ``shown.label``, else its name in words."""
        given = self.shown.label if self.shown else None
        return given or self.name.replace("_", " ")

    @property
    def interval(self) -> Literal["column", "inline"] | None:
        """Where the tables show its interval (``Shown.interval``), if they do."""
        return None if self.shown is None else self.shown.interval

    @property
    def fields(self) -> list[Spec]:
        return self.pool.fields(self.name, self.description)

    @property
    def count(self) -> str:
        """The field a "count" cell shows: the pool's count, else the value itself."""
        return getattr(self.pool, "count", None) or self.name


METRICS: dict[str, Metric] = {}
"""Every metric by name, in the order of their fields in ``Aggregate`` (and the JSON)."""


def metric(name: str, description: str, pool: Pool, shown: Shown | None = None
           ) -> Callable[[Callable[[ScenarioScore], Sequence[Any]]],
                         Callable[[ScenarioScore], Sequence[Any]]]:
    """Register the decorated function as the metric ``name``: it gives a complete
    conversation's items, ``pool`` pools them."""
    def register(values: Callable[[ScenarioScore], Sequence[Any]]
                 ) -> Callable[[ScenarioScore], Sequence[Any]]:
        m = Metric(name, description, pool, values, shown)
        taken = {f for other in METRICS.values() for f, _, _ in other.fields}
        clash = [f for f, _, _ in m.fields if f in taken]
        if clash:
            raise ValueError(f"metric {name}: fields {clash} are another metric's")
        METRICS[name] = m
        return values
    return register


def pooled(scores: Sequence[ScenarioScore]) -> Figures:
    """Every metric of the scored conversations, pooled: ``Aggregate``'s values."""
    clusters: dict[str, list[ScenarioScore]] = {}
    for s in scores:
        clusters.setdefault(s.id, []).append(s)
    out: Figures = {}
    for m in METRICS.values():
        out.update(m.pool.pool(m.name, [[m.values(s) for s in c] for c in clusters.values()]))
    return out


# ---------------------------------------------------------------------------------------------
# The metrics of contract section 4 (core/metrics.py says what each means)


@metric("n_scenarios", "scenarios with a complete conversation", Count(distinct=True),
        Shown(cell="count", terminal=None, label="scenarios"))
def n_scenarios(s: ScenarioScore) -> Sequence[str]:
    return (s.id,)


@metric("n_conversations", "complete conversations", Count(),
        Shown(cell="count", terminal=None, label="conversations"))
def n_conversations(s: ScenarioScore) -> Sequence[int]:
    return (1,)


@metric("final_match", "share of conversations matching the oracle after the last turn",
        Proportion(count="final_matches", interval=True),
        Shown(cell="value and count", interval="column", tooltip=True))
def final_match(s: ScenarioScore) -> Sequence[bool]:
    return (s.final_match,)


@metric("turn_match", "share of answers matching the oracle at their turn",
        Proportion(interval=True), Shown(terminal=4))
def turn_match(s: ScenarioScore) -> Sequence[bool]:
    return s.turn_match


@metric("abstention", "share of answers that abstained", Proportion(), Shown(terminal=3))
def abstention(s: ScenarioScore) -> Sequence[bool]:
    return s.abstained


@metric("coverage", "share of answers that did not abstain (1 - abstention)", Complement())
def coverage(s: ScenarioScore) -> Sequence[bool]:
    return s.abstained


@metric("n_answers", "answers (asked turns) of the complete conversations", Count())
def n_answers(s: ScenarioScore) -> Sequence[int]:
    return (len(s.turn_match),)


@metric("change_radius", "settings wrong at the end that no turn targeted",
        Mean(n=True, bounds=(0.0, float(len(KEYS)))),
        Shown(interval="inline", terminal=5, tooltip=True))
def change_radius(s: ScenarioScore) -> Sequence[int | None]:
    return (s.change_radius,)


@metric("collateral_per_turn", "settings changed that the oracle kept, per turn", Mean())
def collateral_per_turn(s: ScenarioScore) -> Sequence[int | None]:
    return s.collateral


@metric("undo_recovery", "share of undo and redo turns after a match that still match",
        ByGroup(UNDO_OPS, "op"), Shown(terminal=2))
def undo_recovery(s: ScenarioScore) -> Sequence[tuple[str, bool]]:
    return s.undo


@metric("wobble", "share of conversations with a final match and a divergent turn on the way",
        Proportion(count="wobbles"), Shown(cell="count", terminal=1))
def wobble(s: ScenarioScore) -> Sequence[bool]:
    return (s.wobble,)


@metric("first_divergent_turn",
        'Conversations by first divergent turn ("none": every turn matched).', Histogram())
def first_divergent_turn(s: ScenarioScore) -> Sequence[int | None]:
    return (s.first_divergent,)
