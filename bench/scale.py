"""Memory and time at scale: peak RSS and seconds of each command, at two suite sizes.

For each size N it generates a mixed suite (``butterfly generate --count N``), runs it against a
scripted agent through the command line, then scores it (``score``, ``score --json``) and writes
the HTML report, each command a fresh child process whose own peak RSS is read from
``os.wait4`` (the kernel's ``ru_maxrss`` of that child alone). Beside them, in the same run, it
measures ``butterfly --version``: the interpreter's floor, which no command can go under.

Prints, per command, peak RSS at each size, the growth from the smallest to the largest size
(target: under 100 MB), the peak against the 300 MB target, and seconds per 1,000 scenarios at
each size and their ratio (at most about 1: no worse than linear; the fixed start-up, printed
as the same command on a 10-scenario suite, makes the small size dearer per scenario), and
the marginal seconds per 1,000 scenarios between the two sizes.

    .venv/bin/python bench/scale.py [--sizes 1000,10000] [--model script/noisy:p=0.3]
                                    [--concurrency 64] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

BUTTERFLY: Final = Path(sys.executable).parent / "butterfly"
PEAK_TARGET_MB: Final = 300.0
GROWTH_TARGET_MB: Final = 100.0
COMMANDS: Final = ("run", "score", "score --json", "report")


def measure(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one fresh child process; its output is discarded."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    secs = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {child.returncode}: {err[-500:]}")
    return secs, usage.ru_maxrss / 1024


def argv_of(command: str, tmp: Path, a: argparse.Namespace) -> list[str]:
    run = str(tmp / "run")
    if command == "run":
        return [str(BUTTERFLY), "run", "--model", a.model, "--suite", str(tmp / "suite.jsonl"),
                "--out", run, "--no-cache", "--concurrency", str(a.concurrency)]
    if command == "report":
        return [str(BUTTERFLY), "report", run, "--html", str(tmp / "report.html")]
    return [str(BUTTERFLY), *command.split()[:1], run, *command.split()[1:]]


def one_size(n: int, a: argparse.Namespace, quiet: bool = False
             ) -> dict[str, tuple[float, float]]:
    """Every command's (seconds, peak MB) on a fresh suite of ``n`` scenarios."""
    with tempfile.TemporaryDirectory(prefix="bb-scale-") as d:
        tmp = Path(d)
        subprocess.run([str(BUTTERFLY), "generate", "--count", str(n), "--seed", str(a.seed),
                        "--out", str(tmp / "suite.jsonl")], check=True, capture_output=True)
        got = {c: measure(argv_of(c, tmp, a)) for c in COMMANDS}
        size = (tmp / "run" / "calls.jsonl").stat().st_size
        lines = sum(1 for _ in (tmp / "run" / "calls.jsonl").open("rb"))
    if quiet:
        return got
    print(f"{n} scenarios: {lines} calls, calls.jsonl {size / 1e6:.1f} MB", flush=True)
    for c in COMMANDS:
        secs, mb = got[c]
        print(f"  {c:13} {secs:7.2f} s  {1000 * secs / n:6.2f} s per 1,000 scenarios  "
              f"peak RSS {mb:6.0f} MB", flush=True)
    return got


def verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def summary(sizes: list[int], got: dict[int, dict[str, tuple[float, float]]],
            floor: float, start: dict[str, tuple[float, float]]) -> None:
    lo, hi = sizes[0], sizes[-1]
    print(f"\ninterpreter floor (butterfly --version): peak RSS {floor:.0f} MB; each command "
          "on a 10-scenario suite: " + ", ".join(f"{c} {start[c][0]:.2f} s {start[c][1]:.0f} MB"
                                                 for c in COMMANDS))
    for c in COMMANDS:
        peak = max(got[n][c][1] for n in sizes)
        line = (f"{c:13} peak {peak:5.0f} MB = {peak / PEAK_TARGET_MB:.2f}x the "
                f"{PEAK_TARGET_MB:.0f} MB target ({verdict(peak < PEAK_TARGET_MB)})")
        if hi != lo:
            growth = got[hi][c][1] - got[lo][c][1]
            per = [1000 * got[n][c][0] / n for n in (lo, hi)]
            marginal = 1000 * (got[hi][c][0] - got[lo][c][0]) / (hi - lo)
            line += (f"; {lo} -> {hi}: +{growth:.0f} MB (target < {GROWTH_TARGET_MB:.0f} MB: "
                     f"{verdict(growth < GROWTH_TARGET_MB)}), s per 1,000 scenarios "
                     f"{per[0]:.2f} -> {per[1]:.2f} (ratio {per[1] / per[0]:.2f}; marginal "
                     f"{marginal:.2f})")
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000", help="suite sizes, comma-separated")
    ap.add_argument("--model", default="script/noisy:p=0.3")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    sizes = sorted(int(x) for x in a.sizes.split(","))
    floor = measure([str(BUTTERFLY), "--version"])[1]
    start = one_size(10, a, quiet=True)
    got = {n: one_size(n, a) for n in sizes}
    summary(sizes, got, floor, start)


if __name__ == "__main__":
    main()
