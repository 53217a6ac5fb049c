"""Depth (contract v4, section 8): how far back the changes a spec shows were made, the recency
agent, and the depth guard.

A change **shows** at turn t when it is in effect, it is the change whose value the setting takes
(no later change in effect to that setting, no rule forcing it), and that value differs from the
initial spec's. Its **age** is t minus the turn that made it; a redo does not renew it.

The **recency agent** ``window:k=K`` answers turn t from the initial spec and the user messages
t-K+1..t only, by the oracle's rules: an undo or a redo that finds nothing in its window changes
nothing (the guard-free engine of :class:`oracle.engine.Rules`).

The **depth guard**, for a suite whose chains reach :data:`DEPTH_FROM` turns: at every ask point
t >= 40, ``window:k=t/2`` matches at most 10% of the chains asked there and ``window:k=t/10``
none; and in every chain the changes that show at t cover every age band [t/2, t), [t/4, t/2),
... whose lower end is at least :data:`MIN_BAND`. K = t/2 and t/10 are rounded up (a longer
window remembers more: the stricter reading of the guard).

Pure: the asked turns of each chain come from the caller (``butterfly.core.asking``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from oracle.catalogue import COUPLINGS, apply_couplings
from oracle.engine import Engine, Rules
from oracle.guards import Change
from oracle.ops import REGISTRY
from oracle.records import DepthRow, Scenario, Turn

DEPTH_FROM: Final = 40
"""The guard concerns suites with chains of this many turns or more, at ask points from here."""
MIN_BAND: Final = 10
"""The youngest age band the guard asks for starts at 10 turns or more."""
HALF_SHARE: Final = 0.10
"""``window:k=t/2`` may match at most this share of the chains asked at t."""

FREE: Final = Rules(guards=False)
"""The oracle's rules without guards: how the depth measures and the recency agent replay."""


def bands(t: int) -> list[tuple[float, float]]:
    """The age bands the guard asks for at ask point ``t``, oldest first: [t/2, t), [t/4, t/2),
    ... while the lower end is at least :data:`MIN_BAND`."""
    out: list[tuple[float, float]] = []
    hi = float(t)
    while hi / 2 >= MIN_BAND:
        out.append((hi / 2, hi))
        hi /= 2
    return out


def half(t: int) -> int:
    """K of ``window:k=t/2`` (rounded up)."""
    return math.ceil(t / 2)


def tenth(t: int) -> int:
    """K of ``window:k=t/10`` (rounded up)."""
    return math.ceil(t / 10)


def _step(engine: Engine, turn: Turn, t: int) -> None:
    REGISTRY[turn.op].step(engine, turn, t)


def _spec(engine: Engine) -> dict[str, str]:
    return apply_couplings(dict(engine.base))


def shown(engine: Engine) -> list[Change]:
    """The changes that show in the engine's current spec, in the order of settings."""
    forced = {c.forced for c in COUPLINGS if engine.base[c.trigger] == c.when}
    return [
        hits[-1]
        for key, hits in engine.live.items()
        if hits and key not in forced and hits[-1].value != engine.initial[key]
    ]


def ages(scenario: Scenario, asked: Iterable[int]) -> dict[int, list[int]]:
    """Ask point t -> the ages (t minus the turn that made it) of the changes that show at t,
    oldest first. One replay of the chain up to its last ask point."""
    want = sorted({t for t in asked if 1 <= t <= len(scenario.turns)})
    out: dict[int, list[int]] = {}
    if not want:
        return out
    engine = Engine(scenario.initial, FREE)
    i = 0
    for t, turn in enumerate(scenario.turns[: want[-1]], 1):
        _step(engine, turn, t)
        if t == want[i]:
            out[t] = sorted((t - c.turn for c in shown(engine)), reverse=True)
            i += 1
    return out


def window_spec(scenario: Scenario, t: int, k: int) -> dict[str, str]:
    """What ``window:k=K`` answers at turn ``t``: the initial spec and turns t-K+1..t only."""
    engine = Engine(scenario.initial, FREE)
    first = max(1, t - k + 1)
    for u in range(first, t + 1):
        _step(engine, scenario.turns[u - 1], u)
    return _spec(engine)


def window_specs(scenario: Scenario, k: int) -> list[dict[str, str]]:
    """``window:k=K``'s answer after every turn (index 0: the initial spec)."""
    return [dict(scenario.initial)] + [
        window_spec(scenario, t, k) for t in range(1, len(scenario.turns) + 1)
    ]


def missing_band(t: int, chain_ages: Sequence[int]) -> tuple[float, float] | None:
    """The oldest band of :func:`bands` that no age in ``chain_ages`` falls in, or None."""
    return next(
        (b for b in bands(t) if not any(b[0] <= a < b[1] for a in chain_ages)), None
    )


