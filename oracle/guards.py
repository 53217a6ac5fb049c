"""The validity guards of :mod:`oracle.replay`, and the record of a change they read.

Each guard raises :class:`Invalid` (the turn, the reason, the contract version that added it)
when a turn of a scenario has more than one reading; the engine turns that into a
:class:`oracle.replay.Violation`. The guards on undo targets live with the engine, which picks
the target (:class:`oracle.engine.Engine`); :mod:`oracle.ops` names each op's turn guards.
"""

from __future__ import annotations

from collections.abc import Mapping

from oracle.catalogue import COUPLINGS, inapplicable
from oracle.records import DropTurn, Turn
from oracle.wording import drop_wording_problem


class Change:
    """One set or drop turn's change: its assignment, whether it is in effect, and the sequence
    number of its latest (re)activation."""

    __slots__ = ("activated", "active", "index", "redone", "setting", "turn", "value")

    def __init__(self, index: int, turn: int, setting: str, value: str, activated: int) -> None:
        self.index = index
        self.turn = turn
        self.setting = setting
        self.value = value
        self.active = True
        self.activated = activated
        self.redone = False

    def __str__(self) -> str:
        return f"the change of turn {self.turn} ({self.setting} := {self.value})"


class Invalid(Exception):
    """A guard failed at turn ``turn`` (0: the initial spec); ``since``: its contract version."""

    def __init__(self, turn: int, reason: str, since: int = 1) -> None:
        self.turn = turn
        self.reason = reason
        self.since = since


def drop_wording(turn: DropTurn, t: int) -> None:
    """A drop turn must say plainly that its requirement is removed (:mod:`oracle.wording`)."""
    problem = drop_wording_problem(turn.text)
    if problem is not None:
        raise Invalid(t, problem)


Live = Mapping[str, list[Change]]
"""Setting -> the changes in effect that assign it, in the order made (the engine keeps it up
to date, so a guard reads one setting's few changes, not the whole history)."""


def live_source(live: Live, setting: str) -> Change | None:
    """The change in effect whose assignment of ``setting`` is visible (the last made of those
    that assign it), or None (the initial value)."""
    hits = live.get(setting)
    return hits[-1] if hits else None


def order_guard(changes: list[Change], setting: str, base: dict[str, str], t: int) -> None:
    """Replaying in order made and in order (re)activated must agree on ``setting``."""
    latest: Change | None = None
    for c in changes:
        if c.active and c.setting == setting and (latest is None or c.activated > latest.activated):
            latest = c
    if latest is not None and latest.value != base[setting]:
        raise Invalid(
            t,
            f"{setting} differs when active changes are replayed in the order made "
            f"({base[setting]}) and in the order (re)activated ({latest.value})",
        )


def applicability_guard(
    before: dict[str, str], after: dict[str, str], turn: Turn, t: int
) -> None:
    """No turn may make a setting of the declared list inapplicable that applied before it."""
    was = inapplicable(before)
    for key, why in inapplicable(after).items():
        if key not in was:
            raise Invalid(
                t,
                f"{turn.op} makes {key} inapplicable ({why.on} becomes {after[why.on]}; "
                f"{why.text}), an undeclared coupling a reader may apply",
                since=2,
            )


def coupling_guard(live: Live, base: dict[str, str], t: int) -> None:
    """No explicit assignment may be overridden by a rule whose trigger was made before it."""
    for cp in COUPLINGS:
        if base[cp.trigger] != cp.when or base[cp.forced] == cp.then:
            continue
        forced_src = live_source(live, cp.forced)
        if forced_src is None:
            continue  # the initial value, overridden by a later trigger: allowed
        trigger_src = live_source(live, cp.trigger)
        if trigger_src is None or trigger_src.index < forced_src.index:
            made = "the initial spec" if trigger_src is None else str(trigger_src)
            raise Invalid(
                t,
                f"{forced_src} contradicts the rule '{cp.text}', whose trigger ({made}) "
                "was made before it",
            )
