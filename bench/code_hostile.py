"""A code run whose model answers a hostile program on every turn: its wall-clock time and the
harness's peak resident memory (issue 34: within 4 minutes and under 1 GiB for two scenarios).

Three models, one run each (``butterfly run --track code --suite butterfly-code --limit N``),
each a loopback fake server (``tests/fakeserver.py``, its own process) answering the same
program on every turn:

- **endless**: ``while True: pass``;
- **flood**: stdout written without end;
- **files**: forty files of 32 MiB (1.25 GiB).

The harness is ``butterfly run`` in a fresh interpreter with its own temporary directory; its
peak resident set is its own ``getrusage(RUSAGE_SELF).ru_maxrss`` (the sandboxed programs are
other processes), written as it exits. Each run is checked too: it ended (exit status 0),
every observed turn's settings are broken with a reason, and no sandbox directory
(``bfcode-*``) is left in its temporary directory.

    .venv/bin/python bench/code_hostile.py [--kinds endless,flood,files] [--scenarios 2]
        [--run-seconds S] [--limit-seconds 240] [--limit-rss-mib 1024]

``--run-seconds`` lowers the extractor's wall-clock limit of one run (``code.spec_of_program.
RUN_SECONDS``, 10 s) for a quick sample (``tests/butterfly/code/test_code_hostile.py``); the
figures of the issue are measured with the default. Exit status 1 when a run misses a target.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = {
    "endless": "while True:\n    pass\n",
    "flood": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
    "files": ("for i in range(40):\n"
              "    with open(f'big{i}.dat', 'wb') as f:\n"
              "        f.write(b'x' * (32 << 20))\n"),
}
HARNESS = """\
import json, resource, sys
import butterfly.code.spec_of_program as extract
if sys.argv[3]:
    extract.RUN_SECONDS = float(sys.argv[3])
from butterfly.cli import main
try:
    code = main(json.loads(sys.argv[1]))
finally:
    with open(sys.argv[2], "w") as f:
        f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.exit(code)
"""
"""``butterfly run`` in this interpreter, its peak resident set (KiB) written as it exits."""


@dataclass
class Measured:
    kind: str
    seconds: float
    rss_mib: float | None
    status: int | None
    turns: int
    observed: int
    broken_turns: int
    with_reason: int
    left_behind: int
    error: str = ""

    def ok(self, limit_seconds: float, limit_rss_mib: float) -> bool:
        return (self.status == 0 and self.seconds <= limit_seconds
                and self.rss_mib is not None and self.rss_mib < limit_rss_mib
                and self.left_behind == 0 and self.observed > 0
                and self.broken_turns == self.observed == self.with_reason)


def _server(answer: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fakeserver.py"), "--port",
                             "0", "--answer", str(answer)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    return proc, f"http://127.0.0.1:{port}/v1"


def _harness(argv: list[str], rss: Path, run_seconds: float | None, tmpdir: Path,
             limit_seconds: float) -> int | None:
    env = {**os.environ, "TMPDIR": str(tmpdir), "OPENAI_API_KEY": "sk-bench-fake"}
    proc = subprocess.Popen([sys.executable, "-c", HARNESS, json.dumps(argv), str(rss),
                             "" if run_seconds is None else str(run_seconds)],
                            cwd=tmpdir.parent, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=limit_seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # over the target: stopped, and reported as such
        _, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        sys.stderr.write(err[-2000:])
    return proc.returncode


def measure(kind: str, scenarios: int = 2, run_seconds: float | None = None,
            limit_seconds: float = 240.0) -> Measured:
    """One code run of ``scenarios`` scenarios of butterfly-code answered ``kind``."""
    from butterfly.runs.observe import read_observations  # after the path is set

    with tempfile.TemporaryDirectory(prefix="bf-hostile-") as tmp:
        work = Path(tmp)
        tmpdir, out, answer = work / "tmp", work / "run", work / "answer.txt"
        tmpdir.mkdir()
        answer.write_text(f"Here is the program.\n```python\n{PROGRAMS[kind]}```\n")
        server, api_base = _server(answer)
        try:
            argv = ["run", "--model", "openai/hostile", "--api-base", api_base, "--suite",
                    "butterfly-code", "--limit", str(scenarios), "--track", "code", "--out",
                    str(out), "--no-cache"]
            start = time.perf_counter()
            status = _harness(argv, work / "rss", run_seconds, tmpdir, limit_seconds)
            seconds = time.perf_counter() - start
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        rss = (work / "rss").read_text().strip() if (work / "rss").is_file() else ""
        left = len(list(tmpdir.glob("bfcode-*")))
        try:
            found = list(read_observations(out).known.values())
        except Exception as e:
            return Measured(kind, seconds, None, status, 0, 0, 0, 0, left, str(e))
        turns = sum(1 for _ in (out / "calls.jsonl").open()) if (out / "calls.jsonl").is_file() \
            else 0
        return Measured(kind, round(seconds, 1), int(rss) / 1024 if rss else None, status,
                        turns, len(found),
                        sum(1 for o in found if "broken" in o.observed.values()),
                        sum(1 for o in found if o.reason), left)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", default=",".join(PROGRAMS))
    p.add_argument("--scenarios", type=int, default=2)
    p.add_argument("--run-seconds", type=float, default=None)
    p.add_argument("--limit-seconds", type=float, default=240.0)
    p.add_argument("--limit-rss-mib", type=float, default=1024.0)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    rows = [measure(k, a.scenarios, a.run_seconds, a.limit_seconds) for k in a.kinds.split(",")]
    if a.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(f"{'kind':8} {'wall s':>7} {'peak RSS MiB':>12} {'exit':>4} {'calls':>5} "
              f"{'observed':>8} {'broken':>6} {'reason':>6} {'left':>4}  verdict")
        for r in rows:
            rss = "-" if r.rss_mib is None else f"{r.rss_mib:.0f}"
            verdict = "ok" if r.ok(a.limit_seconds, a.limit_rss_mib) else f"MISSED {r.error}"
            print(f"{r.kind:8} {r.seconds:7.1f} {rss:>12} {r.status!s:>4} {r.turns:5} "
                  f"{r.observed:8} {r.broken_turns:6} {r.with_reason:6} {r.left_behind:4}  "
                  f"{verdict}")
        print(f"targets: each run within {a.limit_seconds:g} s, the harness under "
              f"{a.limit_rss_mib:g} MiB resident, no sandbox directory left, every observed "
              "turn broken with its reason")
    return 0 if all(r.ok(a.limit_seconds, a.limit_rss_mib) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
