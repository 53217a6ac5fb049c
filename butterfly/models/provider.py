"""The seam between the harness and anything that answers: types, errors, and resolution.

A provider is an async callable ``Request -> Response`` with ``aclose`` (two methods). The
runner never knows which one it talks to: litellm (any provider it knows, and the embedded
llama.cpp server) and the built-in scripted agents all plug in here, so the runner, parser and
scorer are tested offline exactly as they run online. Which provider a model name opens is
:mod:`butterfly.models.registry`. The request, the response, the error classes and the
secret patterns are :mod:`butterfly.core.wire`'s, shared with the Kaggle runner.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Protocol

from butterfly.core.wire import Request, Response, says_over_context
from butterfly.errors import UserError


class Provider(Protocol):
    async def __call__(self, request: Request, timeout: float) -> Response: ...

    async def aclose(self) -> None: ...


class FatalProviderError(UserError):
    """The provider refused the request itself (bad key, unknown model, bad parameter)."""


class ContextOverflow(FatalProviderError):
    """The conversation no longer fits the model's context window: a refusal of this request
    that every later turn of the conversation would get too. The code track records it as an
    abstention (reason ``context``, contract section 7); elsewhere it fails the run."""


def refusal(msg: str, detail: str = "") -> FatalProviderError:
    """The provider's refusal ``msg`` as a fatal error, with the ``--no-schema`` hint when the
    refusal (or its full ``detail``) is about structured output; a :class:`ContextOverflow`
    when it says the request is over the context window."""
    low = (msg + detail).lower()
    if says_over_context(low):
        return ContextOverflow(f"the provider refused the request: {msg}")
    hint = ""
    if "response_format" in low or "json_schema" in low or "schema" in low:
        hint = " (if the model does not support structured output, add --no-schema)"
    return FatalProviderError(f"the provider refused the request: {msg}{hint}")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
RESET_HEADERS = ("requests", "tokens")
"""``x-ratelimit-reset-requests`` and ``x-ratelimit-reset-tokens`` (OpenAI, vLLM gateways)."""


def seconds_of(value: str) -> float | None:
    """A wait given as seconds (``"7"``, ``"0.5"``), an HTTP date, or a duration as the
    ``x-ratelimit-reset-*`` headers give it (``"1s"``, ``"6m0s"``, ``"20ms"``); None if none."""
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if parts and "".join(n + u for n, u in parts) == text.replace(" ", ""):
        return sum(float(n) * _UNIT[u] for n, u in parts)
    try:
        return max(0.0, parsedate_to_datetime(text).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def retry_after_of(headers: Mapping[str, str] | None) -> float | None:
    """How long a server asked us to wait: ``Retry-After`` (seconds or an HTTP date), else the
    ``x-ratelimit-reset-*`` header of the limit that ran out (its ``x-ratelimit-remaining-*``
    is 0), else the shortest reset given; None when it said nothing."""
    if not headers:
        return None
    try:
        low = {str(k).lower(): str(v) for k, v in headers.items()}
    except AttributeError:
        return None
    if "retry-after" in low:
        return seconds_of(low["retry-after"])
    resets = {kind: seconds_of(low[f"x-ratelimit-reset-{kind}"]) for kind in RESET_HEADERS
              if f"x-ratelimit-reset-{kind}" in low}
    spent = [w for kind, w in resets.items()
             if w is not None and low.get(f"x-ratelimit-remaining-{kind}", "").strip() == "0"]
    given = [w for w in resets.values() if w is not None]
    return max(spent) if spent else min(given) if given else None
