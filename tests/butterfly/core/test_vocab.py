"""The harness's one retry mechanism (``core.vocab.RetryPolicy``, docs/running.md "The client"):
the waits and the last attempt, and both retry loops following it (the CLI's client, the
Kaggle runner's ``call_with_retries``)."""

from __future__ import annotations

import asyncio
import random

import pytest

from butterfly.core.vocab import CLI_RETRY, KAGGLE_RETRY, RetryPolicy
from butterfly.core.wire import ProviderError, Request
from butterfly.kaggle import runner
from butterfly.models.client import ModelClient


def test_the_kaggle_policy_waits_exactly_2_4_8_16_32_s_then_gives_up() -> None:
    assert [KAGGLE_RETRY.wait(n) for n in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 32.0, None]
    assert KAGGLE_RETRY.wait(1, retry_after=9.0) == 9.0  # never jittered


def test_the_cli_policy_jitters_under_the_ceiling_and_honours_retry_after_up_to_its_cap() -> None:
    rng = random.Random(5)
    policy = RetryPolicy(retries=6, base=0.5, cap=30.0, longest=60.0)
    for failed in range(1, 7):
        ceiling = min(30.0, 0.5 * 2 ** (failed - 1))
        waits = [policy.wait(failed, None, rng.uniform) for _ in range(200)]
        assert all(w is not None and 0 <= w <= ceiling for w in waits)
        assert min(w or 0 for w in waits) < ceiling / 4 < ceiling * 3 / 4 < max(w or 0
                                                                              for w in waits)
    told = [policy.wait(1, 7.0, rng.uniform) for _ in range(200)]
    assert all(w is not None and 7.0 <= w <= 8.75 for w in told)
    assert policy.wait(1, 3600.0, rng.uniform) == 60.0
    assert policy.wait(7, None, rng.uniform) is None
    assert CLI_RETRY.longest == 60.0 and (CLI_RETRY.base, CLI_RETRY.cap) == (0.5, 30.0)


class _Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status_code = status


def test_the_kaggle_loop_waits_as_its_policy_says() -> None:
    waits: list[float] = []

    def down() -> str:
        raise _Status(503)

    with pytest.raises(runner.ProviderFailure, match="no answer after 6 attempts"):
        runner.call_with_retries(down, sleep=waits.append, log=None)
    assert waits == [2.0, 4.0, 8.0, 16.0, 32.0]
    answers = iter([_Status(429), "answer"])

    def flaky() -> str:
        item = next(answers)
        if isinstance(item, Exception):
            raise item
        return item

    waits.clear()
    assert runner.call_with_retries(flaky, sleep=waits.append, log=None) == "answer"
    assert waits == [2.0]


class _Down:
    """A provider whose every call fails as a server error."""

    async def __call__(self, request: Request, timeout: float) -> object:
        raise ProviderError("server", "503")

    async def aclose(self) -> None:
        return None


def test_the_cli_client_waits_as_its_policy_says() -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    client = ModelClient(_Down(), retries=3, backoff_base=1.0, backoff_cap=8.0,
                         rng=random.Random(7), sleep=sleep)
    request = Request(model="openai/fake", messages=({"role": "user", "content": "hi"},),
                      temperature=0.0, max_tokens=5, seed=0, meta={})
    out = asyncio.run(client.call(request))
    assert out.error is not None and out.attempts == 4
    rng = random.Random(7)
    policy = RetryPolicy(3, 1.0, 8.0, longest=client.retry.longest)
    assert slept == [policy.wait(n, None, rng.uniform) for n in (1, 2, 3)]
