"""The report's data as the page carries it: compact JSON, gzip-compressed, base64.

Compressed piece by piece (a dict's items, a list's elements), so a report of many
conversations never holds its whole JSON text: the bytes are those of
``gzip.compress(json.dumps(obj), 9, mtime=0)``, the same data giving the same page.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator
from typing import Any


def _json_pieces(obj: Any, depth: int = 2) -> Iterator[str]:
    """Compact JSON of ``obj`` in pieces (a dict's items and a list's elements, ``depth`` levels
    down): their concatenation is ``json.dumps(obj)``, never held whole."""
    if depth == 0 or not isinstance(obj, (dict, list)) or not obj:
        yield json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return
    items = obj.items() if isinstance(obj, dict) else ((None, v) for v in obj)
    yield "{" if isinstance(obj, dict) else "["
    for i, (k, v) in enumerate(items):
        if i:
            yield ","
        if k is not None:
            yield json.dumps(k, ensure_ascii=False) + ":"
        yield from _json_pieces(v, depth - 1)
    yield "}" if isinstance(obj, dict) else "]"


def pack(obj: Any) -> str:
    """gzip + base64 of compact JSON (mtime 0: the same data gives the same bytes), compressed
    piece by piece: the same bytes as ``gzip.compress(json.dumps(obj), 9, mtime=0)``."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip header with mtime 0
    parts = [z.compress(piece.encode("utf-8")) for piece in _json_pieces(obj)]
    parts.append(z.flush())
    return base64.b64encode(b"".join(parts)).decode("ascii")
