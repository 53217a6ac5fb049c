"""The embedded model's server process: ``python -P embedded_child.py --gguf ...``.

Run as a script by :class:`butterfly.models.embedded.EmbeddedServer` (its docstring says why a
child process); only the standard library and ``xllamacpp`` are imported here, so it starts
without the package on ``sys.path``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

_HOST = "127.0.0.1"
# llama.cpp log verbosity: 1 error, 2 warning, 3 info, 4 debug.
_QUIET_VERBOSITY = 2
_LOUD_VERBOSITY = 3


def _cpus() -> int:
    """CPUs this process may run on (honours affinity / cgroup cpusets)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _default_threads() -> int:
    """One thread fewer than the CPUs (at least one). llama.cpp's threads meet at a barrier
    after every operation, so one descheduled thread stalls them all: with every core taken,
    one busy neighbour cut SmolLM2 from about 85 to 1-16 tokens/s on 2 cores, while one
    thread kept about 86 (``bench/embedded.py`` measures this side by side)."""
    return max(1, _cpus() - 1)


def _child_main(argv: list[str] | None = None) -> int:
    """Entry point of the server process (``python -P embedded.py --gguf ...``).

    Reports ``{"address": ...}`` or ``{"error": ...}`` as one JSON line on the
    original stdout, then serves until stdin reaches EOF or a signal arrives.
    Only the standard library and ``xllamacpp`` are imported here.
    """
    ap = argparse.ArgumentParser(description="ButterflyBench embedded llama.cpp server")
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--ctx-per-slot", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=_default_threads())
    ap.add_argument("--threads-batch", type=int, default=None,
                    help="threads for prompt processing (default: --threads)")
    ap.add_argument("--poll", type=int, default=0, help="llama.cpp's polling level, 0-100")
    ap.add_argument("--alias", default=None)
    ap.add_argument("--verbosity", type=int, default=_QUIET_VERBOSITY)
    args = ap.parse_args(argv)

    # The handshake goes to a private copy of stdout; fd 1 then joins fd 2, so
    # whatever llama.cpp prints can only ever reach the log, never the report.
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def send(obj: dict[str, str]) -> None:
        report.write(json.dumps(obj) + "\n")
        report.flush()

    try:
        import xllamacpp as xlc

        params = xlc.CommonParams()
        params.model.path = args.gguf
        params.model_alias = {args.alias or Path(args.gguf).stem}
        params.hostnames = [_HOST]  # loopback only
        params.port = 0  # the kernel picks a free port at bind time
        params.n_parallel = args.parallel
        params.n_ctx = args.parallel * args.ctx_per_slot  # split evenly per slot
        params.kv_unified = False
        params.cont_batching = True
        params.cache_prompt = True  # reuse the KV cache of the common prefix
        batch = args.threads if args.threads_batch is None else args.threads_batch
        for cpu, n in ((params.cpuparams, args.threads), (params.cpuparams_batch, batch)):
            cpu.n_threads = n
            # 0: no spin-waiting between ops: on a small shared box a descheduled
            # spinning worker cut generation from ~85 to 6-25 tok/s (2 cores).
            cpu.poll = args.poll
        params.endpoint_metrics = True  # GET /metrics: the server's own token timings
        params.n_threads_http = max(2, args.parallel + 1)
        params.ui = False  # no web UI assets in the wheel anyway
        params.verbosity = args.verbosity
        server = xlc.Server(params)  # returns once the model is loaded
        address = str(server.listening_address)
    except Exception as exc:  # report every start-up failure to the parent
        send({"error": f"{type(exc).__name__}: {exc}"})
        return 1

    # xllamacpp installed sigaction handlers that only stop the model loop;
    # replace them so a signal ends the process (Python's handler interrupts
    # the blocking read below).
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    send({"address": address})
    # Lifeline: block until the parent closes our stdin or dies.
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(4096):
            pass
    # os._exit: the kernel frees memory and the socket at once; llama.cpp has
    # nothing to flush, and a C++ destructor cannot hang us here.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(_child_main())
