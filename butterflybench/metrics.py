"""The suite-level figures as inspect metrics, equal to ``butterfly score``'s.

Each metric rebuilds every complete conversation's :class:`ScenarioScore` from its score's
metadata and pools them with butterfly's own ``core.metrics.aggregate`` (the metric registry's
pooling: clustered by scenario), so each figure is the one ``butterfly score`` prints for the
same answers. The metrics read every epoch's score (``scores="unreduced"``): an epoch is a
repeat, a conversation of its own, as in our runs. Incomplete conversations are unscored
(NaN): inspect passes no metric their scores and counts them as ``unscored_samples``.
A figure that has no conversation to pool (undo recovery of a suite without undo turns) is
NaN where ``butterfly score`` prints "-".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final

from inspect_ai.scorer import Metric, SampleScore, metric

from butterfly.core.metrics import ScenarioScore, aggregate
from butterfly.core.results import Aggregate


def scored(s: SampleScore) -> ScenarioScore:
    """A complete conversation's ScenarioScore, from its score's metadata."""
    m: dict[str, Any] = s.score.metadata or {}
    return ScenarioScore(
        id=m["id"], category=m["category"], turns=m["n_turns"],
        turn_match=tuple(m["turn_match"]), first_divergent=m["first_divergent"],
        change_radius=m["change_radius"], collateral=tuple(m["collateral"]),
        undo=tuple((op, ok) for op, ok in m["undo"]), abstained=tuple(m["abstained"]),
        asked=None if m["asked"] is None else tuple(m["asked"]))


def pooled(scores: Sequence[SampleScore]) -> Aggregate:
    """butterfly's aggregate of the complete conversations among ``scores``."""
    return aggregate([scored(s) for s in scores if (s.score.metadata or {}).get("complete")])


def _value(x: float | None) -> float:
    return math.nan if x is None else float(x)


def figure(name: str, read: Callable[[Aggregate], float | None]
           ) -> Callable[[], Metric]:
    """A metric named ``name`` reading one figure of the pooled aggregate."""
    @metric(name=name, scores="unreduced")
    def make() -> Metric:
        def compute(scores: list[SampleScore]) -> float:
            return _value(read(pooled(scores)))
        return compute
    return make


def _effective(a: Aggregate) -> float | None:
    """final match x coverage (contract v2), as ``butterfly score`` rounds it."""
    if a.final_match is None or a.coverage is None:
        return None
    return round(a.final_match * a.coverage, 6)


final_match = figure("final_match", lambda a: a.final_match)
turn_match = figure("turn_match", lambda a: a.turn_match)
change_radius = figure("change_radius", lambda a: a.change_radius)
undo_recovery = figure("undo_recovery", lambda a: a.undo_recovery)
abstention = figure("abstention", lambda a: a.abstention)
coverage = figure("coverage", lambda a: a.coverage)
collateral_per_turn = figure("collateral_per_turn", lambda a: a.collateral_per_turn)
wobble = figure("wobble", lambda a: a.wobble)
effective_final_match = figure("effective_final_match", _effective)
conversations = figure("conversations", lambda a: a.n_conversations)

METRICS: Final = (final_match, turn_match, change_radius, undo_recovery, abstention, coverage,
                  collateral_per_turn, wobble, effective_final_match, conversations)
"""The scorer's metrics, in the order ``butterfly score`` shows its figures."""
