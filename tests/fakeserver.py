"""Loopback fake OpenAI-compatible chat-completions server for offline tests.

In-process use::

    with FakeServer(lambda body: '{"ok": true}', faults=["500", "429:0.2", "ok"]) as srv:
        litellm.completion(model="openai/fake", api_base=srv.api_base, api_key="x", ...)
        assert srv.count == 3

Standalone use (for subprocess tests)::

    python tests/fakeserver.py --port 0 --echo [--answer FILE] [--faults 500,hang:2]

prints the bound port on the first stdout line, then serves until SIGTERM/SIGINT.

Endpoints: ``POST /v1/chat/completions`` (non-streaming only), ``GET /v1/models``,
``GET /health``.

Fault spec grammar (case-insensitive, surrounding whitespace ignored)::

    ok | "" | None      answer normally
    NNN                 HTTP NNN (400..599) with an OpenAI-style error JSON
    NNN:R               same, plus header ``Retry-After: R`` (R seconds, may be fractional)
    hang:S              wait S seconds, then answer normally (interrupted by server shutdown,
                        in which case the connection is dropped)
    nonjson             HTTP 200, ``text/html`` body ``<html>oops</html>``
    garbage             HTTP 200, valid completion JSON whose content is random junk text
    empty               HTTP 200, valid completion JSON whose content is ""
    drop                close the connection without sending any response
    context             HTTP 400 as llama.cpp's server says a request is over the context
                        window ("the request exceeds the available context size")

A responder may return a dict instead of the text: it is the choice's ``message`` (``role``
assistant added), so a test can send ``content`` as a list of parts or add
``reasoning_content``; its ``usage`` key, if any, is merged into the response's usage (e.g.
``{"completion_tokens_details": {"reasoning_tokens": 7}}``).

Usage and delays, for what a run's efficiency reads (docs/metrics.md, "Efficiency"):
``usage=(index, body) -> dict`` is merged last into each answer's usage (it may set
``prompt_tokens``, ``completion_tokens``, ``completion_tokens_details.reasoning_tokens``, ...),
and ``delay=(index, body) -> seconds`` (or a number) holds each answer that long before it is
sent (interrupted by shutdown, which drops the connection). Prices are the user's, given to the
run (``--price-per-mtok``): the fake model is in no price map.

``faults`` may be a list of specs (applied to chat-completion requests in arrival order,
normal answers after the list is exhausted), a comma-separated string of specs, or a
callable ``(index) -> spec`` / ``(index, body) -> spec`` returning a spec or None.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast
from urllib.parse import urlsplit

__all__ = [
    "FakeServer",
    "FakeServerError",
    "Fault",
    "FaultSpec",
    "Faults",
    "Responder",
    "Truncated",
    "budget_responder",
    "echo_responder",
    "error_body",
    "fixed_responder",
    "parse_fault",
]

JSONDict = dict[str, Any]


class Truncated(str):
    """Marker: a responder returning ``Truncated(text)`` yields ``finish_reason == "length"``."""

    __slots__ = ()
    __fakeserver_truncated__ = True


class FakeServerError(RuntimeError):
    """Raised on exit when the server hit internal errors (responder crash, bad fault spec)."""


FaultKind = Literal["ok", "status", "hang", "nonjson", "garbage", "empty", "drop", "context"]


@dataclass(frozen=True)
class Fault:
    """A parsed fault spec; see the module docstring for the string grammar."""

    kind: FaultKind = "ok"
    status: int = 200
    seconds: float = 0.0
    retry_after: str | None = None
    spec: str = "ok"


FaultSpec = str | Fault | None
Responder = Callable[[JSONDict], "str | JSONDict"]
Faults = (
    Sequence[FaultSpec]
    | str
    | Callable[[int], FaultSpec]
    | Callable[[int, JSONDict], FaultSpec]
    | None
)

_SIMPLE: dict[str, FaultKind] = {
    "ok": "ok",
    "nonjson": "nonjson",
    "garbage": "garbage",
    "empty": "empty",
    "drop": "drop",
    "context": "context",
}
CONTEXT_MESSAGE = "the request exceeds the available context size, try increasing it"


def _nonneg_float(text: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"bad number {text!r} in fault spec {spec!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"number must be finite and >= 0 in fault spec {spec!r}")
    return value


def parse_fault(spec: FaultSpec) -> Fault:
    """Parse one fault spec (string, ``Fault`` or None) into a ``Fault``."""
    if isinstance(spec, Fault):
        return spec
    if spec is None:
        return Fault()
    if not isinstance(spec, str):
        raise TypeError(f"fault spec must be str, Fault or None, not {type(spec).__name__}")
    text = spec.strip().lower()
    if text == "":
        return Fault()
    if text in _SIMPLE:
        return Fault(kind=_SIMPLE[text], spec=text)
    head, sep, arg = text.partition(":")
    if head == "hang":
        if not sep:
            raise ValueError(f"hang needs seconds, e.g. 'hang:5' (got {spec!r})")
        return Fault(kind="hang", seconds=_nonneg_float(arg, spec), spec=text)
    if head.isdigit() and len(head) == 3 and 400 <= int(head) <= 599:
        retry_after: str | None = None
        if sep:
            _nonneg_float(arg, spec)
            retry_after = arg
        return Fault(kind="status", status=int(head), retry_after=retry_after, spec=text)
    raise ValueError(f"unknown fault spec {spec!r}")


def _accepts_body(func: Callable[..., FaultSpec]) -> bool:
    """True when a fault callable takes (index, body), False when it takes (index) only."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return True
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2


