"""The wrapper around every provider: concurrency, retries, per-call timeouts, the cache.

One call in, one :class:`Outcome` out, never an exception for a provider failure: a call that
still fails after its retries comes back with ``error`` set (its class and message), so the
runner can mark the scenario incomplete instead of scoring a glitch as a model failure.

Retries use exponential backoff with full jitter (``core.vocab.CLI_RETRY``: base 0.5 s, cap
30 s) and honour a server's Retry-After (or ``x-ratelimit-reset-*``) when it gives one. The
concurrency slot is released while a call waits to retry. How many calls are in flight adapts
to rate limits (:mod:`butterfly.models.window`): shrunk to three quarters on a 429, grown back
by answers, never above ``concurrency``.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from butterfly.core.vocab import CLI_RETRY, DEFAULTS, ErrorClass
from butterfly.models.cache import Cache
from butterfly.models.provider import Provider, ProviderError, Request, Response
from butterfly.models.window import Signal, Window

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a call finally failed (recorded as the call record's ``error``)."""

    kind: ErrorClass
    message: str


@dataclass(frozen=True, slots=True)
class Outcome:
    response: Response | None
    error: Failure | None
    attempts: int
    latency_s: float
    cached: bool


def _cancelling() -> bool:
    """Whether this task is being cancelled. A provider that ends (or fails) just as the
    cancel comes may swallow it (Python 3.11's ``asyncio.wait_for`` did, when this client still
    used it); the client then stops instead of retrying."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class ModelClient:
    def __init__(
        self,
        provider: Provider,
        *,
        concurrency: int = 1,
        retries: int = CLI_RETRY.retries,
        timeout: float = DEFAULTS.timeout,
        cache: Cache | None = None,
        backoff_base: float | None = None,
        backoff_cap: float = CLI_RETRY.cap,
        rng: random.Random | None = None,
        sleep: Sleep = asyncio.sleep,
        adaptive: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.retries = retries
        self.timeout = timeout
        self.cache = cache if provider.cacheable else None
        # BUTTERFLY_BACKOFF_BASE lets tests of failure paths run without long waits.
        self.backoff_base = (
            float(os.environ.get("BUTTERFLY_BACKOFF_BASE", str(CLI_RETRY.base)))
            if backoff_base is None else backoff_base
        )
        self.backoff_cap = backoff_cap
        self._rng = rng or random.Random(0)
        self._sleep = sleep
        self.window = Window(concurrency, adaptive=adaptive, clock=clock)
        self.sent = 0
        self.failed_attempts = 0

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): full jitter under
        ``min(cap, base * 2 ** (attempt - 1))``, and at least the server's wait when it gave
        one (at most ten times the cap; up to a quarter more, so that the calls it refused
        together do not all come back at once)."""
        delay = self._rng.uniform(0, min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)))
        if retry_after is not None:
            wait = min(retry_after, 10 * self.backoff_cap)
            delay = max(delay, wait * (1 + self._rng.uniform(0, 0.25)))
        return delay

    async def call(self, request: Request) -> Outcome:
        start = time.perf_counter()
        if self.cache is not None:
            hit = self.cache.get(request)
            if hit is not None:
                return Outcome(hit, None, 1, time.perf_counter() - start, True)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._attempt(request)
            except ProviderError as e:
                err = e
            except Exception:
                if _cancelling():  # the run is being cancelled: not this call's failure
                    raise asyncio.CancelledError from None
                raise
            else:
                if self.cache is not None:
                    self.cache.put(request, response)
                return Outcome(response, None, attempt, time.perf_counter() - start, False)
            self.failed_attempts += 1
            if attempt > self.retries:
                return Outcome(None, Failure(err.kind, err.message), attempt,
                               time.perf_counter() - start, False)
            if _cancelling():
                raise asyncio.CancelledError
            await self._sleep(self.backoff(attempt, err.retry_after))

    async def _attempt(self, request: Request) -> Response:
        """One call to the provider inside the window (a timeout is a ``ProviderError``)."""
        epoch = await self.window.acquire()
        signal: Signal = "other"
        sent = self.window.clock()
        try:
            self.sent += 1
            async with asyncio.timeout(self.timeout + 5.0):
                response = await self.provider(request, self.timeout)
            signal = "ok"
            return response
        except ProviderError as e:
            signal = "rate_limit" if e.kind == "rate_limit" else "other"
            raise
        except TimeoutError:
            raise ProviderError("timeout", f"no answer within {self.timeout:g} s") from None
        finally:
            self.window.release(epoch, signal, self.window.clock() - sent)

    async def aclose(self) -> None:
        await self.provider.aclose()
        if self.cache is not None:
            self.cache.close()
