"""Parser speed on realistic answers, per mode (best of several timeit runs), beside a baseline
timed in the same run: ``json.loads`` of the bare spec (the least any reader of an answer does),
so each mode is also printed as a multiple of it (absolute times drift with the machine's load).

    .venv/bin/python bench/parse.py
"""

from __future__ import annotations

import json
import os
import sys
import timeit
from collections.abc import Callable

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.core.parse import parse_answer  # noqa: E402
from oracle import canonical_initial  # noqa: E402

SPEC = {**canonical_initial(), "timeout_seconds": "60", "parallel": "on", "progress_bar": "off"}
ANSWERS = {
    "bare JSON (0.5 KB)": json.dumps(SPEC),
    "prose + fenced JSON (0.9 KB)": "Here is the updated spec:\n\n```json\n"
    + json.dumps(SPEC, indent=2) + "\n```\nI changed only the timeout.",
    "echo + reasoning + final (1.5 KB)": "Current spec: " + json.dumps(canonical_initial())
    + "\nThe user asks for a 60 second timeout, parallel on (so no progress bar).\n"
    + json.dumps(SPEC, indent=1),
    "python dict, needs repair (0.6 KB)": repr(SPEC).replace("}", ",}"),
}


N = 2000


def _best(fn: Callable[[], object]) -> float:
    """Microseconds per call, best of five."""
    return 1e6 * min(timeit.repeat(fn, number=N, repeat=5)) / N


def main() -> None:
    base = _best(lambda: json.loads(ANSWERS["bare JSON (0.5 KB)"]))
    print(f"baseline: json.loads of the bare 0.5 KB spec {base:.1f} µs; each cell is µs per "
          "answer (x the baseline)")
    print(f"{'answer':38s} {'strict':>16s} {'structured':>16s} {'lenient':>16s}")
    for label, text in ANSWERS.items():
        cells = []
        for mode in ("strict", "structured", "lenient"):
            us = _best(lambda m=mode, t=text: parse_answer(t, m))
            cells.append(f"{us:7.1f} ({us / base:4.1f}x)")
        print(f"{label:38s} {cells[0]:>16s} {cells[1]:>16s} {cells[2]:>16s}")


if __name__ == "__main__":
    main()