def _text_of(content: Any) -> str:
    """Flatten an OpenAI message content (str or list of parts) into plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return " ".join(parts)
    return ""


def _count_tokens(text: str) -> int:
    return len(text.split())


def echo_responder(body: JSONDict) -> str:
    """Return the text of the last user message (or "" when there is none)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return _text_of(message.get("content"))
    return ""


def fixed_responder(text: str) -> Responder:
    """Responder that always returns ``text``."""

    def respond(_body: JSONDict) -> str:
        return text

    return respond


_GARBAGE_WORDS = (
    "lorem", "}{", "]]", "NaN", "<|im_end|>", "```", "\\u0000", "ipsum", "::", "null,",
    "ಠ_ಠ", "{\"", "--", "####", "ÿ", "\t", "undefined", "'''", "$$", "<think>",
)  # fmt: skip


def budget_responder(answer: Responder, reasoning: Mapping[str, int], *, key: str =
                     "reasoning_effort", prompt_tokens: int = 100,
                     completion_tokens: int = 20) -> Responder:
    """A reasoning model's answers for budget sweeps: ``answer``'s text, with a usage that
    spends reasoning tokens by the request's budget (``reasoning[str(body[key])]``, e.g. by
    ``reasoning_effort``) and fixed visible tokens, so a test knows every call's usage:
    ``prompt_tokens``, ``completion_tokens`` + the reasoning tokens (reasoning counts in the
    completion, as OpenAI reports it) and ``completion_tokens_details.reasoning_tokens``. A
    request without the key answers HTTP 500 (the responder raises)."""

    def respond(body: JSONDict) -> JSONDict:
        spent = reasoning[str(body[key])]
        completion = completion_tokens + spent
        return {"content": str(answer(body)),
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                          "total_tokens": prompt_tokens + completion,
                          "completion_tokens_details": {"reasoning_tokens": spent}}}

    return respond


def _garbage_text(rng: random.Random) -> str:
    words = [rng.choice(_GARBAGE_WORDS) for _ in range(rng.randint(8, 24))]
    tail = "".join(rng.choice("!@#%^&*~`|;") for _ in range(rng.randint(3, 9)))
    return "~" + " ".join(words) + " " + tail


