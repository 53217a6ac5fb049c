"""A call's price and a model's context window from litellm's price map, without importing it.

The map is litellm's public ``litellm.model_cost`` (its offline copy, as the litellm transport
reads it), of which butterfly keeps the fields read here (:data:`FIELDS`) in
``butterfly/models/data/prices.json``: importing litellm takes seconds, reading that file a few
milliseconds, and a command that calls no provider, or calls one over the fast path, never
imports litellm (docs/cost.md, "Prices"). ``tools/price_map.py`` writes the file from the
installed litellm; ``tests/butterfly/models/test_prices.py`` holds it equal to the locked
litellm's map. It is read once, lazily, the first time a model's price is looked up, and each
model's rates are decided once (an unpriced model is ``None`` for the rest of the process,
never looked up per call). The sum is litellm's for
chat models without tiered prices: uncached prompt tokens at the input rate, cached ones at
the cache-read rate (the input rate when there is none), tokens written to the cache at the
cache-write rate (Anthropic's 1.25 x; else the input rate), completion tokens (reasoning
included, counted once: :func:`butterfly.core.wire.billed_completion`) at the output rate
(``tests/butterfly/models/test_prices.py`` checks it against ``litellm.cost_per_token``).
That sum, :meth:`Rates.usd`, is the one price of a call for both transports: the litellm
transport takes its rates from litellm (:data:`RatesOf`), never its sum.

A price the user gives (``--price``, ``--price-per-mtok``: :class:`UserPrice`) replaces the
map's rates for every call of the run: :func:`rates_for` decides a run's rates, :func:`charge`
prices an answer by them (docs/cost.md, "Prices").
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from butterfly.core import wire
from butterfly.core.user_price import UserPrice
from butterfly.core.wire import invalid

PRICE_FILE: Final = Path(__file__).parent / "data" / "prices.json"
"""litellm's price map as butterfly keeps it: ``{"litellm": VERSION, "models": {NAME: ENTRY}}``
with the :data:`FIELDS` of each entry (``tools/price_map.py`` writes it)."""
FIELDS: Final = ("litellm_provider", "input_cost_per_token", "output_cost_per_token",
                 "cache_read_input_token_cost", "cache_creation_input_token_cost",
                 "max_input_tokens", "max_output_tokens")
"""The fields of a map entry that :func:`rates` and :func:`window` read."""


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per token."""

    prompt: float
    completion: float
    cached: float
    written: float | None = None
    """USD per prompt token written to the cache (Anthropic: 1.25 x the input rate); None:
    the input rate (a provider that does not charge writes apart, or a user's price)."""

    def usd(self, prompt: int, completion: int, cached: int | None = None,
            written: int | None = None) -> float:
        """The price of these tokens: uncached prompt tokens at the input rate, cached ones at
        the cache-read rate, those ``written`` to the cache (counted inside ``prompt``) at the
        cache-write rate, completion tokens at the output rate (rounded to 1e-10)."""
        hit = min(max(cached or 0, 0), prompt)
        put = min(max(written or 0, 0), prompt - hit)
        return round((prompt - hit - put) * self.prompt + hit * self.cached
                     + put * self.write_rate + completion * self.completion, 10)

    @property
    def write_rate(self) -> float:
        """USD per prompt token written to the cache: :attr:`written`, else the input rate."""
        return self.prompt if self.written is None else self.written

    def saved(self, prompt: int, cached: int | None) -> float:
        """What the cached prompt tokens saved: cached x (input rate - cached rate)."""
        hit = min(max(cached or 0, 0), prompt)
        return round(hit * (self.prompt - self.cached), 10)

    @classmethod
    def of(cls, price: UserPrice) -> Rates:
        """The rates of a price the user gave (USD per million tokens)."""
        return cls(*price.per_token())


