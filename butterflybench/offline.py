"""No download on first use (issue 26, item 5): inspect counts tokens with tiktoken's
o200k_base encoding, which tiktoken fetches on first use unless ``TIKTOKEN_CACHE_DIR`` holds
it. butterfly ships that file (``butterfly/models/data/tokenizers/``, in tiktoken's cache
layout); pointing tiktoken's cache there makes inspect's counting work without a network. A
user's own ``TIKTOKEN_CACHE_DIR`` is kept."""

from __future__ import annotations

import hashlib
import os

from butterfly.models.tokens import BPE_URL, TOKENIZER_DIR

ENCODING = "o200k_base"
"""The encoding inspect's ``count_text_tokens`` asks for."""


def tiktoken_offline() -> str | None:
    """Set ``TIKTOKEN_CACHE_DIR`` to butterfly's tokenizer folder when it is unset and that
    folder holds inspect's encoding; the folder now in force (None: left to tiktoken)."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return os.environ["TIKTOKEN_CACHE_DIR"]
    folder = TOKENIZER_DIR
    if folder is None:
        return None
    if not (folder / hashlib.sha1(BPE_URL.format(ENCODING).encode()).hexdigest()).is_file():
        return None
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return str(folder)
