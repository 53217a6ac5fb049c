"""Calls in flight: the fast path, litellm and a bare aiohttp loop side by side, each as a
fraction of the ideal, against a loopback OpenAI-compatible server; and rate limits.

    .venv/bin/python bench/concurrency.py                  # both settings (about 2 minutes)
    .venv/bin/python bench/concurrency.py --setting 50ms   # one setting: gpu or 50ms
    .venv/bin/python bench/concurrency.py --rate-limit     # 429s: adaptive vs fixed window

The server (aiohttp, in a separate process, so its CPU is not counted as ours) answers every
call after a fixed latency. Each path plays the same generated suite: **fast** is ``butterfly
run``'s machinery (``run_suite``, the real ``ModelClient`` and the fast-path provider, every
record written to disk), **litellm** the same through ``LiteLLMProvider`` (on fewer scenarios
by default: it costs several ms of CPU per call; **litellm-httpx** is litellm as the seam ran
it before, over httpx), **bare** a plain aiohttp loop that builds
the same conversations and keeps nothing. The **ideal** is the conversations scheduled
greedily in suite order, each turn waiting for the previous one, every call taking exactly the
server's latency (a simulation of the suite's turn counts at the concurrency); each path is
reported as ideal time / its wall time. CPU ms per call is this process's CPU time (every
thread; not the server's) over the calls. The server counts the TCP connections it accepted
and the most calls it held at once.

``--rate-limit``: the server admits calls through a token bucket (``--rate`` per second) and
answers the rest 429 at once with ``x-ratelimit-reset-requests`` (or ``Retry-After`` with
``--retry-after``): the fast path with adaptive concurrency and with a fixed window, each as a
fraction of the limit's ideal (calls / rate, or the latency-bound ideal if longer).
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

KEY = "sk-bench"


@dataclass(frozen=True)
class Setting:
    concurrency: int
    latency: float
    target: float


SETTINGS = {"gpu": Setting(256, 0.5, 0.9), "50ms": Setting(64, 0.05, 0.6)}
CPU_TARGET_MS = 1.5
DEFAULT_RETRIES = 4  # butterfly.core.vocab.DEFAULTS.retries (checked in main)


class Server:
    """The loopback server (``bench/loopback.py``) in a child process."""

    def __init__(self, latency: float, rate: float = 0, burst: float = 1,
                 retry_after: bool = False) -> None:
        cmd = [sys.executable, str(Path(__file__).with_name("loopback.py")), "--latency",
               str(latency), "--rate", str(rate), "--burst", str(burst)]
        cmd += ["--retry-after"] if retry_after else []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"
        self.api_base = self.url + "/v1"

    def _get(self, path: str, data: bytes | None = None) -> dict[str, int]:
        with urllib.request.urlopen(self.url + path, data=data, timeout=10) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    def stats(self) -> dict[str, int]:
        return self._get("/stats")

    def reset(self) -> None:
        self._get("/reset", b"")

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# -- the ideal -------------------------------------------------------------------------------

def ideal_seconds(turns: Sequence[int], concurrency: int, latency: float) -> float:
    """Conversations started greedily in suite order on ``concurrency`` slots, each turn
    taking ``latency`` after the previous one: when the last one ends."""
    slots = [0.0] * max(1, min(concurrency, len(turns)))
    end = 0.0
    for n in turns:
        finish = heapq.heappop(slots) + n * latency
        heapq.heappush(slots, finish)
        end = max(end, finish)
    return end


# -- the paths -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Measured:
    path: str
    scenarios: int
    calls: int
    wall: float
    cpu: float
    server: dict[str, int]
    window: str = ""
    failed: int = 0
    """Calls still failing after their retries (their conversations left incomplete)."""


def _suite(n: int, tmp: Path) -> tuple[list[Any], Path]:
    from butterfly.suite.generate import generate, proportional_counts
    from butterfly.suite.load import dumps_suite

    scenarios = generate(proportional_counts(n), seed=3)
    path = tmp / f"suite-{n}.jsonl"
    path.write_text(dumps_suite(scenarios))
    return scenarios, path


def _litellm_transport(httpx: bool) -> None:
    """litellm over httpx (how the seam ran before issue 15) or its aiohttp transport (now);
    its cached clients are dropped so the next call builds one of the chosen kind."""
    from butterfly.models.litellm_seam import RATES, litellm

    litellm.disable_aiohttp_transport = httpx
    litellm.in_memory_llm_clients_cache.flush_cache()
    RATES.clear()


def _provider(way: str, api_base: str, concurrency: int) -> Any:
    if way.startswith("litellm"):
        from butterfly.models.litellm_seam import LiteLLMProvider

        _litellm_transport(httpx=way.endswith("httpx"))
        return LiteLLMProvider(api_base=api_base, api_key=KEY)
    from butterfly.models.openai_http import OpenAIHTTPProvider

    return OpenAIHTTPProvider(api_base=api_base, api_key=KEY, connections=concurrency)


def run_harness(way: str, scenarios: list[Any], suite: Path, srv: Server, concurrency: int,
                tmp: Path, adaptive: bool = True, label: str | None = None,
                decrease: float | None = None, retries: int = 50) -> Measured:
    """``butterfly run``'s machinery: run_suite, ModelClient, the provider, records on disk."""
    from butterfly.models.client import ModelClient
    from butterfly.runs.play import Progress, run_suite
    from butterfly.runs.records import RunParams
    from butterfly.runs.store import open_run

    out = Path(tempfile.mkdtemp(dir=tmp))
    params = RunParams(concurrency=concurrency, retries=retries, timeout=60)
    state = open_run(out, "openai/fake", suite, scenarios, params)
    client = ModelClient(_provider(way, srv.api_base, concurrency), concurrency=concurrency,
                         retries=retries, timeout=60, adaptive=adaptive)
    if decrease is not None:
        from butterfly.models.window import Window

        client.window = Window(concurrency, decrease=decrease)
    calls = sum(len(s.turns) for s in scenarios)

    async def play() -> Any:
        try:
            return await run_suite(scenarios, client, state, out, Progress(total=calls))
        finally:
            await client.aclose()

    srv.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(play())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert retries < 50 or (result.n_calls == calls and not result.incomplete), result
    w = client.window
    answered = result.n_calls - result.provider_errors
    return Measured(label or way, len(scenarios), answered, wall, cpu, srv.stats(),
                    f"{w.smallest}..{w.ceiling} (now {w.size:.0f})", result.provider_errors)


