"""How many calls may be in flight: adaptive concurrency (additive increase, multiplicative
decrease), never above ``--concurrency``.

A rate limit (HTTP 429) halves the window; each answered call grows it by ``1 / window``, so a
full window of answers grows it by one call. Only the first 429 among the calls sent before a
decrease counts: the others of the same burst were sent under the old window, and halving
again for each would collapse it to one. The wait a server asks for (Retry-After,
``x-ratelimit-reset-*``) is the client's business (:mod:`butterfly.models.client`); the window
only decides how many calls are sent at once. Without ``adaptive`` it is a plain semaphore.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Literal

Signal = Literal["ok", "rate_limit", "other"]


class Window:
    """A semaphore whose size moves between 1 and ``ceiling`` with the answers."""

    def __init__(self, ceiling: int, *, adaptive: bool = True, decrease: float = 0.5) -> None:
        self.ceiling = max(1, ceiling)
        self.adaptive = adaptive
        self.decrease = decrease
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

    def release(self, epoch: int, signal: Signal) -> None:
        """A call sent in ``epoch`` ended with ``signal``: resize, then wake who fits."""
        self.in_flight -= 1
        if self.adaptive:
            self._resize(epoch, signal)
        while self._waiters and self._room():
            fut = self._waiters.popleft()
            if not fut.done():
                self._take()
                fut.set_result(None)

    def _resize(self, epoch: int, signal: Signal) -> None:
        if signal == "rate_limit" and epoch == self.epoch:
            self.size = max(1.0, self.size * self.decrease)
            self.epoch += 1
            self.smallest = min(self.smallest, int(self.size))
        elif signal == "ok" and self.size < self.ceiling:
            self.size = min(float(self.ceiling), self.size + 1.0 / self.size)
