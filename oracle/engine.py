"""The replay engine's state and one replay step per op (the exact semantics of each turn type).

State is the initial spec, the changes in the order they were made (each with its assignment, an
active flag and the sequence number of its latest (re)activation), and a redo stack. The engine
keeps the uncoupled spec up to date incrementally: a set or drop writes its setting; an undo or
redo recomputes only the setting of the change it touched. :mod:`oracle.ops` pairs each turn
type with its step here; :func:`oracle.replay.replay` walks the turns and applies the couplings
and the guards that concern every turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from oracle.catalogue import COUPLINGS, FORCED, UNSPECIFIED
from oracle.guards import Change, Invalid, order_guard, source
from oracle.records import (
    DropTurn,
    RedoTurn,
    SetTurn,
    TurnBase,
    UndoEarliestTurn,
    UndoLastTurn,
    UndoRefTurn,
)
from oracle.wording import history_wording


@dataclass(frozen=True, slots=True)
class Rules:
    """How to replay. The oracle is ``Rules()``; the others describe scripted agents."""

    undo: bool = True
    """False: undo_* and redo turns change nothing (every set and drop stays in effect)."""
    earliest_as_last: bool = False
    """True: undo_earliest deactivates the most recent active change instead."""
    couplings: bool = True
    """False: the coupling rules are not applied."""
    guards: bool = True
    """False: no validity guard is checked (for agents replaying a scenario their own way)."""
    v2: bool = True
    """False: the guards of contract v1 only (for records played before v2)."""


Pick = Callable[[list[Change]], Change | None]
"""Picks the change an undo deactivates among those in effect (None: nothing, guards off)."""


class Engine:
    """The state of one replay; its methods are what the ops' steps are made of."""

    __slots__ = ("base", "changes", "guards", "initial", "redo", "rules", "seq")

    def __init__(self, initial: dict[str, str], rules: Rules) -> None:
        self.initial = initial
        self.rules = rules
        self.guards = rules.guards
        self.base = dict(initial)  # the spec before couplings, active changes applied in order
        self.changes: list[Change] = []
        self.redo: list[Change] = []
        self.seq = 0  # activation sequence counter

    def restore(self, setting: str) -> None:
        """Recompute ``setting`` of the uncoupled spec from the changes in effect."""
        value = self.initial[setting]
        for c in self.changes:
            if c.active and c.setting == setting:
                value = c.value
        self.base[setting] = value

    def make(self, t: int, setting: str, value: str) -> None:
        """A new change (a set or a drop): it clears the redo stack."""
        self.changes.append(Change(len(self.changes), t, setting, value, self.seq))
        self.seq += 1
        self.redo.clear()
        self.base[setting] = value

    def undo(self, op: str, t: int, pick: Pick) -> None:
        """Deactivate the change ``pick`` chooses among those in effect; onto the redo stack."""
        active = [c for c in self.changes if c.active]
        if not active:
            if self.guards:
                raise Invalid(t, f"{op}: no change is in effect")
            return
        target = pick(active)
        if target is None:
            return
        target.active = False
        self.redo.append(target)
        self.restore(target.setting)
        if self.guards:
            order_guard(self.changes, target.setting, self.base, t)

    def bring_back(self, t: int) -> None:
        """A redo: the change undone most recently since the last new change, back in effect."""
        if not self.redo:
            if self.guards:
                raise Invalid(t, "redo: nothing has been undone since the last change")
            return
        c = self.redo.pop()
        c.active = True
        c.activated = self.seq
        c.redone = True
        self.seq += 1
        self.restore(c.setting)
        if self.guards:
            order_guard(self.changes, c.setting, self.base, t)

    def last(self, active: list[Change], t: int) -> Change:
        """The most recently made change in effect (undo_last)."""
        target = active[-1]
        if self.guards:
            latest = max(active, key=lambda c: c.activated)
            if latest is not target:
                raise Invalid(
                    t,
                    f"undo_last: {target} was made last but {latest} was reactivated "
                    "later, so 'the last change' has two readings",
                )
        return target

    def earliest(self, text: str, active: list[Change], t: int) -> Change:
        """The earliest-made change in effect (undo_earliest), unshadowed, worded in effect."""
        target = active[0]
        if self.guards:
            for c in active[1:]:
                if c.setting == target.setting:
                    raise Invalid(t, f"undo_earliest: {target} is shadowed by {c}")
            for cp in COUPLINGS:
                if cp.forced == target.setting and self.base[cp.trigger] == cp.when:
                    raise Invalid(
                        t, f"undo_earliest: {target} is shadowed by the rule '{cp.text}'"
                    )
            phrase = history_wording(text) if target.redone and self.rules.v2 else None
            if phrase is not None:
                raise Invalid(
                    t,
                    f"undo_earliest: the wording {phrase!r} speaks of undo history, but "
                    f"{target} has been undone and redone, so the turn reads two ways",
                    since=2,
                )
        return target

    def ref(self, setting: str, active: list[Change], t: int) -> Change | None:
        """The one change in effect that assigned ``setting`` (undo_ref)."""
        hits = [c for c in active if c.setting == setting]
        if self.guards:
            if len(hits) != 1:
                raise Invalid(
                    t,
                    f"undo_ref: {len(hits)} changes in effect assign {setting}; exactly one must",
                )
            if setting in FORCED:
                self._forced_elsewhere(setting, t)
        return hits[-1] if hits else None

    def _forced_elsewhere(self, setting: str, t: int) -> None:
        for cp in COUPLINGS:
            if cp.forced == setting and self.base[cp.trigger] == cp.when:
                src = source(self.changes, cp.trigger)
                if src is not None:
                    raise Invalid(t, f"undo_ref: {setting} is also forced by {src} ('{cp.text}')")


# ---------------------------------------------------------------- one step per op


def set_step(e: Engine, turn: SetTurn, t: int) -> None:
    e.make(t, turn.setting, turn.value)


def drop_step(e: Engine, turn: DropTurn, t: int) -> None:
    e.make(t, turn.setting, UNSPECIFIED)


def undo_last_step(e: Engine, turn: UndoLastTurn, t: int) -> None:
    e.undo(turn.op, t, lambda active: e.last(active, t))


def undo_ref_step(e: Engine, turn: UndoRefTurn, t: int) -> None:
    e.undo(turn.op, t, lambda active: e.ref(turn.setting, active, t))


def undo_earliest_step(e: Engine, turn: UndoEarliestTurn, t: int) -> None:
    if e.rules.earliest_as_last:
        e.undo(turn.op, t, lambda active: e.last(active, t))
    else:
        e.undo(turn.op, t, lambda active: e.earliest(turn.text, active, t))


def redo_step(e: Engine, turn: RedoTurn, t: int) -> None:
    e.bring_back(t)


def no_step(e: Engine, turn: TurnBase, t: int) -> None:
    """A turn that changes nothing (a distractor)."""