class DepthViolation(NamedTuple):
    """Why a suite breaks the depth guard: a chain (or the share of chains) at an ask point."""

    scenario: str
    """The chain that breaks it (for a share of chains: the first of those that match)."""
    turn: int
    reason: str

    def __str__(self) -> str:
        return f"scenario {self.scenario}, ask point {self.turn}: {self.reason}"


@dataclass(frozen=True, slots=True)
class AskDepth:
    """The depth of one chain at one ask point."""

    scenario: str
    turn: int
    ages: tuple[int, ...]
    """Ages of the changes that show, oldest first."""
    half_match: bool
    """``window:k=t/2`` matches the oracle here."""
    tenth_match: bool
    missing: tuple[float, float] | None
    """The oldest age band no change that shows falls in (None: every band covered)."""


def chain_depth(
    scenario: Scenario, specs: Sequence[Mapping[str, str]], asked: Iterable[int]
) -> Iterator[AskDepth]:
    """:class:`AskDepth` at every ask point of ``asked`` from :data:`DEPTH_FROM` on; ``specs``
    is the oracle's replay of ``scenario``."""
    points = sorted({t for t in asked if DEPTH_FROM <= t <= len(scenario.turns)})
    for t, chain_ages in ages(scenario, points).items():
        yield AskDepth(
            scenario.id,
            t,
            tuple(chain_ages),
            window_spec(scenario, t, half(t)) == specs[t],
            window_spec(scenario, t, tenth(t)) == specs[t],
            missing_band(t, chain_ages),
        )


def depth_guarded(scenarios: Iterable[Scenario]) -> bool:
    """Whether the guard concerns a suite: some chain reaches :data:`DEPTH_FROM` turns."""
    return any(len(s.turns) >= DEPTH_FROM for s in scenarios)


def violation(rows: Iterable[AskDepth]) -> DepthViolation | None:
    """The first break of the guard among a suite's rows (:func:`chain_depth` of every chain):
    a chain with a band uncovered, then an ask point where the recency agent matches too
    often."""
    by_turn: dict[int, list[AskDepth]] = {}
    for r in rows:
        if r.missing is not None:
            lo, hi = r.missing
            return DepthViolation(
                r.scenario, r.turn,
                f"no change that shows there was made {_band(lo, hi)} turns earlier (age "
                f"band [{lo:g}, {hi:g}))",
            )
        by_turn.setdefault(r.turn, []).append(r)
    for t in sorted(by_turn):
        rs = by_turn[t]
        tenths = [r for r in rs if r.tenth_match]
        if tenths:
            return DepthViolation(
                tenths[0].scenario, t,
                f"window:k={tenth(t)} (the last t/10 messages) matches the oracle "
                f"({len(tenths)} of {len(rs)} chains; none may)",
            )
        halves = [r for r in rs if r.half_match]
        if len(halves) > HALF_SHARE * len(rs):
            return DepthViolation(
                halves[0].scenario, t,
                f"window:k={half(t)} (the last t/2 messages) matches the oracle in "
                f"{len(halves)} of {len(rs)} chains (at most {HALF_SHARE:.0%})",
            )
    return None


def _band(lo: float, hi: float) -> str:
    return f"{math.ceil(lo)} to {math.ceil(hi) - 1}"


def summarise(rows: Iterable[AskDepth]) -> list[DepthRow]:
    """Per ask point, over the chains asked there: the medians and counts of
    :class:`oracle.records.DepthRow` (``validate --depth``, a suite manifest's ``depth``)."""
    by_turn: dict[int, list[AskDepth]] = {}
    for r in rows:
        by_turn.setdefault(r.turn, []).append(r)
    out = []
    for t in sorted(by_turn):
        rs = by_turn[t]
        every = [a for r in rs for a in r.ages]
        out.append(DepthRow(
            turn=t,
            chains=len(rs),
            shown=statistics.median(len(r.ages) for r in rs),
            oldest=statistics.median(r.ages[0] if r.ages else 0 for r in rs),
            median_age=statistics.median(every) if every else 0.0,
            bands_covered=sum(r.missing is None for r in rs),
            half_matches=sum(r.half_match for r in rs),
            tenth_matches=sum(r.tenth_match for r in rs),
        ))
    return out


__all__ = [
    "DEPTH_FROM",
    "FREE",
    "HALF_SHARE",
    "MIN_BAND",
    "AskDepth",
    "DepthViolation",
    "ages",
    "bands",
    "chain_depth",
    "depth_guarded",
    "half",
    "missing_band",
    "shown",
    "summarise",
    "tenth",
    "violation",
    "window_spec",
    "window_specs",
]
