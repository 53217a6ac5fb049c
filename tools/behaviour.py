"""Snapshot what a user sees, to hold a refactor to "behaviour unchanged" (issue 22, item 6).

``python tools/behaviour.py DIR`` writes into DIR: ``score --json`` of every committed run
(``runs/*``), the ``--help`` of ``butterfly`` and of every command, the example report built
from the committed runs as ``tools/screenshots.py`` builds it, and a fresh notebook build. Run it
before and after a change and compare the two folders with ``diff -r``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent / "butterfly"
COMMANDS = ("generate", "validate", "oracle", "schema", "run", "merge", "repair", "score",
            "export", "runs", "flips", "audit", "show", "report", "compare", "calibrate",
            "notebook", "sequential", "parse")


def _out(args: list[str]) -> str:
    done = subprocess.run([str(BIN), *args], cwd=ROOT, capture_output=True, text=True,
                          env={"COLUMNS": "100", "PATH": "/usr/bin:/bin",
                               "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                               "PYTHONPATH": str(ROOT)}, check=False)
    return f"exit {done.returncode}\n{done.stdout}\n--- stderr\n{done.stderr}"


def main(folder: str) -> None:
    out = Path(folder)
    (out / "score").mkdir(parents=True, exist_ok=True)
    (out / "help").mkdir(exist_ok=True)
    for run in sorted(p for p in (ROOT / "runs").iterdir() if (p / "manifest.json").exists()):
        (out / "score" / f"{run.name}.json").write_text(_out(["score", "--json", str(run)]))
    (out / "help" / "butterfly.txt").write_text(_out(["--help"]))
    for cmd in COMMANDS:
        (out / "help" / f"{cmd}.txt").write_text(_out([cmd, "--help"]))
    (out / "help" / "notebook-build.txt").write_text(_out(["notebook", "build", "--help"]))
    runs = [str(ROOT / "runs" / n) for n in ("local-smollm2__butterfly-40__v1",
                                              "script-oracle__butterfly-40__v1",
                                              "script-lifo__butterfly-40__v1")]
    (out / "report.txt").write_text(_out(["report", *runs, "--html", str(out / "report.html")]))
    (out / "notebook.txt").write_text(_out(["notebook", "build", "--out",
                                            str(out / "butterflybench.ipynb")]))


if __name__ == "__main__":
    main(sys.argv[1])
