"""Deep chains (contract v4, section 8): the generators' plan of long-lived changes, so that the
spec at every ask point shows changes of every age band and a model must remember the whole
chain, not its last messages (docs/ladder.md, "Depth").

A chain of n turns asked at some turns must, at each ask point t >= 40, show a change made in
each age band [t/2, t), [t/4, t/2), ... down to the band starting at 10 or more turns
(``oracle.depth``). Left to the op mix, undos drain every old change (an undo-heavy mix keeps
only the last hundred messages relevant). So before a chain is drawn, :func:`plan` places
**anchors**: changes to be made within a range of turns and to show at chosen ask points. One
anchor serves several ask points when its range allows it (a change made at turn 20 is in the
oldest band at every later ask point); with probability :data:`ROTATE` a new anchor is placed
instead, so the old ones retire and later undos reach them.

While the chain is drawn, :class:`DepthPlan` is asked before every turn:

- an anchor is made (a set, or a drop where the track has them) on a free setting of
  :data:`ANCHOR_KEYS` (no rule forces or involves it, it always applies) when its turn comes;
- a turn may not shadow an anchor that still has an ask point to show at (a set or drop of its
  setting), nor make a new change while such an anchor waits on the redo stack;
- an anchor may be undone before an ask point it serves (undo by description, undo earliest,
  undo last: these are the undos that reach far back), but only with room to bring it back:
  the plan then forces the redos in time, so that it is in effect again at that ask point;
- after its last ask point an anchor is an ordinary change: kept, or undone for good by the
  mix.

The whole chain is then checked by the depth guard itself (``oracle.depth``), so a chain the
plan could not complete is drawn again, never emitted.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from oracle import KEYS, Scenario, Turn, replay
from oracle.catalogue import APPLICABILITY, COUPLINGS
from oracle.depth import DEPTH_FROM, bands, chain_depth, depth_guarded, summarise
from oracle.guards import Change
from oracle.records import DepthRow, DropTurn, SetTurn, UndoRefTurn

if TYPE_CHECKING:
    from butterfly.suite.builder import Builder

ANCHOR_KEYS: Final = tuple(
    k for k in KEYS
    if not any(k in (c.trigger, c.forced) for c in COUPLINGS)
    and not any(k in a.settings or k == a.on for a in APPLICABILITY)
)
"""Settings a long-lived change may go to: no coupling rule involves them and they always
apply, so nothing else the chain does can hide their value or make it invalid."""

ROTATE: Final = 0.35
"""How often an ask point's band gets a new anchor although an older one could serve it."""

ROOM: Final = 4
"""An anchor may be undone only this many turns or more before the next ask point it serves."""

DEEPEST: Final = 3
"""At most this many undone changes on the redo stack while an anchor waits there."""

RELEASE: Final = 25
"""The undo of the earliest change before an ask point comes in its last this many turns (or
quarter of the turns since the ask point before)."""

BACK: Final = 0.3
"""While an anchor waits on the redo stack, the chance at each turn that the plan redoes now
(no new change can be made meanwhile: a long wait would bend the op mix)."""


@dataclass
class Anchor:
    """A long-lived change: made between turns ``first`` and ``last``, shown at ``needs``."""

    first: int
    last: int
    needs: list[int]
    at: int = 0
    """The turn the plan tries to make it from (drawn in the first half of its range)."""
    change: Change | None = None
    """The oracle's change, once made."""

    def next_need(self, t: int) -> int | None:
        """The first ask point at or after turn ``t`` it must show at."""
        return min((n for n in self.needs if n >= t), default=None)


def _requirements(length: int, asked: Iterable[int]) -> list[tuple[int, int, int]]:
    """(ask point, first, last turn a change may be made at to fall in the band), for every
    band of every ask point the guard concerns, in order of ask point, oldest band first; the
    oldest band twice (a spare: the earliest change in effect can then be undone for good
    before the ask point, and another still shows there)."""
    out = []
    for t in sorted({a for a in asked if DEPTH_FROM <= a <= length}):
        for j, (lo, hi) in enumerate(bands(t)):
            out += [(t, max(1, math.floor(t - hi) + 1), math.floor(t - lo))] * (1 + (j == 0))
    return out


