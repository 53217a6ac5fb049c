"""The seam between the harness and anything that answers: types, errors, and resolution.

A provider is an async callable ``Request -> Response`` with ``aclose`` (two methods). The
runner never knows which one it talks to: litellm (any provider it knows, and the embedded
llama.cpp server) and the built-in scripted agents all plug in here, so the runner, parser and
scorer are tested offline exactly as they run online. Which provider a model name opens is
:mod:`butterfly.models.registry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from butterfly.core.vocab import ErrorClass

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Request:
    model: str
    messages: tuple[Mapping[str, str], ...]
    temperature: float
    max_tokens: int
    seed: int
    response_format: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Who is asking (scenario id, turn): read by scripted agents, never sent to a provider."""

    def cache_key_fields(self) -> dict[str, Any]:
        """What changes the answer: never timeouts, concurrency or retries."""
        return {
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "response_format": dict(self.response_format) if self.response_format else None,
        }


@dataclass(frozen=True, slots=True)
class Response:
    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


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
