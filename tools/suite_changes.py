"""Every turn a new version of a frozen suite words differently from the old one, with the
second readings (contract v3) the old wording triggered and whether one changed a spec.

    python tools/suite_changes.py scenarios/retired/butterfly-40.v2.jsonl \
        scenarios/butterfly-40.jsonl

Prints Markdown (docs/suite-changes-v3.md is its output for the three suites of contract v3).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from butterfly.suite.load import load_suite
from oracle import Scenario, replay
from oracle.readings import Difference, contexts, differences, triggered


def _ops(s: Scenario) -> list[tuple[str, str | None, str | None]]:
    return [(t.op, getattr(t, "setting", None), getattr(t, "value", None)) for t in s.turns]


def _why(old: Scenario, t: int, found: list[Difference]) -> str:
    ctx = next(c for u, c in contexts(old.initial, old.turns) if u == t)
    names = [r.name for r in triggered(ctx)]
    diffs = {d.reading.name: d for d in found if d.turn == t}
    parts = []
    for name in names:
        d = diffs.get(name)
        parts.append(f"{name}: changes {d.setting} after turn {d.shows}" if d else
                     f"{name}: triggered, no spec changed")
    return "; ".join(parts) or "no reading (handwritten rewording)"


def changes(old_path: str, new_path: str) -> list[str]:
    old = {s.id: s for s in load_suite(old_path, readings=False)}
    new = load_suite(new_path)
    out, tally = [], Counter[str]()
    for s in new:
        o = old[s.id]
        if _ops(o) != _ops(s):
            out.append(f"- `{s.id}`: **regenerated** (its op sequence changed: "
                       f"{len(o.turns)} -> {len(s.turns)} turns, same length)")
            tally["regenerated"] += 1
            continue
        found = list(differences(o, replay(o)))  # once per scenario, not per changed turn
        for t, (a, b) in enumerate(zip(o.turns, s.turns, strict=True), 1):
            if a.text != b.text:
                out.append(f"- `{s.id}` turn {t}: {a.paraphrase or 'handwritten'} -> "
                           f"{b.paraphrase or 'handwritten'}: \"{b.text}\" "
                           f"({_why(o, t, found)})")
                tally[f"{a.paraphrase or 'handwritten'} -> {b.paraphrase or 'handwritten'}"] += 1
    head = [f"### {Path(new_path).name}", "",
            f"{sum(tally.values())} changes: " + ", ".join(f"{k} x{v}" for k, v in
                                                           sorted(tally.items())), ""]
    return [*head, *out, ""]


if __name__ == "__main__":
    print("\n".join(changes(sys.argv[1], sys.argv[2])))
