"""Loopback fakes of provider-native wire formats (Anthropic Messages, Gemini generateContent,
Ollama ``/api/chat``), recording every request they receive. The OpenAI chat-completions fake is
``fakeserver.FakeServer``.

Each fake answers with ``answer`` (a dict: the spec the "model" gives) in the provider's own
response shape, so litellm's translation both ways is exercised: what it sends (the recorded
path and body) and what it makes of the reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

JSONDict = dict[str, Any]
Reply = Callable[[str, JSONDict], JSONDict]


@dataclass
class Received:
    path: str
    query: str
    headers: dict[str, str]
    body: JSONDict


@dataclass
class WireFake:
    """A loopback HTTP server: every POST is recorded, then answered by ``reply(path, body)``."""

    reply: Reply
    received: list[Received] = field(default_factory=list)

    def __enter__(self) -> WireFake:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                parts = urlsplit(self.path)
                fake.received.append(Received(parts.path, parts.query,
                                              {k.lower(): v for k, v in self.headers.items()},
                                              body))
                data = json.dumps(fake.reply(parts.path, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"


def anthropic_reply(answer: JSONDict, *, tool: bool) -> Reply:
    """Anthropic Messages: the spec as the input of the forced tool (structured output through
    a tool), or as text."""
    def reply(_path: str, body: JSONDict) -> JSONDict:
        name = (body.get("tools") or [{}])[0].get("name", "json_tool_call")
        content = ([{"type": "tool_use", "id": "toolu_01", "name": name, "input": answer}]
                   if tool else [{"type": "text", "text": json.dumps(answer)}])
        return {"id": "msg_01", "type": "message", "role": "assistant",
                "model": body.get("model", "claude"), "content": content,
                "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1200, "output_tokens": 300}}
    return reply


def gemini_reply(answer: JSONDict) -> Reply:
    def reply(_path: str, _body: JSONDict) -> JSONDict:
        return {"candidates": [{"content": {"role": "model",
                                            "parts": [{"text": json.dumps(answer)}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 1100, "candidatesTokenCount": 250,
                                  "totalTokenCount": 1350, "thoughtsTokenCount": 40},
                "modelVersion": "gemini-2.0-flash"}
    return reply


def ollama_reply(answer: JSONDict) -> Reply:
    def reply(_path: str, body: JSONDict) -> JSONDict:
        return {"model": body.get("model", "qwen"), "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": json.dumps(answer)},
                "done": True, "done_reason": "stop", "prompt_eval_count": 900,
                "eval_count": 200}
    return reply
