"""The contract's replay state without guards, for replaying a scenario under a second reading.

:mod:`oracle.replay` is the exact oracle: it checks every guard while it replays. A second
reading (:mod:`oracle.readings`) replays the same turns with one of them done another way, and
what a reader would do need not be valid (a redo with nothing to redo does nothing). So this
engine has no guards, and one thing the oracle never does: a *linked* change, whose value is
another setting's current value (the standing-link reading of an indirect reference).

State: the changes in the order they were made (setting, value or link, active flag), the redo
stack, and the uncoupled spec kept up to date one setting at a time.
"""

from __future__ import annotations

import bisect
from typing import Final

from oracle.catalogue import DOMAINS, UNSPECIFIED, apply_couplings

LINK: Final = "\x00link"
"""The value of a linked change: output_format follows input_format while it is in effect."""
LINKED: Final = ("output_format", "input_format")
"""(the setting a link assigns, the setting it follows)."""


class Ledger:
    """Changes, redo stack and uncoupled spec; every op of the contract, no guard (each op's
    ``reread`` in :mod:`oracle.ops` says which method plays its turn)."""

    __slots__ = ("activated", "active", "base", "by_setting", "clock", "initial", "live",
                 "redo", "settings", "values")

    def __init__(self, initial: dict[str, str]) -> None:
        self.initial = initial
        self.base = dict(initial)
        self.settings: list[str] = []
        self.values: list[str] = []
        self.active: list[bool] = []
        self.redo: list[int] = []
        self.by_setting: dict[str, list[int]] = {}
        self.live: dict[str, list[int]] = {}
        """Setting -> the changes in effect that assign it, in the order made (so that reading
        the state costs one setting's changes in effect, not the whole history)."""
        self.activated: list[int] = []
        """When each change was made or last brought back by a redo (a tick of ``clock``)."""
        self.clock = 0

    def copy(self) -> Ledger:
        other = Ledger(self.initial)
        other.base = dict(self.base)
        other.settings = list(self.settings)
        other.values = list(self.values)
        other.active = list(self.active)
        other.redo = list(self.redo)
        other.by_setting = {k: list(v) for k, v in self.by_setting.items()}
        other.live = {k: list(v) for k, v in self.live.items()}
        other.activated = list(self.activated)
        other.clock = self.clock
        return other

    # ------------------------------------------------------------------ the ops

    def add(self, setting: str, value: str) -> None:
        """A new change (set, drop, or a link when ``value`` is :data:`LINK`)."""
        self.by_setting.setdefault(setting, []).append(len(self.settings))
        self.live.setdefault(setting, []).append(len(self.settings))
        self.settings.append(setting)
        self.values.append(value)
        self.active.append(True)
        self.activated.append(self._tick())
        self.redo.clear()
        self.base[setting] = value

    def deactivate(self, i: int) -> None:
        self.active[i] = False
        self.live[self.settings[i]].remove(i)
        self.redo.append(i)
        self._restore(self.settings[i])

    def undo_last(self) -> None:
        i = self.last_active()
        if i is not None:
            self.deactivate(i)

    def undo_earliest(self) -> None:
        i = self.earliest_active()
        if i is not None:
            self.deactivate(i)

    def undo_ref(self, setting: str) -> None:
        hits = self.live.get(setting)
        if hits:
            self.deactivate(hits[-1])

    def do_redo(self) -> None:
        if self.redo:
            i = self.redo.pop()
            self.active[i] = True
            bisect.insort(self.live[self.settings[i]], i)
            self.activated[i] = self._tick()
            self._restore(self.settings[i])

    # ------------------------------------------------------------------ reading the state

    def last_active(self) -> int | None:
        """The most recently made change still in effect."""
        return max((hits[-1] for hits in self.live.values() if hits), default=None)

    def earliest_active(self) -> int | None:
        """The earliest-made change still in effect (the contract's "earliest")."""
        return min((hits[0] for hits in self.live.values() if hits), default=None)

    def in_effect(self, setting: str) -> list[int]:
        """The changes in effect that assign ``setting``, in the order made."""
        return self.live.get(setting, [])

    def longest_in_effect(self) -> int | None:
        """The change in effect that was made or brought back longest ago."""
        live = [i for hits in self.live.values() for i in hits]
        return min(live, key=lambda i: self.activated[i]) if live else None

    def changes_to(self, setting: str) -> list[int]:
        """Every change made to ``setting``, in effect or undone, in the order made."""
        return self.by_setting.get(setting, [])

    def spec(self) -> dict[str, str]:
        """The spec: links resolved, then the coupling rules applied."""
        spec = dict(self.base)
        target, source = LINKED
        if spec[target] == LINK:
            followed = spec[source]
            ok = followed in DOMAINS[target] or followed == UNSPECIFIED
            spec[target] = followed if ok else f"(no {target} for {followed})"
        return apply_couplings(spec)

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    def _restore(self, setting: str) -> None:
        hits = self.live.get(setting)
        self.base[setting] = self.values[hits[-1]] if hits else self.initial[setting]
