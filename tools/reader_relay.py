"""A loopback OpenAI-compatible server whose answers a person (or a helper) writes by hand.

Before a suite is frozen, a careful reader answers a sample of it turn by turn, through the same
harness a model meets (``butterfly run``), and lists every hesitation. This relay makes that
possible without a model: each chat completion request is written to ``DIR/NNNN.prompt.txt``
(the conversation so far, as the model would see it) and ``DIR/NNNN.request.json``; the relay
then waits until ``DIR/NNNN.answer.txt`` exists and returns its text as the answer.

    python tools/reader_relay.py --dir /tmp/reader --port 8765 &
    butterfly run --model openai/reader --api-base http://127.0.0.1:8765/v1 --no-schema \\
        --timeout 3600 --retries 0 --concurrency 1 --suite S --limit 5 --out runs/reader

Loopback only; standard library only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

COUNTER = itertools.count(1)


def render(messages: list[dict[str, Any]]) -> str:
    """The conversation as plain text, one block a message."""
    return "\n\n".join(f"=== {m.get('role')} ===\n{m.get('content')}" for m in messages)


def completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": f"relay-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def make_handler(folder: Path, poll: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # /v1/models
            self._send({"object": "list", "data": [{"id": "reader", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            n = next(COUNTER)
            (folder / f"{n:04d}.request.json").write_text(json.dumps(body, indent=1))
            (folder / f"{n:04d}.prompt.txt").write_text(render(body.get("messages", [])))
            answer = folder / f"{n:04d}.answer.txt"
            while not answer.exists():
                time.sleep(poll)
            time.sleep(poll)  # let a writer finish the file
            self._send(completion(answer.read_text(), body.get("model", "reader")))

        def _send(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, type=Path)
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--poll", type=float, default=0.5)
    a = p.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(a.dir, a.poll)).serve_forever()


if __name__ == "__main__":
    main()
