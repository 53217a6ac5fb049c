"""Regression methods on the simulation: FDR on the null pair, power and answers on 0.3 and 0.6
drops, per method, measured in one run (docs/statistics.md).

Suites of m = 60 scenarios, q = 0.1, baseline pass rates from the realistic mixture (40%
Beta(8,1), 30% Beta(4,4), 20% Beta(1,6), 10% exactly 0 or 1), every third scenario regressed
(its new answers turned into fails with probability 0.3 or 0.6); a fresh suite per replication;
scenarios whose true drop is under 10 points do not count as misses.

    .venv/bin/python bench/stats.py [--reps 1000] [--seed 2026]

The goal (issue 7): a valid method (FDR <= q on the null) that matches fixed k = 50 + BH's power
on 0.6 drops with at most half of its answers. The group-sequential design's boundaries were
tuned on other seeds (100-106); the default seed here was not used for tuning.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

import numpy as np  # noqa: E402

from butterfly.analysis.calibrate import simulated_study  # noqa: E402
from butterfly.analysis.regress import MIN_DROP  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--m", type=int, default=60)
    ap.add_argument("--q", type=float, default=0.1)
    a = ap.parse_args()
    t0 = time.perf_counter()
    keep: dict = {}  # type: ignore[type-arg]
    res, meta = simulated_study(m=a.m, reps=a.reps, q=a.q, seed=a.seed, pairs_n=150, big_cap=150,
                          keep=keep)
    took = time.perf_counter() - t0
    print(f"m = {meta['m']}, q = {meta['q']}, {meta['reps']} replications, seed {meta['seed']} "
          f"({took:.0f} s)")
    se_fdr = math.sqrt(a.q * (1 - a.q) / a.reps)
    print(f"Monte Carlo standard error of a null FDR near q: {se_fdr:.4f}")
    print()
    print("| method | null: FDR | null: false alarms | 0.3: power | 0.3: FDR | 0.3: answers "
          "| 0.6: power | 0.6: FDR | 0.6: answers |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in res.values():
        n, lo, hi = row["null"], row["0.3"], row["0.6"]
        print(f"| {row['label']} | {n['fdr']:.3f} | {n['false_alarms']:.2f} | {lo['power']:.3f} "
              f"| {lo['fdr']:.3f} | {lo['answers']:.0f} | {hi['power']:.3f} | {hi['fdr']:.3f} "
              f"| {hi['answers']:.0f} |")
    bh, gs = res["bh"]["0.6"], res["gs"]["0.6"]
    print()
    print(f"goal: gs vs fixed k = 50 + BH on 0.6 drops: power {gs['power']:.3f} vs "
          f"{bh['power']:.3f} ({gs['power'] - bh['power']:+.3f}), answers {gs['answers']:.0f} vs "
          f"{bh['answers']:.0f} ({gs['answers'] / bh['answers']:.2f} of them); null FDR "
          f"{res['gs']['null']['fdr']:.3f} (q = {a.q})")
    # paired Monte Carlo error of the power difference: bootstrap over replications (suites)
    (dg, drop), (db, _) = keep[("gs", "0.6")], keep[("bh", "0.6")]
    counted = drop >= MIN_DROP - 1e-12
    fg = (dg.regressed & counted).sum(-1)
    fb = (db.regressed & counted).sum(-1)
    nc = counted.sum(-1)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(nc), size=(2000, len(nc)))
    diffs = (fg[idx].sum(1) - fb[idx].sum(1)) / nc[idx].sum(1)
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    print(f"power difference gs - bh at 0.6: {(fg.sum() - fb.sum()) / nc.sum():+.4f}, 95% "
          f"bootstrap interval over replications [{lo:+.4f}, {hi:+.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
