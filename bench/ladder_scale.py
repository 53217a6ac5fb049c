"""Time per edit against chain length: generator, oracle, guards, second readings, scorer.

Draws chains of each length with butterfly-horizon's planner (``generate_horizon``, the same
seeds every run), asked at butterfly-horizon's points and their tenfold multiples up to the
length (so the depth plan of contract v4 is at work), and times, per edit, in one process:
  1. the generator (every turn tried by the oracle as it is added, the depth plan's anchors);
  2. ``replay``: the oracle's spec after every turn, every guard but second readings;
  3. ``check``: every guard, second readings (contract v3) included;
  4. ``depth``: the depth guard's measures (``validate --depth``: ages at each ask point, the
     recency windows t/2 and t/10 replayed);
  5. the scorer on an oracle-answered run asked at those points (``score_conversations``:
     metrics, baselines with the recency baselines, horizon).
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

from butterfly.core.asking import asked_turns  # noqa: E402
from butterfly.core.metrics import recency_ks, score_conversations  # noqa: E402
from butterfly.core.turns import ConversationKey  # noqa: E402
from butterfly.suite.deep_chains import asked_of  # noqa: E402
from butterfly.suite.horizon_chains import generate_horizon  # noqa: E402
from butterfly.suite.load import HORIZON_ASK_AT  # noqa: E402
from oracle import Scenario, check, replay  # noqa: E402
from oracle.depth import chain_depth  # noqa: E402

ASK_AT = (*HORIZON_ASK_AT, 10_000)
"""butterfly-horizon's ask points, and 10,000 for the longest chains."""


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _score(chains: list[Scenario]) -> None:
    answers = {}
    for s in chains:
        o = replay(s)
        answers[ConversationKey(s.id, "E", 0)] = [o[t] for t in asked_turns(len(s.turns), ASK_AT)]
    score_conversations(chains, answers, [], ask_at=ASK_AT,
                        windows=recency_ks(chains, ASK_AT, 200))


def _depth(chains: list[Scenario]) -> None:
    for s in chains:
        list(chain_depth(s, replay(s), asked_of(len(s.turns), ASK_AT)))


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
        "generate": {}, "replay": {}, "check (readings)": {}, "depth": {}, "score": {}}
    for n in lengths:
        edits = n * a.chains
        draw = partial(generate_horizon, [n], a.chains, 7, ask_at=ASK_AT)
        chains = draw()
        steps["generate"][n] = _best(draw, a.repeat) / edits
        for step, fn in (("replay", _replay), ("check (readings)", _check), ("depth", _depth),
                         ("score", _score)):
            steps[step][n] = _best(partial(fn, chains), a.repeat) / edits
    lo, hi = lengths[0], lengths[-1]
    print(f"microseconds per edit, {a.chains} chains per length (best of {a.repeat})")
    print(f"{'step':<18}" + "".join(f"{n:>10,}" for n in lengths) + f"   ratio {hi:,}/{lo:,}")
    for step, per in steps.items():
        cells = "".join(f"{per[n] * 1e6:>10.1f}" for n in lengths)
        print(f"{step:<18}{cells}   {per[hi] / per[lo]:.2f}")


if __name__ == "__main__":
    main()
