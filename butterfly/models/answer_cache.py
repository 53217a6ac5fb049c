"""A SQLite cache of model answers, keyed on what changes an answer.

The key is the SHA-256 of the canonical JSON of everything that can change an answer: the
request's fields (model, messages, temperature, max tokens, seed, response format) and the
server that answers (``--api-base``: two servers may serve different weights under one model
name); never timeouts, concurrency, retries or credentials. A cache without an ``api_base``
keys exactly as before it was added, so answers cached then are still found.
Writes are committed one by one in WAL mode, so a killed process loses at most the answer in
flight.

The file is checked before a run creates anything (:func:`cache_file`, then opening it): a
``~`` needs a usable HOME, the default's directory is created but a given ``--cache PATH``'s
must exist, and a file that is not an answer cache (corrupt, another database) or a place
that cannot be written is one line saying how to recover, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

from butterfly.core.usage import count_problem
from butterfly.core.vocab import DEFAULTS
from butterfly.core.wire import Request, Response
from butterfly.errors import UserError

RECOVER = ("delete or move it if it is a damaged cache (its answers are asked again), or give "
           "--cache PATH somewhere writable, or --no-cache")


def cache_key(request: Request, api_base: str | None = None) -> str:
    fields = request.cache_key_fields()
    if api_base:
        fields["api_base"] = api_base.rstrip("/")
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _home_ok(text: str) -> bool:
    """Whether ``~`` in ``text`` expands to an absolute directory (HOME unset: the passwd
    entry; HOME set: it must be one, else ``~/x`` would become ``/x``)."""
    if not text.startswith("~"):
        return True
    home = os.environ.get("HOME")
    if home is not None and not (os.path.isabs(home) and os.path.isdir(home)):
        return False
    return os.path.isabs(os.path.expanduser(text))


def cache_file(path: str | Path) -> Path:
    """The answer cache's file for ``--cache PATH``, checked: ``~`` needs a usable HOME; the
    default's directory is created, a given PATH's directory must already exist."""
    text = str(path)
    if not text.strip():
        raise UserError("--cache must name a file (or give --no-cache)")
    if not _home_ok(text):
        raise UserError(f"--cache {text}: HOME ({os.environ.get('HOME')!r}) is not a "
                        "directory: set HOME, or give --cache PATH or --no-cache")
    file = Path(os.path.expanduser(text))
    if file.is_dir():
        raise UserError(f"--cache {text}: is a directory: name a file in it")
    if not file.parent.is_dir():
        if text != DEFAULTS.cache:
            raise UserError(f"--cache {text}: no directory {file.parent}: create it, or give "
                            "another --cache or --no-cache")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"--cache {text}: cannot create {file.parent}: {e.strerror or e}: "
                            "set HOME, or give --cache PATH or --no-cache") from None
    return file


def _unusable(path: Path, e: Exception) -> UserError:
    return UserError(f"--cache {path}: not usable as the answer cache "
                     f"({str(e).splitlines()[0] if str(e) else type(e).__name__}): {RECOVER}")


COUNTS = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens",
          "cache_write_tokens")
ALWAYS = ("text", "finish_reason", "prompt_tokens", "completion_tokens", "cached_tokens",
          "reasoning_tokens", "cost_usd")
"""The fields of an answer every row holds (null when unknown)."""
KEPT = (*ALWAYS, "reasoning_content", "raw_chars", "saved_usd", "cache_write_tokens")
"""Every field of an answer a row keeps, in order; those after :data:`ALWAYS` only when set
(a row written before one was kept reads it as null)."""


def _response(blob: str) -> Response | None:
    """A cached answer, or None (a miss) for a row that does not read as one, or whose token
    counts cannot be right (cached before usage was checked: it is asked again)."""
    try:
        d = json.loads(blob)
        if any(count_problem(k, d.get(k)) for k in COUNTS):
            return None
        return Response(str(d["text"]), **{k: d.get(k) for k in KEPT[1:]})
    except (ValueError, TypeError, KeyError):
        return None


class Cache:
    def __init__(self, path: Path, api_base: str | None = None) -> None:
        self.path = path
        self.api_base = api_base
        """The server answers come from (part of every key)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as e:
            raise _unusable(path, e) from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers "
                             "(key TEXT PRIMARY KEY, response TEXT NOT NULL)")
            self._db.execute("SELECT key, response FROM answers LIMIT 0")
        except sqlite3.Error as e:
            self._db.close()
            raise _unusable(path, e) from None

    def get(self, request: Request) -> Response | None:
        try:
            row = self._db.execute("SELECT response FROM answers WHERE key = ?",
                                   (cache_key(request, self.api_base),)).fetchone()
        except sqlite3.Error as e:
            raise _unusable(self.path, e) from None
        return None if row is None else _response(row[0])

    def put(self, request: Request, response: Response) -> None:
        if response.usage_invalid is not None:  # an answer whose usage cannot be right
            return
        blob = json.dumps({k: v for k in KEPT
                           if (v := getattr(response, k)) is not None or k in ALWAYS})
        try:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)",
                             (cache_key(request, self.api_base), blob))
        except sqlite3.Error as e:
            raise _unusable(self.path, e) from None

    def close(self) -> None:
        self._db.close()
