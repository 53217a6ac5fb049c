"""Each provider through litellm against a loopback fake of its real wire format: what the
provider receives (path, body, the spec's JSON Schema translated into its own structured-output
field) and what comes back (the spec, tokens, cost). docs/running.md tabulates the same."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fakeserver import FakeServer
from providerfakes import WireFake, anthropic_reply, gemini_reply, ollama_reply

from butterfly.core.wire import Request, Response
from butterfly.engine.conversation import RESPONSE_FORMAT
from butterfly.models.litellm_seam import FatalProviderError, LiteLLMProvider
from butterfly.models.openai_http import OpenAIHTTPProvider
from butterfly.models.provider import Provider
from oracle import canonical_initial, spec_json_schema

SPEC = canonical_initial()
SCHEMA = spec_json_schema()
MESSAGES = ({"role": "system", "content": "You keep the spec."},
            {"role": "user", "content": "Turn one."},
            {"role": "assistant", "content": "{}"},
            {"role": "user", "content": "Turn two."})


def _ask(model: str, api_base: str, *, schema: bool = True, send_seed: bool = True,
         extra: dict[str, Any] | None = None, via: str = "litellm") -> Response:
    request = Request(model=model, messages=MESSAGES, temperature=0.0, max_tokens=512, seed=7,
                      response_format=RESPONSE_FORMAT if schema else None, extra=extra or {},
                      send_seed=send_seed)
    provider: Provider = (LiteLLMProvider(api_base=api_base, api_key="sk-test") if via == "litellm"
                          else OpenAIHTTPProvider(api_base=api_base, api_key="sk-test"))

    async def ask() -> Response:
        try:
            return await provider(request, 10.0)
        finally:
            await provider.aclose()

    return asyncio.run(ask())


def _same_schema(sent: dict[str, Any]) -> None:
    """The provider got the spec's schema: every setting, each an enum of its domain."""
    props = sent["properties"]
    assert set(props) == set(SCHEMA["properties"])
    for key, p in props.items():
        want = SCHEMA["properties"][key]
        assert sorted(p["enum"]) == sorted(want["enum"]), key
    assert sorted(sent["required"]) == sorted(SCHEMA["required"])


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_openai_chat_completions_gets_response_format_model_args_and_no_seed(via: str) -> None:
    with FakeServer(lambda body: json.dumps(SPEC)) as srv:
        resp = _ask("openai/gpt-4o-mini", srv.api_base, send_seed=False, via=via,
                    extra={"top_p": 0.5, "stop": ["###"],
                           "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}})
        body = srv.requests[0]
    assert json.loads(resp.text) == SPEC
    assert body["messages"] == [dict(m) for m in MESSAGES]
    assert body["response_format"]["type"] == "json_schema"
    _same_schema(body["response_format"]["json_schema"]["schema"])
    assert body["top_p"] == 0.5 and body["stop"] == ["###"]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}  # extra_body merged
    assert "seed" not in body and "extra_body" not in body
    assert resp.prompt_tokens and resp.completion_tokens
    assert resp.cost_usd is not None and resp.cost_usd > 0  # gpt-4o-mini is priced offline


def test_an_argument_the_model_does_not_take_is_refused_before_sending() -> None:
    with FakeServer(lambda body: json.dumps(SPEC)) as srv:
        with pytest.raises(FatalProviderError, match="reasoning_effort"):
            _ask("openai/gpt-4o-mini", srv.api_base, extra={"reasoning_effort": "low"})
        assert srv.count == 0


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_openai_sends_the_seed_by_default_and_an_unpriced_model_costs_none(via: str) -> None:
    with FakeServer(lambda body: json.dumps(SPEC)) as srv:
        resp = _ask("openai/fake-model", srv.api_base, via=via)
        body = srv.requests[0]
    assert body["seed"] == 7
    assert resp.cost_usd is None and resp.prompt_tokens is not None


def test_anthropic_messages_structured_output_through_a_tool() -> None:
    """A Claude model without native structured output: the schema becomes a forced tool and
    the tool's input comes back as the answer text."""
    with WireFake(anthropic_reply(SPEC, tool=True)) as fake:
        resp = _ask("anthropic/claude-3-haiku-20240307", fake.url, send_seed=False,
                    extra={"top_k": 5})
    (got,) = fake.received
    body = got.body
    assert got.path == "/v1/messages"
    system = body["system"]
    assert (system[0]["text"] if isinstance(system, list) else system) == MESSAGES[0]["content"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    (tool,) = body["tools"]
    assert tool["name"] == "json_tool_call"
    _same_schema(tool["input_schema"])
    assert body["tool_choice"] == {"type": "tool", "name": "json_tool_call"}
    assert body["max_tokens"] == 512 and body["top_k"] == 5 and "seed" not in body
    assert json.loads(resp.text) == SPEC
    assert (resp.prompt_tokens, resp.completion_tokens) == (1200, 300)


def test_anthropic_native_structured_output_and_its_price() -> None:
    """A current Claude model: the schema as Anthropic's native ``output_format``; priced."""
    with WireFake(anthropic_reply(SPEC, tool=False)) as fake:
        resp = _ask("anthropic/claude-haiku-4-5", fake.url, send_seed=False)
    body = fake.received[0].body
    assert "tools" not in body
    assert body["output_format"]["type"] == "json_schema"
    _same_schema(body["output_format"]["schema"])
    assert json.loads(resp.text) == SPEC
    assert resp.cost_usd is not None and resp.cost_usd > 0


def test_gemini_generate_content_gets_a_response_schema() -> None:
    with WireFake(gemini_reply(SPEC)) as fake:
        resp = _ask("gemini/gemini-2.5-flash", fake.url, send_seed=False)
    (got,) = fake.received
    assert got.path.endswith("/models/gemini-2.5-flash:generateContent")
    body = got.body
    cfg = body["generationConfig"]
    assert cfg["response_mime_type"] == "application/json"
    _same_schema(cfg["response_json_schema"])
    assert cfg["max_output_tokens"] == 512 and cfg["temperature"] == 0.0
    assert body["system_instruction"]["parts"][0]["text"] == MESSAGES[0]["content"]
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert json.loads(resp.text) == SPEC
    assert resp.prompt_tokens == 1100
    assert resp.cost_usd is not None and resp.cost_usd > 0


def test_ollama_chat_keeps_the_conversation_and_sends_the_schema_as_format() -> None:
    with WireFake(ollama_reply(SPEC)) as fake:
        resp = _ask("ollama_chat/qwen2.5:7b", fake.url, extra={"top_k": 20})
    (got,) = fake.received
    assert got.path == "/api/chat"  # not /api/generate: the turns stay turns
    body = got.body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][-1]["content"] == "Turn two."
    _same_schema(body["format"])
    opts = body["options"]
    assert opts["num_predict"] == 512 and opts["seed"] == 7 and opts["top_k"] == 20
    assert json.loads(resp.text) == SPEC
    assert (resp.prompt_tokens, resp.completion_tokens) == (900, 200)
    assert resp.cost_usd == 0.0  # litellm prices a local Ollama model at zero


@pytest.mark.parametrize("model", ["ollama/qwen2.5:7b"])
def test_the_ollama_route_flattens_the_conversation(model: str) -> None:
    """Why the docs use ollama_chat/: ollama/ posts one prompt to /api/generate."""
    def reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"model": "qwen", "created_at": "2026-01-01T00:00:00Z",
                "response": json.dumps(SPEC), "done": True, "prompt_eval_count": 9,
                "eval_count": 2}

    with WireFake(reply) as fake:
        _ask(model, fake.url, schema=False)
    (got,) = fake.received
    assert got.path == "/api/generate" and "messages" not in got.body
    assert "Turn one." in got.body["prompt"] and "Turn two." in got.body["prompt"]
