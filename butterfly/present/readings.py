"""A suite's audits as text: of second readings (``butterfly validate --readings``: per reading
of the registry, how many scenarios and turns it would change) and of depth (``butterfly
validate --depth``: per ask point, how old the changes that show are and how often a recency
window matches)."""

from __future__ import annotations

from collections.abc import Sequence

from butterfly.present.bill import table
from oracle import Scenario
from oracle.depth import HALF_SHARE, half, tenth
from oracle.readings import Tally
from oracle.records import DepthRow


def readings_table(label: str, scenarios: Sequence[Scenario], tallies: Sequence[Tally]) -> str:
    """A plain table: reading, scenarios changed (of all), turns changed, turns triggered."""
    n = len(scenarios)
    turns = sum(len(s.turns) for s in scenarios)
    rows = [("second reading", "scenarios changed", "turns changed", "turns triggered")]
    for t in tallies:
        rows.append((f"{t.reading.number} {t.reading.name}", f"{t.scenarios} of {n}",
                     str(t.turns), str(t.triggered)))
    lines = [f"{label}: {n} scenarios, {turns} turns; what each second reading would change "
             "(docs/readings.md)", *("  " + r for r in table(rows))]
    changed = sum(1 for t in tallies if t.scenarios)
    lines.append(f"  {'valid' if not changed else 'not valid'} under contract v4 (second readings)"
                 if tallies else "")
    return "\n".join(lines)


def depth_table(label: str, guarded: bool, ask_at: Sequence[int] | None,
                rows: Sequence[DepthRow], violation: str | None) -> str:
    """Per ask point of 40 turns or more: chains, the median number of changes that show, the
    median age of the oldest and of all of them, the chains whose changes cover every age band,
    and the chains where the last t/2 and t/10 messages alone give the oracle's spec."""
    if not guarded:
        return (f"{label}: no chain reaches 40 turns; the depth guard (contract v4, section 8) "
                "does not concern it")
    asked = "each chain's last turn" if ask_at is None else (
        "its ask points (" + ", ".join(str(t) for t in ask_at) + " and each chain's last turn)")
    head = ("ask at", "chains", "shown", "oldest", "median age", "all bands",
            "last t/2 match", "last t/10 match")
    cells = [head] + [
        (f"{r.turn:,}", str(r.chains), f"{r.shown:g}", f"{r.oldest:g}", f"{r.median_age:g}",
         f"{r.bands_covered}/{r.chains}", f"{r.half_matches}/{r.chains} (k={half(r.turn)})",
         f"{r.tenth_matches}/{r.chains} (k={tenth(r.turn)})")
        for r in rows
    ]
    lines = [f"{label}: depth at {asked} from 40 turns on (docs/ladder.md, \"Depth\"); ages "
             "in turns of the changes that show, medians over the chains",
             *("  " + r for r in table(cells, left=0))]
    lines.append(f"  depth guard: {violation}" if violation else
                 f"  depth guard holds: every band covered, the last t/2 messages match at most "
                 f"{HALF_SHARE:.0%} of chains, the last t/10 none")
    return "\n".join(lines)
