"""The op mix of a suite by turn band, and how far its undos reach back (docs/ladder.md).

Computed from the scenarios (the oracle's replay says which change each undo and redo touches),
then rendered as one Markdown table: ``tools/ladder_mix.py`` writes it into docs/ladder.md, and a
test holds the page to a fresh computation on the frozen suite.

The *reach* of an undo is how many turns back the change it undoes was made: turn t undoing the
change made at turn u reaches t - u (a change undone and redone keeps the turn it was made at).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from butterfly.suite.horizon_chains import HARD_OPS
from oracle import OPS, Scenario
from oracle.replay import Replayer

BANDS: Final = ((1, 10), (11, 100), (101, 1000), (1001, 5000))
"""Turn bands of butterfly-horizon's table (first and last turn, inclusive)."""

REFERENCES: Final = ("undo_ref", "undo_earliest")
"""The undos that name which change they take back (by description, or as the earliest)."""


@dataclass
class BandMix:
    """The turns of one band, over every scenario long enough to reach it."""

    first: int
    last: int
    ops: Counter[str] = field(default_factory=Counter)
    reach: dict[str, list[int]] = field(default_factory=lambda: {op: [] for op in REFERENCES})

    @property
    def turns(self) -> int:
        return sum(self.ops.values())

    def share(self, ops: Iterable[str]) -> float:
        """The share of the band's turns whose op is one of ``ops``."""
        return sum(self.ops[op] for op in ops) / self.turns if self.turns else 0.0

    def median_reach(self, ops: Sequence[str] = REFERENCES) -> float | None:
        values = [r for op in ops for r in self.reach[op]]
        return statistics.median(values) if values else None


def reaches(scenario: Scenario) -> list[tuple[int, str, int]]:
    """(turn, op, reach) of every undo of ``scenario`` (the oracle's targets)."""
    replayer = Replayer(scenario.initial)
    engine = replayer.engine
    out: list[tuple[int, str, int]] = []
    for t, turn in enumerate(scenario.turns, 1):
        depth = len(engine.redo)
        if replayer.push(turn) is None:
            raise ValueError(f"{scenario.id}: turn {t} is invalid (validate the suite first)")
        if turn.op in ("undo_last", *REFERENCES) and len(engine.redo) > depth:
            out.append((t, turn.op, t - engine.redo[-1].turn))
    return out


def op_mix(scenarios: Iterable[Scenario], bands: Sequence[tuple[int, int]] = BANDS
           ) -> list[BandMix]:
    """Per band, the ops of its turns and the reach of its undos."""
    out = [BandMix(first, last) for first, last in bands]
    for s in scenarios:
        for band in out:
            for turn in s.turns[band.first - 1:band.last]:
                band.ops[turn.op] += 1
        for t, op, reach in reaches(s):
            for band in out:
                if band.first <= t <= band.last and op in band.reach:
                    band.reach[op].append(reach)
    return out


def overall(mix: Sequence[BandMix]) -> BandMix:
    """Every band together."""
    whole = BandMix(mix[0].first, mix[-1].last)
    for band in mix:
        whole.ops.update(band.ops)
        for op in REFERENCES:
            whole.reach[op].extend(band.reach[op])
    return whole


def mix_table(mix: Sequence[BandMix]) -> str:
    """The Markdown table of docs/ladder.md: one row per band and one for all turns (each op's
    share of the turns, the hard ops' together, and the median reach of the undos that name
    their change)."""
    head = ["turns", "n", *OPS, "hard", "reach: undo_ref", "undo_earliest", "both"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for band in (*mix, overall(mix)):
        whole = band.first == mix[0].first and band.last == mix[-1].last and len(mix) > 1
        label = "all" if whole else f"{band.first:,}-{band.last:,}"
        cells = [label, f"{band.turns:,}",
                 *(f"{band.share([op]):.1%}" for op in OPS),
                 f"**{band.share(HARD_OPS):.1%}**",
                 _median(band.median_reach(["undo_ref"])),
                 _median(band.median_reach(["undo_earliest"])),
                 _median(band.median_reach())]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _median(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
