"""Issue 21, item 3: servers that misbehave, at the client, through both transports (the fast
path and litellm): a response-size cap on the answer and its reasoning (and on what the cache
serves), a cap on an honoured Retry-After that is announced, content given as a list of parts
joined, ``reasoning_content`` and reasoning tokens kept."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from fakeserver import FakeServer

from butterfly.core.find_json import MAX_CHARS
from butterfly.core.vocab import DEFAULTS
from butterfly.core.wire import ProviderError, Request, Response, answer_text
from butterfly.models.answer_cache import Cache
from butterfly.models.client import ModelClient, capped, fits
from butterfly.models.litellm_seam import LiteLLMProvider, unconverted
from butterfly.models.openai_http import OpenAIHTTPProvider, read_body
from butterfly.models.provider import Provider

REQ = Request(model="openai/fake", messages=({"role": "user", "content": "hello"},),
              temperature=0.0, max_tokens=50, seed=0)


@pytest.fixture(params=["auto", "litellm"])
def via(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _client(srv: FakeServer, via: str, **kw: Any) -> ModelClient:
    provider: Provider = (LiteLLMProvider(api_base=srv.api_base, api_key="sk-test")
                          if via == "litellm" else
                          OpenAIHTTPProvider(api_base=srv.api_base, api_key="sk-test"))
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    client = ModelClient(provider, rng=random.Random(1), sleep=sleep, **kw)
    client.waits = waits  # type: ignore[attr-defined]
    return client


def _call(client: ModelClient) -> Any:
    async def go() -> Any:
        try:
            return await client.call(REQ)
        finally:
            await client.aclose()
    return asyncio.run(go())


def test_a_long_retry_after_is_capped_and_announced(via: str) -> None:
    said: list[tuple[float, str]] = []
    with FakeServer(lambda b: "ok", faults=["429:3600", "429:3"]) as srv:
        client = _client(srv, via, max_retry_wait=2.0,
                         on_wait=lambda s, kind: said.append((s, kind)))
        out = _call(client)
    assert out.response is not None and out.attempts == 3
    assert client.waits == [2.0, 2.0]  # type: ignore[attr-defined]
    assert said == [(2.0, "rate_limit"), (2.0, "rate_limit")]


def test_the_default_cap_and_short_waits(via: str) -> None:
    said: list[float] = []
    with FakeServer(lambda b: "ok", faults=["429:3600", "500"]) as srv:
        client = _client(srv, via, backoff_base=0.001, on_wait=lambda s, k: said.append(s))
        out = _call(client)
    assert out.response is not None
    waits = client.waits  # type: ignore[attr-defined]
    assert waits[0] == DEFAULTS.max_retry_wait == 60.0  # not the hour the server asked
    assert waits[1] < 1 and said == [60.0]  # a backoff under a second is not announced


PARTS = {"content": [{"type": "text", "text": '{"a": '}, {"type": "image_url", "image_url": {}},
                     "1", {"type": "text", "text": "}"}],
         "reasoning_content": "first I think", "usage": {
             "completion_tokens_details": {"reasoning_tokens": 7}}}


@pytest.mark.parametrize("message", [PARTS, {"content": "x", "reasoning": "first I think",
                                             "usage": PARTS["usage"]}])
def test_content_parts_joined_and_reasoning_kept(via: str, message: dict[str, Any]) -> None:
    with FakeServer(lambda b: message) as srv:
        out = _call(_client(srv, via))
    assert out.error is None, out.error
    assert out.response.text == ('{"a": 1}' if message is PARTS else "x")
    assert out.response.reasoning_content == "first I think"
    assert out.response.reasoning_tokens == 7


def test_content_that_is_not_text_is_a_bad_response(via: str) -> None:
    with FakeServer(lambda b: {"content": {"a": 1}}) as srv:
        out = _call(_client(srv, via, retries=0))
    assert out.response is None and out.error.kind == "bad_response"


def test_answer_text_reads_every_shape() -> None:
    assert answer_text(None) == "" and answer_text("a") == "a"
    assert answer_text(["a", {"type": "output_text", "text": "b"}, {"type": "refusal",
                                                                   "refusal": "no"}]) == "ab"
    with pytest.raises(ProviderError):
        answer_text(3)
    assert unconverted(ValueError("nothing quoted")) is None


def test_an_answer_over_the_cap_is_cut_with_its_length(via: str) -> None:
    big = {"content": "x" * 5000, "reasoning_content": "r" * 5000}
    with FakeServer(lambda b: big) as srv:
        out = _call(_client(srv, via, max_answer_chars=100))
    r = out.response
    assert (len(r.text), r.raw_chars, len(r.reasoning_content)) == (100, 5000, 100)


def test_the_cache_serves_a_cut_answer_only_where_it_fits(tmp_path: Path, via: str) -> None:
    cache = tmp_path / "c.sqlite"
    with FakeServer(lambda b: "y" * 500) as srv:
        first = _call(_client(srv, via, max_answer_chars=100, cache=Cache(cache)))
        smaller = _call(_client(srv, via, max_answer_chars=50, cache=Cache(cache)))
        assert srv.count == 1 and smaller.cached
        larger = _call(_client(srv, via, max_answer_chars=1000, cache=Cache(cache)))
        assert srv.count == 2 and not larger.cached  # cut shorter than this cap keeps it
    assert (len(first.response.text), first.response.raw_chars) == (100, 500)
    assert (len(smaller.response.text), smaller.response.raw_chars) == (50, 500)
    assert (len(larger.response.text), larger.response.raw_chars) == (500, None)


def test_capped_and_fits() -> None:
    whole = Response("abcdef")
    assert capped(whole, 10) is whole and fits(whole, 1)
    cut = capped(whole, 4)
    assert (cut.text, cut.raw_chars) == ("abcd", 6)
    assert capped(cut, 4) == cut and fits(cut, 4) and fits(cut, 3) and not fits(cut, 5)
    assert DEFAULTS.max_answer_chars == MAX_CHARS  # the default never changes a verdict


def test_the_fast_path_reads_no_body_over_its_limit() -> None:
    with FakeServer(lambda b: "z" * 10_000) as srv:
        async def go() -> bytes:
            async with aiohttp.ClientSession() as s, s.post(
                    f"{srv.api_base}/chat/completions",
                    data=json.dumps({"model": "m", "messages": [{"role": "user",
                                                                 "content": "x"}]})) as r:
                return await read_body(r, limit=1000)
        with pytest.raises(ProviderError, match="over the fast path's limit"):
            asyncio.run(go())
