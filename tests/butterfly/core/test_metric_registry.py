"""The metric registry: ``Aggregate`` is one plain model whose fields are exactly the registry's
(names, types, descriptions, order), and a metric registered without its line in ``Aggregate``
is refused when a run is scored, not dropped."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from butterfly.core import scores
from butterfly.core.metric_registry import METRICS, metric
from butterfly.core.metrics import ScenarioScore, aggregate
from butterfly.core.pooling import Count, Mean
from butterfly.present.board import board_columns
from butterfly.present.display import main_columns, secondary

SCORED = [ScenarioScore(id="s1", category="c", turns=2, turn_match=(True, False),
                        first_divergent=2, change_radius=0, collateral=(0, 1), undo=(),
                        abstained=(False, False))]


def test_aggregate_has_exactly_the_registrys_fields() -> None:
    registry = [(name, kind, field.description) for m in METRICS.values()
                for name, kind, field in m.fields]
    model = [(name, f.annotation, f.description)
             for name, f in scores.Aggregate.model_fields.items()]
    assert model == registry
    names = [name for name, _, _ in registry]
    assert list(scores.RunScore.model_fields)[1:len(names) + 1] == names


def test_a_metric_cannot_take_another_metrics_field() -> None:
    with pytest.raises(ValueError, match="wobbles"):
        metric("wobbles", "a clash", Count())(lambda s: (1,))
    assert "wobbles" not in METRICS


def test_the_tables_read_the_registry() -> None:
    assert [h for _, h in main_columns()] == [
        "agent", "final match", "95% CI", "turn match", "abstention", "change radius",
        "undo recovery", "wobble"]
    assert secondary() == ["wobble", "undo_recovery", "abstention", "turn_match",
                           "change_radius"]
    assert [c.header for c in board_columns()] == [
        "final match", "95% CI", "effective", "turn match", "abstention", "change radius",
        "undo recovery", "wobble", "scenarios", "conversations", "incomplete", "tokens",
        "reasoning", "cached", "cost", "saved", "per correct", "reasoning/edit", "latency p50",
        "latency p95"]


def test_a_metric_without_its_aggregate_line_is_refused() -> None:
    """A metric registered alone (no field in ``Aggregate``) fails the first score loudly."""
    metric("toy_turns", "turns per conversation (a toy)", Mean())(lambda s: (s.turns,))
    try:
        with pytest.raises(ValidationError, match="toy_turns"):
            aggregate(SCORED)
    finally:
        del METRICS["toy_turns"]
    assert list(aggregate(SCORED).model_dump()) == list(scores.Aggregate.model_fields)
