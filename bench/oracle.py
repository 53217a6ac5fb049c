"""Replay-plus-validation throughput of the oracle, single core.

Generates a 10,000-scenario suite (seeded), then times, in one process on one core:
  1. replay + the guards replay checks (every guard but second readings) on scenarios already
     in memory (what scoring a run does);
  2. ``check`` + replay: every guard, second readings (contract v3) included, in memory;
  3. the same including parsing each JSON line into a strict record (what `validate` does).
Prints turns per second for each and the ratio to the 100,000 turns/s target, and, because
absolute rates drift with the machine's load, ratios against two baselines timed side by side in
the same run: ``json.loads`` of every line (the least any reader of the suite does) and the naive
twin oracle of the tests (``tests/oracle/naive.py``: recomputes every spec and guard from the
whole history after each turn, second readings included).

    .venv/bin/python bench/oracle.py [--count 10000] [--seed 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable

# This file is named like the `oracle` package; keep its folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.suite.generate import generate, proportional_counts  # noqa: E402
from butterfly.suite.load import dumps_suite, parse_line  # noqa: E402
from oracle import check, replay  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.join(ROOT, "tests", "oracle"))  # the naive twin of the oracle tests
from naive import naive  # type: ignore[import-not-found]  # noqa: E402

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

    best_replay = best_check = best_full = best_json = best_naive = float("inf")
    twin = scenarios[: max(1, len(scenarios) // 10)]  # the naive twin is slow: a tenth
    twin_turns = sum(len(s.turns) for s in twin)
    for _ in range(a.repeat):
        best_replay = min(best_replay, _time(lambda: [replay(s) for s in scenarios]))
        best_check = min(best_check, _time(lambda: [(check(s), replay(s)) for s in scenarios]))
        best_full = min(best_full, _time(lambda: [replay(parse_line(line, f"bench:{n}"))
                                                  for n, line in enumerate(lines, 1)]))
        best_json = min(best_json, _time(lambda: [json.loads(line) for line in lines]))
        best_naive = min(best_naive, _time(lambda: [naive(s) for s in twin]))

    json_rate = turns / best_json
    print(f"{'baseline: json.loads of every line':40s} {json_rate:12,.0f} turns/s")
    print(f"{'baseline: the naive twin oracle':40s} {twin_turns / best_naive:12,.0f} turns/s "
          f"(on {len(twin)} of the scenarios)")
    for label, secs in (("replay + guards (records in memory)", best_replay),
                        ("check (+ readings) + replay, in memory", best_check),
                        ("parse record + check + replay", best_full)):
        rate = turns / secs
        print(f"{label:40s} {rate:12,.0f} turns/s  ({rate / TARGET:.2f}x the "
              f"{TARGET:,} turns/s target; {json_rate / rate:.1f}x the time of json.loads; "
              f"{rate / (twin_turns / best_naive):.1f}x the naive twin's rate; best of "
              f"{a.repeat})")


def _time(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
