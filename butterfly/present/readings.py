"""The audit of second readings as text (``butterfly validate --readings``): per reading of the
registry, how many scenarios and turns it would change in a suite."""

from __future__ import annotations

from collections.abc import Sequence

from oracle import Scenario
from oracle.readings import Tally


def readings_table(label: str, scenarios: Sequence[Scenario], tallies: Sequence[Tally]) -> str:
    """A plain table: reading, scenarios changed (of all), turns changed, turns triggered."""
    n = len(scenarios)
    turns = sum(len(s.turns) for s in scenarios)
    rows = [("second reading", "scenarios changed", "turns changed", "turns triggered")]
    for t in tallies:
        rows.append((f"{t.reading.number} {t.reading.name}", f"{t.scenarios} of {n}",
                     str(t.turns), str(t.triggered)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [f"{label}: {n} scenarios, {turns} turns; what each second reading would change "
             "(docs/readings.md)"]
    for r in rows:
        lines.append("  " + "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                strict=True))))
    changed = sum(1 for t in tallies if t.scenarios)
    lines.append(f"  {'valid' if not changed else 'not valid'} under contract v3 (second readings)"
                 if tallies else "")
    return "\n".join(lines)
