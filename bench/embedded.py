"""The embedded model under load: tokens/s idle and beside a busy neighbour, side by side.

Three figures, each a ratio measured in this one run (never against a remembered figure):

1. **Load.** For each thread setting (the default, one thread fewer than the CPUs, and the
   old default, every CPU), the server generates a fixed number of tokens per request
   (``ignore_eos``, streamed, within a time budget), idle, then again while one busy process
   (a Python spin loop) shares the cores. Prints tokens/s (the gaps between streamed tokens;
   prompts: the time to the first token) and busy / idle (target: at least 0.5 for the
   default).
2. **Harness against the server.** A slice of butterfly-40 played through ``butterfly.run``
   (records on disk, parsing, the same HTTP path as ``butterfly run``) against the server:
   the completion tokens the records hold per second of wall time, against the tokens the
   server says it generated per second it spent on prompts and generation (``GET /metrics``).
   Target: at least 0.9 (the harness keeps the server busy).
3. **Prompt cache in chat mode.** The share of prompt tokens the server served from its
   prompt cache (the records' ``tokens.cached`` over ``tokens.prompt``), chat against restate.

    .venv/bin/python bench/embedded.py [--requests 6] [--tokens 48] [--slice 4]

Run it on an otherwise idle machine: it makes its own neighbour. Takes about 3 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.api import run  # noqa: E402
from butterfly.core.vocab import Mode  # noqa: E402
from butterfly.models.embedded import EmbeddedServer, metrics, resolve_gguf  # noqa: E402
from butterfly.models.embedded_child import _cpus, _default_threads  # noqa: E402

PROMPT = ("Restate this spec of a command-line tool as JSON, one key per setting: " + ", ".join(
    f"setting_{i} value_{i * 7 % 13}" for i in range(40)) + ".")
"""About 400 tokens: long enough for a prompt-processing rate."""


def _stream(server: EmbeddedServer, i: int, tokens: int, deadline: float
            ) -> tuple[list[float], float]:
    """One streamed call of ``tokens`` tokens: the arrival time of each token, and when it was
    sent. Cut off at ``deadline`` (the server stops when the connection closes), so a server
    starved by its neighbour cannot stall the benchmark."""
    body = {"model": server.model_alias, "max_tokens": tokens, "temperature": 0,
            "ignore_eos": True, "cache_prompt": False, "stream": True,
            "messages": [{"role": "user", "content": f"{PROMPT} ({i})"}]}
    req = urllib.request.Request(f"{server.api_base}/chat/completions",
                                 json.dumps(body).encode(), {"Content-Type": "application/json"})
    sent = time.perf_counter()
    arrivals: list[float] = []
    with urllib.request.urlopen(req, timeout=600) as resp:
        for line in resp:
            if line.startswith(b"data: {") and b'"content"' in line:
                arrivals.append(time.perf_counter())
            if time.perf_counter() > deadline:
                break
    return arrivals, sent


def generate(server: EmbeddedServer, requests: int, tokens: int, prompt_n: int,
             budget: float) -> tuple[float, float]:
    """(generation, prompt processing) tokens/s over up to ``requests`` streamed calls of
    ``tokens`` tokens each, within ``budget`` seconds: generation from the gaps between
    tokens, prompts from the time to the first token (``prompt_n`` tokens)."""
    deadline = time.perf_counter() + budget
    gen_n = gen_s = first_s = 0.0
    firsts = 0
    for i in range(requests):
        arrivals, sent = _stream(server, i, tokens, deadline)
        if arrivals:
            firsts += 1
            first_s += arrivals[0] - sent
            gen_n += len(arrivals) - 1
            gen_s += arrivals[-1] - arrivals[0]
        if time.perf_counter() > deadline:
            break
    gen = gen_n / gen_s if gen_s > 0 else 0.0
    return gen, (prompt_n * firsts / first_s if first_s > 0 else 0.0)


def prompt_tokens(server: EmbeddedServer) -> int:
    """The prompt's length in tokens, chat template included (one short call, not timed)."""
    body = {"model": server.model_alias, "max_tokens": 1, "temperature": 0,
            "messages": [{"role": "user", "content": f"{PROMPT} (0)"}]}
    req = urllib.request.Request(f"{server.api_base}/chat/completions",
                                 json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return int(json.load(resp)["usage"]["prompt_tokens"])


def neighbour() -> subprocess.Popen[bytes]:
    """One busy process: a Python spin loop, as a test run or another benchmark would be."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


Rates = tuple[float, float]


def load(threads: int, batch: int, requests: int, tokens: int, budget: float
         ) -> tuple[Rates, Rates]:
    """(idle, busy) rates of a server with ``threads`` threads (``batch`` for prompts)."""
    with EmbeddedServer(resolve_gguf("local/smollm2"), threads=threads,
                        threads_batch=batch) as server:
        n = prompt_tokens(server)  # also the warm-up
        idle = generate(server, requests, tokens, n, budget)
        busy_proc = neighbour()
        try:
            time.sleep(0.5)
            busy = generate(server, requests, tokens, n, budget)
        finally:
            busy_proc.kill()
            busy_proc.wait()
    return idle, busy


def harness(mode: Mode, limit: int) -> tuple[float, float, float]:
    """(harness tokens/s, server tokens/s, cached share of prompt tokens) over a slice."""
    with EmbeddedServer(resolve_gguf("local/smollm2")) as server, \
            tempfile.TemporaryDirectory() as tmp:
        before = metrics(server.base_url)
        t0 = time.perf_counter()
        result = run(f"openai/{server.model_alias}", "butterfly-40", Path(tmp) / "run",
                     limit=limit, mode=mode, api_base=server.api_base, cache=None)
        wall = time.perf_counter() - t0
        after = metrics(server.base_url)
        recs = list(result.records.values())
    completion = sum(r.tokens.completion or 0 for r in recs)
    prompt = sum(r.tokens.prompt or 0 for r in recs)
    cached = sum(r.tokens.cached or 0 for r in recs)

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    server_s = delta("tokens_predicted_seconds_total") + delta("prompt_seconds_total")
    return completion / wall, delta("tokens_predicted_total") / server_s, cached / max(prompt, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=6, help="requests per measurement")
    ap.add_argument("--tokens", type=int, default=48, help="tokens generated per request")
    ap.add_argument("--slice", type=int, default=4, help="butterfly-40 scenarios to play")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds per measurement at most (a starved server is cut off)")
    a = ap.parse_args()
    cpus = _cpus()
    print(f"machine: {cpus} CPUs; load average before: {os.getloadavg()[0]:.2f}")
    print(f"\n1. tokens/s, streamed ({a.requests} x {a.tokens} tokens, or {a.budget:g} s at "
          "most), idle and beside one busy process")
    default = _default_threads()
    settings = {(default, default): "the default", (cpus, cpus): "every CPU, the old default",
                (default, cpus): "every CPU for prompts"}
    for (threads, batch), label in settings.items():
        (idle, p_idle), (busy, p_busy) = load(threads, batch, a.requests, a.tokens, a.budget)
        verdict = ("meets" if busy / idle >= 0.5 else "misses") + " the 0.5 target"
        print(f"   threads={threads} batch={batch} ({label}): generation idle {idle:6.1f} "
              f"busy {busy:6.1f} busy/idle {busy / idle:.2f}"
              f"{f' ({verdict})' if (threads, batch) == (default, default) else ''}; "
              f"prompts idle {p_idle:6.1f} busy {p_busy:6.1f}")
    print(f"\n2. and 3. butterfly-40, first {a.slice} scenarios, through butterfly.run")
    modes: tuple[Mode, ...] = ("restate", "chat")
    for mode in modes:
        ours, theirs, share = harness(mode, a.slice)
        print(f"   {mode:7}: harness {ours:6.1f} tok/s, server {theirs:6.1f} tok/s: "
              f"ratio {ours / theirs:.2f} (target 0.9); prompt tokens from the cache "
              f"{100 * share:.0f}%")


if __name__ == "__main__":
    main()
