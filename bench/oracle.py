"""Replay-plus-validation throughput of the oracle, single core.

Generates a 10,000-scenario suite (seeded), then times, in one process on one core:
  1. replay + every validity guard on scenarios already in memory (the oracle itself);
  2. the same including parsing each JSON line into a strict record (what `validate` does).
Prints turns per second for each and the ratio to the 100,000 turns/s target.

    .venv/bin/python bench/oracle.py [--count 10000] [--seed 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# This file is named like the `oracle` package; keep its folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.suite.generate import generate, proportional_counts  # noqa: E402
from butterfly.suite.load import dumps_suite, parse_line  # noqa: E402
from oracle import replay  # noqa: E402

TARGET = 100_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    t0 = time.perf_counter()
    scenarios = generate(proportional_counts(a.count), a.seed)
    gen_s = time.perf_counter() - t0
    lines = dumps_suite(scenarios).splitlines()
    turns = sum(len(s.turns) for s in scenarios)
    print(f"suite: {len(scenarios)} scenarios, {turns} turns (generated in {gen_s:.2f} s)")

    best_replay = best_full = float("inf")
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        for s in scenarios:
            replay(s)  # guards on: raises on the first violation
        best_replay = min(best_replay, time.perf_counter() - t0)
        t0 = time.perf_counter()
        for n, line in enumerate(lines, 1):
            replay(parse_line(line, f"bench:{n}"))
        best_full = min(best_full, time.perf_counter() - t0)

    for label, secs in (("replay + guards (records in memory)", best_replay),
                        ("parse record + replay + guards", best_full)):
        rate = turns / secs
        print(f"{label:40s} {rate:12,.0f} turns/s  ({rate / TARGET:.2f}x the "
              f"{TARGET:,} turns/s target; best of {a.repeat})")


if __name__ == "__main__":
    main()
