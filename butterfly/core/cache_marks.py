"""Where a prompt's stable prefix ends, marked for providers that cache only what a request
marks (Anthropic's ``cache_control``; docs/cost.md, "Prompt caching").

The marks are message indices carried by the request (:attr:`butterfly.core.wire.Request.
cache_marks`); the litellm transport turns them into ``cache_control`` blocks for a Claude
model (:func:`marked`), and nothing else reads them: the text sent, the run's
``messages_sha256`` and the answer key are those of the plain messages. Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Final

CACHE_CONTROL: Final = {"type": "ephemeral"}
"""Anthropic's marker of a cache breakpoint (five minutes' life), on a message's text block."""


def cache_marks(messages: Sequence[Mapping[str, str]], mode: str) -> tuple[int, ...]:
    """The messages to mark as cache breakpoints (docs/cost.md, "Prompt caching"): the system
    message (the prefix every call of a run repeats), and in chat mode also the last two user
    messages: the last one writes this call's prompt to the cache, the one before ends the
    previous call's prompt, which this call reads. At most 3 (Anthropic allows 4); empty
    messages are never marked (Anthropic refuses an empty text block)."""
    system = next((i for i, m in enumerate(messages) if m.get("role") == "system"), None)
    chosen = [] if system is None else [system]
    if mode == "chat":  # from the end: each call of a long chain scans two or three messages
        users = (i for i in range(len(messages) - 1, -1, -1)
                 if messages[i].get("role") == "user")
        chosen += sorted(islice(users, 2))
    return tuple(i for i in chosen if messages[i].get("content"))


def marked(messages: Sequence[Mapping[str, str]], marks: Iterable[int]) -> list[dict[str, object]]:
    """``messages`` with each marked one's content as one text block carrying
    :data:`CACHE_CONTROL` (litellm's form of Anthropic's marker); the text is unchanged."""
    at = set(marks)
    return [{**m, "content": [{"type": "text", "text": m["content"],
                               "cache_control": dict(CACHE_CONTROL)}]} if i in at else dict(m)
            for i, m in enumerate(messages)]
