"""The property tests at their full sweep: every example ``make test`` samples.

``make test`` draws a quarter of each property test's examples (``tests/sweep.py``); this runs
them with ``BUTTERFLY_SWEEP=full``, all of them, derandomized: the oracle's laws and its
agreement with the naive second oracle (``tests/oracle``), the parser's and the vote's laws,
and the fuzzing of the command line and its environment. Prints pytest's verdict and the time;
exits as pytest does.

    .venv/bin/python bench/laws.py [-n 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("tests/oracle", "tests/butterfly/core/test_parse.py", "tests/butterfly/core/test_vote.py",
         "tests/butterfly/test_fuzz.py", "tests/butterfly/test_fuzz_env.py")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", default="2", help="pytest-xdist workers (default 2)")
    args = ap.parse_args()
    env = {**os.environ, "BUTTERFLY_SWEEP": "full"}
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", args.n, "-p", "no:cacheprovider",
                        *FILES], cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    verdict = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"property tests, full sweep (BUTTERFLY_SWEEP=full): {verdict}; {took:.0f} s")
    if r.returncode:
        print(r.stdout[-4000:], r.stderr[-2000:], sep="\n")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