def run_bare(scenarios: list[Any], srv: Server, concurrency: int) -> Measured:
    """A plain aiohttp loop: the same conversations, one pooled session, nothing kept."""
    import aiohttp

    url = srv.api_base + "/chat/completions"

    async def play() -> None:
        conn = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=conn) as session:
            slots = asyncio.Semaphore(concurrency)

            async def conversation(s: Any) -> None:
                async with slots:
                    msgs = [{"role": "system", "content": "Keep the spec."}]
                    for turn in s.turns:
                        msgs.append({"role": "user", "content": turn.text})
                        async with session.post(url, json={"model": "fake", "messages": msgs,
                                                           "temperature": 0.0}) as r:
                            data = await r.json()
                        msgs.append(data["choices"][0]["message"])

            await asyncio.gather(*(conversation(s) for s in scenarios))

    srv.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(play())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return Measured("bare aiohttp", len(scenarios), sum(len(s.turns) for s in scenarios),
                    wall, cpu, srv.stats())


# -- printing --------------------------------------------------------------------------------

HEAD = (f"{'path':<22}{'scenarios':>10}{'calls':>7}{'wall s':>8}{'calls/s':>9}{'of ideal':>10}"
        f"{'CPU ms/call':>13}{'TCP opened':>12}{'most in flight':>16}")


def row(m: Measured, ideal: float) -> str:
    s = m.server
    return (f"{m.path:<22}{m.scenarios:>10}{m.calls:>7}{m.wall:>8.2f}{m.calls / m.wall:>9.0f}"
            f"{ideal / m.wall:>10.2f}{1000 * m.cpu / m.calls:>13.2f}{s['opened']:>12}"
            f"{s['most_in_flight']:>16}")


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def one_setting(name: str, a: argparse.Namespace, tmp: Path) -> None:
    st = SETTINGS[name]
    scenarios, suite = _suite(a.scenarios, tmp)
    few, few_suite = _suite(a.litellm_scenarios, tmp)
    ideal = ideal_seconds([len(s.turns) for s in scenarios], st.concurrency, st.latency)
    ideal_few = ideal_seconds([len(s.turns) for s in few], st.concurrency, st.latency)
    calls = sum(len(s.turns) for s in scenarios)
    print(f"\n## {name}: {st.concurrency} in flight, server latency {st.latency:g} s; "
          f"ideal {ideal:.2f} s for {calls} calls ({calls / ideal:.0f} calls/s)")
    print(HEAD)
    with Server(st.latency) as srv:
        fast = run_harness("fast", scenarios, suite, srv, st.concurrency, tmp)
        print(row(fast, ideal), flush=True)
        bare = run_bare(scenarios, srv, st.concurrency)
        print(row(bare, ideal), flush=True)
        if not a.no_litellm:
            for way in ("litellm", "litellm-httpx"):
                print(row(run_harness(way, few, few_suite, srv, st.concurrency, tmp),
                          ideal_few), flush=True)
    frac, cpu = ideal / fast.wall, 1000 * fast.cpu / fast.calls
    print(f"target: fast path >= {st.target} of ideal: {frac:.2f}, {verdict(frac >= st.target)}"
          f"; harness CPU <= {CPU_TARGET_MS} ms/call: {cpu:.2f}, "
          f"{verdict(cpu <= CPU_TARGET_MS)}; fast / bare aiohttp: {bare.wall / fast.wall:.2f}")


