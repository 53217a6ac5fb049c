"""A SQLite cache of model answers, keyed on what changes an answer.

The key is the SHA-256 of the canonical JSON of everything that can change an answer: the
request's fields (model, messages, temperature, max tokens, seed, response format) and the
server that answers (``--api-base``: two servers may serve different weights under one model
name); never timeouts, concurrency, retries or credentials. A cache without an ``api_base``
keys exactly as before it was added, so answers cached then are still found.
Writes are committed one by one in WAL mode, so a killed process loses at most the answer in
flight.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from butterfly.models.provider import Request, Response


def cache_key(request: Request, api_base: str | None = None) -> str:
    fields = request.cache_key_fields()
    if api_base:
        fields["api_base"] = api_base.rstrip("/")
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Cache:
    def __init__(self, path: Path, api_base: str | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.api_base = api_base
        """The server answers come from (part of every key)."""
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, response TEXT NOT NULL)"
        )

    def get(self, request: Request) -> Response | None:
        row = self._db.execute(
            "SELECT response FROM answers WHERE key = ?", (cache_key(request, self.api_base),)
        ).fetchone()
        if row is None:
            return None
        d = json.loads(row[0])
        return Response(d["text"], d.get("finish_reason"), d.get("prompt_tokens"),
                        d.get("completion_tokens"), d.get("cached_tokens"),
                        d.get("reasoning_tokens"), d.get("cost_usd"))

    def put(self, request: Request, response: Response) -> None:
        blob = json.dumps({
            "text": response.text,
            "finish_reason": response.finish_reason,
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "cached_tokens": response.cached_tokens,
            "reasoning_tokens": response.reasoning_tokens,
            "cost_usd": response.cost_usd,
        })
        self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)",
                         (cache_key(request, self.api_base), blob))

    def close(self) -> None:
        self._db.close()
