"""A GGUF model's own tokenizer, read from the file without starting a server.

A GGUF file's header holds its tokenizer: ``tokenizer.ggml.model`` (``gpt2`` for byte-level
BPE, as SmolLM2's), ``tokenizer.ggml.tokens``, ``tokenizer.ggml.merges`` and
``tokenizer.ggml.pre`` (the pre-tokenizer: SmolLM2's splits numbers digit by digit before
GPT-2's byte-level split). Only the header's key-value pairs are read (never the tensors), and
only a ``gpt2`` (byte-level BPE) tokenizer is rebuilt, with the ``tokenizers`` package; any
other kind, or a file that cannot be read, gives None and the dry run counts with a proxy
instead (it says so).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import IO, Any, Final

MAGIC: Final = b"GGUF"
_SCALARS: Final = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                   10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
WANTED: Final = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                  "tokenizer.ggml.merges")
DIGIT_BY_DIGIT: Final = ("smollm", "llama3", "qwen2", "deepseek-llm")
"""Pre-tokenizers (``tokenizer.ggml.pre``) that split numbers into single digits."""


def _read(f: IO[bytes], fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("truncated GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(f: IO[bytes]) -> str:
    n = _read(f, "<Q")
    return f.read(n).decode("utf-8", errors="replace")


def _value(f: IO[bytes], kind: int) -> Any:
    if kind == STRING:
        return _string(f)
    if kind == ARRAY:
        inner, n = _read(f, "<I"), _read(f, "<Q")
        return [_value(f, inner) for _ in range(n)]
    if kind not in _SCALARS:
        raise ValueError(f"unknown GGUF value type {kind}")
    return _read(f, _SCALARS[kind])


def read_tokenizer(path: str) -> dict[str, object]:
    """The header's ``tokenizer.ggml.*`` values of :data:`WANTED` (the tensors are not read)."""
    found: dict[str, object] = {}
    with open(path, "rb") as f:
        if f.read(4) != MAGIC:
            raise ValueError("not a GGUF file")
        _read(f, "<I")  # version
        _read(f, "<Q")  # tensors
        for _ in range(_read(f, "<Q")):
            key, kind = _string(f), _read(f, "<I")
            found[key] = _value(f, kind)
            if all(k in found for k in WANTED):
                break
    return {k: found[k] for k in WANTED if k in found}


def _bpe(tokens: list[str], merges: list[str], digits: bool) -> Callable[[str], list[int]]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {t: i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=pairs))  # type: ignore[arg-type]
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                  byte_level]) if digits else byte_level)
    tok.decoder = decoders.ByteLevel()
    return lambda text: list(tok.encode(text, add_special_tokens=False).ids)


@functools.cache
def gguf_encoder(model: str) -> Callable[[str], list[int]] | None:
    """The encoder of the ``local/`` model ``model`` from its GGUF file, or None."""
    from butterfly.models.embedded import resolve_gguf

    try:
        header = read_tokenizer(str(resolve_gguf(model)))
    except Exception:  # not installed, not a GGUF file, another layout: count with a proxy
        return None
    tokens, merges = header.get("tokenizer.ggml.tokens"), header.get("tokenizer.ggml.merges")
    if (header.get("tokenizer.ggml.model") != "gpt2" or not isinstance(tokens, list)
            or not isinstance(merges, list)):
        return None
    return _bpe([str(t) for t in tokens], [str(m) for m in merges],
                header.get("tokenizer.ggml.pre") in DIGIT_BY_DIGIT)
