"""How many calls may be in flight: adaptive concurrency (additive increase, multiplicative
decrease), never above ``--concurrency``, never below one.

A rate limit (HTTP 429) shrinks the window to ``decrease`` times its size (three quarters);
each answered call grows it by ``1 / window``, so a full window of answers grows it by one
call. The window shrinks at most once per round trip (the smoothed latency of answered calls),
and only for a call sent since the last shrink: the other 429s of a burst were sent under the
old window, and shrinking again for each would collapse it to one. Three quarters, not TCP's
half: the window then stays near what the limit allows instead of sawing between half and all
of it (``bench/concurrency.py --rate-limit`` prints both). The wait a server asks for (Retry-After,
``x-ratelimit-reset-*``) is the client's business (:mod:`butterfly.models.client`); the window
only decides how many calls are sent at once. Without ``adaptive`` it is a plain semaphore.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Literal

Signal = Literal["ok", "rate_limit", "other"]


class Window:
    """A semaphore whose size moves between 1 and ``ceiling`` with the answers."""

    def __init__(self, ceiling: int, *, adaptive: bool = True, decrease: float = 0.75,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = max(1, ceiling)
        self.adaptive = adaptive
        self.decrease = decrease
        self.clock = clock
        self.rtt = 0.0
        """Smoothed seconds an answered call took (the window shrinks at most once per rtt)."""
        self._cut_at = float("-inf")
        self.size = float(self.ceiling)
        self.in_flight = 0
        self.epoch = 0
        """How many times the window shrank: a call remembers the epoch it was sent in."""
        self.smallest = self.ceiling
        self.most_in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def _room(self) -> bool:
        return self.in_flight < int(self.size)

    def _take(self) -> int:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        return self.epoch

    async def acquire(self) -> int:
        """Wait for room in the window; the epoch the call is sent in."""
        if self._room() and not self._waiters:
            return self._take()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled: give it back
                self.release(self.epoch, "other")
            else:
                self._waiters.remove(fut)
            raise
        return self.epoch

    def release(self, epoch: int, signal: Signal, took: float | None = None) -> None:
        """A call sent in ``epoch`` ended with ``signal`` after ``took`` seconds: resize, then
        wake who fits."""
        self.in_flight -= 1
        if signal == "ok" and took is not None:
            self.rtt = took if self.rtt == 0 else 0.8 * self.rtt + 0.2 * took
        if self.adaptive:
            self._resize(epoch, signal)
        while self._waiters and self._room():
            fut = self._waiters.popleft()
            if not fut.done():
                self._take()
                fut.set_result(None)

    def _resize(self, epoch: int, signal: Signal) -> None:
        if signal == "rate_limit" and epoch == self.epoch:
            now = self.clock()
            if now - self._cut_at < self.rtt:
                return
            self._cut_at = now
            self.size = max(1.0, self.size * self.decrease)
            self.epoch += 1
            self.smallest = min(self.smallest, int(self.size))
        elif signal == "ok" and self.size < self.ceiling:
            self.size = min(float(self.ceiling), self.size + 1.0 / self.size)
