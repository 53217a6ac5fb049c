"""The one module that calls litellm.

litellm runs offline: its model cost map is read from the package, not fetched, and telemetry
is off. The environment is set before the import; this module is imported only by commands that
call a provider (litellm takes seconds to import). litellm's own retries are off: retries,
timeouts, concurrency and the cache belong to :mod:`butterfly.models.client`.

litellm's own aiohttp transport is used (its default: pooled connections; httpx opened a
connection for most calls and capped them at 100 in flight, ``bench/concurrency.py``), except
for an ``api_base`` carrying ``user:password@``, which that transport refuses beside the API
key header: httpx then sends them as Basic auth, as before. A model litellm does not price is
looked up once, not per call.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import JsonValue

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

import litellm
from litellm import exceptions as lx

from butterfly.errors import UserError
from butterfly.models.provider import (
    FatalProviderError,
    ProviderError,
    Request,
    Response,
    redact,
    refusal,
    retry_after_of,
)

litellm.telemetry = False
litellm.suppress_debug_info = True
warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited",
                        category=RuntimeWarning)  # litellm's async logging, after a refusal


__all__ = ["FatalProviderError", "LiteLLMProvider", "check_route", "classify", "price"]


def check_route(model: str) -> None:
    """Refuse a model name litellm cannot route to a provider (nothing is sent)."""
    try:
        litellm.get_llm_provider(model)
    except Exception as e:  # litellm raises BadRequestError (and others) for an unknown route
        first = str(e).replace("litellm.BadRequestError: ", "").splitlines()[0][:200]
        raise UserError(f"--model {model}: no provider known for this name ({first}); use "
                        "PROVIDER/MODEL, e.g. openai/gpt-4o-mini or ollama_chat/qwen2.5:7b"
                        ) from None


def _retry_after(e: Exception) -> float | None:
    response = getattr(e, "response", None)
    headers = getattr(response, "headers", None) or getattr(e, "headers", None)
    return retry_after_of(headers)


def classify(e: Exception, secrets: tuple[str | None, ...] = ()
             ) -> ProviderError | FatalProviderError:
    """Map a litellm exception to our error classes (the order of checks matters). The
    message keeps the server's first line, secrets redacted, at most 500 characters."""
    msg = redact(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                 secrets)[:500]
    if isinstance(e, lx.Timeout):
        return ProviderError("timeout", msg)
    if isinstance(e, lx.RateLimitError):
        return ProviderError("rate_limit", msg, _retry_after(e))
    if "missing credentials" in str(e).lower() or "api_key" in str(e).lower():
        return FatalProviderError(f"no credentials for this provider: {msg}")
    if isinstance(e, (lx.AuthenticationError, lx.PermissionDeniedError, lx.NotFoundError,
                      lx.BadRequestError, lx.UnsupportedParamsError)):
        return refusal(msg, str(e))
    text = str(e).lower()
    if "invalid response from llm endpoint" in text or "expecting value" in text or (
        "json" in text and "decode" in text
    ):
        return ProviderError("bad_response", msg)
    if "connection error" in text or isinstance(e, lx.APIConnectionError):
        return ProviderError("connection", msg)
    if isinstance(e, (lx.InternalServerError, lx.ServiceUnavailableError, lx.BadGatewayError)):
        return ProviderError("server", msg, _retry_after(e))
    if isinstance(e, (lx.APIResponseValidationError, ValueError, KeyError, TypeError)):
        return ProviderError("bad_response", msg)
    if isinstance(e, lx.APIError):
        status = getattr(e, "status_code", None)
        if isinstance(status, int) and status >= 500:
            return ProviderError("server", msg, _retry_after(e))
        return ProviderError("bad_response", msg)
    return ProviderError("bad_response", msg)


def model_kwargs(extra: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The model arguments as litellm keyword arguments: each as it is; ``extra_body`` (sent in
    the request body as it is, as vLLM and llama.cpp need for ``chat_template_kwargs``) a
    copy, so merging never changes the run's parameters."""
    out = {k: v for k, v in extra.items() if k != "extra_body"}
    body = extra.get("extra_body")
    if isinstance(body, dict):
        out["extra_body"] = dict(body)
    return out


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


UNPRICED: set[str] = set()
"""Models litellm does not price: known after their first call, never looked up again."""


def price(model: str, usage: Any) -> float | None:
    """The call's cost in USD from litellm's offline price map; None for a model it does not
    price (or a response without token counts), never an error."""
    prompt = _int(getattr(usage, "prompt_tokens", None))
    completion = _int(getattr(usage, "completion_tokens", None))
    if prompt is None or completion is None or model in UNPRICED:
        return None
    try:
        p, c = litellm.cost_per_token(model=model, prompt_tokens=prompt,
                                      completion_tokens=completion, usage_object=usage)
    except Exception:  # litellm raises for a model it does not know
        UNPRICED.add(model)
        return None
    return round(float(p) + float(c), 10)


class LiteLLMProvider:
    """Any model litellm knows, or an OpenAI-compatible server at ``api_base``."""

    cacheable = True

    def __init__(self, *, api_base: str | None = None, api_key: str | None = None,
                 litellm_model: str | None = None) -> None:
        self.api_base = api_base
        self.api_key = api_key
        self.litellm_model = litellm_model
        """The name litellm is given, when it differs from ours (``local/...`` models)."""
        if api_base and urlsplit(api_base).username is not None:
            litellm.disable_aiohttp_transport = True  # URL credentials: httpx's Basic auth

    async def __call__(self, request: Request, timeout: float) -> Response:
        kwargs: dict[str, object] = {
            "model": self.litellm_model or request.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": timeout,
            "num_retries": 0,
            "max_retries": 0,
        }
        if request.send_seed:
            kwargs["seed"] = request.seed
        kwargs.update(model_kwargs(request.extra))
        if request.response_format is not None:
            kwargs["response_format"] = dict(request.response_format)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        try:
            resp = await litellm.acompletion(**kwargs)
        except FatalProviderError:
            raise
        except Exception as e:  # every provider failure is classified, never propagated raw
            raise classify(e, (self.api_key,)) from e
        try:
            choice = resp.choices[0]
            text = choice.message.content
            finish = choice.finish_reason
        except (AttributeError, IndexError, KeyError, TypeError) as e:
            raise ProviderError("bad_response", f"malformed completion: {e}") from e
        usage = getattr(resp, "usage", None)
        prompt = _int(getattr(usage, "prompt_tokens", None))
        completion = _int(getattr(usage, "completion_tokens", None))
        return Response(
            text="" if text is None else str(text),
            finish_reason=finish,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=_int(getattr(getattr(usage, "prompt_tokens_details", None),
                                       "cached_tokens", None)),
            reasoning_tokens=_int(getattr(getattr(usage, "completion_tokens_details", None),
                                          "reasoning_tokens", None)),
            cost_usd=price(self.litellm_model or request.model, usage),
        )

    async def aclose(self) -> None:
        return None
