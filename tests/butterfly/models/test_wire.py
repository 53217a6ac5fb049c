"""The one seam (``butterfly.core.wire``): both transports build the same body and read the same
answer through it, the Kaggle runner classifies failures as the fast path does, and the
registry's one table of prefixes decides opener, name check and transport alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

from butterfly.core import wire
from butterfly.core.wire import ProviderError, Request
from butterfly.models import registry, router
from butterfly.models.litellm_seam import request_kwargs, to_response
from butterfly.models.openai_http import parse_completion, status_error
from butterfly.models.provider import FatalProviderError

MESSAGES = ({"role": "system", "content": "Keep the spec."}, {"role": "user", "content": "Go."})


@pytest.mark.parametrize("extra", [
    {}, {"top_p": 0.5}, {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}},
    {"reasoning_effort": "low", "extra_body": {"top_k": 3}}, {"extra_body": "not a mapping"},
])  # fmt: skip
@pytest.mark.parametrize("send_seed", [True, False])
@pytest.mark.parametrize("schema", [None, {"type": "json_object"}])
def test_both_transports_build_one_body(extra: dict[str, Any], send_seed: bool,
                                        schema: dict[str, Any] | None) -> None:
    request = Request(model="openai/m", messages=MESSAGES, temperature=0.0, max_tokens=64,
                      seed=3, response_format=schema, extra=extra, send_seed=send_seed)
    fast = wire.body(request, "m")
    slow = request_kwargs(request, 9.0, "m")
    assert slow.pop("timeout") == 9.0
    merged = {k: v for k, v in slow.items() if k != "extra_body"}
    merged.update(slow.get("extra_body") or {})  # type: ignore[call-overload]
    assert merged == fast
    if isinstance(extra.get("extra_body"), dict):
        assert slow["extra_body"] == extra["extra_body"]
        assert slow["extra_body"] is not extra["extra_body"]  # a copy: the run's stays


COMPLETIONS = [
    {"choices": [{"message": {"role": "assistant", "content": "{\"a\": 1}"},
                  "finish_reason": "stop"}],
     "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16,
               "prompt_tokens_details": {"cached_tokens": 4},
               "completion_tokens_details": {"reasoning_tokens": 2}}},
    {"choices": [{"message": {"role": "assistant", "content": "cut",
                              "reasoning_content": "thinking"},
                  "finish_reason": "length"}],
     "usage": {"prompt_tokens": 3, "completion_tokens": 64, "total_tokens": 67}},
    {"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "stop"}]},
]


@pytest.mark.parametrize("data", COMPLETIONS)
def test_both_transports_read_one_answer(data: dict[str, Any]) -> None:
    from litellm.types.utils import ModelResponse

    fast = parse_completion(json.dumps(data).encode(), "hosted_vllm/unpriced")
    slow = to_response(ModelResponse(**data), "hosted_vllm/unpriced")
    assert fast == slow
    assert fast == wire.response(data, wire.JSON, lambda r: r)


@pytest.mark.parametrize("data", [{}, {"choices": []}, {"choices": [{}]}, []])
def test_a_malformed_completion_is_a_bad_response(data: Any) -> None:
    with pytest.raises(ProviderError) as e:
        wire.response(data, wire.JSON, lambda r: r)
    assert e.value.kind == "bad_response"
    assert e.value.message.startswith("malformed completion (")


class _Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


@pytest.mark.parametrize("status", [400, 401, 403, 404, 408, 409, 422, 425, 429, 500, 502, 503])
def test_the_kaggle_runner_classifies_statuses_as_the_fast_path(status: int) -> None:
    err = status_error(status, {}, b"{}")
    kind = wire.exception_kind(_Status(status))
    if isinstance(err, FatalProviderError):
        assert kind is None  # the notebook's door retries only what has a kind
    else:
        assert isinstance(err, ProviderError)
        assert err.kind == kind and kind is not None


def _litellm_errors() -> list[tuple[Exception, str]]:
    import httpx
    from litellm import exceptions as lx

    req = httpx.Request("POST", "http://h/v1/chat/completions")
    at = {"llm_provider": "openai", "model": "m"}
    return [(lx.Timeout(message="t", exception_status_code=504, **at), "timeout"),
            (lx.RateLimitError(message="r", response=httpx.Response(429, request=req), **at),
             "rate_limit"),
            (lx.InternalServerError(message="Connection error.", **at), "connection"),
            (lx.InternalServerError(message="Empty or invalid response from LLM endpoint",
                                    **at), "bad_response"),
            (lx.APIConnectionError(message="refused", request=req, **at), "connection"),
            (lx.APIResponseValidationError(message="v", **at), "bad_response"),
            (lx.BadGatewayError(message="b", **at), "server"),
            (lx.APIError(status_code=507, message="x", request=req, **at), "server")]


@pytest.mark.parametrize("n", range(8))
def test_litellm_errors_are_classified_by_the_one_classifier(n: int) -> None:
    """litellm's exceptions carry their status: the class is the wire's, as the Kaggle
    runner's and the fast path's."""
    from butterfly.models.litellm_seam import classify

    error, kind = _litellm_errors()[n]
    assert wire.exception_kind(error) == kind
    got = classify(error)
    assert isinstance(got, ProviderError) and got.kind == kind


def test_one_secret_pattern() -> None:
    """A router deployment's secret parameters are named as the environment's secrets are."""
    assert router.SECRET_NAME is wire.SECRET_NAME


@pytest.mark.parametrize(("model", "api_base", "via", "way"), [
    ("script/perfect", None, "auto", "scripted"), ("script/perfect", None, "litellm", "scripted"),
    ("local/smollm2", None, "auto", "direct"), ("local/smollm2", None, "litellm", "litellm"),
    ("openai/m", "http://h/v1", "auto", "direct"), ("openai/m", None, "auto", "litellm"),
    ("hosted_vllm/m", "http://h/v1", "auto", "direct"),
    ("hosted_vllm/m", "http://h/v1", "litellm", "litellm"),
    ("anthropic/claude", "http://h/v1", "auto", "litellm"),
])  # fmt: skip
def test_transport_reads_the_table(model: str, api_base: str | None, via: str,
                                   way: str) -> None:
    assert registry.transport(model, api_base, via) == way  # type: ignore[arg-type]
    entry = registry.prefix_of(model)
    assert registry.opener_of(model) is entry.opener
    assert (entry is registry.FALLBACK) == (way == "litellm" and entry.transport == "litellm")


def test_every_server_prefix_is_in_the_table() -> None:
    for prefix in wire.SERVER_PREFIXES:
        assert registry.PREFIXES[prefix].needs_api_base
        assert wire.wire_model(prefix + "x/y") == "x/y"
