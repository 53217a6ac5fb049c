"""Adaptive concurrency: the window halves on a 429, grows back on answers, never exceeds
``--concurrency``; and a client behind it sends far fewer calls into a rate limit. No real
sleeps: the client is given a ``sleep`` that only yields."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from butterfly.core.wire import ProviderError, Request, Response
from butterfly.models.client import ModelClient
from butterfly.models.window import Window


def test_a_429_shrinks_the_window_once_per_burst_and_answers_grow_it_back() -> None:
    w = Window(8)
    sent = [w._take() for _ in range(3)]  # three calls sent in epoch 0
    w.release(sent[0], "rate_limit")
    assert w.size == 6 and w.epoch == 1
    w.release(sent[1], "rate_limit")  # same burst: sent before the decrease
    assert w.size == 6
    w.release(sent[2], "ok")
    assert w.size == pytest.approx(6 + 1 / 6)
    for _ in range(200):
        w._take()
        w.release(w.epoch, "ok")
    assert w.size == 8 and w.smallest == 6  # never above the ceiling


def test_the_window_shrinks_at_most_once_per_round_trip() -> None:
    now = [100.0]
    w = Window(64, clock=lambda: now[0])
    w.release(w._take(), "ok", took=0.5)  # answers take half a second
    w.release(w._take(), "rate_limit")
    assert w.size == 48
    now[0] += 0.1  # a call sent after the cut, refused within the same round trip
    w.release(w._take(), "rate_limit")
    assert w.size == 48
    now[0] += 0.5
    w.release(w._take(), "rate_limit")
    assert w.size == 36 and w.epoch == 2


def test_the_window_never_falls_below_one() -> None:
    w = Window(4)
    for _ in range(10):
        w.release(w._take(), "rate_limit")
    assert w.size == 1.0 and w.smallest == 1


def test_without_adaptive_it_is_a_plain_semaphore() -> None:
    w = Window(4, adaptive=False)
    w.release(w._take(), "rate_limit")
    assert w.size == 4


def test_a_full_window_makes_callers_wait_and_a_cancelled_waiter_frees_nothing() -> None:
    async def scenario() -> tuple[int, int]:
        w = Window(2)
        a, b = await w.acquire(), await w.acquire()
        waiting = asyncio.ensure_future(w.acquire())
        cancelled = asyncio.ensure_future(w.acquire())
        await asyncio.sleep(0)
        assert not waiting.done()
        cancelled.cancel()
        await asyncio.sleep(0)
        w.release(a, "ok")
        await waiting
        in_flight = w.in_flight
        w.release(b, "ok")
        return in_flight, w.in_flight

    assert asyncio.run(scenario()) == (2, 1)


class Capacity:
    """A provider that answers 429 (Retry-After 0) when more than ``limit`` calls are in
    flight at once, as a server with a concurrency limit does."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        self.rate_limited = 0
        self.answered = 0

    async def __call__(self, request: Request, timeout: float) -> Response:
        self.in_flight += 1
        try:
            if self.in_flight > self.limit:
                self.rate_limited += 1
                raise ProviderError("rate_limit", "HTTP 429: slow down", 0.0)
            for _ in range(5):  # the answer takes a while
                await asyncio.sleep(0)
            self.answered += 1
            return Response("ok")
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        return None


async def _yield(_seconds: float) -> None:
    await asyncio.sleep(0)


def _drive(adaptive: bool, calls: int = 400) -> tuple[Capacity, ModelClient]:
    provider = Capacity(limit=4)
    client = ModelClient(provider, concurrency=32, retries=10_000, sleep=_yield,
                         rng=random.Random(0), adaptive=adaptive)
    req = Request(model="m", messages=({"role": "user", "content": "x"},), temperature=0.0,
                  max_tokens=5, seed=0)

    async def go() -> None:
        outs = await asyncio.gather(*(client.call(req) for _ in range(calls)))
        assert all(o.error is None for o in outs)

    asyncio.run(go())
    return provider, client


def test_adaptive_concurrency_sends_far_fewer_calls_into_a_rate_limit() -> None:
    fixed, _ = _drive(adaptive=False)
    adaptive, client = _drive(adaptive=True)
    assert fixed.answered == adaptive.answered == 400
    assert adaptive.rate_limited * 4 < fixed.rate_limited, (adaptive.rate_limited,
                                                            fixed.rate_limited)
    assert client.window.smallest <= 4 and client.window.most_in_flight <= 32


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock jumps to the next timer when nothing else is ready: sleeps,
    latencies and timeouts take no real time, and the run is deterministic."""

    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0
        select = self._selector.select  # type: ignore[attr-defined]

        def jump(timeout: float | None = None) -> list[Any]:
            events = select(0)
            if not events and timeout is not None and timeout > 0:
                self._now += timeout
            return events  # type: ignore[no-any-return]

        self._selector.select = jump  # type: ignore[attr-defined]

    def time(self) -> float:
        return self._now


class TokenBucket:
    """A provider with a rate limit: ``rate`` calls a second (at most ``burst`` at once)
    answered after ``latency``; the rest 429 at once, with the wait until the next token."""

    def __init__(self, rate: float, burst: float, latency: float) -> None:
        self.rate, self.burst, self.latency = rate, burst, latency
        self.tokens, self.at = burst, 0.0
        self.refused = self.answered = 0

    async def __call__(self, request: Request, timeout: float) -> Response:
        now = asyncio.get_running_loop().time()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            self.refused += 1
            raise ProviderError("rate_limit", "HTTP 429", (1 - self.tokens) / self.rate)
        self.tokens -= 1
        await asyncio.sleep(self.latency)
        self.answered += 1
        return Response("ok")

    async def aclose(self) -> None:
        return None


def _conversations(adaptive: bool) -> tuple[float, TokenBucket, int]:
    """300 conversations of 6 turns, 96 at once, against 200 calls/s: the virtual seconds
    taken, the provider, and the calls that failed after the default retries."""
    loop = VirtualTimeLoop()
    bucket = TokenBucket(rate=200, burst=40, latency=0.2)
    client = ModelClient(bucket, concurrency=96, rng=random.Random(0), adaptive=adaptive,
                         clock=loop.time)
    req = Request(model="m", messages=({"role": "user", "content": "x"},), temperature=0.0,
                  max_tokens=5, seed=0)
    slots = asyncio.Semaphore(96)
    failed = 0

    async def conversation() -> None:
        nonlocal failed
        async with slots:
            for _ in range(6):
                if (await client.call(req)).error is not None:
                    failed += 1
                    return

    async def play() -> float:
        await asyncio.gather(*(conversation() for _ in range(300)))
        return loop.time()

    try:
        return loop.run_until_complete(play()), bucket, failed
    finally:
        loop.close()


def test_a_rate_limited_provider_is_used_near_its_limit() -> None:
    """Without adaptation about a third of the calls are refused; with it, the suite takes
    little more than the limit allows (1,800 calls at 200/s: 9 s)."""
    fixed_s, fixed, fixed_failed = _conversations(adaptive=False)
    adaptive_s, adaptive, adaptive_failed = _conversations(adaptive=True)
    assert adaptive.answered == 1800 and adaptive_failed == 0
    assert fixed_failed > 0  # conversations left incomplete after the default retries
    assert fixed.refused > (fixed.answered + fixed.refused) / 4  # about a third refused
    assert adaptive.refused * 4 < fixed.refused
    assert (1800 - 40) / 200 / adaptive_s > 0.8, adaptive_s
    assert adaptive_s < fixed_s
