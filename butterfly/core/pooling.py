"""How a metric's per-conversation values pool into the fields of an aggregate.

A metric (``core/metric_registry.py``) gives, for each complete conversation, a sequence of
items (one item for a per-conversation figure such as final match, one per turn for turn
match); its pool says which fields of :class:`~butterfly.core.scores.Aggregate` they make and
computes them from the conversations clustered by scenario. Shares are None where their
denominator is 0; intervals are clustered by scenario (``core/stats.py``), rounded to 6 places.
Here too: :class:`Result`, the base of every typed result, and :class:`Share`, which a pool
makes per group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from butterfly.core.stats import mean_interval, proportion_interval

Interval = list[float]
"""[lo, hi], rounded to 6 places."""

Clusters = Sequence[Sequence[Sequence[Any]]]
"""Per scenario, per conversation: the metric's items."""

Unit = Literal["share", "mean", "count"]
"""What the pooled value is: a share (shown as a percentage), a mean, or a count."""


class Result(BaseModel):
    """The base of every typed result (``core/scores.py``, ``analysis/results.py``): frozen,
    and no field but its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Share(Result):  # a share and its denominator (no docstring: the schema has none)
    share: float | None
    n: int


def share(num: int, den: int) -> float | None:
    """num / den, or None where there is nothing to count."""
    return None if den == 0 else num / den


def rounded(interval: tuple[float, float] | None) -> Interval | None:
    return None if interval is None else [round(interval[0], 6), round(interval[1], 6)]


def items(clusters: Clusters) -> list[Any]:
    """Every item of every conversation."""
    return [x for cluster in clusters for values in cluster for x in values]


def per_scenario(clusters: Clusters) -> list[list[Any]]:
    """The items of each scenario's conversations, together (what an interval clusters)."""
    return [[x for values in cluster for x in values] for cluster in clusters]


Figure = float | int | Interval | dict[str, Share] | dict[str, int] | None
"""What a field of the aggregate holds."""
Figures = dict[str, Figure]
"""A metric's fields, pooled: by name."""

Spec = tuple[str, Any, FieldInfo]
"""A field of the aggregate: its name, type and pydantic field."""


def _field(name: str, kind: Any, description: str | None = None) -> Spec:
    return name, kind, Field(description=description)


@dataclass(frozen=True, slots=True)
class Proportion:
    """Items are booleans: the share that are true, over every item. ``count`` names a field
    for the number true, ``n=True`` adds ``<name>_n`` (the items counted), ``interval=True``
    ``<name>_ci`` (Wilson at the effective n, clustered by scenario)."""

    count: str | None = None
    n: bool = False
    interval: bool = False
    unit: Unit = "share"

    def fields(self, name: str, description: str) -> list[Spec]:
        out = [_field(name, float | None)]
        out += [_field(self.count, int)] if self.count else []
        out += [_field(f"{name}_n", int)] if self.n else []
        out += [_field(f"{name}_ci", Interval | None)] if self.interval else []
        return out

    def pool(self, name: str, clusters: Clusters) -> Figures:
        flat = items(clusters)
        out: Figures = {name: share(sum(flat), len(flat))}
        if self.count:
            out[self.count] = sum(flat)
        if self.n:
            out[f"{name}_n"] = len(flat)
        if self.interval:
            out[f"{name}_ci"] = rounded(proportion_interval(per_scenario(clusters)))
        return out


@dataclass(frozen=True, slots=True)
class Complement:
    """Items are booleans: 1 minus the share that are true (coverage = 1 - abstention)."""

    unit: Unit = "share"

    def fields(self, name: str, description: str) -> list[Spec]:
        return [_field(name, float | None)]

    def pool(self, name: str, clusters: Clusters) -> Figures:
        flat = items(clusters)
        return {name: None if not flat else 1 - sum(flat) / len(flat)}


@dataclass(frozen=True, slots=True)
class ByGroup:
    """Items are (group, boolean) pairs: the share true over every item, ``<name>_n``, and
    per group of ``groups`` its :class:`Share` (``<name>_by_<by>``)."""

    groups: tuple[str, ...]
    by: str
    unit: Unit = "share"

    def fields(self, name: str, description: str) -> list[Spec]:
        return [_field(name, float | None), _field(f"{name}_n", int),
                _field(f"{name}_by_{self.by}", dict[str, Share])]

    def pool(self, name: str, clusters: Clusters) -> Figures:
        flat = items(clusters)
        oks = [ok for _, ok in flat]
        by = {}
        for g in self.groups:
            cases = [ok for group, ok in flat if group == g]
            by[g] = Share(share=share(sum(cases), len(cases)), n=len(cases))
        return {name: share(sum(oks), len(oks)), f"{name}_n": len(oks),
                f"{name}_by_{self.by}": by}


@dataclass(frozen=True, slots=True)
class Mean:
    """Items are numbers or None (not counted): their mean. ``n=True`` adds ``<name>_n`` (the
    items counted); ``bounds`` an interval ``<name>_ci`` (the clustered standard error, a normal
    interval kept within the bounds)."""

    n: bool = False
    bounds: tuple[float, float] | None = None
    unit: Unit = "mean"

    def fields(self, name: str, description: str) -> list[Spec]:
        out = [_field(name, float | None)]
        out += [_field(f"{name}_n", int)] if self.n else []
        out += [_field(f"{name}_ci", Interval | None)] if self.bounds else []
        return out

    def pool(self, name: str, clusters: Clusters) -> Figures:
        counted = [x for x in items(clusters) if x is not None]
        out: Figures = {name: None if not counted else sum(counted) / len(counted)}
        if self.n:
            out[f"{name}_n"] = len(counted)
        if self.bounds:
            low, high = self.bounds
            out[f"{name}_ci"] = rounded(mean_interval(
                [[float(x) for x in c if x is not None] for c in per_scenario(clusters)],
                low=low, high=high))
        return out


@dataclass(frozen=True, slots=True)
class Count:
    """Items are whole numbers: their sum; or, ``distinct=True``, any items: how many differ."""

    distinct: bool = False
    unit: Unit = "count"

    def fields(self, name: str, description: str) -> list[Spec]:
        return [_field(name, int)]

    def pool(self, name: str, clusters: Clusters) -> Figures:
        every = items(clusters)
        return {name: len(set(every)) if self.distinct else sum(every)}


@dataclass(frozen=True, slots=True)
class Histogram:
    """Items are whole numbers or None: how many of each, keyed by the number as text in
    increasing order, then ``none``. Its keys need saying, so its description is its field's
    (the one description the schema carries)."""

    unit: Unit = "count"

    def fields(self, name: str, description: str) -> list[Spec]:
        return [_field(name, dict[str, int], description)]

    def pool(self, name: str, clusters: Clusters) -> Figures:
        counts = Counter(items(clusters))
        order = sorted(counts.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
        return {name: {("none" if k is None else str(k)): v for k, v in order}}


Pool = Proportion | Complement | ByGroup | Mean | Count | Histogram
