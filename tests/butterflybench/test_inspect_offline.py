"""No download on first use (issue 26, item 5): importing butterflybench points tiktoken's cache
at litellm's copy of the encoding inspect counts tokens with (o200k_base), unless the user set
``TIKTOKEN_CACHE_DIR``; tiktoken then loads it with its downloader made to fail. butterflybench
is imported inside the tests, after ``monkeypatch`` took the variable, so that the variable is
put back when each test ends (and collecting this file changes nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry


def test_the_cache_is_litellms_copy_unless_the_user_set_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    from butterflybench.offline import tiktoken_offline

    folder = tiktoken_offline()
    assert folder is not None and folder.endswith("tokenizers")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tiktoken_offline() == str(tmp_path)


def test_inspects_encoding_loads_without_a_download(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("tiktoken tried to download an encoding")

    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    from butterflybench.offline import ENCODING, tiktoken_offline

    tiktoken_offline()
    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # nothing loaded before counts
    assert len(tiktoken.get_encoding(ENCODING).encode("an edit to the spec")) > 0
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's "no cache": it must download
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    with pytest.raises(AssertionError, match="download"):
        tiktoken.get_encoding(ENCODING)