_ERROR_MESSAGES: dict[int, tuple[str, str, str | None]] = {
    400: ("Bad request (fakeserver).", "invalid_request_error", None),
    401: ("Incorrect API key provided (fakeserver).", "invalid_request_error", "invalid_api_key"),
    403: ("Forbidden (fakeserver).", "invalid_request_error", None),
    404: ("Not found (fakeserver).", "invalid_request_error", None),
    429: ("Rate limit reached (fakeserver).", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    502: ("Bad gateway (fakeserver).", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def error_body(
    status: int, message: str | None = None, *, param: str | None = None, code: str | None = None
) -> JSONDict:
    """An OpenAI-style error object for ``status``."""
    default_msg, err_type, default_code = _ERROR_MESSAGES.get(
        status,
        (
            f"HTTP {status} (fakeserver).",
            "server_error" if status >= 500 else "invalid_request_error",
            None,
        ),
    )
    return {
        "error": {
            "message": message or default_msg,
            "type": err_type,
            "param": param,
            "code": code if code is not None else default_code,
        }
    }


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512  # many clients connecting at once are queued, not dropped

    def __init__(self, address: tuple[str, int], owner: FakeServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) or self.owner.stopping:
            return
        self.owner._record_error(f"handler error from {client_address}: {exc!r}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeserver/1.0"
    sys_version = ""
    disable_nagle_algorithm = True
    timeout = 60  # idle keep-alive connections are closed after this many seconds

    # -- plumbing -------------------------------------------------------------------------

    @property
    def fake(self) -> FakeServer:
        return cast(_HTTPServer, self.server).owner

    def setup(self) -> None:
        super().setup()
        self.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.fake._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        if self.fake.verbose:
            sys.stderr.write(f"fakeserver: {format % args}\n")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(
        self,
        status: int,
        payload: bytes,
        content_type: str = "application/json",
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for key, value in headers:
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _send_json(
        self, status: int, obj: JSONDict, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json", headers)

    def _send_error_json(
        self,
        status: int,
        message: str | None = None,
        *,
        param: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._send_json(status, error_body(status, message, param=param), headers)

    # -- routes ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
        elif path in ("/v1/models", "/models"):
            self._send_json(200, self.fake._models_payload())
        elif path in ("/v1/chat/completions", "/chat/completions"):
            self._send_error_json(405, "Use POST for /v1/chat/completions.")
        else:
            self._send_error_json(404, f"Unknown path {path!r}.")

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        try:
            raw = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            self._send_error_json(400, "Malformed request body.")
            return
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send_error_json(404, f"Unknown path {path!r}.")
            return
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._send_error_json(400, f"Request body is not valid JSON: {exc}")
            return
        if not isinstance(body, dict):
            self._send_error_json(400, "Request body must be a JSON object.")
            return
        self.fake._serve_chat(self, body)


class FakeServer:
    """A fake OpenAI-compatible chat-completions server on 127.0.0.1, in a background thread.

    Args:
        responder: ``(request_body) -> str`` giving the assistant text for one choice; return
            ``Truncated(text)`` for ``finish_reason == "length"``. Defaults to echoing the last
            user message.
        faults: fault script (see module docstring); None means always answer normally.
        port: port to bind (0 = pick a free one).
        models: model ids listed by ``GET /v1/models``.
        seed: seed for the ``garbage`` fault's random text (per request: ``seed + index``).
        raise_on_error: raise ``FakeServerError`` when leaving the ``with`` block if a
            responder raised or a fault callable returned a bad spec (those requests got 500).
        verbose: log each HTTP request to stderr.
        on_request: called as ``on_request(index, body)`` for every chat-completion request,
            under the server lock (so calls are serialized, in arrival order), before any fault.
        usage: ``(index, body) -> dict`` merged last into an answer's usage.
        delay: seconds (or ``(index, body) -> seconds``) to hold each answer before sending it.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        faults: Faults = None,
        *,
        port: int = 0,
        models: Sequence[str] = ("fake",),
        seed: int = 0,
        raise_on_error: bool = True,
        verbose: bool = False,
        on_request: Callable[[int, JSONDict], None] | None = None,
        usage: Callable[[int, JSONDict], JSONDict] | None = None,
        delay: float | Callable[[int, JSONDict], float] | None = None,
    ) -> None:
        self.responder: Responder = responder if responder is not None else echo_responder
        self._fault_list: list[Fault] = []
        self._fault_func: Callable[[int, JSONDict], FaultSpec] | None = None
        if callable(faults):
            func = faults
            if _accepts_body(func):
                self._fault_func = cast(Callable[[int, JSONDict], FaultSpec], func)
            else:
                one_arg = cast(Callable[[int], FaultSpec], func)
                self._fault_func = lambda index, _body: one_arg(index)
        elif isinstance(faults, str):
            self._fault_list = [parse_fault(s) for s in faults.split(",")]
        elif faults is not None:
            self._fault_list = [parse_fault(s) for s in faults]
        self.requested_port = port
        self.models = list(models)
        self.seed = seed
        self.raise_on_error = raise_on_error
        self.verbose = verbose
        self.on_request = on_request
        self.usage = usage
        self.delay = delay

        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._requests: list[JSONDict] = []
        self._fault_log: list[tuple[int, str]] = []
        self._errors: list[str] = []
        self._conns: set[socket.socket] = set()
        self._opened = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeServer:
        if self._httpd is not None:
            raise RuntimeError("FakeServer already started")
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self.requested_port), self)
        self._httpd = httpd
        self.port = int(httpd.server_address[1])
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fakeserver:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, interrupt hangs, close all connections and free the port."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()  # joins handler threads
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None and self.raise_on_error and self.errors:
            raise FakeServerError("; ".join(self.errors))

    # -- introspection --------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[JSONDict]:
        """Snapshot of the JSON bodies of all chat-completion requests, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        """Number of chat-completion requests received so far."""
        with self._lock:
            return len(self._requests)

    @property
    def connections(self) -> int:
        """TCP connections accepted so far (keep-alive reuse shows as fewer than requests)."""
        with self._lock:
            return self._opened

    @property
    def fault_log(self) -> list[tuple[int, str]]:
        """``(request index, applied fault spec)`` for each request (``"ok"`` when none)."""
        with self._lock:
            return list(self._fault_log)

    @property
    def errors(self) -> list[str]:
        """Internal errors (responder exceptions, bad fault specs from a callable)."""
        with self._lock:
            return list(self._errors)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> bool:
        """Block until at least ``n`` chat-completion requests arrived; False on timeout."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self._requests) >= n, timeout=timeout)

    # -- internals ------------------------------------------------------------------------

    def _record_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)
        if self.verbose:
            sys.stderr.write(f"fakeserver: {message}\n")

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if not add:
                self._conns.discard(conn)
                return
            self._conns.add(conn)
            self._opened += 1
        if self._stopping.is_set():  # accepted while stop() was closing connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _models_payload(self) -> JSONDict:
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "fakeserver"}
                for m in self.models
            ],
        }

    def _admit(self, body: JSONDict) -> tuple[int, FaultSpec]:
        with self._arrived:
            index = len(self._requests)
            self._requests.append(body)
            self._arrived.notify_all()
            if self.on_request is not None:
                self.on_request(index, body)
            spec: FaultSpec = self._fault_list[index] if index < len(self._fault_list) else None
            return index, spec

    def _serve_chat(self, handler: _Handler, body: JSONDict) -> None:
        index, spec = self._admit(body)
        try:
            if self._fault_func is not None:
                spec = self._fault_func(index, body)
            fault = parse_fault(spec)
        except Exception as exc:
            self._record_error(f"request {index}: bad fault spec: {exc!r}")
            with self._lock:
                self._fault_log.append((index, "error"))
            handler._send_error_json(500, f"fakeserver: bad fault spec: {exc}")
            return
        with self._lock:
            self._fault_log.append((index, fault.spec))

        if fault.kind == "drop":
            handler.close_connection = True
            return
        if fault.kind == "status":
            headers = [("Retry-After", fault.retry_after)] if fault.retry_after is not None else []
            handler._send_error_json(fault.status, headers=headers)
            return
        if fault.kind == "context":
            handler._send_error_json(400, CONTEXT_MESSAGE)
            return
        if fault.kind == "nonjson":
            handler._send(200, b"<html>oops</html>", "text/html")
            return
        if fault.kind == "hang" and self._stopping.wait(fault.seconds):
            handler.close_connection = True  # shutting down: drop instead of answering
            return
        held = self.delay(index, body) if callable(self.delay) else self.delay
        if held and self._stopping.wait(held):
            handler.close_connection = True
            return

        if body.get("stream"):
            handler._send_error_json(
                400, "stream=true is not supported by fakeserver.", param="stream"
            )
            return
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            handler._send_error_json(400, "'messages' must be a non-empty list.", param="messages")
            return
        n = body.get("n") or 1
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 128:
            handler._send_error_json(400, "'n' must be an integer in 1..128.", param="n")
            return

        rng = random.Random(self.seed + index)
        choices: list[JSONDict] = []
        completion_tokens = 0
        usage_extra: JSONDict = {}
        for i in range(n):
            message: JSONDict
            if fault.kind == "garbage":
                text, finish = _garbage_text(rng), "stop"
            elif fault.kind == "empty":
                text, finish = "", "stop"
            else:
                try:
                    result = self.responder(body)
                except Exception as exc:
                    self._record_error(f"request {index}: responder raised {exc!r}")
                    handler._send_error_json(500, f"fakeserver: responder raised {exc!r}")
                    return
                truncated = isinstance(result, Truncated) or getattr(
                    type(result), "__fakeserver_truncated__", False
                )
                finish = "length" if truncated else "stop"
                if isinstance(result, dict):  # the message itself (content parts, reasoning)
                    usage_extra.update(result.get("usage") or {})
                    message = {"role": "assistant",
                               **{k: v for k, v in result.items() if k != "usage"}}
                    completion_tokens += _count_tokens(_text_of(message.get("content")))
                    choices.append({"index": i, "message": message, "logprobs": None,
                                    "finish_reason": finish})
                    continue
                text = str(result)
            completion_tokens += _count_tokens(text)
            choices.append(
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            )
        prompt_tokens = sum(
            _count_tokens(_text_of(m.get("content"))) for m in messages if isinstance(m, dict)
        )
        model = body.get("model")
        payload: JSONDict = {
            "id": f"chatcmpl-fake-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) else "fake",
            "system_fingerprint": "fp_fakeserver",
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                **usage_extra,
                **(self.usage(index, body) if self.usage is not None else {}),
            },
        }
        handler._send_json(200, payload)


class EchoKeyServer:
    """A server that answers every call with ``status`` and an error repeating the caller's
    API key, as some servers do ("Incorrect API key provided: sk-...")."""

    def __init__(self, status: int) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.count += 1
                auth = self.headers.get("Authorization", "")
                body = json.dumps({"error": {"message": f"Incorrect API key provided: "
                                             f"{auth.removeprefix('Bearer ')} ({auth})",
                                             "type": "invalid_request_error"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return None

        self.count = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.api_base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> EchoKeyServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- standalone process ---------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible chat server.")
    parser.add_argument("--port", type=int, default=0, help="port to bind (0 = free port)")
    parser.add_argument(
        "--echo",
        action="store_true",
        help="echo the last user message (the default unless --answer is given)",
    )
    parser.add_argument("--answer", type=Path, help="file whose text is returned as the answer")
    parser.add_argument("--faults", default="", help="comma-separated fault specs, e.g. 500,ok")
    parser.add_argument("--record", type=Path, help="append each request body as a JSON line")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    args = parser.parse_args(argv)

    responder: Responder = echo_responder
    if args.answer is not None:
        responder = fixed_responder(args.answer.read_text(encoding="utf-8"))
    on_request: Callable[[int, JSONDict], None] | None = None
    if args.record is not None:
        record_path: Path = args.record

        def on_request(_index: int, body: JSONDict) -> None:
            with record_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(body) + "\n")

    stop = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    srv = FakeServer(
        responder,
        faults=args.faults or None,
        port=args.port,
        raise_on_error=False,
        verbose=args.verbose,
        on_request=on_request,
    )
    with srv:
        sys.stdout.write(f"{srv.port}\n")
        sys.stdout.flush()
        while not stop.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
