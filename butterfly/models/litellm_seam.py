"""The one module that calls litellm.

litellm runs offline: its model cost map is read from the package, not fetched, and telemetry
is off. The environment is set before the import; this module is imported only by commands that
call a provider (litellm takes seconds to import). litellm's own retries are off: retries,
timeouts, concurrency and the cache belong to :mod:`butterfly.models.client`; only behind
``--router`` (:class:`RouterProvider`) are the Router's retries over the replicas litellm's,
and our client retries what the Router gave up on (docs/scale.md).

litellm's own aiohttp transport is used (its default: pooled connections; httpx opened a
connection for most calls and capped them at 100 in flight, ``bench/concurrency.py``), except
for an ``api_base`` carrying ``user:password@``, which that transport refuses beside the API
key header: httpx then sends them as Basic auth, as before. A model's rates are looked up once,
not per call; a call's price is :meth:`butterfly.models.price_map.Rates.usd`, as on the fast
path. Its exceptions are classified by :func:`butterfly.core.wire.exception_kind`.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import io
import os
import tokenize
import warnings
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import urlsplit

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

import litellm
from litellm import exceptions as lx
from litellm.router import Router
from litellm.types.router import RouterRateLimitError, RouterRateLimitErrorBasic
from litellm.types.utils import PromptTokensDetailsWrapper, Usage

from butterfly.core import wire
from butterfly.core.cache_marks import marked
from butterfly.core.wire import ProviderError, Request, Response, redact
from butterfly.errors import UserError
from butterfly.models.price_map import Rates, priced
from butterfly.models.provider import FatalProviderError, refusal, retry_after_of
from butterfly.models.router import RouterConfig

litellm.telemetry = False
litellm.suppress_debug_info = True
warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited",
                        category=RuntimeWarning)  # litellm's async logging, after a refusal
warnings.filterwarnings("ignore", message=r"Pydantic serializer warnings",
                        category=UserWarning)  # litellm logging a completion it refused


__all__ = ["FatalProviderError", "LiteLLMProvider", "check_route", "classify",
           "shipped_rates"]


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


REFUSALS: Final = (lx.AuthenticationError, lx.PermissionDeniedError, lx.NotFoundError,
                   lx.BadRequestError, lx.UnsupportedParamsError)
"""litellm's refusals (a bad key, no access, no such model, a bad request): the run stops."""


def _catch_all(e: Exception) -> bool:
    """litellm's ``APIError`` below 500: a status it has no class for (a 403 or a 409 of an
    OpenAI-compatible server among them), which says nothing of the request: retried as a
    ``bad_response`` (or a ``connection`` error, as its message tells), never refused."""
    return isinstance(e, lx.APIError) and (wire.status_of(e) or 0) < 500


def classify(e: Exception, secrets: tuple[str | None, ...] = ()
             ) -> ProviderError | FatalProviderError:
    """A litellm exception as our error classes, by the one classifier
    (:func:`butterfly.core.wire.exception_kind`: its class, its status, its message), but for
    what litellm alone says: missing credentials, its refusal classes (:data:`REFUSALS`), its
    catch-all, and that anything else it raises is a provider's failure, as its message tells
    (``bad_response`` when it tells nothing). The message keeps the server's first line,
    secrets redacted, at most 500 characters."""
    msg = redact(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                 secrets)[:500]
    kind = wire.exception_kind(e)
    if kind in ("timeout", "rate_limit") and not _catch_all(e):
        return ProviderError(kind, msg, _retry_after(e) if kind == "rate_limit" else None)
    if "missing credentials" in str(e).lower() or "api_key" in str(e).lower():
        return FatalProviderError(f"no credentials for this provider: {msg}")
    if isinstance(e, REFUSALS):
        return refusal(msg, str(e))
    if kind is None or _catch_all(e):
        kind = wire.told_kind(e, "bad_response")
    return ProviderError(kind, msg, _retry_after(e) if kind == "server" else None)


SHIPPED: frozenset[str] = frozenset(litellm.model_cost)
"""The price map's models as shipped, before any ``litellm.Router`` registers each of its
deployments' models there without prices (which litellm would then price at $0)."""
RATES: dict[str, Rates | None] = {}
"""The per-model price look-ups so far: the model's rates, or None for a model the price map
does not price (``bench/concurrency.py`` clears them between settings)."""


