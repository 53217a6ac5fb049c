"""The loopback OpenAI-compatible server of ``bench/concurrency.py``, run in its own process so
that its CPU is not counted as the client's.

    python bench/loopback.py --latency 0.5 [--rate 200 --burst 40 [--retry-after]]

prints its port, then answers ``POST /v1/chat/completions`` after ``--latency`` seconds until
killed. With ``--rate`` a token bucket admits the calls and the rest are answered 429 at once,
with the wait until the next token (``x-ratelimit-reset-requests`` and
``x-ratelimit-remaining-requests: 0``, or ``Retry-After``). ``GET /stats``: requests, 429s, TCP
connections accepted, the most calls held at once; ``POST /reset`` zeroes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import weakref
from typing import Any

from aiohttp import web

ANSWER = '{"python_version": "3.11"}'


class Bucket:
    """A token bucket: ``rate`` calls a second, at most ``burst`` at once."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst, self.tokens, self.at = rate, burst, burst, time.monotonic()

    def take(self) -> float | None:
        """None when a call is admitted, else the seconds until it would be."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return None
        return (1 - self.tokens) / self.rate


def _limit_headers(wait: float, retry_after: bool) -> dict[str, str]:
    if retry_after:
        return {"Retry-After": f"{wait:.3f}"}
    return {"x-ratelimit-reset-requests": f"{max(1, round(wait * 1000))}ms",
            "x-ratelimit-remaining-requests": "0"}


def serve(latency: float, rate: float, burst: float, retry_after: bool) -> None:
    """Serve chat completions on a free loopback port (printed on stdout) until killed."""
    stats = {"requests": 0, "rate_limited": 0, "opened": 0, "now": 0, "most_in_flight": 0}
    seen: weakref.WeakSet[Any] = weakref.WeakSet()
    bucket = Bucket(rate, burst) if rate > 0 else None
    body = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "fake",
                       "choices": [{"index": 0, "finish_reason": "stop", "message": {
                           "role": "assistant", "content": ANSWER}}],
                       "usage": {"prompt_tokens": 90, "completion_tokens": 9,
                                 "total_tokens": 99}}).encode()

    async def chat(request: web.Request) -> web.Response:
        if request.transport not in seen:
            seen.add(request.transport)
            stats["opened"] += 1
        await request.read()
        stats["requests"] += 1
        wait = bucket.take() if bucket is not None else None
        if wait is not None:
            stats["rate_limited"] += 1
            return web.json_response({"error": {"message": "Rate limit reached"}}, status=429,
                                     headers=_limit_headers(wait, retry_after))
        stats["now"] += 1
        stats["most_in_flight"] = max(stats["most_in_flight"], stats["now"])
        try:
            await asyncio.sleep(latency)
        finally:
            stats["now"] -= 1
        return web.Response(body=body, content_type="application/json")

    async def get_stats(request: web.Request) -> web.Response:
        return web.json_response(stats)

    async def reset(request: web.Request) -> web.Response:
        stats.update(requests=0, rate_limited=0, opened=0, most_in_flight=0)
        seen.clear()
        if bucket is not None:
            bucket.tokens, bucket.at = bucket.burst, time.monotonic()
        return web.json_response(stats)

    async def main() -> None:
        app = web.Application()
        app.add_routes([web.post("/v1/chat/completions", chat), web.get("/stats", get_stats),
                        web.post("/reset", reset)])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(port, flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, required=True, help="seconds before each answer")
    ap.add_argument("--rate", type=float, default=0.0, help="calls/s admitted (0: all)")
    ap.add_argument("--burst", type=float, default=1.0, help="token bucket size")
    ap.add_argument("--retry-after", action="store_true", help="429s say Retry-After")
    a = ap.parse_args()
    serve(a.latency, a.rate, a.burst, a.retry_after)


if __name__ == "__main__":
    main()
