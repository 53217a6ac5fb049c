"""Which turns of a chain are asked (contract v3, section 4, "asking at chosen turns").

A run in restate mode may ask only at chosen turns of each chain (``--ask-at 5,10,20,40,80``,
``--ask-at last``); the last turn of every chain is always asked, and ask points beyond a
chain's length are ignored for that chain. :func:`asked_turns` is the one place that decides
which turns are asked: the player, ``pending_calls``, the shards, the scorer, ``show`` and the
dry run all call it. Pure: notebook-inlinable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

EVERY: Final = "all"
"""``--ask-at all``: ask every turn (even when the suite names default ask points)."""
LAST: Final = "last"
"""``--ask-at last``: ask only the last turn of each chain."""


def asked_turns(n_turns: int, ask_at: Sequence[int] | None) -> Sequence[int]:
    """The turns (1-based, increasing) asked in a chain of ``n_turns``: every turn when
    ``ask_at`` is None; else the points of ``ask_at`` up to ``n_turns``, and ``n_turns``."""
    if ask_at is None:
        return range(1, n_turns + 1)
    return tuple(sorted({t for t in ask_at if 1 <= t < n_turns} | {n_turns}))


def n_asked(n_turns: int, ask_at: Sequence[int] | None) -> int:
    """How many turns of a chain of ``n_turns`` are asked."""
    return len(asked_turns(n_turns, ask_at))


def ask_label(ask_at: Sequence[int] | None) -> str | None:
    """How a run's ask points read in ``score``, ``show`` and ``report``: None when every turn
    is asked; else "asked at turns 5, 10, 20 and the last" or "asked at the last turn only"."""
    if ask_at is None:
        return None
    if not ask_at:
        return "asked at the last turn only"
    return f"asked at turns {', '.join(str(t) for t in ask_at)} and the last"


ASKED_NOTE: Final = "over asked turns only"
"""The label of a metric that needs every turn, computed over the asked turns of a run that
asks at chosen turns (first divergent turn, wobble, undo recovery, collateral, survival)."""


def asked_line(ask_at: Sequence[int] | None) -> str | None:
    """The line ``score``, ``show`` and the report print above a run asked at chosen turns (None
    for a run that asked every turn)."""
    label = ask_label(ask_at)
    if label is None:
        return None
    return (f"{label} of each chain (restate mode; a turn not asked has no answer and is not "
            "scored): turn match and abstention count the asked answers; first divergent turn, "
            f"wobble, undo recovery, collateral and the survival curve are {ASKED_NOTE}; the "
            "horizon counts the ask at turn t as a chain of length t")


def asked_only(name: str, ask_at: Sequence[int] | None) -> str:
    """``name``, labelled "(over asked turns only)" for a run asked at chosen turns."""
    return name if ask_at is None else f"{name} ({ASKED_NOTE})"
