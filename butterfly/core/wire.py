"""The wire, written once: a :class:`Request` as an OpenAI-compatible chat-completions body, a
completion (decoded JSON, or an SDK's objects) as a :class:`Response`, HTTP statuses and SDK
exceptions as our error classes, and the secret patterns every error message is redacted by.

Both transports of :mod:`butterfly.models` (the fast path, ``openai_http``, and litellm,
``litellm_seam``) build their request and read their answer here, and the Kaggle runner
classifies its SDK's failures here, so the three cannot drift apart. Pure but for reading the
environment's secret values in :func:`redact`; stdlib, pydantic and ``core`` only, so the
notebook inlines it (``butterfly.kaggle.notebook.MODULES``).
"""

from __future__ import annotations

import json
import operator
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from pydantic import JsonValue

from butterfly.core.usage import first_problem, reported
from butterfly.core.vocab import ErrorClass, is_transient_status

REDACTED: Final = "[redacted]"
SECRET_NAME: Final = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
"""A name (an environment variable, a router deployment's parameter) that holds a secret."""
SECRET_TEXT: Final = re.compile(
    r"\b(?:sk|pk|rk|hf|gsk|xai|ghp)[-_][A-Za-z0-9_\-]{8,}"  # provider key shapes
    r"|(?P<bearer>Bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*"  # an Authorization header
    r"|(?P<url>://)[^/\s:@]+:[^/\s@]+(?=@)"  # user:password@ in a URL
    r"|(?P<query>[?&](?:key|api_key|api-key|token|access_token)=)[^&\s\"']+", re.IGNORECASE)
"""Text shaped like an API key, a bearer token, URL credentials or a key in a query."""