def plan(length: int, asked: Iterable[int], rng: random.Random) -> list[Anchor]:
    """The anchors of a chain of ``length`` turns asked at ``asked`` (empty when no ask point
    reaches :data:`DEPTH_FROM`)."""
    anchors: list[Anchor] = []
    for t, first, last in _requirements(length, asked):
        fits = [a for a in anchors if max(a.first, first) <= min(a.last, last)
                and t not in a.needs]
        if fits and rng.random() >= ROTATE:
            a = rng.choice(fits)
            a.first, a.last = max(a.first, first), min(a.last, last)
            a.needs.append(t)
        else:
            anchors.append(Anchor(first, last, [t]))
    for a in anchors:
        a.at = a.first + rng.randrange((a.last - a.first) // 2 + 1)
    return sorted(anchors, key=lambda a: a.at)


@dataclass
class DepthPlan:
    """The anchors of one chain while it is drawn (see the module's docstring)."""

    anchors: list[Anchor]
    asked: tuple[int, ...]
    shadow: bool = True
    """Whether an anchor may be made on a setting that has changes in effect (it shadows them);
    False for the horizon planner, which keeps one change in effect per setting."""
    release: bool = True
    """Whether to undo the earliest change in effect for good shortly before each ask point
    (the chain's mix has undos of the earliest change)."""
    made: dict[int, Anchor] = field(default_factory=dict)
    """Change index -> its anchor, for the anchors made so far."""
    releasing: bool = False
    """True while the plan undoes the earliest change for good (only then may an anchor that
    still has ask points to show at be undone for good: its spare must last until then)."""
    released: set[int] = field(default_factory=set)
    """The ask points before which the earliest change was undone for good."""
    sticky: tuple[Change, int] | None = None
    """That change and its ask point: until then it is not brought back, nor its setting
    changed (so an agent that misreads "the earliest change" is wrong at the ask point)."""

    @classmethod
    def of(cls, length: int, asked: Iterable[int], rng: random.Random,
           shadow: bool = True, release: bool = True) -> DepthPlan | None:
        """The plan of a chain, or None when the guard does not concern it."""
        points = tuple(sorted(set(asked)))
        anchors = plan(length, points, rng)
        return cls(anchors, points, shadow, release) if anchors else None

    def _protected(self, c: Change, t: int) -> bool:
        a = self.made.get(c.index)
        return a is not None and a.next_need(t) is not None

    def waiting(self, b: Builder) -> list[tuple[int, int]]:
        """(depth on the redo stack, ask point) of each undone anchor that must come back."""
        redo = b.oracle.engine.redo
        t = len(b.turns) + 1
        out = []
        for i, c in enumerate(redo):
            a = self.made.get(c.index)
            need = a.next_need(t) if a is not None else None
            if need is not None:
                out.append((len(redo) - i, need))
        return out

    def allows(self, b: Builder, record: Turn) -> bool:
        """Whether the plan lets ``record`` be the next turn (before the oracle tries it)."""
        engine = b.oracle.engine
        t = len(b.turns) + 1
        op = record.op
        waiting = bool(self.waiting(b))
        held = self.sticky is not None and t <= self.sticky[1]
        if op == "redo" and held and engine.redo and self.sticky is not None:
            return engine.redo[-1] is not self.sticky[0]
        if op in ("set", "drop"):
            assert isinstance(record, SetTurn | DropTurn)
            if waiting:
                return False  # a new change would clear the redo stack under an anchor
            if held and self.sticky is not None and record.setting == self.sticky[0].setting:
                return False
            return not any(self._protected(c, t) for c in engine.live[record.setting])
        if op not in ("undo_last", "undo_ref", "undo_earliest") or not engine.any_active():
            return True
        if op == "undo_ref":
            assert isinstance(record, UndoRefTurn)
            hits = engine.live[record.setting]
            if not hits:
                return True
            target = hits[-1]
        else:
            target = engine.earliest_made() if op == "undo_earliest" else engine.last_made()
        protected = self._protected(target, t)
        if not (waiting or protected):
            return True
        # an anchor is (or will be) on the redo stack: it must come back by redos worded with
        # one reading, which a redo after a redo has only while every undo since the last new
        # change came before every redo ("the change I undid before that one")
        if waiting and (len(engine.redo) >= DEEPEST or _redone_since_change(b)):
            return False
        if not protected or (self.releasing and self._release(target, t)):
            return True  # undone for good: other anchors show in its bands from now on
        if len(engine.redo) >= DEEPEST or _redone_since_change(b):
            return False
        need = self.made[target.index].next_need(t)
        assert need is not None
        due = any(a.change is None and a.at <= t + ROOM for a in self.anchors)
        return need - t >= ROOM and not due

    def _release(self, c: Change, t: int) -> bool:
        """Whether anchor change ``c`` may be undone for good at turn ``t``: at each ask point
        it still serves, another anchor in effect falls in the same age band; if so, those ask
        points pass to the others (and ``c`` becomes an ordinary change)."""
        a = self.made[c.index]
        moves: list[tuple[int, Anchor]] = []
        for n in (x for x in a.needs if x >= t):
            band = next(((lo, hi) for lo, hi in bands(n) if lo <= n - c.turn < hi), None)
            other = None if band is None else next(
                (x for x in self.made.values() if x is not a and x.change is not None
                 and x.change.active and band[0] <= n - x.change.turn < band[1]), None)
            if other is None:
                return False
            moves.append((n, other))
        for n, other in moves:
            if n not in other.needs:
                other.needs.append(n)
        a.needs = [x for x in a.needs if x < t]
        return True

    def step(self, b: Builder) -> bool:
        """The turn the plan needs now, if any (a redo that brings an anchor back in time, an
        anchor made, or a setting freed for one): True when it added a turn. Raises
        ``builder.Retry`` when an anchor's range or an ask point has passed."""
        from butterfly.suite.builder import Retry

        t = len(b.turns) + 1
        waiting = self.waiting(b)
        due = [a for a in self.anchors if a.change is None and a.at <= t]
        if waiting:
            depth = max(d for d, _ in waiting)
            need = min(n for _, n in waiting)
            if need - t + 1 <= depth + 1 or due or b.rng.random() < BACK:
                if not b.plain("redo"):
                    raise Retry
                return True
            return False
        if not due:
            return self.release and self._release_before_ask(b, t)
        a = due[0]
        if t > a.last:
            raise Retry
        return self._make(b, a)

    def _release_before_ask(self, b: Builder, t: int) -> bool:
        """In the last turns before each ask point, the earliest change in effect undone for
        good (it is not brought back before the ask point): an undo of the earliest change that
        an agent reading it as the last change gets wrong there."""
        guarded = [n for n in self.asked if n >= DEPTH_FROM]
        n = next((x for x in guarded if x >= t), None)
        if n is None or n in self.released:
            return False
        before = max((x for x in self.asked if x < n), default=0)
        if t < n - max(3, min(RELEASE, (n - before) // 4)):
            return False
        engine = b.oracle.engine
        self.releasing = True
        try:
            done = engine.any_active() and b.plain("undo_earliest")
        finally:
            self.releasing = False
        if not done:
            return False
        self.released.add(n)
        self.sticky = (engine.redo[-1], n)
        return True

    def _make(self, b: Builder, a: Anchor) -> bool:
        """Make anchor ``a`` on a free setting; else free one (an undo by description of the
        only change in effect there, the anchor then follows); else, where the planner allows
        it, make it over the changes in effect on a setting."""
        engine = b.oracle.engine
        taken = {c.setting for c in (x.change for x in self.anchors) if c is not None
                 and c.active}
        keys = [k for k in ANCHOR_KEYS if k in b.keys and k not in taken]
        free = [k for k in keys if not engine.live[k]]
        made = bool(free) and b.drops and b.rng.random() < 0.15 and b.drop(free)
        if (made or (bool(free) and b.set(free))) and self._bind(engine.changes[-1], a):
            return True
        busy = sorted((engine.live[k][-1].index, k) for k in keys if len(engine.live[k]) == 1)
        if any(b.undo_ref_of(k) for _, k in busy[:3]):
            return True
        return self.shadow and self._shadowing(b, keys) and self._bind(engine.changes[-1], a)

    def _bind(self, c: Change, a: Anchor) -> bool:
        a.change = c
        self.made[c.index] = a
        return True

    @staticmethod
    def _shadowing(b: Builder, keys: Sequence[str]) -> bool:
        """A change to one of ``keys`` over the changes in effect there, to a value other than
        the initial one (so that it shows)."""
        for k in b.shuffled(keys):
            values = [v for v in b.domain(k) if v not in (b.initial[k], b.spec[k])]
            if values and b.set([k], value=b.rng.choice(values)):
                return True
        return False



def deep_enough(scenario: Scenario, asked: Iterable[int]) -> bool:
    """Whether a finished chain passes the depth guard on its own, strictly: every band
    covered at every ask point, and neither recency window matching there (the guard allows
    ``window:k=t/2`` in 10% of a suite's chains; the generator emits none)."""
    rows = chain_depth(scenario, replay(scenario), asked)
    return all(r.missing is None and not r.tenth_match and not r.half_match for r in rows)


def depth_rows(scenarios: Sequence[Scenario], ask_at: Sequence[int] | None
               ) -> list[DepthRow] | None:
    """A suite's depth per ask point (``oracle.depth``), as its manifest records it: None when
    no chain reaches 40 turns (the guard does not concern it)."""
    if not depth_guarded(scenarios):
        return None
    return summarise(
        row for s in scenarios
        for row in chain_depth(s, replay(s), asked_of(len(s.turns), ask_at))
    )


def _redone_since_change(b: Builder) -> bool:
    """Whether a redo came after the last new change (set or drop)."""
    for turn in reversed(b.turns):
        if turn["op"] in ("set", "drop"):
            return False
        if turn["op"] == "redo":
            return True
    return False


def asked_of(length: int, ask_at: Sequence[int] | None) -> tuple[int, ...]:
    """The ask points the depth guard reads for a chain of ``length`` turns: the suite's ask
    points up to it and its last turn (only the last when the suite names none)."""
    return tuple(sorted({t for t in (ask_at or ()) if 1 <= t < length} | {length}))
