"""The horizon metric against an agent whose horizon is known: script/drift:p=P on butterfly-long.

Runs ``butterfly run --model script/drift:p=P --suite butterfly-long --repeats R --no-cache``
into a temporary directory (or, with --direct, calls the agent's pure function), reads the run's
calls, and prints, per chain length, the observed final match beside the drift agent's exact
expectation (butterfly.core.agents.drift_expected_final_match), then the horizon with its bootstrap
interval beside the horizon of the expected curve (the same logistic fit on the exact expected
rates: the value the estimate converges to) and whether the interval covers it.

    .venv/bin/python bench/horizon.py [--p 0.05] [--repeats 5] [--seed 0] [--direct]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.core.agents import drift_expected_final_match, drift_spec  # noqa: E402
from butterfly.core.horizon_metric import Conversation, crossing, horizon  # noqa: E402
from butterfly.core.logistic import fit_logistic  # noqa: E402
from butterfly.suite.load import load_suite, resolve_suite  # noqa: E402
from oracle import Scenario, replay  # noqa: E402


def conversations_from_run(suite: str, p: float, repeats: int, seed: int) -> list[Conversation]:
    from butterfly.runs.play import load_run_records

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "butterfly.cli", "run", "--model", f"script/drift:p={p}",
               "--suite", suite, "--repeats", str(repeats), "--seed", str(seed), "--no-cache",
               "--out", str(out)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        _, scenarios, records = load_run_records(out)
    by_id = {s.id: s for s in scenarios}
    oracles = {s.id: replay(s) for s in scenarios}
    matches: dict[tuple[str, int], dict[int, bool]] = defaultdict(dict)
    for rec in records.values():
        matches[(rec.scenario, rec.repeat)][rec.turn] = rec.spec == oracles[rec.scenario][rec.turn]
    out_list = []
    for (sid, _r), by_turn in sorted(matches.items()):
        n = len(by_id[sid].turns)
        tm = tuple(by_turn[t] for t in range(1, n + 1))
        out_list.append(Conversation(sid, n, tm[-1], tm))
    return out_list


def conversations_direct(scenarios: list[Scenario], p: float, repeats: int,
                         seed: int) -> list[Conversation]:
    out = []
    for r in range(repeats):
        for s in scenarios:
            o = replay(s)
            tm = tuple(drift_spec(s, t, seed + r, p, o) == o[t] for t in range(1, len(o)))
            out.append(Conversation(s.id, len(s.turns), tm[-1], tm))
    return out


def expected_horizon(scenarios: list[Scenario], p: float) -> tuple[dict[int, float], float]:
    """Expected final match by length, and the crossing of the logistic fit to it."""
    total: dict[int, float] = defaultdict(float)
    count: dict[int, int] = defaultdict(int)
    for s in scenarios:
        total[len(s.turns)] += drift_expected_final_match(s, p)
        count[len(s.turns)] += 1
    lengths = sorted(count)
    fit = fit_logistic(lengths, [total[n] for n in lengths], [count[n] for n in lengths])
    assert fit is not None
    return {n: total[n] / count[n] for n in lengths}, crossing(fit, lengths[0], lengths[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--suite", default="butterfly-long")
    ap.add_argument("--direct", action="store_true",
                    help="call the agent's function instead of `butterfly run`")
    a = ap.parse_args()
    t0 = time.perf_counter()
    scenarios = load_suite(resolve_suite(a.suite))
    if a.direct:
        convs = conversations_direct(scenarios, a.p, a.repeats, a.seed)
    else:
        convs = conversations_from_run(a.suite, a.p, a.repeats, a.seed)
    h = horizon(convs, seed=a.seed)
    expected, true_turns = expected_horizon(scenarios, a.p)
    how = "direct" if a.direct else "butterfly run"
    print(f"script/drift:p={a.p} on {a.suite}, {a.repeats} repeats, {len(convs)} conversations "
          f"({how}, {time.perf_counter() - t0:.1f} s)")
    print(f"{'length':>6}  {'n':>4}  {'observed':>8}  {'expected':>8}")
    for n, (k, rate) in sorted(h.by_length.items()):
        print(f"{n:>6}  {k:>4}  {rate:>8.3f}  {expected[n]:>8.3f}")
    lo, hi = h.ci
    covers = (lo is None or lo <= true_turns) and (hi is None or true_turns <= hi)
    fmt = lambda x: "none" if x is None else f"{x:.2f}"  # noqa: E731
    print(f"horizon {fmt(h.turns)} turns, 95% interval [{fmt(lo)}, {fmt(hi)}]; "
          f"expected curve's horizon {true_turns:.2f}: {'covered' if covers else 'NOT covered'}")
    return 0 if covers else 1


if __name__ == "__main__":
    raise SystemExit(main())