def project(cost_map: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """What butterfly keeps of a litellm price map (``litellm.model_cost``): each entry's
    :data:`FIELDS`, for the entries that name a provider and give prices or a window."""
    kept = {}
    for name, entry in cost_map.items():
        if not isinstance(entry, Mapping) or "litellm_provider" not in entry:
            continue
        fields = {f: entry[f] for f in FIELDS if entry.get(f) is not None}
        if len(fields) > 1:
            kept[name] = fields
    return kept


@functools.cache
def _price_map() -> dict[str, Any]:
    data = json.loads(PRICE_FILE.read_text(encoding="utf-8"))
    models = data.get("models") if isinstance(data, dict) else None
    return models if isinstance(models, dict) else {}


def _number(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _entries(model: str) -> Iterator[dict[str, Any]]:
    """The map's entries of ``model`` of its provider: under its whole name, then without the
    provider's prefix."""
    provider, _, bare = model.partition("/")
    for key in (model, bare):
        entry = _price_map().get(key)
        if isinstance(entry, dict) and entry.get("litellm_provider") == provider:
            yield entry


@functools.cache
def rates(model: str) -> Rates | None:
    """The rates of ``model`` (``openai/gpt-4o-mini``, ``hosted_vllm/NAME``), or None when the
    map does not price it as a chat model of that provider."""
    for entry in _entries(model):
        prompt = _number(entry, "input_cost_per_token")
        completion = _number(entry, "output_cost_per_token")
        if prompt is None or completion is None:
            continue
        cached = _number(entry, "cache_read_input_token_cost")
        return Rates(prompt, completion, prompt if cached is None else cached,
                     _number(entry, "cache_creation_input_token_cost"))
    return None


@dataclass(frozen=True, slots=True)
class Window:
    """A model's context window as litellm's map gives it: the most prompt tokens it takes
    (``max_input_tokens``) and the most it answers (``max_output_tokens``); None where the map
    does not say."""

    prompt: int | None
    completion: int | None


def _count(value: float | None) -> int | None:
    """A token count of the map (a positive whole number), else None."""
    return int(value) if value is not None and value > 0 and value == int(value) else None


@functools.cache
def window(model: str) -> Window | None:
    """The context window of ``model`` (``openai/gpt-4o-mini``: 128,000 prompt tokens), from
    the same offline map and entry as its rates, read without importing litellm; None when the
    map has no entry of that provider for it (a local or self-hosted model)."""
    for entry in _entries(model):
        found = Window(_count(_number(entry, "max_input_tokens")),
                       _count(_number(entry, "max_output_tokens")))
        if found.prompt is not None or found.completion is not None:
            return found
    return None


def checked(answer: wire.Response, model: str) -> wire.Response:
    """``answer`` as it is, or with invalid usage (:func:`butterfly.core.wire.invalid`: no
    counts, no price) when it reports more prompt or completion tokens than ``model``'s
    context window (:func:`window`) holds; a count the transport already refused stays so."""
    w = None if answer.usage_invalid is not None else window(model)
    if w is None:
        return answer
    for name, count, most, key in (
            ("prompt_tokens", answer.prompt_tokens, w.prompt, "max_input_tokens"),
            ("completion_tokens", answer.completion_tokens, w.completion, "max_output_tokens")):
        if count is not None and most is not None and count > most:
            return invalid(answer, f"{name} is {count:,}, over {model}'s context window "
                                f"({key} {most:,} in litellm's map)")
    return answer


RatesOf = Callable[[str], "Rates | None"]
"""Where a model's rates come from: this file (:func:`rates`, the fast path), or litellm's
own look-up of its price map (``litellm_seam.shipped_rates``, the litellm transport)."""


def rates_for(model: str, user_price: UserPrice | None = None) -> Rates | None:
    """The rates a run prices ``model``'s calls by: the user's price when one is given, else
    litellm's offline map (:func:`rates`); None when neither prices it. What ``--max-cost``
    and the dry run read."""
    return Rates.of(user_price) if user_price is not None else rates(model)


def charge(r: Rates | None, answer: wire.Response) -> wire.Response:
    """``answer`` priced by the rates ``r``: its ``cost_usd`` (:meth:`Rates.usd`) and what its
    cached prompt tokens saved (``saved_usd``, :meth:`Rates.saved`); both None when ``r`` is
    None or the answer has no token counts."""
    p, c = answer.prompt_tokens, answer.completion_tokens
    if r is None or p is None or c is None:
        return replace(answer, cost_usd=None, saved_usd=None)
    return replace(answer, cost_usd=r.usd(p, c, answer.cached_tokens,
                                          answer.cache_write_tokens),
                   saved_usd=r.saved(p, answer.cached_tokens))


def priced(model: str, rates_of: RatesOf = rates) -> wire.Price:
    """How :func:`butterfly.core.wire.response` prices a call to ``model`` (by this file's
    rates unless ``rates_of`` says otherwise; the rates are looked up only for an answer with
    token counts)."""
    def price(answer: wire.Response) -> wire.Response:
        known = answer.prompt_tokens is not None and answer.completion_tokens is not None
        return charge(rates_of(model) if known else None, answer)
    return price
