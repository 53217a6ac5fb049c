"""Time per edit against chain length: generator, oracle, guards, second readings, scorer.

Draws chains of each length with butterfly-horizon's planner (``generate_horizon``, the same
seeds every run) and times, per edit, in one process:
  1. the generator (every turn tried by the oracle as it is added);
  2. ``replay``: the oracle's spec after every turn, every guard but second readings;
  3. ``check``: every guard, second readings (contract v3) included;
  4. the scorer on an oracle-answered run (``score_conversations``: metrics, baselines, horizon).
Prints, per step, microseconds per edit at each length and the ratio of the longest length's
to the shortest's (close to 1: linear in the chain's length; 10 would be quadratic from 1,000 to
10,000 edits). Each timing is the best of ``--repeat`` (the machine is shared).

    .venv/bin/python bench/ladder_scale.py [--lengths 1000,5000,10000] [--chains 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from functools import partial

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.core.metrics import score_conversations  # noqa: E402
from butterfly.core.turns import ConversationKey  # noqa: E402
from butterfly.suite.horizon import generate_horizon  # noqa: E402
from oracle import Scenario, check, replay  # noqa: E402


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _score(chains: list[Scenario]) -> None:
    answers = {ConversationKey(s.id, "E", 0): list(replay(s)[1:]) for s in chains}
    score_conversations(chains, answers, [])


def _replay(chains: list[Scenario]) -> None:
    for s in chains:
        replay(s)


def _check(chains: list[Scenario]) -> None:
    for s in chains:
        assert check(s) is None, s.id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lengths", default="1000,5000,10000")
    ap.add_argument("--chains", type=int, default=2, help="chains per length")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    lengths = [int(x) for x in a.lengths.split(",")]
    steps: dict[str, dict[int, float]] = {
        "generate": {}, "replay": {}, "check (readings)": {}, "score": {}}
    for n in lengths:
        edits = n * a.chains
        chains = generate_horizon([n], a.chains, seed=7)
        steps["generate"][n] = _best(partial(generate_horizon, [n], a.chains, 7), a.repeat) / edits
        for step, fn in (("replay", _replay), ("check (readings)", _check), ("score", _score)):
            steps[step][n] = _best(partial(fn, chains), a.repeat) / edits
    lo, hi = lengths[0], lengths[-1]
    print(f"microseconds per edit, {a.chains} chains per length (best of {a.repeat})")
    print(f"{'step':<18}" + "".join(f"{n:>10,}" for n in lengths) + f"   ratio {hi:,}/{lo:,}")
    for step, per in steps.items():
        cells = "".join(f"{per[n] * 1e6:>10.1f}" for n in lengths)
        print(f"{step:<18}{cells}   {per[hi] / per[lo]:.2f}")


if __name__ == "__main__":
    main()
