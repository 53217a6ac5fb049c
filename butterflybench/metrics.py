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

Then the efficiency figures (contract v4, section 9; docs/metrics.md, "Efficiency"), named as
``score --json``'s ``efficiency`` names them: each score carries what its conversation's
answered calls spent (:func:`spent_metadata`: tokens, reasoning tokens, inspect's cost when it
prices the model, latency) and the metrics pool them with butterfly's one ``core.efficiency.
efficiency``. Incomplete conversations are unscored, so inspect passes them to no metric: they
are in no figure, as in ``score``. inspect cannot tell a call its own cache served from one it
sent (docs/inspect.md, "Efficiency"), so its latency counts every call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, fields
from typing import Any, Final

from inspect_ai.scorer import Metric, SampleScore, metric

from butterfly.core.efficiency import Spent, efficiency
from butterfly.core.metric_registry import METRICS as REGISTRY
from butterfly.core.metrics import ScenarioScore, aggregate, effective_final_match
from butterfly.core.scores import Aggregate, Efficiency
from butterfly.core.turns import ConversationKey

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


def figure(name: str, read: Callable[[Sequence[SampleScore]], float | None]
           ) -> Callable[[], Metric]:
    """A metric named ``name``: ``read`` of every epoch's score (None: NaN)."""
    @metric(name=name, scores="unreduced")
    def make() -> Metric:
        def compute(scores: list[SampleScore]) -> float:
            return _value(read(scores))
        return compute
    return make


def field_of(pool: Callable[[Sequence[SampleScore]], Aggregate | Efficiency], name: str
             ) -> Callable[[Sequence[SampleScore]], float | None]:
    """The figure ``name`` of what ``pool`` pools (:func:`pooled`, :func:`pooled_efficiency`)."""
    return lambda scores: getattr(pool(scores), name)


def numbers() -> list[str]:
    """The registered metrics whose own figure (``Aggregate``'s field of their name) is a number,
    in the registry's order (a histogram or an interval is not an inspect metric)."""
    return [m.name for m in REGISTRY.values()
            if any(f == m.name and kind in (int, float, float | None) for f, kind, _ in m.fields)]


def _answered(e: Mapping[str, Any]) -> bool:
    """Whether a stored call answered (``runs.usage.answered_nothing``'s opposite): not failed,
    nor an ask over the context window the provider refused."""
    return e.get("error") is None and not (e.get("raw") == "" and
                                           e.get("abstention") == "context")


def spent_metadata(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What each answered call of a conversation spent, as its score's metadata keeps it."""
    out = []
    for e in entries:
        if not _answered(e):
            continue
        u = e.get("usage") or {}
        prompt, completion = u.get("prompt_tokens"), u.get("completion_tokens")
        out.append({"turn": e["turn"], "tokens": None if prompt is None and completion is None
                    else (prompt or 0) + (completion or 0),
                    "reasoning_tokens": u.get("reasoning_tokens"),
                    "cost_usd": e.get("cost_usd"), "latency_s": e.get("latency_s")})
    return out


def pooled_efficiency(scores: Sequence[SampleScore]) -> Efficiency:
    """butterfly's efficiency figures of the complete conversations among ``scores``."""
    calls: list[Spent] = []
    verdicts: dict[ConversationKey, tuple[str, bool]] = {}
    for s in scores:
        meta = s.score.metadata or {}
        if not meta.get("complete"):
            continue
        key = ConversationKey(meta["scenario"], meta["layout"], meta["repeat"])
        verdicts[key] = (meta["category"], bool(meta["final_match"]))
        calls += [Spent(key, c["turn"], c["cost_usd"], c["tokens"], c["reasoning_tokens"],
                        c["latency_s"]) for c in meta.get("spent", ())]
    return efficiency(calls, verdicts, ())


EFFICIENCY: Final = ("cost_per_correct_usd", "tokens_per_correct", "reasoning_per_edit",
                     "latency_median_s", "latency_p95_s")
"""The efficiency figures that are inspect metrics (``score --json``'s ``efficiency``)."""


METRICS: Final = (
    *(figure(name, field_of(pooled, name)) for name in numbers()),
    figure("effective_final_match", lambda scores: effective_final_match(pooled(scores))),
    *(figure(name, field_of(pooled_efficiency, name)) for name in EFFICIENCY),
)
"""The scorer's metrics: the registry's numbers, effective final match, then the efficiency
figures."""
