"""Which provider a model name opens: one registry of name prefixes, and the client wiring.

| prefix | provider |
|---|---|
| ``script/NAME`` | a built-in scripted agent (:mod:`butterfly.models.scripted`) |
| ``local/smollm2``, ``local/PATH.gguf`` | the embedded llama.cpp server, over the fast path |
| ``openai/M``, ``hosted_vllm/M`` + ``--api-base`` | the fast path (``openai_http``) |
| anything else | litellm as it is (with ``--api-base`` if given) |
| any name, with ``--router FILE`` | the name's deployments behind ``litellm.Router`` |

The fast path speaks chat completions directly over one pooled aiohttp session; ``via="litellm"``
(``--via litellm``) sends those through litellm instead. Both send the same request, so the
answer cache and a run's answer key do not depend on the path.

The registry is one table, :data:`PREFIXES`: each prefix with its opener, its name check and
its transport; :func:`transport`, the openers, the name checks and the price checks all read
it. A new kind of provider is one opener function and one :class:`Prefix` entry there.
:func:`open_client` wires provider, answer cache and :class:`ModelClient` once, for
``butterfly run``, ``butterfly sequential`` and the Python API alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from butterfly.code.agents import CODE_AGENTS
from butterfly.core.user_price import UserPrice
from butterfly.core.vocab import Transport, Via
from butterfly.core.wire import SERVER_PREFIXES
from butterfly.errors import UserError
from butterfly.models.answer_cache import Cache, cache_file
from butterfly.models.client import ModelClient
from butterfly.models.embedded import EmbeddedModelError, EmbeddedServer, resolve_gguf
from butterfly.models.price_map import Rates
from butterfly.models.provider import Provider
from butterfly.models.router import RouterConfig, load_router
from butterfly.models.scripted import ScriptedProvider, check_agent
from oracle import Scenario


@dataclass(frozen=True)
class ModelRequest:
    """Which model a run calls, and how: resolved and checked once (``--model``,
    ``--api-base``, ``--via``, the ``--router`` group of the model, ``--cache``), then passed
    whole to :func:`open_client`."""

    model: str
    api_base: str | None = None
    via: Via = "auto"
    router: RouterConfig | None = None
    """``--router FILE``: the deployments of :attr:`model`, checked."""
    cache: str | None = None
    """The answer cache's path (None: no cache)."""

    @property
    def routed(self) -> bool:
        return self.router is not None

    @property
    def transport(self) -> Transport:
        """How its calls are sent (:func:`transport`)."""
        return transport(self.model, self.api_base, self.via, routed=self.routed)


