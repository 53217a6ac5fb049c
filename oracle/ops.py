"""The ops: one :class:`Op` per turn type, and the registry every other module reads.

An op is its name, its turn record (:mod:`oracle.records`), what kind of op it is (a new change,
an undo, a redo, or nothing), its replay step (:mod:`oracle.engine`), the guards on its own turn
(:mod:`oracle.guards`), how the guard-free ledger of second readings replays it
(:mod:`oracle.ledger`), and the ids of its paraphrase families (texts in
``butterfly/suite/templates.py``; the generator's hook per op is ``butterfly.suite.builder.HOOKS``).
The second readings that can trigger on an op are those of :data:`oracle.readings.READINGS`
whose ``ops`` name it. :data:`OPS` and :data:`UNDO_OPS` derive from :data:`REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, TypeVar

from oracle import records as rec
from oracle.catalogue import UNSPECIFIED
from oracle.engine import (
    Engine,
    drop_step,
    no_step,
    redo_step,
    set_step,
    undo_earliest_step,
    undo_last_step,
    undo_ref_step,
)
from oracle.guards import drop_wording
from oracle.ledger import Ledger

T = TypeVar("T", bound=rec.TurnBase)
Kind = Literal["change", "undo", "redo", "none"]
"""``change``: a new change (set, drop); ``undo``: deactivates one; ``redo``: brings one back;
``none``: changes nothing."""


@dataclass(frozen=True, slots=True)
class Op(Generic[T]):
    """One op: everything the oracle, the readings and the generator need to know of it."""

    name: str
    """The ``op`` of its records (its record's ``Literal``)."""
    record: type[T]
    kind: Kind
    step: Callable[[Engine, T, int], None]
    """What the turn does to the replay's state, its target guards included."""
    reread: Callable[[Ledger, T], None]
    """The same turn on the guard-free ledger (for second readings)."""
    families: tuple[str, ...]
    """Its paraphrase families (``family.index`` ids of generated turns)."""
    guards: tuple[Callable[[T, int], None], ...] = ()
    """Guards on the turn's own words, checked before its step."""

    @property
    def undo(self) -> bool:
        """An undo-family op (an undo or a redo: the undo-recovery metric's turns)."""
        return self.kind in ("undo", "redo")


def _set(ledger: Ledger, turn: rec.SetTurn) -> None:
    ledger.add(turn.setting, turn.value)


def _drop(ledger: Ledger, turn: rec.DropTurn) -> None:
    ledger.add(turn.setting, UNSPECIFIED)


def _undo_ref(ledger: Ledger, turn: rec.UndoRefTurn) -> None:
    ledger.undo_ref(turn.setting)


INDIRECT: Final = ("indirect.same_format", "indirect.double_timeout", "indirect.tenfold_rows")
"""Set turns by indirect reference: their value is resolved by the generator."""

REGISTRY: Final[dict[str, Op[Any]]] = {op.name: op for op in (
    Op("set", rec.SetTurn, "change", set_step, _set, ("set", *INDIRECT)),
    Op("drop", rec.DropTurn, "change", drop_step, _drop, ("drop",), (drop_wording,)),
    Op("undo_last", rec.UndoLastTurn, "undo", undo_last_step, lambda led, _: led.undo_last(),
       ("undo_last",)),
    Op("undo_ref", rec.UndoRefTurn, "undo", undo_ref_step, _undo_ref, ("undo_ref",)),
    Op("undo_earliest", rec.UndoEarliestTurn, "undo", undo_earliest_step,
       lambda led, _: led.undo_earliest(), ("undo_earliest",)),
    Op("redo", rec.RedoTurn, "redo", redo_step, lambda led, _: led.do_redo(), ("redo",)),
    Op("distractor", rec.DistractorTurn, "none", no_step, lambda led, _: None, ("distractor",)),
)}
"""Op name -> :class:`Op`, in the contract's order."""

OPS: Final[tuple[str, ...]] = tuple(REGISTRY)
UNDO_OPS: Final[tuple[str, ...]] = tuple(name for name, op in REGISTRY.items() if op.undo)
CHANGE_OPS: Final[tuple[str, ...]] = tuple(
    name for name, op in REGISTRY.items() if op.kind == "change"
)
"""The ops that make a new change (and clear the redo stack)."""
