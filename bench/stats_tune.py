"""How the group-sequential design's boundaries were chosen (docs/statistics.md, section 5).

Simulated suites as in bench/stats.py (m = 60, q = 0.1, the realistic mixture, every third
scenario regressed) on the tuning seeds 100 (null), 103 (0.3) and 106 (0.6), 200 replications
each; a grid of looks, efficacy and futility boundaries; prints the designs using at most 3,000
answers on 0.6 drops (half of fixed k = 50 + BH), best power first. Validity does not depend on
the choice (every design in the grid is valid); bench/stats.py measures the chosen one on
other seeds.

    .venv/bin/python bench/stats_tune.py   (about a minute)
"""

from __future__ import annotations

import os
import sys

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

import numpy as np  # noqa: E402

from butterfly.analysis import regress as R  # noqa: E402
from butterfly.analysis import simulate as S  # noqa: E402

LOOKS = [(6, 15, 30, 60, 100), (8, 20, 40, 70, 110), (6, 12, 25, 50, 100), (6, 15, 30, 60, 120),
         (5, 12, 25, 50, 90, 140), (8, 16, 32, 64, 128)]
EFFICACY = [(0.002,), (0.001,), (0.0005, 0.001, 0.002), (0.001, 0.002, 0.003)]
FUTILITY = [(0.7, 0.5, 0.4, 0.3), (0.6, 0.5, 0.4, 0.3), (0.8, 0.6, 0.45, 0.35),
            (0.9, 0.7, 0.5, 0.35, 0.3), (0.5, 0.4, 0.3, 0.25)]


def suites(reps: int, m: int, drop: float, n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    p = S.mixture_rates(rng, (reps, m))
    which = S.regressed_mask(m)
    a = rng.random((reps, m, n)) < p[..., None]
    b = rng.random((reps, m, n)) < p[..., None]
    if drop:
        b = S.inject(b, rng, np.broadcast_to(which, (reps, m)), drop)
    true_drop = np.where(which, p * drop, 0.0)
    return a, b, true_drop


def main() -> int:
    data = {d: suites(200, 60, d, 200, 100 + int(d * 10)) for d in (0.0, 0.3, 0.6)}
    rows = []
    for looks in LOOKS:
        for c in EFFICACY:
            for f in FUTILITY:
                o = {d: S.outcome(R.method_gs(a, b, 0.1, looks=looks, efficacy=c, futility=f),
                                  td) for d, (a, b, td) in data.items()}
                rows.append((o[0.6].power or 0.0, o[0.6].answers, o[0.3].power or 0.0,
                             o[0.3].answers, o[0.0].fdr, looks, c, f))
    base = {d: S.outcome(R.method_bh(a, b, 50, 0.1), td) for d, (a, b, td) in data.items()}
    print(f"fixed k = 50 + BH: 0.6 power {base[0.6].power:.3f}, answers {base[0.6].answers:.0f}")
    for r in sorted(rows, key=lambda r: -r[0]):
        if r[1] <= 3000:
            print(f"0.6 power {r[0]:.3f} answers {r[1]:.0f} | 0.3 power {r[2]:.3f} answers "
                  f"{r[3]:.0f} | null FDR {r[4]:.3f} | looks {r[5]} c {r[6]} f {r[7]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
