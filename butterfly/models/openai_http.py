"""The fast path: OpenAI-compatible chat completions spoken directly over one pooled
aiohttp session, for ``--api-base`` servers (``openai/MODEL``, ``hosted_vllm/MODEL``) and the
embedded server (``local/...``).

It sends the body litellm sends for these models, built and read by the one module both
transports share (:mod:`butterfly.core.wire`; ``tests/butterfly/models/test_openai_http.py``
compares the two on the wire), classifies HTTP statuses by ``wire.status_kind``, and prices
calls from litellm's offline price map without importing litellm
(:mod:`butterfly.models.price_map`). One session per event
loop, its connector sized to the run's concurrency, so connections are reused and nothing
below ``--concurrency`` caps the calls in flight. What it does not do that litellm does is in
docs/running.md ("Transport").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

import aiohttp

from butterfly.core import wire
from butterfly.core.wire import ProviderError, Request, Response, redact
from butterfly.models.price_map import priced
from butterfly.models.provider import refusal, retry_after_of

BODY_LIMIT: Final = 64 << 20
"""The most of a response body the fast path reads (64 MiB): a larger one fails the call
(``bad_response``) unread. Well above any answer the response-size cap keeps (1,000,000
characters at most), so only a runaway server reaches it."""
def status_error(status: int, headers: Mapping[str, str], raw: bytes,
                 secrets: tuple[str | None, ...] = ()) -> Exception:
    """An HTTP error answer as our error classes (:func:`butterfly.core.wire.status_kind`)."""
    msg = redact(f"HTTP {status}: {wire.server_message(raw)}", secrets)[:500]
    kind = wire.status_kind(status)
    if kind is None:
        return refusal(msg)
    return ProviderError(kind, msg, None if kind == "timeout" else retry_after_of(headers))


def parse_completion(raw: bytes, price_model: str) -> Response:
    """A 200 answer's text, finish reason, tokens and price; ``bad_response`` if malformed."""
    return wire.response(wire.decode(raw), wire.JSON, priced(price_model), raw)


async def read_body(r: aiohttp.ClientResponse, limit: int = BODY_LIMIT) -> bytes:
    """The response body, read up to ``limit`` bytes (a larger one is ``bad_response``)."""
    if r.content_length is not None and r.content_length > limit:
        raise ProviderError("bad_response", f"the response is {r.content_length} bytes, over "
                            f"the fast path's limit of {limit}: not read")
    chunks, size = [], 0
    async for chunk in r.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            raise ProviderError("bad_response", f"the response is over the fast path's limit "
                                f"of {limit} bytes: not read to its end")
        chunks.append(chunk)
    return b"".join(chunks)


class OpenAIHTTPProvider:
    """An OpenAI-compatible server at ``api_base``, over one pooled aiohttp session."""

    def __init__(self, *, api_base: str, api_key: str, model: str | None = None,
                 price_model: str | None = None, connections: int = 1) -> None:
        self.url = api_base.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.model = model
        """The name the server is given, when it is not ``wire.wire_model`` of ours (local/)."""
        self.price_model = price_model
        self.connections = max(1, connections)
        self._headers = {"Content-Type": "application/json"}
        if urlsplit(self.url).username is None:  # else Basic auth from the URL, as httpx does
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def session(self) -> aiohttp.ClientSession:
        """The session of the running event loop (a new one when the loop changed)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            if self._session is not None and not self._session.closed:
                with contextlib.suppress(Exception):  # its loop is gone: mark it closed
                    self._session.connector._close()  # type: ignore[union-attr]
            connector = aiohttp.TCPConnector(limit=self.connections, limit_per_host=0)
            self._session = aiohttp.ClientSession(connector=connector)
            self._loop = loop
        return self._session

    async def __call__(self, request: Request, timeout: float) -> Response:
        data = json.dumps(wire.body(request, self.model or wire.wire_model(request.model)),
                          ensure_ascii=False).encode("utf-8")
        try:
            async with self.session().post(self.url, data=data, headers=self._headers,
                                           timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                raw = await read_body(r)
                status, headers = r.status, r.headers
        except TimeoutError:
            raise ProviderError("timeout", f"no answer within {timeout:g} s") from None
        except (aiohttp.ClientError, OSError) as e:
            raise ProviderError("connection", redact(f"{type(e).__name__}: {e}",
                                                     (self.api_key,))[:500]) from None
        if status != 200:
            raise status_error(status, headers, raw, (self.api_key,))
        return parse_completion(raw, self.price_model or request.model)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            with contextlib.suppress(RuntimeError):  # a session of a loop already closed
                await self._session.close()
        self._session = None