class ClientSettings(Protocol):
    """What a client reads of a run's settings (``runs.records.RunParams`` has it all)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def retries(self) -> int: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_answer_chars(self) -> int: ...
    @property
    def max_retry_wait(self) -> float: ...
    @property
    def track(self) -> str: ...
    @property
    def price(self) -> UserPrice | None: ...


@dataclass(frozen=True)
class OpenRequest:
    """What an opener is given: the model request, a stack that stops the servers an opener
    starts when it closes, the scenarios to answer and the run's settings (the concurrency;
    the track: what the scripted agents answer, a spec as JSON or a program)."""

    stack: ExitStack
    request: ModelRequest
    scenarios: Sequence[Scenario]
    settings: ClientSettings


Opener = Callable[[OpenRequest], Provider]


def _scripted(req: OpenRequest) -> Provider:
    return ScriptedProvider(req.request.model.removeprefix("script/"),
                            {s.id: s for s in req.scenarios}, track=req.settings.track)


def _direct(api_base: str, api_key: str, concurrency: int, *, model: str | None = None,
            price_model: str | None = None) -> Provider:
    from butterfly.models.openai_http import OpenAIHTTPProvider  # aiohttp: only when called

    return OpenAIHTTPProvider(api_base=api_base, api_key=api_key, model=model,
                              price_model=price_model, connections=concurrency)


def _embedded(req: OpenRequest) -> Provider:
    concurrency = req.settings.concurrency
    try:
        gguf = resolve_gguf(req.request.model)
        server = req.stack.enter_context(EmbeddedServer(gguf, parallel=concurrency))
    except EmbeddedModelError as e:
        raise UserError(str(e)) from None
    alias = f"openai/{server.model_alias}"
    if req.request.transport == "litellm":
        from butterfly.models.litellm_seam import LiteLLMProvider  # litellm: seconds to import

        return LiteLLMProvider(api_base=server.api_base, api_key="sk-local", litellm_model=alias)
    return _direct(server.api_base, "sk-local", concurrency, model=server.model_alias,
                   price_model=alias)


def direct_key(model: str) -> str:
    """The fast path's API key: the prefix's environment variable, else ``sk-no-key`` (a
    self-hosted OpenAI-compatible server usually wants none)."""
    env = next((v for p, v in SERVER_PREFIXES.items() if model.startswith(p)),
               "OPENAI_API_KEY")
    return os.environ.get(env) or "sk-no-key"


def _litellm_route(req: OpenRequest) -> Provider:
    """The name as it is, routed by litellm (any provider it knows, ``--api-base`` if given)."""
    from butterfly.models.litellm_seam import LiteLLMProvider

    r, api_key = req.request, None
    if r.api_base and r.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        api_key = "sk-no-key"  # a self-hosted OpenAI-compatible server usually wants none
    return LiteLLMProvider(api_base=r.api_base, api_key=api_key)


def _server(req: OpenRequest) -> Provider:
    """``openai/M``, ``hosted_vllm/M``: the fast path with ``--api-base``, else litellm."""
    r = req.request
    if r.api_base and r.transport == "direct":
        return _direct(r.api_base, direct_key(r.model), req.settings.concurrency)
    return _litellm_route(req)


def _routed(req: OpenRequest) -> Provider:
    from butterfly.models.litellm_seam import RouterProvider

    assert req.request.router is not None
    return RouterProvider(req.request.router)


def _check_scripted(model: str) -> None:
    """A name some track knows (the track's own list is checked when the agent is opened)."""
    name = model.removeprefix("script/")
    if name not in CODE_AGENTS:
        check_agent(name)


def _check_embedded(model: str) -> None:
    if model != "local/smollm2":  # the bundled file is found (or fetched) when it starts
        try:
            resolve_gguf(model)
        except EmbeddedModelError as e:
            raise UserError(str(e)) from None


def _check_wire(model: str) -> None:
    """``openai/NAME``, ``hosted_vllm/NAME``: litellm routes any NAME of these (no import)."""
    if not model.partition("/")[2].strip():
        raise UserError(f"--model {model}: name the model after the prefix, e.g. "
                        "openai/gpt-4o-mini or hosted_vllm/Qwen/Qwen2.5-7B-Instruct")


def _check_litellm_route(model: str) -> None:
    from butterfly.models.litellm_seam import check_route

    check_route(model)


@dataclass(frozen=True)
class Prefix:
    """What a model-name prefix opens: its opener, the check of a name that starts nothing
    (run before a run directory is created), and how its calls are sent (``direct`` only
    with ``--api-base`` when ``needs_api_base``; litellm instead with ``--via litellm``)."""

    opener: Opener
    check: Callable[[str], None]
    transport: Transport
    needs_api_base: bool = False
    priced: bool = True
    """False where no price map prices the calls (a scripted agent, a local model)."""


PREFIXES: Final[dict[str, Prefix]] = {
    "script/": Prefix(_scripted, _check_scripted, "scripted", priced=False),
    "local/": Prefix(_embedded, _check_embedded, "direct", priced=False),
    **{p: Prefix(_server, _check_wire, "direct", needs_api_base=True) for p in SERVER_PREFIXES},
}
"""Model-name prefix -> what it opens: the registry, read by the openers, the name checks,
:func:`transport`, the cache and the price checks alike."""
FALLBACK: Final = Prefix(_litellm_route, _check_litellm_route, "litellm")
"""A name with no registered prefix: litellm as it is, its name checked by litellm's routing."""


def prefix_of(model: str) -> Prefix:
    """The registry's entry of ``model``'s prefix (:data:`FALLBACK` when none is registered)."""
    return next((e for p, e in PREFIXES.items() if model.startswith(p)), FALLBACK)


def transport(model: str, api_base: str | None, via: Via = "auto",
              routed: bool = False) -> Transport:
    """How calls to ``model`` are sent (recorded in the run's manifest). ``routed``: behind
    ``--router``, which is litellm's Router whatever ``via`` says."""
    if routed:
        return "litellm"
    entry = prefix_of(model)
    if entry.transport == "direct" and (via == "litellm"
                                        or (entry.needs_api_base and not api_base)):
        return "litellm"
    return entry.transport


def check_model_name(model: str) -> None:
    """Refuse a model name no provider can open (a :class:`UserError`), starting nothing."""
    prefix_of(model).check(model)


def check_name_offline(model: str) -> None:
    """:func:`check_model_name` without asking litellm (``run --dry-run`` never imports it): a
    name no prefix registers is only checked to name a model after its provider."""
    entry = prefix_of(model)
    if entry is not FALLBACK:
        entry.check(model)
    elif not model.strip() or not model.partition("/")[2].strip():
        raise UserError(f"--model {model!r}: name a provider and a model, e.g. "
                        "anthropic/claude-sonnet-4-5 or ollama_chat/qwen2.5:7b")


def router_config(path: str | Path, model: str) -> RouterConfig:
    """The router file's deployments of ``model``, checked before anything is created (router
    settings litellm.Router does not take refused, starting nothing)."""
    from butterfly.models.litellm_seam import check_router_settings

    config = load_router(path, model)
    check_router_settings(config)
    return config


def check_cache(model: str, cache_path: str | None, routed: bool = False) -> None:
    """Open (or create) the answer cache ``model`` would use (scripted agents use none), before
    a run creates anything: a bad HOME, a missing directory, an unwritable place or a corrupt
    file is one line."""
    if cache_path is not None and caches(model, routed):
        Cache(cache_file(cache_path)).close()


def caches(model: str, routed: bool = False) -> bool:
    """Whether answers of ``model`` are worth caching: not a scripted agent's."""
    return routed or prefix_of(model).transport != "scripted"


def _unpriced(model: str, api_base: str | None, via: Via,
              router: RouterConfig | None) -> list[str]:
    """The models behind ``model`` that litellm's offline price map does not price."""
    if router is None and not prefix_of(model).priced:
        return [model]
    if router is None and transport(model, api_base, via) == "direct":  # the fast path
        from butterfly.models.price_map import rates

        return [] if rates(model) is not None else [model]
    from butterfly.models.litellm_seam import shipped_rates

    served = [m for m, _ in router.served()] if router is not None else [model]
    return [m for m in served if shipped_rates(m) is None]


def check_priced(model: str, api_base: str | None = None, via: Via = "auto",
                 router: RouterConfig | None = None, user_price: UserPrice | None = None,
                 side: str = "") -> None:
    """``--max-cost`` needs a price for every call: refuse, before any call, a model that
    neither the user (``user_price``) nor litellm's offline price map prices (a scripted
    agent, a local or self-hosted model, a name it does not know). ``side``: the price flags'
    suffix (``-a``, ``-b`` for ``butterfly sequential``)."""
    if user_price is not None:
        return
    unpriced = _unpriced(model, api_base, via, router)
    if unpriced:
        raise UserError(f"--max-cost: no price is known for {unpriced[0]} (litellm's offline "
                        f"price map has none): give one with --price{side} FILE or "
                        f"--price-per-mtok{side} IN,OUT, or run without --max-cost")


def opener_of(model: str, router: RouterConfig | None = None) -> Opener:
    """What opens the provider of ``model`` (behind ``router`` when given)."""
    if router is not None:
        return _routed
    return prefix_of(model).opener


def open_client(stack: ExitStack, request: ModelRequest, scenarios: Sequence[Scenario],
                settings: ClientSettings) -> ModelClient:
    """The client for ``request``'s model: its provider, the answer cache (unless
    ``request.cache`` is None or the provider is not worth caching), and, from the run's
    ``settings``, retries, timeouts, concurrency, the answer cap and the user's price when
    given (every answer priced by it). The cache keys a router's answers by its deployments
    (never as one server's)."""
    s = settings
    provider = opener_of(request.model, request.router)(
        OpenRequest(stack, request, scenarios, settings))
    cache = None
    if request.cache is not None and caches(request.model, request.routed):
        server = request.router.identity() if request.router is not None else request.api_base
        cache = Cache(cache_file(request.cache), api_base=server)
    return ModelClient(provider, concurrency=s.concurrency, retries=s.retries,
                       timeout=s.timeout, cache=cache, max_answer_chars=s.max_answer_chars,
                       max_retry_wait=s.max_retry_wait,
                       user_rates=None if s.price is None else Rates.of(s.price))