def _redact_match(m: re.Match[str]) -> str:
    return (m.group("bearer") or m.group("url") or m.group("query") or "") + REDACTED


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` (a server's error message) with secrets replaced by ``[redacted]``: the given
    ones, every value of an environment variable named like a key, token or password, and
    anything shaped like an API key, a bearer token or URL credentials."""
    known = [v for v in secrets if v] + [v for k, v in os.environ.items()
                                         if SECRET_NAME.search(k) and len(v) >= 6]
    for value in sorted(set(known), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return SECRET_TEXT.sub(_redact_match, text)


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
    cache_marks: tuple[int, ...] = ()
    """The messages that end a prompt prefix later calls repeat
    (:func:`butterfly.core.cache_marks.cache_marks`): marked with ``cache_control`` for providers
    that cache only what is marked (Claude, through litellm); not part of the answer key,
    never sent as they are."""

    def cache_key_fields(self) -> dict[str, Any]:
        """What in the request changes the answer: never timeouts, concurrency or retries.
        The cache adds the server (``api_base``) it was asked
        (:mod:`butterfly.models.answer_cache`)."""
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
    """Completion tokens, reasoning included (:func:`billed_completion`)."""
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    """The call's price (``butterfly.models.price_map``), or None when the model is unpriced."""
    reasoning_content: str | None = None
    """The reasoning the provider returned beside the answer (``reasoning_content``, or
    ``reasoning``), never sent back in the history."""
    raw_chars: int | None = None
    """The answer's length in characters when ``text`` holds only its first N (the
    response-size cap, :mod:`butterfly.models.client`); None when ``text`` is all of it."""
    saved_usd: float | None = None
    """What the cached prompt tokens saved at the provider's cached-token price (0 without
    any), or None when the call is unpriced (``butterfly.models.price_map``)."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the provider's cache (Anthropic's
    ``cache_creation_input_tokens``, counted inside ``prompt_tokens``), billed at its
    cache-write rate; None when the provider does not say."""
    usage_invalid: str | None = None
    """Why the provider's usage cannot be right (:mod:`butterfly.core.usage`), or None. Such
    an answer has no token counts and no price, and is never cached."""
    raw_usage: str | None = None
    """The provider's token counts as it sent them (JSON), kept when they are invalid."""


def invalid(answer: Response, why: str, raw: str | None = None) -> Response:
    """``answer`` with invalid usage (:mod:`butterfly.core.usage`): no token counts, no price, the
    reason, and the counts as they came (``raw``; else those the answer held)."""
    if raw is None:
        raw = json.dumps({"prompt_tokens": answer.prompt_tokens,
                          "completion_tokens": answer.completion_tokens,
                          "cached_tokens": answer.cached_tokens,
                          "reasoning_tokens": answer.reasoning_tokens})
    return replace(answer, prompt_tokens=None, completion_tokens=None,
                   cached_tokens=None, reasoning_tokens=None, cache_write_tokens=None,
                   cost_usd=None, saved_usd=None, usage_invalid=why, raw_usage=raw)


class ProviderError(Exception):
    """A call that did not produce an answer. ``kind`` decides whether it is retried."""

    def __init__(self, kind: ErrorClass, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorClass = kind
        self.message = message
        self.retry_after = retry_after


SERVER_PREFIXES: Final = {"openai/": "OPENAI_API_KEY", "hosted_vllm/": "HOSTED_VLLM_API_KEY"}
"""Model-name prefixes of OpenAI-compatible servers (stripped on the wire; the fast path's with
``--api-base``), and the environment variable holding each one's key (never recorded)."""


def wire_model(model: str) -> str:
    """The model name a server is given: ours without its server prefix."""
    return next((model.removeprefix(p) for p in SERVER_PREFIXES if model.startswith(p)), model)


def body(request: Request, model: str, *, merge_extra_body: bool = True) -> dict[str, Any]:
    """The chat-completions body of ``request`` for ``model``: messages, sampling, the seed
    (unless ``--no-seed``), the schema, then the model arguments as top-level keys. The fast
    path merges ``extra_body`` over them (what litellm sends on the wire); litellm is given it
    as its ``extra_body`` argument, a copy, so merging never changes the run's parameters."""
    out: dict[str, Any] = {"model": model, "messages": [dict(m) for m in request.messages],
                           "temperature": request.temperature,
                           "max_tokens": request.max_tokens}
    if request.send_seed:
        out["seed"] = request.seed
    if request.response_format is not None:
        out["response_format"] = dict(request.response_format)
    out.update({k: v for k, v in request.extra.items() if k != "extra_body"})
    extra_body = request.extra.get("extra_body")
    if isinstance(extra_body, dict):
        out.update(extra_body) if merge_extra_body else out.update(extra_body=dict(extra_body))
    return out


def status_kind(status: int) -> ErrorClass | None:
    """The error class of an HTTP error status; None for a refusal (never retried)."""
    if status == 429:
        return "rate_limit"
    if status == 408:
        return "timeout"
    return "server" if is_transient_status(status) else None


TIMEOUT_NAMES: Final = frozenset({"APITimeoutError", "ConnectTimeout", "ReadTimeout",
                                  "WriteTimeout", "PoolTimeout", "TimeoutException"})
CONNECTION_NAMES: Final = frozenset({"APIConnectionError", "ConnectError", "ReadError",
                                     "WriteError", "RemoteProtocolError", "NetworkError"})
SERVER_NAMES: Final = frozenset({"ServerError"})
"""Exception classes (of openai, httpx, google-genai, and litellm's, which subclass openai's)
that mean no answer came, not a refusal, by the error class they are."""
MALFORMED_NAMES: Final = frozenset({"APIResponseValidationError"})
MALFORMED_TEXT: Final = ("invalid response from llm endpoint", "expecting value")
CONNECTION_TEXT: Final = "connection error"
"""What an SDK that reports every failure as a server's (litellm's 500s) says of an answer
that was not JSON, or of a connection that failed, in its message."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries (openai ``status_code``, google-genai ``code``,
    httpx ``response.status_code``), if any."""
    for value in (getattr(exc, "status_code", None), getattr(exc, "code", None),
                  getattr(getattr(exc, "response", None), "status_code", None)):
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def told_kind(exc: BaseException, kind: ErrorClass) -> ErrorClass:
    """A failure's class as its message tells it apart: an answer that was not JSON
    (``bad_response``), a connection that failed (``connection``), else ``kind`` (an answer
    that failed validation by its class: ``bad_response``)."""
    text = str(exc).lower()
    if any(t in text for t in MALFORMED_TEXT) or ("json" in text and "decode" in text):
        return "bad_response"
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & CONNECTION_NAMES or CONNECTION_TEXT in text:
        return "connection"
    return "bad_response" if names & MALFORMED_NAMES else kind


def exception_kind(exc: BaseException) -> ErrorClass | None:
    """The error class of an SDK's exception, the one classifier of exceptions (the Kaggle
    runner's, and litellm's through ``butterfly.models.litellm_seam``): a timeout by its
    class, then its status (as :func:`status_kind`), else its class; a server or connection
    failure as its message tells it apart (:func:`told_kind`). None when it is a refusal (a
    status not worth retrying) or not a provider failure at all (never retried)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or names & TIMEOUT_NAMES:
        return "timeout"
    status = status_of(exc)
    if status is not None:
        kind = status_kind(status)
    elif isinstance(exc, ConnectionError) or names & CONNECTION_NAMES:
        kind = "connection"
    else:
        kind = "server" if names & SERVER_NAMES else None
    return told_kind(exc, kind) if kind == "server" or kind == "connection" else kind


CONTEXT_TEXT: Final = ("context length", "context_length", "maximum context", "context window",
                       "exceeds the available context", "exceed_context_size",
                       "prompt is too long", "too many tokens",
                       "maximum number of tokens allowed")
"""How providers say a request is over the context window (OpenAI, vLLM, llama.cpp's server,
Anthropic, litellm's ContextWindowExceededError; Gemini: "The input token count (N) exceeds the
maximum number of tokens allowed (M)")."""


def says_over_context(text: str) -> bool:
    """Whether a provider's refusal (its message) says the request is over the model's context
    window: the CLI's transports (``butterfly.models.provider.refusal``) and the Kaggle runner
    (:func:`over_context`) read it alike."""
    low = text.lower()
    return any(t in low for t in CONTEXT_TEXT)


def over_context(exc: BaseException) -> bool:
    """Whether an SDK's exception is a refusal of a request over the model's context window: an
    HTTP error it carries (:func:`status_of`) that is not worth retrying (:func:`exception_kind`
    is None) and whose message says so (:func:`says_over_context`). The CLI reads the same
    refusals as :class:`butterfly.models.provider.ContextOverflow`."""
    return (exception_kind(exc) is None and status_of(exc) is not None
            and says_over_context(str(exc)))


def server_message(raw: bytes) -> str:
    """The first line of a server's error: ``error.message`` of an OpenAI-style error body,
    else the body's text."""
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            err = err.get("message") or err.get("detail") or err
        text = err if isinstance(err, str) else json.dumps(err)
    return text.strip().splitlines()[0] if text.strip() else ""


TEXT_PARTS: Final = (None, "text", "output_text")
"""Content-part types whose ``text`` is the answer's (an image or a refusal part is not)."""


def answer_text(content: object) -> str:
    """The answer's text from a completion message's ``content``: a string as it is, None as
    "", a list of content parts (``{"type": "text", "text": ...}``, or plain strings) joined
    in order without a separator, parts without text left out; anything else is not an
    answer (``bad_response``)."""
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


def token_count(value: object) -> int | None:
    """A token count a server reported: an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _json_field(obj: Any, key: str) -> Any:
    return obj.get(key)


def _json_opt(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None


def _json_malformed(e: Exception, data: Any, raw: bytes) -> ProviderError:
    head = (raw or json.dumps(data, default=str).encode())[:120]
    return ProviderError("bad_response", redact(f"malformed completion ({type(e).__name__}): "
                                                f"{head.decode('utf-8', errors='replace')}")[:500])


def _object_opt(obj: Any, key: str) -> Any:
    return getattr(obj, key, None)


def _object_malformed(e: Exception, data: Any, raw: bytes) -> ProviderError:
    return ProviderError("bad_response", f"malformed completion: {e}")


@dataclass(frozen=True)
class Shape:
    """How a completion is read: ``item`` the parts it must have (its choices, the message),
    ``field`` the message's content and the finish reason, ``opt`` what may be absent (usage,
    its details, the reasoning: None then); ``malformed`` the error when it is not one."""

    item: Callable[[Any, str], Any]
    field: Callable[[Any, str], Any]
    opt: Callable[[Any, str], Any]
    malformed: Callable[[Exception, Any, bytes], ProviderError]
    reasoning_keys: tuple[str, ...]
    chained: bool
    """Whether the malformed error keeps the lookup's error as its cause."""


JSON: Final = Shape(operator.getitem, _json_field, _json_opt, _json_malformed,
                    ("reasoning_content", "reasoning"), chained=False)
"""A decoded JSON completion (the fast path; what litellm refused to convert)."""
OBJECTS: Final = Shape(getattr, getattr, _object_opt, _object_malformed,
                       ("reasoning_content",), chained=True)
"""An SDK's completion object (litellm's ``ModelResponse``): its reasoning is litellm's
``reasoning_content``."""

Price = Callable[[Response], Response]
"""A parsed answer priced by its tokens (``cost_usd``, ``saved_usd``; None: unpriced)."""


def decode(raw: bytes) -> Any:
    """A completion body's JSON; ``bad_response`` if it is not JSON."""
    try:
        return json.loads(raw)
    except ValueError as e:
        raise _json_malformed(e, None, raw) from None


def _reasoning(message: Any, shape: Shape) -> str | None:
    for key in shape.reasoning_keys:
        value = shape.opt(message, key)
        if isinstance(value, str) and value:
            return value
    return None


def _detail(usage: Any, part: str, key: str, shape: Shape) -> int | None:
    return token_count(shape.opt(shape.opt(usage, part), key))


def billed_completion(prompt: int | None, completion: int | None, reasoning: int | None,
                      total: int | None) -> int | None:
    """Completion tokens with the reasoning tokens counted once (docs/cost.md, "Reasoning
    tokens"). Most servers (OpenAI, vLLM, litellm's own usage, Gemini through litellm) count
    reasoning inside ``completion_tokens``: kept as they are. A server that reports them apart
    (some gateways in front of Gemini) says so by its total (``total_tokens = prompt +
    completion + reasoning``), or, without a total, by more reasoning tokens than completion
    tokens: they are added."""
    if completion is None or not reasoning:
        return completion
    if total is not None and prompt is not None:
        apart = total == prompt + completion + reasoning
    else:
        apart = reasoning > completion
    return completion + reasoning if apart else completion


def response(data: Any, shape: Shape, price: Price, raw: bytes = b"") -> Response:
    """A completion's text (content parts joined), reasoning, finish reason, tokens and price;
    ``bad_response`` if it is not one."""
    try:
        choice = shape.item(data, "choices")[0]
        message = shape.item(choice, "message")
        text = answer_text(shape.field(message, "content"))
        finish = shape.field(choice, "finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        raise shape.malformed(e, data, raw) from (e if shape.chained else None)
    usage = shape.opt(data, "usage")
    counts = reported(usage, shape.opt)
    problem = first_problem(counts)
    bare = Response(text=text, finish_reason=finish if isinstance(finish, str) else None,
                    reasoning_content=_reasoning(message, shape))
    if problem is not None:  # never summed, priced or cached: kept as it came, with the reason
        return price(invalid(bare, problem, json.dumps(dict(counts), default=repr)[:2000]))
    prompt = token_count(shape.opt(usage, "prompt_tokens"))
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens", shape)
    completion = billed_completion(prompt, token_count(shape.opt(usage, "completion_tokens")),
                                   reasoning, token_count(shape.opt(usage, "total_tokens")))
    return price(replace(bare, prompt_tokens=prompt, completion_tokens=completion,
                         cached_tokens=_detail(usage, "prompt_tokens_details", "cached_tokens",
                                               shape),
                         reasoning_tokens=reasoning, cache_write_tokens=_written(usage, shape)))


def _written(usage: Any, shape: Shape) -> int | None:
    """Prompt tokens written to the cache: litellm's ``cache_creation_input_tokens`` (its
    Anthropic usage), else ``prompt_tokens_details.cache_creation_tokens``; None without."""
    top = token_count(shape.opt(usage, "cache_creation_input_tokens"))
    return top if top is not None else _detail(usage, "prompt_tokens_details",
                                               "cache_creation_tokens", shape)
