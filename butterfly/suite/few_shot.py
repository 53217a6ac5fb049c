"""The few-shot examples kept apart from every suite's wording (contract v2): the check
``butterfly validate`` runs on each turn, :func:`few_shot_clash`.

A turn closer to a few-shot example (:data:`butterfly.core.prompts.FEW_SHOT_TURNS`) than the
thresholds below would show a few-shot run the answer to that turn. The check is decided in time
linear in a turn's length (issue 34: one 200 MB turn took difflib over 300 s).
"""

from __future__ import annotations

import difflib
import re
from typing import Final

from butterfly.core.prompts import FEW_SHOT_TURNS

FEW_SHOT_MAX_RATIO: Final = 0.55
FEW_SHOT_MAX_JACCARD: Final = 0.35
"""A turn closer than this to a few-shot example (difflib ratio of the case-folded texts, or
Jaccard index of their word sets) would show a few-shot run the answer to that turn (contract
v2: few-shot examples share no wording with any turn of a shipped suite)."""


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z0-9]+", text.lower()))


def similarity(a: str, b: str) -> tuple[float, float]:
    """(difflib ratio, word Jaccard) of two texts, case-folded."""
    ratio = difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()
    wa, wb = _words(a), _words(b)
    return ratio, len(wa & wb) / max(1, len(wa | wb))


WORDS_CHUNK: Final = 1 << 20
"""A long text's words are read this many characters at a time (a word cut by a chunk's end
is carried into the next), so its word set never needs the whole text lowered at once."""


def _words_up_to(text: str, most: int) -> frozenset[str] | None:
    """:func:`_words` of ``text``, or None as soon as it has more than ``most`` distinct words;
    read a chunk at a time (linear in the text, whatever its length)."""
    if len(text) <= WORDS_CHUNK:
        words = _words(text)
        return words if len(words) <= most else None
    seen: set[str] = set()
    carry = ""
    for start in range(0, len(text), WORDS_CHUNK):
        part = carry + text[start:start + WORDS_CHUNK].lower()
        found = re.findall(r"[a-z0-9]+", part)
        cut = start + WORDS_CHUNK < len(text) and found and part.endswith(found[-1])
        carry = found.pop() if cut else ""
        seen.update(found)
        if len(seen) > most:
            return None
    seen.update([carry] if carry else [])
    return frozenset(seen) if len(seen) <= most else None


def _most_words(example: str) -> int:
    """The most distinct words a text may have and still reach :data:`FEW_SHOT_MAX_JACCARD`
    with ``example`` (the index is at most ``|example's words| / |text's words|``; + 1: no
    rounding loss)."""
    return int(len(_words(example)) / FEW_SHOT_MAX_JACCARD) + 1


def _close_to(text: str, example: str, words: frozenset[str] | None) -> bool:
    """Whether ``text`` (its word set ``words``, None when it has more than any example
    allows) is as close to ``example`` as :func:`similarity`'s thresholds say, decided in time
    linear in the text: difflib's ratio is at most ``2 min(a, b) / (a + b)`` of the two
    lengths (its ``real_quick_ratio``), so it is computed only when that bound reaches the
    threshold (a text at most a few times the example's length). Lowering a text never
    shortens it, so the bound on the raw lengths holds for the lowered ones. A 200 MB turn
    took difflib over 300 s (issue 34)."""
    a, b = len(text), len(example)
    if a < b or 2 * b / (a + b) >= FEW_SHOT_MAX_RATIO:
        ratio = difflib.SequenceMatcher(None, text.lower(), example.lower()).ratio()
        if ratio >= FEW_SHOT_MAX_RATIO:
            return True
    wb = _words(example)
    return words is not None and len(words & wb) / max(1, len(words | wb)) >= FEW_SHOT_MAX_JACCARD


def few_shot_clash(text: str) -> str | None:
    """The few-shot example a user turn's wording is too close to, if any (:func:`similarity`
    of the two at or over a threshold, decided by :func:`_close_to`; the text's words are read
    once, and only until there are more than any example's Jaccard bound allows)."""
    examples = [t[3] for t in FEW_SHOT_TURNS]
    words = _words_up_to(text, max(_most_words(e) for e in examples))
    for example in examples:
        if _close_to(text, example, words):
            return example
    return None
