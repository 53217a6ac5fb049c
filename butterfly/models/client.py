"""The wrapper around every provider: concurrency, retries, per-call timeouts, the cache.

One call in, one :class:`Outcome` out, never an exception for a provider failure: a call that
still fails after its retries comes back with ``error`` set (its class and message), so the
runner can mark the scenario incomplete instead of scoring a glitch as a model failure.

Retries follow the harness's one retry policy (:class:`butterfly.core.vocab.RetryPolicy`, which
the Kaggle runner follows too): exponential backoff with full jitter (``CLI_RETRY``: base
0.5 s, cap 30 s), honouring a server's Retry-After (or ``x-ratelimit-reset-*``) when it gives
one, up to ``max_retry_wait`` (``--max-retry-wait``, :data:`RETRY_WAIT_CAP`): no wait is
longer, and each wait of a second or more is announced (``on_wait``: the progress line says
"rate-limited, waiting N s"). The concurrency slot is released while a call waits to retry.
How many calls are in flight adapts to rate limits (:mod:`butterfly.models.window`): shrunk to
three quarters on a 429, grown back by answers, never above ``concurrency``.

The response-size cap (``--max-answer-chars``, :data:`ANSWER_CAP`): an answer longer than it
is kept as its first N characters with its whole length in ``raw_chars`` (the run records an
abstention, ``too_large``, and sends the cut text back in the history), and so is its
reasoning; both transports and the cache go through :func:`capped` here.

Usage is checked (:mod:`butterfly.core.usage`, then the model's context window,
:func:`butterfly.models.price_map.checked`): an answer whose token counts cannot be right is kept
with no counts and no price (``usage_invalid``), never put in the answer cache, and a cached
one is never replayed (issue 34).

A price the user gave (``user_rates``: ``--price``, ``--price-per-mtok``) prices every answer
here, fresh or from the cache (:func:`butterfly.models.price_map.charge`), whichever transport
brought it; without one, an answer keeps the price its transport gave it (litellm's map).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from butterfly.core.vocab import CLI_RETRY, DEFAULTS, ErrorClass, RetryPolicy
from butterfly.core.wire import ProviderError, Request, Response
from butterfly.models.answer_cache import Cache
from butterfly.models.price_map import Rates, charge, checked
from butterfly.models.provider import Provider
from butterfly.models.window import Signal, Window

Sleep = Callable[[float], Awaitable[None]]
OnWait = Callable[[float, ErrorClass], None]
"""Told ``(seconds, error class)`` before a wait of a second or more before a retry."""

ANSWER_CAP: Final = DEFAULTS.max_answer_chars
"""The default response-size cap, in characters: the parser's own limit (a longer answer is an
abstention, ``too_large``, either way), so the default never changes a verdict."""
RETRY_WAIT_CAP: Final = DEFAULTS.max_retry_wait
"""The default longest wait before a retry, in seconds, whatever a server's Retry-After asks."""
ANNOUNCE: Final = 1.0
"""Waits of at least this many seconds are announced (``on_wait``)."""


def capped(response: Response, cap: int) -> Response:
    """``response`` with its answer and its reasoning cut to ``cap`` characters; ``raw_chars``
    keeps the answer's whole length when it was cut."""
    text, reasoning = response.text, response.reasoning_content
    long_reasoning = reasoning is not None and len(reasoning) > cap
    if len(text) <= cap and not long_reasoning:
        return response
    return dataclasses.replace(
        response, text=text[:cap],
        raw_chars=(response.raw_chars or len(text)) if len(text) > cap else response.raw_chars,
        reasoning_content=reasoning[:cap] if reasoning is not None else None)


def fits(hit: Response, cap: int) -> bool:
    """Whether a cached answer serves a run capped at ``cap``: whole, or cut no shorter than
    this cap keeps it (else it is asked again)."""
    return hit.raw_chars is None or len(hit.text) >= min(hit.raw_chars, cap)


@dataclass(frozen=True, slots=True)
class Outcome:
    response: Response | None
    error: ProviderError | None
    """Why the call finally failed, its last attempt's error (recorded as the call record's
    ``error``: its ``kind`` and ``message``)."""
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
        max_answer_chars: int = ANSWER_CAP,
        max_retry_wait: float = RETRY_WAIT_CAP,
        on_wait: OnWait | None = None,
        user_rates: Rates | None = None,
    ) -> None:
        self.provider = provider
        self.timeout = timeout
        self.cache = cache
        # BUTTERFLY_BACKOFF_BASE lets tests of failure paths run without long waits.
        base = (float(os.environ.get("BUTTERFLY_BACKOFF_BASE", str(CLI_RETRY.base)))
                if backoff_base is None else backoff_base)
        self.retry = RetryPolicy(retries, base, backoff_cap, longest=max_retry_wait)
        self._rng = rng or random.Random(0)
        self._sleep = sleep
        self.window = Window(concurrency, adaptive=adaptive, clock=clock)
        self.max_answer_chars = max_answer_chars
        self.on_wait = on_wait
        self.user_rates = user_rates
        """The user's price (None: the transport's, from litellm's offline map)."""

    def priced(self, response: Response) -> Response:
        """``response`` priced by the user's rates when there are some, else as it came."""
        return response if self.user_rates is None else charge(self.user_rates, response)

    async def call(self, request: Request) -> Outcome:
        start = time.perf_counter()
        if self.cache is not None:
            hit = self.cache.get(request)
            if hit is not None and fits(hit, self.max_answer_chars) \
                    and checked(hit, request.model).usage_invalid is None:  # else asked again
                return Outcome(self.priced(capped(hit, self.max_answer_chars)), None, 1,
                               time.perf_counter() - start, True)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = checked(capped(await self._attempt(request), self.max_answer_chars),
                                   request.model)
            except ProviderError as e:
                err = e
            except Exception:
                if _cancelling():  # the run is being cancelled: not this call's failure
                    raise asyncio.CancelledError from None
                raise
            else:
                if self.cache is not None and response.usage_invalid is None:
                    self.cache.put(request, response)  # invalid usage is never replayed
                return Outcome(self.priced(response), None, attempt,
                               time.perf_counter() - start, False)
            # the wait before the next attempt, drawn from this client's random generator
            delay = self.retry.wait(attempt, err.retry_after, self._rng.uniform)
            if delay is None:
                return Outcome(None, err, attempt,
                               time.perf_counter() - start, False)
            if _cancelling():
                raise asyncio.CancelledError
            if self.on_wait is not None and delay >= ANNOUNCE:
                self.on_wait(delay, err.kind)
            await self._sleep(delay)

    async def _attempt(self, request: Request) -> Response:
        """One call to the provider inside the window (a timeout is a ``ProviderError``)."""
        epoch = await self.window.acquire()
        signal: Signal = "other"
        sent = self.window.clock()
        try:
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
