"""Counting a model's tokens offline, without importing litellm (``butterfly run --dry-run``).

The tokenizer files ship with butterfly (``butterfly/models/data/tokenizers/``, their sources
in ``SOURCES.md`` there): tiktoken's BPE files of o200k_base and cl100k_base, named as
tiktoken's cache names them, handed to tiktoken as its cache directory (tiktoken checks each
file's sha256 against its own, and nothing is ever downloaded); and the ``tokenizers`` JSON
files of Anthropic's and DeepSeek's tokenizers, read with ``Tokenizer.from_str``. A model is
mapped to one of them by its name (:data:`FAMILIES`);
the bundled SmolLM2 (``local/smollm2``) and any ``local/PATH.gguf`` are counted with the
vocabulary and merges held in the GGUF file itself (:mod:`butterfly.models.gguf_vocab`). Any
other model is counted with cl100k_base as a proxy, and :attr:`Counter.exact` says so.

A chat call's prompt is more than its messages' text: the chat template adds a few tokens per
message (the role and its delimiters) and primes the reply. :data:`PER_MESSAGE` and
:data:`PER_CALL` follow OpenAI's published count (3 a message plus its role's name, one token;
3 to prime the reply); a ChatML template such as SmolLM2's (``<|im_start|>role\\n`` ...
``<|im_end|>\\n``) takes 5 a message. docs/cost.md documents them; ``bench/cost.py`` measures the
estimate's error.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from butterfly.core.prompts import shared_start

TOKENIZER_DIR: Final = Path(__file__).parent / "data" / "tokenizers"
"""The tokenizer files butterfly ships (docs/cost.md, "Prompt tokens"), in tiktoken's cache
layout, so that the folder serves as ``TIKTOKEN_CACHE_DIR`` (``butterflybench.offline``)."""
PER_MESSAGE: Final = 4
"""Template tokens per message: OpenAI's 3 delimiters and the role's name (one token)."""
PER_MESSAGE_CHATML: Final = 5
"""Template tokens per message of a ChatML template (``local/`` GGUF models)."""
PER_CALL: Final = 3
"""Tokens that prime the reply, once per call (OpenAI's figure)."""
PROXY: Final = "cl100k_base"

FAMILIES: Final[tuple[tuple[tuple[str, ...], str], ...]] = (
    (("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "gpt-oss", "o1", "o3", "o4"),
     "o200k_base"),
    (("gpt-4", "gpt-3.5", "gpt-35"), "cl100k_base"),
    (("claude",), "anthropic"),
    (("deepseek",), "deepseek"),
)
"""The tokenizer of a model, by what its name (without the provider prefix) starts with; the
first family that matches wins (``gpt-4o`` before ``gpt-4``)."""


@dataclass(frozen=True)
class Counter:
    """How a model's tokens are counted: ``encode`` (text -> token ids), its ``name`` (as the
    dry run reports it), whether it is the model's own tokenizer (``exact``) or a proxy, and the
    chat template's tokens per message."""

    name: str
    exact: bool
    encode: Callable[[str], list[int]]
    per_message: int = PER_MESSAGE
    pieces: bool = True
    """Whether a text's tokens are the tokens of its pieces cut where a line starts with a
    digit (``\\n1``): true of every tokenizer here, whose pre-tokenizer never joins a newline
    to a digit after it (:class:`LongCounts` relies on it; a test checks each on restated
    prompts); not of the 4-characters-a-token estimate, whose rounding does not add up."""

    @property
    def label(self) -> str:
        """What the dry run says counted the tokens."""
        if self.exact:
            return f"{self.name}, the model's tokenizer"
        return f"{self.name} as an estimate (the model's tokenizer is not known)"


def family(model: str) -> str | None:
    """The tokenizer family of ``model`` by its name (:data:`FAMILIES`), or None."""
    bare = model.rpartition("/")[2].lower()
    for starts, name in FAMILIES:
        if bare.startswith(starts):
            return name
    return None


BPE_URL: Final = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@functools.cache
def _tiktoken(name: str) -> Callable[[str], list[int]] | None:
    """tiktoken's encoding ``name`` from the file shipped here (tiktoken's cache names a file
    by the sha1 of its URL), or None when the file is not there: never a download."""
    folder = TOKENIZER_DIR
    if not (folder / hashlib.sha1(BPE_URL.format(name).encode()).hexdigest()).is_file():
        return None
    import tiktoken

    was = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        enc = tiktoken.get_encoding(name)
    finally:
        if was is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = was
    return functools.partial(enc.encode, disallowed_special=())


@functools.cache
def _json_tokenizer(name: str) -> Callable[[str], list[int]] | None:
    path = TOKENIZER_DIR / f"{name}_tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(path.read_text(encoding="utf-8"))
    return lambda text: list(tok.encode(text, add_special_tokens=False).ids)


def _local(model: str) -> Counter | None:
    from butterfly.models.gguf_vocab import gguf_encoder

    encode = gguf_encoder(model)
    return None if encode is None else Counter("the GGUF file's own vocabulary", True, encode,
                                               PER_MESSAGE_CHATML)


@functools.cache
def counter_for(model: str) -> Counter:
    """The token counter of ``model``: its own tokenizer where one is known, else cl100k_base
    as a proxy (``exact`` False)."""
    if model.startswith("local/"):
        found = _local(model)
        if found is not None:
            return found
    name = family(model)
    if name is not None:
        encode = _json_tokenizer(name) if name in ("anthropic", "deepseek") else _tiktoken(name)
        if encode is not None:
            return Counter(name, True, encode)
    proxy = _tiktoken(PROXY)
    if proxy is None:
        return Counter("4 characters a token", False, _by_characters, pieces=False)
    return Counter(PROXY, False, proxy)


def _by_characters(text: str) -> list[int]:
    """The last resort without any tokenizer file: one token per 4 characters."""
    return [0] * ((len(text) + 3) // 4)


@dataclass(frozen=True)
class PromptCaching:
    """How a provider caches prompt prefixes it has seen: from ``least`` tokens on, in steps of
    ``step`` tokens (docs/cost.md)."""

    provider: str
    least: int
    step: int

    def cached(self, common: int) -> int:
        """The cached tokens of a prompt whose first ``common`` tokens were sent before."""
        if common < self.least:
            return 0
        return self.least + (common - self.least) // self.step * self.step


CACHING: Final = {
    "openai": PromptCaching("openai", 1024, 128),
    "azure": PromptCaching("azure", 1024, 128),
    "deepseek": PromptCaching("deepseek", 64, 64),
}
"""Providers that cache prompt prefixes by themselves, by model-name prefix. Anthropic caches
only what a request marks with ``cache_control``: a run marks a Claude model's stable prefix
(:mod:`butterfly.core.cache_marks`), but the dry run does not count Anthropic's reads and
1.25 x writes yet, so it is not here (docs/cost.md); neither are local models (no bill)."""


def caching_of(model: str) -> PromptCaching | None:
    """How ``model``'s provider caches prompt prefixes, or None when it caches none we know."""
    provider, sep, _ = model.partition("/")
    if not sep:
        provider = "openai" if family(model) in ("o200k_base", "cl100k_base") else provider
    return CACHING.get(provider)


NEAR: Final = 1 << 14
"""A long text is counted from a recent one only when what differs after their shared start
is at most this many characters; else it is encoded whole."""


def cut_before(text: str, end: int) -> int:
    """The last place before ``end`` where a line starts with a digit (``\\n1``: a piece
    boundary of every tokenizer with :attr:`Counter.pieces`), or 0 when there is none
    within :data:`NEAR` characters."""
    at = end
    while True:
        nl = text.rfind("\n", max(0, end - NEAR), at)
        if nl < 0:
            return 0
        if nl + 1 < end and "0" <= text[nl + 1] <= "9":
            return nl + 1
        at = nl


@dataclass
class LongCounts:
    """Token counts of long texts that start as a recent one does (restate mode's prompt of turn
    t is the prompt of turn t - 1 with one edit more): a text is counted as the recent text's
    count, less the tokens of its part after the last piece boundary they share, plus this
    text's part after it. Exact for a counter whose pieces add up (:attr:`Counter.pieces`);
    the dry run of one 5,000-turn chain asked at every turn encoded 230 million tokens and
    compared token lists of every pair of prompts (1 min 46 s; issue 34)."""

    counter: Counter
    recent: list[tuple[str, int]] = field(default_factory=list)
    keep: int = 4

    def _near(self, text: str) -> tuple[str, int, int] | None:
        """The most recent text ``text`` is near (their parts after the last piece boundary
        they share at most :data:`NEAR` characters), its count, and that boundary; None when
        none is."""
        for old, count in reversed(self.recent):
            cut = cut_before(text, shared_start(old, text))
            if cut and max(len(old), len(text)) - cut <= NEAR:
                return old, count, cut
        return None

    def count(self, text: str) -> int:
        """The tokens of ``text``."""
        for old, n in self.recent:
            if old is text:
                return n
        near = self._near(text) if self.counter.pieces else None
        if near is None:
            n = len(self.counter.encode(text))
        else:
            old, count, cut = near
            n = count - len(self.counter.encode(old[cut:])) + len(self.counter.encode(text[cut:]))
        self.recent = [*self.recent[-(self.keep - 1):], (text, n)]
        return n

    def shared(self, a: str, b: str) -> int:
        """The tokens ``a`` and ``b`` share at their start (``a`` counted recently): the
        tokens of their common start to the last piece boundary, then those their parts after
        it share."""
        cut = cut_before(b, shared_start(a, b)) if self.counter.pieces else 0
        head = 0 if cut == 0 else self.count(a) - len(self.counter.encode(a[cut:]))
        x, y = self.counter.encode(a[cut:]), self.counter.encode(b[cut:])
        same = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                    min(len(x), len(y)))
        return head + same
