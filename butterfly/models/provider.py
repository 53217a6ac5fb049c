"""The seam between the harness and anything that answers: types, errors, and resolution.

A provider is an async callable ``Request -> Response``. The runner never knows which one it
talks to: litellm (any provider it knows, and the embedded llama.cpp server) and the built-in
scripted agents all plug in here, so the runner, parser and scorer are tested offline exactly
as they run online.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from butterfly.errors import UserError
from butterfly.runs.records import ErrorClass

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


def open_provider(
    stack: ExitStack,
    model: str,
    scenarios: Sequence[Any],
    *,
    concurrency: int = 1,
    api_base: str | None = None,
) -> Provider:
    """The provider for ``model``; servers it starts are stopped when ``stack`` closes.

    ``script/NAME`` is a scripted agent; ``local/smollm2`` and ``local/PATH.gguf`` start the
    embedded llama.cpp server and talk to it through litellm like any OpenAI-compatible server;
    anything else goes to litellm as it is (with ``--api-base`` if given).
    """
    if model.startswith("script/"):
        from butterfly.core.agents import ScriptedProvider

        return ScriptedProvider(model.removeprefix("script/"), {s.id: s for s in scenarios})
    if model.startswith("local/"):
        from butterfly.models.embedded import EmbeddedModelError, EmbeddedServer, resolve_gguf

        try:
            gguf = resolve_gguf(model)
            server = stack.enter_context(EmbeddedServer(gguf, parallel=concurrency))
        except EmbeddedModelError as e:
            raise UserError(str(e)) from None
        from butterfly.models.litellm_seam import LiteLLMProvider

        return LiteLLMProvider(api_base=server.api_base, api_key="sk-local",
                               litellm_model=f"openai/{server.model_alias}")
    from butterfly.models.litellm_seam import LiteLLMProvider

    api_key = None
    if api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        api_key = "sk-no-key"  # a self-hosted OpenAI-compatible server usually wants none
    return LiteLLMProvider(api_base=api_base, api_key=api_key)
