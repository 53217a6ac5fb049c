"""The suite-level figures as inspect metrics, equal to ``butterfly score``'s.

The metrics are not listed here: there is one for each metric of butterfly's registry
(``core/metric_registry.py``) whose figure is a number, named as ``score --json`` names it and
in its order, then ``effective_final_match`` (``core.metrics.effective_final_match``). Each pools
every complete conversation's :class:`ScenarioScore` (carried whole in its score's metadata:
:func:`score_metadata`, :func:`scenario_score`) with butterfly's one ``core.metrics.aggregate``,
so each figure is the one ``butterfly score`` prints for the same answers; a metric registered
tomorrow is an inspect metric tomorrow. The metrics read every epoch's score
(``scores="unreduced"``): an epoch is a repeat, a conversation of its own, as in our runs.
Incomplete conversations are unscored (NaN): inspect passes no metric their scores and counts
them as ``unscored_samples``. A figure that has no conversation to pool (undo recovery of a
suite without undo turns) is NaN where ``butterfly score`` prints "-".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from typing import Any, Final

from inspect_ai.scorer import Metric, SampleScore, metric

from butterfly.core.metric_registry import METRICS as REGISTRY
from butterfly.core.metrics import ScenarioScore, aggregate, effective_final_match
from butterfly.core.results import Aggregate

RENAMED: Final = {"turns": "n_turns"}
"""ScenarioScore's fields stored under another key of a score's metadata (its ``turns`` holds
the per-turn verdicts)."""


def score_metadata(s: ScenarioScore) -> dict[str, Any]:
    """A complete conversation's ScenarioScore as its score's metadata (every field)."""
    return {RENAMED.get(k, k): v for k, v in asdict(s).items()}


def _tupled(x: Any) -> Any:
    """JSON's lists made the tuples a ScenarioScore holds, at every depth."""
    return tuple(_tupled(v) for v in x) if isinstance(x, list | tuple) else x


def scenario_score(meta: dict[str, Any]) -> ScenarioScore:
    """The ScenarioScore a score's metadata carries (:func:`score_metadata` read back)."""
    return ScenarioScore(**{f.name: _tupled(meta[RENAMED.get(f.name, f.name)])
                            for f in fields(ScenarioScore)})


def pooled(scores: Sequence[SampleScore]) -> Aggregate:
    """butterfly's aggregate of the complete conversations among ``scores``."""
    return aggregate([scenario_score(s.score.metadata or {}) for s in scores
                      if (s.score.metadata or {}).get("complete")])


def _value(x: float | None) -> float:
    return math.nan if x is None else float(x)


def figure(name: str, read: Callable[[Aggregate], float | None]) -> Callable[[], Metric]:
    """A metric named ``name`` reading one figure of the pooled aggregate."""
    @metric(name=name, scores="unreduced")
    def make() -> Metric:
        def compute(scores: list[SampleScore]) -> float:
            return _value(read(pooled(scores)))
        return compute
    return make


def _is_number(kind: Any) -> bool:
    return kind in (int, float, float | None)


def _reader(name: str) -> Callable[[Aggregate], float | None]:
    return lambda a: getattr(a, name)


def numbers() -> list[str]:
    """The registered metrics whose own figure (``Aggregate``'s field of their name) is a number,
    in the registry's order (a histogram or an interval is not an inspect metric)."""
    return [m.name for m in REGISTRY.values()
            if any(f == m.name and _is_number(kind) for f, kind, _ in m.fields)]


METRICS: Final = (
    *(figure(name, _reader(name)) for name in numbers()),
    figure("effective_final_match", effective_final_match),
)
"""The scorer's metrics: the registry's numbers, then effective final match."""