def _cost(model: str, prompt: int, completion: int, cached: int | None = None,
          written: int | None = None) -> float | None:
    """litellm's price of these tokens (None: it does not price ``model``), to read its rates
    off: a price is only ever computed by :meth:`butterfly.models.price_map.Rates.usd`."""
    usage = None if cached is None and written is None else Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion,
        prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=cached or 0,
                                                         cache_creation_tokens=written or 0),
        cache_creation_input_tokens=written or 0, cache_read_input_tokens=cached or 0)
    try:
        p, c = litellm.cost_per_token(model=model, prompt_tokens=prompt,
                                      completion_tokens=completion, usage_object=usage)
    except Exception:  # litellm raises for a model it does not know
        return None
    return float(p) + float(c)


@contextlib.contextmanager
def _as_shipped() -> Iterator[None]:
    """litellm's price map as shipped for the block: entries a Router added are set aside,
    and litellm's look-up caches cleared around it."""
    added = {k: litellm.model_cost.pop(k) for k in list(litellm.model_cost) if k not in SHIPPED}
    invalidate = getattr(litellm.utils, "_invalidate_model_cost_lowercase_map", None)
    if added and invalidate is not None:
        invalidate()
    try:
        yield
    finally:
        litellm.model_cost.update(added)
        if added and invalidate is not None:
            invalidate()


def shipped_rates(model: str) -> Rates | None:
    """USD per prompt, completion and cached prompt token by the shipped map, as litellm
    resolves ``model``'s name (None: unpriced); looked up once per model."""
    if model not in RATES:
        with _as_shipped():
            RATES[model] = _rates(model)
    return RATES[model]


def _rates(model: str) -> Rates | None:
    """:func:`shipped_rates` of ``model``, read off litellm's prices of 1,000 tokens."""
    p, c = _cost(model, 1000, 0), _cost(model, 0, 1000)
    if p is None or c is None:
        return None
    hit, put = _cost(model, 1000, 0, cached=1000), _cost(model, 1000, 0, written=1000)
    return Rates(p / 1000, c / 1000, (p if hit is None else hit) / 1000,
                 None if put is None or put == p else put / 1000)


@functools.cache
def takes_cache_marks(model: str) -> bool:
    """Whether litellm routes ``model`` to Claude by a transformation that passes
    ``cache_control`` on (docs/cost.md, "Prompt caching"): Anthropic's API
    (``anthropic/...``), and Claude on Vertex AI (its config is Anthropic's) or Bedrock (the
    Converse API turns each marker into a ``cachePoint``; invoke is Anthropic's config)."""
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
    except Exception:  # a name litellm cannot route is refused elsewhere
        return False
    claude = "claude" in name.lower()
    return provider == "anthropic" or (provider in ("vertex_ai", "bedrock") and claude)


def request_kwargs(request: Request, timeout: float, model: str,
                   marks: bool = False) -> dict[str, object]:
    """What litellm is given for ``request`` (one place for the direct and the routed call):
    the fast path's body (:func:`butterfly.core.wire.body`), ``extra_body`` as litellm's
    argument, and the timeout; with ``marks`` (the model takes them: :func:`takes_cache_marks`)
    the request's cache marks as ``cache_control`` on those messages."""
    kwargs = {**wire.body(request, model, merge_extra_body=False), "timeout": timeout}
    if marks and request.cache_marks:
        kwargs["messages"] = marked(request.messages, request.cache_marks)
    return kwargs


def to_response(resp: Any, priced_as: str) -> Response:
    """Our :class:`Response` from litellm's completion, priced as the model ``priced_as`` by
    the shipped map's rates (a model it does not price stays unpriced after a Router
    registered it, which litellm would price at $0)."""
    return wire.response(resp, wire.OBJECTS, priced(priced_as, shipped_rates))


RECEIVED: Final = "'response_object': "
"""Where litellm's "Invalid response object" error quotes the server's completion."""


