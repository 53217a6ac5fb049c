"""The fast path against what litellm does on the same wire: the same body, path, key and
usage; error classes with the server's wait; pooled connections that do not cap the calls in
flight below the concurrency; the routing of ``--via``; prices equal to litellm's."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from contextlib import ExitStack
from email.utils import formatdate
from types import SimpleNamespace
from typing import Any

import pytest
from fakeserver import FakeServer
from providerfakes import WireFake

from butterfly.core.wire import ProviderError, Request
from butterfly.engine.conversation import RESPONSE_FORMAT
from butterfly.errors import UserError
from butterfly.models.litellm_seam import LiteLLMProvider
from butterfly.models.openai_http import OpenAIHTTPProvider, parse_completion, status_error
from butterfly.models.provider import FatalProviderError, Provider
from butterfly.models.registry import (
    ModelRequest,
    OpenRequest,
    check_model_name,
    opener_of,
    transport,
)

SETTINGS: Any = SimpleNamespace(concurrency=1, track="spec")
"""What an opener reads of a run's settings."""
MESSAGES = ({"role": "system", "content": "Keep the spec."}, {"role": "user", "content": "é?"})
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "schema-no-seed": {"response_format": RESPONSE_FORMAT, "send_seed": False},
    "model-args": {"extra": {"top_p": 0.5, "stop": ["###"], "logprobs": True,
                             "extra_body": {"chat_template_kwargs": {"enable_thinking": False},
                                            "top_k": 20}}},
}


def _request(model: str = "openai/fake", **kw: Any) -> Request:
    return Request(model=model, messages=MESSAGES, temperature=0.3, max_tokens=64, seed=11, **kw)


def _both(api_base: str, key: str = "sk-test") -> list[Provider]:
    return [LiteLLMProvider(api_base=api_base, api_key=key),
            OpenAIHTTPProvider(api_base=api_base, api_key=key)]


def _ask(provider: Provider, request: Request, timeout: float = 10.0) -> Any:
    async def go() -> Any:
        try:
            return await provider(request, timeout)
        finally:
            await provider.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("model", ["openai/fake", "hosted_vllm/org/fake"])
def test_both_paths_send_the_same_body(variant: str, model: str) -> None:
    with FakeServer(lambda body: "{}") as srv:
        for provider in _both(srv.api_base):
            _ask(provider, _request(model, **VARIANTS[variant]))
        litellm_body, direct_body = srv.requests
    assert direct_body == litellm_body
    assert direct_body["model"] == model.split("/", 1)[1]


def _usage_reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": '{"a": 1}'}}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
                      "prompt_tokens_details": {"cached_tokens": 1024},
                      "completion_tokens_details": {"reasoning_tokens": 100}}}


def test_same_path_key_answer_tokens_and_price() -> None:
    with WireFake(_usage_reply) as fake:
        got = [_ask(p, _request("openai/gpt-4o-mini")) for p in _both(fake.url + "/v1")]
    litellm_seen, direct_seen = fake.received
    assert direct_seen.path == litellm_seen.path == "/v1/chat/completions"
    assert direct_seen.headers["authorization"] == litellm_seen.headers["authorization"] \
        == "Bearer sk-test"
    assert got[0] == got[1]
    assert (got[1].cached_tokens, got[1].reasoning_tokens, got[1].finish_reason) == \
        (1024, 100, "length")
    assert got[1].cost_usd is not None and got[1].cost_usd > 0