def rate_limited(a: argparse.Namespace, tmp: Path) -> None:
    scenarios, suite = _suite(a.scenarios, tmp)
    calls = sum(len(s.turns) for s in scenarios)
    c, lat = a.concurrency, a.latency
    ideal = max(ideal_seconds([len(s.turns) for s in scenarios], c, lat),
                (calls - a.burst) / a.rate)
    header = "Retry-After" if a.retry_after else "x-ratelimit-reset-requests"
    print(f"\n## rate limit: {a.rate:g} calls/s (token bucket, burst {a.burst:g}; 429 with "
          f"{header}), {c} in flight, latency {lat:g} s; {calls} calls, ideal {ideal:.2f} s")
    limit = calls / ideal
    print(f"the limit allows {limit:.0f} answered calls/s here; every call has the default "
          f"{DEFAULT_RETRIES} retries")
    print(f"{'path':<22}{'wall s':>8}{'answered/s':>12}{'of limit':>10}{'failed':>8}{'429s':>7}"
          f"{'429 share':>11}{'CPU ms/call':>13}{'window':>22}")
    ways: list[tuple[str, bool, float | None]] = [("fast, adaptive", True, None)]
    ways += [(f"fast, adaptive x{d:g}", True, d) for d in a.decrease]
    ways.append(("fast, fixed window", False, None))
    with Server(lat, a.rate, a.burst, a.retry_after) as srv:
        for label, adaptive, decrease in ways:
            m = run_harness("fast", scenarios, suite, srv, c, tmp, adaptive, label, decrease,
                            retries=DEFAULT_RETRIES)
            s = m.server
            print(f"{m.path:<22}{m.wall:>8.2f}{m.calls / m.wall:>12.0f}"
                  f"{m.calls / m.wall / limit:>10.2f}{m.failed:>8}{s['rate_limited']:>7}"
                  f"{s['rate_limited'] / s['requests']:>11.2f}"
                  f"{1000 * m.cpu / max(1, m.calls):>13.2f}{m.window:>22}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setting", choices=sorted(SETTINGS), help="one setting only")
    ap.add_argument("--scenarios", type=int, default=1000, help="generated scenarios")
    ap.add_argument("--litellm-scenarios", type=int, default=300,
                    help="scenarios played through litellm (its CPU cost is large)")
    ap.add_argument("--no-litellm", action="store_true", help="skip the litellm path")
    ap.add_argument("--rate-limit", action="store_true", help="the 429 benchmark instead")
    ap.add_argument("--rate", type=float, default=200.0, help="--rate-limit: calls/s allowed")
    ap.add_argument("--burst", type=float, default=40.0,
                    help="--rate-limit: bucket size (default: one round trip at the rate)")
    ap.add_argument("--concurrency", type=int, default=96, help="--rate-limit: in flight "
                    "(default: what answers a third of a fixed window's calls 429)")
    ap.add_argument("--latency", type=float, default=0.2, help="--rate-limit: server latency")
    ap.add_argument("--retry-after", action="store_true", help="429s say Retry-After")
    ap.add_argument("--decrease", type=lambda t: [float(x) for x in t.split(",")], default=[],
                    help="--rate-limit: also adaptive windows shrinking by these factors "
                    "(e.g. 0.5,0.9; the client's own is 0.75)")
    a = ap.parse_args(argv)
    from butterfly.core.vocab import DEFAULTS

    assert DEFAULTS.retries == DEFAULT_RETRIES
    print(f"bench/concurrency.py on {os.cpu_count()} cores (load average "
          f"{os.getloadavg()[0]:.2f}); the server runs in its own process")
    with tempfile.TemporaryDirectory() as tmp:
        if a.rate_limit:
            if a.scenarios == 1000:
                a.scenarios = 400
            rate_limited(a, Path(tmp))
            return
        for name in [a.setting] if a.setting else ["gpu", "50ms"]:
            one_setting(name, a, Path(tmp))


if __name__ == "__main__":
    main()
