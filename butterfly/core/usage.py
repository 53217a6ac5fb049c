"""A provider's token counts checked before anything sums or prices them (issue 34).

``completion_tokens: 10**15`` and ``prompt_tokens: -100`` made a $5e9 call, "2.6e16 tok/s" on
the progress line, and were kept in the shared answer cache. A count that is not a whole number,
is negative, or is above :data:`USAGE_CEILING` is invalid usage: ``core.wire.response`` keeps
such an answer with no token counts and no price, its counts as they came, and the reason (the
model's context window is checked by ``models.price_map.checked``). Pure; inlined in the notebook
with ``core.wire``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

USAGE_CEILING: Final = 100_000_000
"""The most tokens a call may report in any one count: no model's context window comes near
(the largest are a few million)."""
COUNTS: Final = (("prompt_tokens",), ("completion_tokens",), ("total_tokens",),
                 ("cache_creation_input_tokens",), ("prompt_tokens_details", "cached_tokens"),
                 ("prompt_tokens_details", "cache_creation_tokens"),
                 ("completion_tokens_details", "reasoning_tokens"))
"""The token counts of a completion's ``usage`` that are read (and checked)."""

Counts = tuple[tuple[str, object], ...]
"""Token counts by their dotted names (``prompt_tokens_details.cached_tokens``), as reported."""


def count_problem(name: str, value: object) -> str | None:
    """Why ``value`` cannot be the token count ``name``, or None (None itself: not reported)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{name} is {repr(value)[:40]}, not a whole number"
    if value < 0:
        return f"{name} is {value:,}, below 0"
    if value > USAGE_CEILING:
        return f"{name} is {value:,}, above {USAGE_CEILING:,} (no call has so many)"
    return None


def reported(usage: Any, opt: Callable[[Any, str], Any]) -> Counts:
    """The counts ``usage`` reports (``opt``: how a field is read, None when absent)."""
    found = []
    for path in COUNTS:
        value = usage
        for key in path:
            value = opt(value, key)
        if value is not None:
            found.append((".".join(path), value))
    return tuple(found)


def first_problem(counts: Counts) -> str | None:
    """Why the first count that cannot be right cannot be, or None when all can."""
    return next((p for p in (count_problem(k, v) for k, v in counts) if p), None)
