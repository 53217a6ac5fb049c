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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import JsonValue

from butterfly.core.vocab import ErrorClass

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
