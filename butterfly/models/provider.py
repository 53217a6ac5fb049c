"""The seam between the harness and anything that answers: types, errors, and resolution.

A provider is an async callable ``Request -> Response`` with ``aclose`` (two methods). The
runner never knows which one it talks to: litellm (any provider it knows, and the embedded
llama.cpp server) and the built-in scripted agents all plug in here, so the runner, parser and
scorer are tested offline exactly as they run online. Which provider a model name opens is
:mod:`butterfly.models.registry`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Final, Literal, Protocol

from pydantic import JsonValue

from butterfly.core.vocab import ErrorClass
from butterfly.errors import UserError

Role = Literal["system", "user", "assistant"]

REDACTED = "[redacted]"
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_SECRET_TEXT = re.compile(
    r"\b(?:sk|pk|rk|hf|gsk|xai|ghp)[-_][A-Za-z0-9_\-]{8,}"  # provider key shapes
    r"|(?P<bearer>Bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*"  # an Authorization header
    r"|(?P<url>://)[^/\s:@]+:[^/\s@]+(?=@)"  # user:password@ in a URL
    r"|(?P<query>[?&](?:key|api_key|api-key|token|access_token)=)[^&\s\"']+", re.IGNORECASE)


def _redact_match(m: re.Match[str]) -> str:
    return (m.group("bearer") or m.group("url") or m.group("query") or "") + REDACTED


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` (a server's error message) with secrets replaced by ``[redacted]``: the given
    ones, every value of an environment variable named like a key, token or password, and
    anything shaped like an API key, a bearer token or URL credentials."""
    known = [v for v in secrets if v] + [v for k, v in os.environ.items()
                                         if _SECRET_ENV.search(k) and len(v) >= 6]
    for value in sorted(set(known), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return _SECRET_TEXT.sub(_redact_match, text)


@dataclass(frozen=True, slots=True)
class Request:
    model: str
    messages: tuple[Mapping[str, str], ...]
    temperature: float
    max_tokens: int
    seed: int
    response_format: Mapping[str, Any] | None = None
    extra: Mapping[str, JsonValue] = field(default_factory=dict)
    """Model arguments sent as they are (``-M KEY=VALUE``); ``extra_body`` is merged."""
    send_seed: bool = True
    """False for providers that reject ``seed`` (``--no-seed``)."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Who is asking (scenario id, turn): read by scripted agents, never sent to a provider."""

    def cache_key_fields(self) -> dict[str, Any]:
        """What in the request changes the answer: never timeouts, concurrency or retries.
        The cache adds the server (``api_base``) it was asked (:mod:`butterfly.models.cache`)."""
        fields = {
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed if self.send_seed else None,
            "response_format": dict(self.response_format) if self.response_format else None,
        }
        if self.extra:  # absent when empty: keys of answers cached before model arguments hold
            fields["extra"] = dict(self.extra)
        return fields


@dataclass(frozen=True, slots=True)
class Response:
    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    """The call's price (litellm's offline price map), or None when the model is unpriced."""
    reasoning_content: str | None = None
    """The reasoning the provider returned beside the answer (``reasoning_content``, or
    ``reasoning``), never sent back in the history."""
    raw_chars: int | None = None
    """The answer's length in characters when ``text`` holds only its first N (the
    response-size cap, :mod:`butterfly.models.client`); None when ``text`` is all of it."""


TEXT_PARTS: Final = (None, "text", "output_text")
"""Content-part types whose ``text`` is the answer's (an image or a refusal part is not)."""


def answer_text(content: object) -> str:
    """The answer's text from a completion message's ``content``: a string as it is, None as
    "", a list of content parts (``{"type": "text", "text": ...}``, or plain strings) joined
    in order without a separator, parts without text left out; anything else is not an
    answer (``bad_response``). The fast path and the litellm seam both read it here."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else p["text"] for p in content
                       if isinstance(p, str) or (isinstance(p, dict)
                                                 and p.get("type") in TEXT_PARTS
                                                 and isinstance(p.get("text"), str)))
    raise ProviderError("bad_response", f"the answer's content is a {type(content).__name__}, "
                        "not text or a list of text parts")


def reasoning_text(message: Mapping[str, Any]) -> str | None:
    """The reasoning a server returned beside the answer: ``reasoning_content`` (vLLM,
    DeepSeek, llama.cpp), else ``reasoning``; None when it gave none."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


class ProviderError(Exception):
    """A call that did not produce an answer. ``kind`` decides whether it is retried."""

    def __init__(self, kind: ErrorClass, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorClass = kind
        self.message = message
        self.retry_after = retry_after


class Provider(Protocol):
    cacheable: bool
    """Whether answers are worth caching (not for scripted agents)."""

    async def __call__(self, request: Request, timeout: float) -> Response: ...

    async def aclose(self) -> None: ...


def token_count(value: object) -> int | None:
    """A token count a server reported: an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class FatalProviderError(UserError):
    """The provider refused the request itself (bad key, unknown model, bad parameter)."""


def refusal(msg: str, detail: str = "") -> FatalProviderError:
    """The provider's refusal ``msg`` as a fatal error, with the ``--no-schema`` hint when the
    refusal (or its full ``detail``) is about structured output."""
    low = (msg + detail).lower()
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
