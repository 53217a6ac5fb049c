"""The Kaggle notebook on the embedded model, against the CLI: the same raw answers.

``make test`` leaves this check out (about 90 s beside its other worker, where llama.cpp slows
to a few tokens a second): it checks the notebook against a fake server, and the pipeline for
real once through the CLI. This runs ``tests/butterfly/kaggle/test_notebook.py``'s real-model
test (``BUTTERFLY_REAL_NOTEBOOK=1``) alone, on an otherwise idle machine: one llama.cpp server
at a time, never beside other heavy work. Prints pytest's verdict and the time; exits as pytest.

    .venv/bin/python bench/notebook_real.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/butterfly/kaggle/test_notebook.py::test_notebook_on_smollm2_gives_the_cli_answers"


def main() -> int:
    env = {**os.environ, "BUTTERFLY_REAL_NOTEBOOK": "1"}
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", TEST],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    verdict = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"the notebook on SmolLM2 against the CLI: {verdict}; {took:.0f} s")
    if r.returncode or "skipped" in verdict:
        print(r.stdout[-4000:], r.stderr[-2000:], sep="\n")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
