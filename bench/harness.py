"""Harness time per model call, with full records kept on disk.

Runs a generated suite against the built-in ``script/oracle`` agent, whose answer costs almost
nothing, through the real runner: prompt building, the client wrapper (concurrency, retries,
timeouts), parsing, the append-only call log and the manifest. Everything measured is harness
time. Prints milliseconds per call and the ratio to the 0.5 ms target (inspect-ai spends about
4.9 ms per call on this machine class, measured by the brief; not re-measured here).

    .venv/bin/python bench/harness.py [--count 2000] [--concurrency 8] [--litellm]

With ``--litellm`` the answers come instead from the test suite's fake OpenAI-compatible server
on loopback, through litellm: the figure then also includes litellm, HTTP on loopback and the
fake server's own handling (which is not ours), so it is an upper bound on harness time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.models.client import ModelClient  # noqa: E402
from butterfly.models.scripted import ScriptedProvider  # noqa: E402
from butterfly.runs.play import Progress, run_suite  # noqa: E402
from butterfly.runs.records import RunParams  # noqa: E402
from butterfly.runs.store import open_run  # noqa: E402
from butterfly.suite.generate import generate, proportional_counts  # noqa: E402
from butterfly.suite.load import dumps_suite  # noqa: E402

TARGET_MS = 0.5
INSPECT_MS = 4.9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--litellm", action="store_true", help="answer through litellm + fake server")
    a = ap.parse_args()
    if a.litellm:
        a.count = min(a.count, 300)
    scenarios = generate(proportional_counts(a.count), seed=3)
    calls = sum(len(s.turns) for s in scenarios)
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite.jsonl"
        suite.write_text(dumps_suite(scenarios))
        out = Path(tmp) / "run"
        params = RunParams(concurrency=a.concurrency)
        t0 = time.perf_counter()
        state = open_run(out, "script/oracle", suite, scenarios, params)
        if a.litellm:
            sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
            from fakeserver import FakeServer

            from butterfly.models.litellm_seam import LiteLLMProvider

            answer = '{"python_version": "3.11"}'
            with FakeServer(lambda body: answer) as srv:
                client = ModelClient(LiteLLMProvider(api_base=srv.api_base, api_key="sk-x",
                                                     litellm_model="openai/fake"),
                                     concurrency=a.concurrency)
                t0 = time.perf_counter()
                result = asyncio.run(run_suite(scenarios, client, state, out,
                                               Progress(total=calls)))
        else:
            provider = ScriptedProvider("oracle", {s.id: s for s in scenarios})
            client = ModelClient(provider, concurrency=a.concurrency)
            result = asyncio.run(run_suite(scenarios, client, state, out, Progress(total=calls)))
        secs = time.perf_counter() - t0
        size = (out / "calls.jsonl").stat().st_size
    assert result.n_calls == calls and not result.incomplete
    per_call = 1000 * secs / calls
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(scenarios)} scenarios, {calls} calls in {secs:.2f} s "
          f"(records: {size / 1e6:.1f} MB, peak RSS {rss:.0f} MB)")
    label = "harness + litellm + loopback HTTP + fake server" if a.litellm else "harness"
    print(f"{label} time per call: {per_call:.3f} ms  = {per_call / TARGET_MS:.2f}x the "
          f"{TARGET_MS} ms target; {INSPECT_MS / per_call:.1f}x less than inspect-ai's "
          f"{INSPECT_MS} ms")


if __name__ == "__main__":
    main()
