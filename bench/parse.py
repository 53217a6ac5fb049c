"""Parser speed on realistic answers, per mode (best of several timeit runs).

    .venv/bin/python bench/parse.py
"""

from __future__ import annotations

import json
import os
import sys
import timeit

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


def main() -> None:
    print(f"{'answer':38s} {'strict':>10s} {'structured':>11s} {'lenient':>10s}")
    for label, text in ANSWERS.items():
        cells = []
        for mode in ("strict", "structured", "lenient"):
            n = 2000
            best = min(timeit.repeat(lambda m=mode, t=text: parse_answer(t, m), number=n, repeat=5))
            cells.append(f"{1e6 * best / n:8.1f} µs")
        print(f"{label:38s} {cells[0]:>10s} {cells[1]:>11s} {cells[2]:>10s}")


if __name__ == "__main__":
    main()
