"""The replay engine's state and one replay step per op (the exact semantics of each turn type).

State is the initial spec, the changes in the order they were made (each with its assignment, an
active flag and the sequence number of its latest (re)activation), the changes in effect per
setting, and a redo stack. The engine keeps the uncoupled spec up to date incrementally: a set
or drop writes its setting; an undo or redo recomputes only the setting of the change it
touched. :mod:`oracle.ops` pairs each turn
type with its step here; :func:`oracle.replay.replay` walks the turns and applies the couplings
and the guards that concern every turn.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from oracle.catalogue import COUPLINGS, FORCED, UNSPECIFIED
from oracle.guards import Change, Invalid, live_source, order_guard
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


Pick = Callable[[], Change | None]
"""Picks the change an undo deactivates among those in effect (None: nothing, guards off)."""

Journal = list[tuple[Change, bool, int, bool]]
"""Each change a turn touched, as it was before: (change, active, activated, redone)."""
Checkpoint = tuple[int, int, list[Change], dict[str, str], Journal]
"""What :meth:`Engine.rollback` needs: changes made, activation counter, redo stack, uncoupled
spec, and the journal of what was touched since."""


class Engine:
    """The state of one replay; its methods are what the ops' steps are made of.

    Besides the changes in the order made, it keeps the changes in effect per setting (``live``,
    in the order made), so that every step reads one setting's few changes in effect, not the
    whole history: replay stays linear in the chain's length (``bench/ladder_scale.py``)."""

    __slots__ = ("base", "changes", "guards", "initial", "journal", "live", "redo", "rules",
                 "seq")

    def __init__(self, initial: dict[str, str], rules: Rules) -> None:
        self.initial = initial
        self.rules = rules
        self.guards = rules.guards
        self.base = dict(initial)  # the spec before couplings, active changes applied in order
        self.changes: list[Change] = []
        self.live: dict[str, list[Change]] = {k: [] for k in initial}
        self.redo: list[Change] = []
        self.seq = 0  # activation sequence counter
        self.journal: Journal | None = None
        """While a turn is tried (:meth:`checkpoint`): each change it touched, as it was."""

    # ------------------------------------------------------------ trying a turn (generators)

    def checkpoint(self) -> Checkpoint:
        """Start recording a turn, so that :meth:`rollback` can take it back (until the next
        checkpoint; set ``journal`` to None to stop recording)."""
        self.journal = []
        return len(self.changes), self.seq, list(self.redo), dict(self.base), self.journal

    def rollback(self, cp: Checkpoint) -> None:
        """The state as it was at ``cp`` (the turn tried since then is taken back)."""
        n, seq, redo, base, journal = cp
        for c, active, activated, redone in reversed(journal):
            if c.active and not active:
                self._deactivate(c)
            elif active and not c.active:
                self._activate(c)
            c.activated, c.redone = activated, redone
        del self.changes[n:]
        self.seq, self.redo[:] = seq, redo
        self.base.update(base)
        self.journal = None

    def _note(self, c: Change, active: bool) -> None:
        if self.journal is not None:
            self.journal.append((c, active, c.activated, c.redone))

    def _activate(self, c: Change) -> None:
        c.active = True
        bisect.insort(self.live[c.setting], c, key=_made)

    def _deactivate(self, c: Change) -> None:
        c.active = False
        self.live[c.setting].remove(c)

    # ------------------------------------------------------------ reading the state

    def any_active(self) -> bool:
        return any(self.live.values())

    def last_made(self) -> Change:
        """The most recently made change in effect (some change must be in effect)."""
        return max((hits[-1] for hits in self.live.values() if hits), key=_made)

    def earliest_made(self) -> Change:
        """The earliest-made change in effect (some change must be in effect)."""
        return min((hits[0] for hits in self.live.values() if hits), key=_made)

    def latest_activated(self) -> Change:
        """The change in effect made or brought back most recently."""
        return max((c for hits in self.live.values() for c in hits), key=_activated)

    # ------------------------------------------------------------ the steps' parts

    def restore(self, setting: str) -> None:
        """Recompute ``setting`` of the uncoupled spec from the changes in effect."""
        hits = self.live[setting]
        self.base[setting] = hits[-1].value if hits else self.initial[setting]

    def make(self, t: int, setting: str, value: str) -> None:
        """A new change (a set or a drop): it clears the redo stack."""
        c = Change(len(self.changes), t, setting, value, self.seq)
        self._note(c, False)
        self.changes.append(c)
        self.live[setting].append(c)  # the latest made: last in the order made
        self.seq += 1
        self.redo.clear()
        self.base[setting] = value

    def undo(self, op: str, t: int, pick: Pick) -> None:
        """Deactivate the change ``pick`` chooses among those in effect; onto the redo stack."""
        if not self.any_active():
            if self.guards:
                raise Invalid(t, f"{op}: no change is in effect")
            return
        target = pick()
        if target is None:
            return
        self._note(target, True)
        self._deactivate(target)
        self.redo.append(target)
        self.restore(target.setting)
        if self.guards:
            order_guard(self.live[target.setting], target.setting, self.base, t)

    def bring_back(self, t: int) -> None:
        """A redo: the change undone most recently since the last new change, back in effect."""
        if not self.redo:
            if self.guards:
                raise Invalid(t, "redo: nothing has been undone since the last change")
            return
        c = self.redo.pop()
        self._note(c, False)
        self._activate(c)
        c.activated = self.seq
        c.redone = True
        self.seq += 1
        self.restore(c.setting)
        if self.guards:
            order_guard(self.live[c.setting], c.setting, self.base, t)

    def last(self, t: int) -> Change:
        """The most recently made change in effect (undo_last)."""
        target = self.last_made()
        if self.guards:
            latest = self.latest_activated()
            if latest is not target:
                raise Invalid(
                    t,
                    f"undo_last: {target} was made last but {latest} was reactivated "
                    "later, so 'the last change' has two readings",
                )
        return target

    def earliest(self, text: str, t: int) -> Change:
        """The earliest-made change in effect (undo_earliest), unshadowed, worded in effect."""
        target = self.earliest_made()
        if self.guards:
            hits = self.live[target.setting]
            if len(hits) > 1:
                raise Invalid(t, f"undo_earliest: {target} is shadowed by {hits[1]}")
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

    def ref(self, setting: str, t: int) -> Change | None:
        """The one change in effect that assigned ``setting`` (undo_ref)."""
        hits = self.live[setting]
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
                src = live_source(self.live, cp.trigger)
                if src is not None:
                    raise Invalid(t, f"undo_ref: {setting} is also forced by {src} ('{cp.text}')")


def _made(c: Change) -> int:
    return c.index


def _activated(c: Change) -> int:
    return c.activated


# ---------------------------------------------------------------- one step per op


def set_step(e: Engine, turn: SetTurn, t: int) -> None:
    e.make(t, turn.setting, turn.value)


def drop_step(e: Engine, turn: DropTurn, t: int) -> None:
    e.make(t, turn.setting, UNSPECIFIED)


def undo_last_step(e: Engine, turn: UndoLastTurn, t: int) -> None:
    e.undo(turn.op, t, lambda: e.last(t))


def undo_ref_step(e: Engine, turn: UndoRefTurn, t: int) -> None:
    e.undo(turn.op, t, lambda: e.ref(turn.setting, t))


def undo_earliest_step(e: Engine, turn: UndoEarliestTurn, t: int) -> None:
    if e.rules.earliest_as_last:
        e.undo(turn.op, t, lambda: e.last(t))
    else:
        e.undo(turn.op, t, lambda: e.earliest(turn.text, t))


def redo_step(e: Engine, turn: RedoTurn, t: int) -> None:
    e.bring_back(t)


def no_step(e: Engine, turn: TurnBase, t: int) -> None:
    """A turn that changes nothing (a distractor)."""
