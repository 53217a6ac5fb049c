"""Harness time per model call, with full records kept on disk, against two baselines measured
side by side in the same run.

A generated suite is played against the built-in ``script/oracle`` agent, whose answer costs
almost nothing, so everything measured is harness time (prompt building, the client wrapper
with its concurrency, retries and timeouts, parsing, the append-only call log, the manifest):

- **runner**: the real runner in this process (``run_suite``), imports excluded;
- **command line**: ``butterfly run`` as a fresh process, start-up and end-of-run score included
  (the score alone is timed too, on the runner's directory);
- **bare loop**: the floor: builds the same messages turn by turn and writes one JSON record
  per call, nothing else;
- **inspect-ai**: the same multi-turn samples (the same system and user messages) through
  ``inspect_ai.eval`` with its mock model ``mockllm/model``, one ``generate`` per turn, its log
  written, measured by ``bench/harness_inspect.py`` in a throw-away virtualenv installed when
  the benchmark runs (cached between runs in ``--venv``). If it cannot be installed the column
  is skipped and the reason printed; no remembered figure stands in for it.

    .venv/bin/python bench/harness.py [--count 1000] [--concurrency 8] [--no-inspect]
                                      [--inspect-version 0.3.285] [--venv /tmp/bb-inspect-venv]
                                      [--litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.core.prompts import SYSTEM, added_messages, user_message  # noqa: E402
from butterfly.models.client import ModelClient  # noqa: E402
from butterfly.models.scripted import ScriptedProvider  # noqa: E402
from butterfly.runs.play import Progress, run_suite  # noqa: E402
from butterfly.runs.records import RunParams  # noqa: E402
from butterfly.runs.store import open_run  # noqa: E402
from butterfly.suite.generate import generate, proportional_counts  # noqa: E402
from butterfly.suite.load import dumps_suite  # noqa: E402
from oracle import Scenario, replay  # noqa: E402

HERE = Path(__file__).resolve().parent
BUTTERFLY = Path(sys.executable).parent / "butterfly"


def bare_loop(scenarios: list[Scenario], path: Path) -> float:
    """Seconds to build every turn's messages (extended turn by turn) and write a record."""
    t0 = time.perf_counter()
    with path.open("w", encoding="utf-8") as f:
        for s in scenarios:
            specs = replay(s)
            sent: list[dict[str, str]] = []
            answer: str | None = None
            for t in range(1, len(s.turns) + 1):
                added = added_messages(s, t, answer)
                sent += added
                answer = json.dumps(specs[t])
                f.write(json.dumps({"scenario": s.id, "turn": t, "messages_added": added,
                                    "raw": answer}) + "\n")
    return time.perf_counter() - t0


def runner(scenarios: list[Scenario], suite: Path, out: Path, concurrency: int,
           litellm: bool = False) -> float:
    """Seconds of the real runner in this process (open, play, close); with ``litellm``, the
    answers come through litellm from the test suite's loopback fake server."""
    calls = sum(len(s.turns) for s in scenarios)
    with contextlib.ExitStack() as stack:
        if litellm:
            sys.path.append(str(HERE.parent / "tests"))
            from fakeserver import FakeServer

            from butterfly.models.litellm_seam import LiteLLMProvider

            srv = stack.enter_context(FakeServer(lambda body: '{"python_version": "3.11"}'))
            provider: Any = LiteLLMProvider(api_base=srv.api_base, api_key="sk-x",
                                            litellm_model="openai/fake")
        else:
            provider = ScriptedProvider("oracle", {s.id: s for s in scenarios})
        t0 = time.perf_counter()
        state = open_run(out, "script/oracle", suite, scenarios,
                         RunParams(concurrency=concurrency))
        client = ModelClient(provider, concurrency=concurrency)
        result = asyncio.run(run_suite(scenarios, client, state, out, Progress(total=calls)))
        secs = time.perf_counter() - t0
    assert result.n_calls == calls and not result.incomplete
    return secs


def end_score(out: Path) -> float:
    """Seconds of the score ``butterfly run`` prints at its end, on the runner's directory."""
    from butterfly.analysis.scoring import score_run
    from butterfly.runs.reader import load_run

    run = load_run(out)  # the command line scores the Run it played, without this read
    t0 = time.perf_counter()
    score_run(run)
    return time.perf_counter() - t0


def command_line(suite: Path, out: Path, concurrency: int) -> float:
    """Seconds of ``butterfly run`` as a fresh process (start-up and final score included)."""
    t0 = time.perf_counter()
    subprocess.run([str(BUTTERFLY), "run", "--model", "script/oracle", "--suite", str(suite),
                    "--out", str(out), "--no-cache", "--concurrency", str(concurrency)],
                   check=True, capture_output=True)
    return time.perf_counter() - t0