@pytest.mark.parametrize(("headers", "wait"), [
    ({"Retry-After": "7"}, 7.0),
    ({"Retry-After": "NOW+30"}, 30.0),  # an HTTP date, 30 s from when the test runs
    ({"x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "6m0s",
      "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "900"}, 2.0),
    ({"x-ratelimit-reset-requests": "1.5s", "x-ratelimit-reset-tokens": "250ms"}, 0.25),
    ({}, None),
])
def test_a_429_is_a_rate_limit_with_the_servers_wait(headers: dict[str, str],
                                                      wait: float | None) -> None:
    if headers.get("Retry-After") == "NOW+30":
        headers = {"Retry-After": formatdate(time.time() + 30, usegmt=True)}
    err = status_error(429, headers, b'{"error": {"message": "slow down"}}')
    assert isinstance(err, ProviderError) and err.kind == "rate_limit"
    assert err.message == "HTTP 429: slow down"
    if wait is None:
        assert err.retry_after is None
    else:
        assert err.retry_after == pytest.approx(wait, abs=1.5)


@pytest.mark.parametrize(("status", "kind"), [(500, "server"), (503, "server"),
                                              (408, "timeout"), (409, "server")])
def test_transient_statuses(status: int, kind: str) -> None:
    err = status_error(status, {"Retry-After": "1"}, b"<html>busy</html>")
    assert isinstance(err, ProviderError) and err.kind == kind


def test_refusals_are_fatal_one_line_with_the_no_schema_hint_and_no_secret() -> None:
    key = "sk-live-SECRET-0123456789"
    err = status_error(400, {}, json.dumps({"error": {"message": f"response_format json_schema "
                                                      f"not supported for key {key}"}}).encode(),
                       (key,))
    assert isinstance(err, FatalProviderError) and isinstance(err, UserError)
    assert "--no-schema" in str(err) and "SECRET" not in str(err)
    assert isinstance(status_error(404, {}, b"no such model"), FatalProviderError)


@pytest.mark.parametrize(("fault", "kind"), [("nonjson", "bad_response"), ("drop", "connection"),
                                             ("429:0", "rate_limit")])
def test_the_fast_path_classifies_like_litellm(fault: str, kind: str) -> None:
    kinds = []
    with FakeServer(lambda b: "ok", faults=[fault] * 2) as srv:
        for provider in _both(srv.api_base):
            with pytest.raises(ProviderError) as e:
                _ask(provider, _request())
            kinds.append(e.value.kind)
    assert kinds == [kind, kind]


@pytest.mark.parametrize("raw", [b"{}", b'{"choices": []}', b'{"choices": [{"text": 1}]}',
                                 b"<html>oops</html>", b'[1, 2]'])
def test_a_malformed_completion_is_a_bad_response(raw: bytes) -> None:
    with pytest.raises(ProviderError) as e:
        parse_completion(raw, "openai/fake")
    assert e.value.kind == "bad_response"


def test_connection_refused_is_a_connection_error() -> None:
    with FakeServer() as srv:
        base = srv.api_base
    with pytest.raises(ProviderError) as e:
        _ask(OpenAIHTTPProvider(api_base=base, api_key="k"), _request())
    assert e.value.kind == "connection"


def _in_flight_server(want: int) -> tuple[FakeServer, dict[str, int]]:
    """A server that holds each call until ``want`` are in flight at once (or 5 s pass), so
    the most it saw does not depend on how fast a loaded machine opens connections."""
    seen = {"now": 0, "most": 0}
    arrived = threading.Condition()

    def hold(body: dict[str, Any]) -> str:
        with arrived:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
            arrived.notify_all()
            arrived.wait_for(lambda: seen["most"] >= want, timeout=5)
            seen["now"] -= 1
        return "ok"

    return FakeServer(hold), seen


def _many(provider: Provider, n: int) -> None:
    async def go() -> None:
        try:
            await asyncio.gather(*(provider(_request(), 20.0) for _ in range(n)))
        finally:
            await provider.aclose()

    asyncio.run(go())


def test_nothing_caps_the_calls_in_flight_below_the_concurrency() -> None:
    """aiohttp's connector allows 100 connections unless told: 150 are in flight at once."""
    srv, seen = _in_flight_server(want=150)
    with srv:
        _many(OpenAIHTTPProvider(api_base=srv.api_base, api_key="k", connections=150), 150)
    assert seen["most"] == 150


def test_connections_are_pooled_not_churned() -> None:
    with FakeServer(lambda b: "ok") as srv:
        provider = OpenAIHTTPProvider(api_base=srv.api_base, api_key="k", connections=4)

        async def rounds() -> None:
            try:
                for _ in range(15):
                    await asyncio.gather(*(provider(_request(), 10.0) for _ in range(4)))
            finally:
                await provider.aclose()

        asyncio.run(rounds())
        assert srv.count == 60 and srv.connections <= 4


@pytest.mark.parametrize(("model", "base", "via", "way"), [
    ("openai/m", "http://127.0.0.1:9/v1", "auto", "direct"),
    ("hosted_vllm/m", "http://127.0.0.1:9/v1", "auto", "direct"),
    ("openai/m", "http://127.0.0.1:9/v1", "litellm", "litellm"),
    ("openai/gpt-4o-mini", None, "auto", "litellm"),
    ("anthropic/claude-haiku-4-5", "http://127.0.0.1:9", "auto", "litellm"),
    ("ollama_chat/qwen2.5:7b", "http://127.0.0.1:9", "auto", "litellm"),
    ("script/oracle", None, "auto", "scripted"),
])
def test_routing(model: str, base: str | None, via: str, way: str) -> None:
    assert transport(model, base, via) == way  # type: ignore[arg-type]
    if way == "scripted":
        return
    with ExitStack() as stack:
        request = ModelRequest(model, base, via)  # type: ignore[arg-type]
        provider = opener_of(model)(OpenRequest(stack, request, [], SETTINGS))
    assert isinstance(provider, OpenAIHTTPProvider if way == "direct" else LiteLLMProvider)


def test_the_fast_path_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ExitStack() as stack:
        request = ModelRequest("openai/m", "http://127.0.0.1:9/v1")
        p = opener_of("openai/m")(OpenRequest(stack, request, [], SETTINGS))
    assert isinstance(p, OpenAIHTTPProvider) and p.api_key == "sk-no-key"
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sk-vllm-key")
    with ExitStack() as stack:
        request = ModelRequest("hosted_vllm/m", "http://127.0.0.1:9/v1")
        p = opener_of("hosted_vllm/m")(OpenRequest(stack, request, [], SETTINGS))
    assert isinstance(p, OpenAIHTTPProvider) and p.api_key == "sk-vllm-key"


def test_an_empty_model_name_after_the_prefix_is_refused() -> None:
    with pytest.raises(UserError, match="name the model"):
        check_model_name("openai/")


def test_via_is_checked_recorded_and_not_part_of_the_answer_key() -> None:
    from butterfly.core.options import RunOptions
    from butterfly.runs.run_flags import make_params as make_params_of

    def make_params(**options: Any) -> Any:
        return make_params_of(RunOptions(**options))

    with pytest.raises(UserError, match="--via takes one of auto, litellm"):
        make_params(via="httpx")  # type: ignore[arg-type]
    litellm_params = make_params(via="litellm")
    assert litellm_params.via == "litellm" and make_params().via == "auto"
    assert litellm_params.answer_key() == make_params().answer_key()