def _literal_at(text: str) -> Any:
    """The Python literal (a dict) that opens the first line of ``text``, or None."""
    line = text.split("\n", 1)[0]
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type == tokenize.OP and tok.string in "{[(":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in "}])":
                depth -= 1
                if depth == 0:
                    return ast.literal_eval(line[:tok.end[1]])
    except (tokenize.TokenError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return None


def unconverted(e: BaseException | None) -> Any:
    """The completion litellm received but refused to convert ("Invalid response object":
    e.g. its content is a list of parts, which the fast path joins), recovered from the
    message litellm gives it in; None for any other failure."""
    for _ in range(8):  # the exception and its causes
        if e is None:
            return None
        text = str(e)
        at = text.find(RECEIVED)
        if at >= 0 and "Invalid response object" in text:
            return _literal_at(text[at + len(RECEIVED):])
        e = e.__cause__ or e.__context__
    return None


def recovered(e: Exception, priced_as: str, secrets: tuple[str | None, ...]) -> Response:
    """The answer in a completion litellm would not convert (read as the fast path reads it),
    else the failure classified."""
    data = unconverted(e)
    if data is None:
        raise classify(e, secrets) from e
    return wire.response(data, wire.JSON, priced(priced_as))


class LiteLLMProvider:
    """Any model litellm knows, or an OpenAI-compatible server at ``api_base``."""

    def __init__(self, *, api_base: str | None = None, api_key: str | None = None,
                 litellm_model: str | None = None) -> None:
        self.api_base = api_base
        self.api_key = api_key
        self.litellm_model = litellm_model
        """The name litellm is given, when it differs from ours (``local/...`` models)."""
        if api_base and urlsplit(api_base).username is not None:
            litellm.disable_aiohttp_transport = True  # URL credentials: httpx's Basic auth

    async def __call__(self, request: Request, timeout: float) -> Response:
        model = self.litellm_model or request.model
        kwargs = request_kwargs(request, timeout, model, takes_cache_marks(model))
        kwargs.update(num_retries=0, max_retries=0)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        try:
            resp = await litellm.acompletion(**kwargs)
        except FatalProviderError:
            raise
        except Exception as e:  # every provider failure is classified, never propagated raw
            return recovered(e, model, (self.api_key,))
        return to_response(resp, model)

    async def aclose(self) -> None:
        return None


def check_router_settings(config: RouterConfig) -> None:
    """Refuse ``router_settings`` that ``litellm.Router`` does not take (nothing is sent)."""
    known = set(inspect.signature(Router.__init__).parameters) - {"self", "model_list"}
    bad = sorted(set(config.settings) - known)
    if bad:
        raise UserError(f"--router {config.path}: router_settings {', '.join(bad)} "
                        f"{'is' if len(bad) == 1 else 'are'} not litellm.Router argument(s) "
                        "(e.g. routing_strategy, cooldown_time, allowed_fails, num_retries)")


NO_RETRY_OF_REFUSALS: dict[str, int] = {"AuthenticationErrorRetries": 0,
                                         "BadRequestErrorRetries": 0, "NotFoundErrorRetries": 0}
"""The Router's ``retry_policy`` unless the file sets one: a refused request (a bad key, a
rejected parameter, an unknown model) fails on every replica alike, so it is not retried
(as with one server, the run stops with the refusal)."""


class RouterProvider:
    """The deployments of one model name behind ``litellm.Router``: routing strategy,
    cooldowns and retries over the replicas are litellm's; our client retries only a call
    the Router gave up on."""

    def __init__(self, config: RouterConfig) -> None:
        check_router_settings(config)
        self.config = config
        self._secrets = config.secrets()
        for model, _ in config.served():  # before the Router adds them to the price map
            shipped_rates(model)
        try:
            self.router = Router(model_list=[dict(d) for d in config.model_list],
                                 **{"retry_policy": NO_RETRY_OF_REFUSALS, **config.settings})
        except Exception as e:  # litellm refuses a deployment or a setting
            msg = redact(str(e).splitlines()[0] if str(e) else type(e).__name__,
                         self._secrets)[:300]
            raise UserError(f"--router {config.path}: litellm.Router refused it: {msg}"
                            ) from None
        self._fallback_model = str(config.group[0]["litellm_params"]["model"])
        self._marks = all(takes_cache_marks(str(d["litellm_params"]["model"]))
                          for d in config.group)
        """Cache marks only when every deployment of the name is a Claude that takes them."""

    async def __call__(self, request: Request, timeout: float) -> Response:
        kwargs = request_kwargs(request, timeout, self.config.name, self._marks)
        kwargs["max_retries"] = 0  # the HTTP client's own retries: the Router's are in charge
        try:
            resp = await self.router.acompletion(**kwargs)
        except FatalProviderError:
            raise
        except (RouterRateLimitError, RouterRateLimitErrorBasic) as e:
            wait = getattr(e, "cooldown_time", None)  # every deployment is cooling down
            raise ProviderError("rate_limit", redact(str(e).split(" Passed model=")[0],
                                                     self._secrets)[:300],
                                float(wait) if isinstance(wait, int | float) else None) from e
        except Exception as e:  # every provider failure is classified, never propagated raw
            return recovered(e, self._fallback_model, self._secrets)
        hidden = getattr(resp, "_hidden_params", None) or {}
        model = hidden.get("litellm_model_name") if isinstance(hidden, dict) else None
        return to_response(resp, model if isinstance(model, str) else self._fallback_model)

    async def aclose(self) -> None:
        return None