def inspect_python(venv: Path, version: str) -> tuple[Path | None, str]:
    """The venv's python with inspect-ai installed (installed now if missing), or why not."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import inspect_ai, importlib.metadata as m; "
             "print(m.version('inspect-ai'))"]
    if python.exists():
        got = subprocess.run(probe, capture_output=True, text=True, check=False)
        if got.returncode == 0:
            return python, got.stdout.strip()
    print(f"installing inspect-ai=={version} into {venv} (once; cached for later runs)",
          flush=True)
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "-q", f"inspect-ai=={version}"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0 and "pip" in step:
            done = subprocess.run([*step[:-1], "inspect-ai"], capture_output=True, text=True,
                                  check=False)  # the pinned version is gone: the newest
        if done.returncode != 0:
            return None, (done.stderr.strip().splitlines() or ["no output"])[-1]
    got = subprocess.run(probe, capture_output=True, text=True, check=False)
    return (python, got.stdout.strip()) if got.returncode == 0 else (None, got.stderr[-300:])


def inspect_ai(scenarios: list[Scenario], tmp: Path, python: Path,
               concurrency: int) -> tuple[int, float]:
    """(calls, seconds of ``eval``) for the same samples through inspect-ai's mock model."""
    data = [{"id": s.id, "system": SYSTEM, "answer": json.dumps(s.initial),
             "turns": [user_message(s, t) for t in range(1, len(s.turns) + 1)]}
            for s in scenarios]
    samples = tmp / "samples.json"
    samples.write_text(json.dumps(data), encoding="utf-8")
    done = subprocess.run([str(python), str(HERE / "harness_inspect.py"), str(samples),
                           str(tmp / "inspect-logs"), str(concurrency)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-500:])
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return int(got["calls"]), float(got["seconds"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000, help="scenarios (default 1000)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--no-inspect", action="store_true", help="skip the inspect-ai column")
    ap.add_argument("--litellm", action="store_true",
                    help="the runner answers through litellm from a loopback fake server "
                    "(then also litellm, HTTP and the fake server's time: an upper bound)")
    ap.add_argument("--inspect-version", default="0.3.285")
    ap.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "bb-inspect-venv")
    a = ap.parse_args()
    if a.litellm:
        a.count = min(a.count, 300)
    scenarios = generate(proportional_counts(a.count), seed=3)
    calls = sum(len(s.turns) for s in scenarios)
    ms: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bb-harness-") as d:
        tmp = Path(d)
        suite = tmp / "suite.jsonl"
        suite.write_text(dumps_suite(scenarios))
        ms["bare loop"] = 1000 * bare_loop(scenarios, tmp / "bare.jsonl") / calls
        name = "runner + litellm" if a.litellm else "runner"
        ms[name] = 1000 * runner(scenarios, suite, tmp / "run", a.concurrency,
                                 a.litellm) / calls
        ms["end-of-run score"] = 1000 * end_score(tmp / "run") / calls
        ms["command line"] = 1000 * command_line(suite, tmp / "cli", a.concurrency) / calls
        why = "--no-inspect"
        if not a.no_inspect:
            python, why = inspect_python(a.venv, a.inspect_version)
            if python is not None:
                n, secs = inspect_ai(scenarios, tmp, python, a.concurrency)
                assert n == calls
                ms[f"inspect-ai {why}"] = 1000 * secs / n
    report(len(scenarios), calls, ms, why)


def report(n: int, calls: int, ms: dict[str, float], why: str) -> None:
    print(f"{n} scenarios, {calls} calls (multi-turn), script/oracle, records on disk")
    for name, v in ms.items():
        print(f"  {name:22} {v:7.3f} ms per call")
    run = ms.get("runner", ms.get("runner + litellm", 0.0))
    bare, cli = ms["bare loop"], ms["command line"]
    print(f"runner = {run / bare:.1f}x the bare loop; command line = {cli / bare:.1f}x; the "
          f"end-of-run score is {100 * ms['end-of-run score'] / cli:.0f}% of the command line")
    ours = [k for k in ms if k.startswith("inspect-ai")]
    if not ours:
        print(f"inspect-ai: skipped ({why})")
        return
    ins = ms[ours[0]]
    print(f"{ours[0]} = {ins / run:.1f}x the runner, {ins / cli:.1f}x the command line, "
          f"{ins / bare:.0f}x the bare loop")


if __name__ == "__main__":
    main()
