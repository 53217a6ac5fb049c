"""The model client against the fake server: retries, Retry-After, timeouts, error classes,
through both transports (the fast path and litellm: ``via``)."""

from __future__ import annotations

import asyncio
import random

import pytest
from fakeserver import FakeServer

from butterfly.core.wire import Request
from butterfly.models.answer_cache import Cache
from butterfly.models.client import ModelClient
from butterfly.models.litellm_seam import FatalProviderError, LiteLLMProvider
from butterfly.models.openai_http import OpenAIHTTPProvider
from butterfly.models.provider import Provider


def _req(content: str = "hello", seed: int = 0) -> Request:
    return Request(model="openai/fake", messages=({"role": "user", "content": content},),
                   temperature=0.0, max_tokens=50, seed=seed, meta={"scenario": "x", "turn": 1})


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, s: float) -> None:
        self.calls.append(s)


VIA = "auto"


@pytest.fixture(params=["auto", "litellm"], autouse=True)
def via(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs through both transports."""
    monkeypatch.setattr(f"{__name__}.VIA", request.param)
    return str(request.param)


def _provider(srv: FakeServer, key: str = "sk-test") -> Provider:
    if VIA == "litellm":
        return LiteLLMProvider(api_base=srv.api_base, api_key=key)
    return OpenAIHTTPProvider(api_base=srv.api_base, api_key=key)


def _client(srv: FakeServer, *, retries: int = 4, timeout: float = 5.0,
            cache: Cache | None = None, sleep: Sleeps | None = None) -> ModelClient:
    return ModelClient(_provider(srv), retries=retries, timeout=timeout, cache=cache,
                       sleep=sleep or Sleeps(), rng=random.Random(1))


def test_transient_faults_are_retried_until_an_answer() -> None:
    sleeps = Sleeps()
    with FakeServer(lambda b: "ANSWER", faults=["500", "503", "nonjson", "drop"]) as srv:
        out = asyncio.run(_client(srv, sleep=sleeps).call(_req()))
    assert out.error is None and out.response is not None
    assert out.response.text == "ANSWER"
    assert out.attempts == 5
    assert len(sleeps.calls) == 4


def test_retry_after_is_honoured() -> None:
    sleeps = Sleeps()
    with FakeServer(lambda b: "ok", faults=["429:7"]) as srv:
        out = asyncio.run(_client(srv, sleep=sleeps).call(_req()))
    assert out.response is not None and out.attempts == 2
    assert sleeps.calls[0] >= 7.0


def test_error_after_retries_is_classified_not_raised() -> None:
    with FakeServer(lambda b: "ok", faults=["500"] * 10) as srv:
        out = asyncio.run(_client(srv, retries=2).call(_req()))
    assert out.response is None and out.error is not None
    assert out.error.kind == "server" and out.attempts == 3


@pytest.mark.parametrize(("fault", "kind"), [("429:0", "rate_limit"), ("503", "server"),
                                             ("nonjson", "bad_response"),
                                             ("drop", "connection")])
def test_error_classes(fault: str, kind: str) -> None:
    with FakeServer(lambda b: "ok", faults=[fault] * 5) as srv:
        out = asyncio.run(_client(srv, retries=0).call(_req()))
    assert out.error is not None
    assert out.error.kind == kind, out.error


def test_timeout_is_a_timeout_error_and_retried() -> None:
    with FakeServer(lambda b: "late but fine", faults=["hang:3"]) as srv:
        out = asyncio.run(_client(srv, retries=1, timeout=0.5).call(_req()))
    assert out.response is not None and out.response.text == "late but fine"
    assert out.attempts == 2


def test_timeout_after_retries() -> None:
    with FakeServer(lambda b: "x", faults=["hang:3", "hang:3"]) as srv:
        out = asyncio.run(_client(srv, retries=1, timeout=0.4).call(_req()))
    assert out.error is not None and out.error.kind == "timeout"


def test_bad_key_or_request_is_fatal() -> None:
    with FakeServer(lambda b: "x", faults=["401"]) as srv, pytest.raises(FatalProviderError):
        asyncio.run(_client(srv).call(_req()))


def test_cache_hit_sends_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cache = Cache(tmp_path / "c.sqlite")
    with FakeServer(lambda b: "cached answer") as srv:
        c = _client(srv, cache=cache)
        first = asyncio.run(c.call(_req()))
        again = asyncio.run(c.call(_req()))
        other_seed = asyncio.run(c.call(_req(seed=1)))
        assert srv.count == 2
    assert not first.cached and again.cached and not other_seed.cached
    assert again.response == first.response


def test_cache_key_ignores_timeout_and_concurrency(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cache = Cache(tmp_path / "c.sqlite")
    with FakeServer(lambda b: "a") as srv:
        asyncio.run(_client(srv, cache=cache, timeout=5).call(_req()))
        c2 = ModelClient(_provider(srv, "k"), timeout=50,
                         concurrency=4, retries=9, cache=cache)
        out = asyncio.run(c2.call(_req()))
        assert out.cached and srv.count == 1


def test_backoff_grows_and_is_capped() -> None:
    c = ModelClient(LiteLLMProvider(), backoff_base=1, backoff_cap=8, retries=9)
    draw = random.Random(3).uniform  # the client's waits: its policy's, drawn so

    def backoff(failed: int, retry_after: float | None) -> float | None:
        return c.retry.wait(failed, retry_after, draw)

    for attempt, ceiling in [(1, 1), (2, 2), (3, 4), (4, 8), (9, 8)]:
        waits = [backoff(attempt, None) for _ in range(50)]
        assert all(w is not None and 0 <= w <= ceiling for w in waits)
        assert max(w or 0 for w in waits) > ceiling / 2  # jittered under the ceiling
    after = backoff(1, 20.0)
    assert after is not None and 20.0 <= after <= 25.0
    assert backoff(10, None) is None  # the tenth failure was the last attempt
