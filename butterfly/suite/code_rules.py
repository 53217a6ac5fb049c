"""The code track's rules for a scenario (contract section 7; docs/code-track.md, "The suite").

A code scenario keeps the oracle's one ``Spec`` type, but it holds code-catalogue values only
(no parquet, zstd or ``unspecified``), has no drop turns, and leaves the six settings outside the
code catalogue at their canonical initial values: no turn targets one, and no turn's words name
one (its name, its description, a phrase of its values, or a word that points at it).
"""

from __future__ import annotations

import re
from typing import Final

from butterfly.core.code_catalogue import DOMAINS as CODE_DOMAINS
from butterfly.core.code_catalogue import KEYS as CODE_KEYS
from oracle import BY_KEY, KEYS, Scenario, replay

NON_CODE: Final = tuple(k for k in KEYS if k not in CODE_KEYS)
"""The spec track's settings outside the code catalogue (canonical and untouched in a code
scenario)."""

_WORDS: Final = re.compile(
    r"\b(python|time-?outs?|time limit|log|logs|logging|log level|parallel|progress|"
    r"retry|retries|retried)\b", re.IGNORECASE)
"""Words that point at a setting outside the code catalogue, whatever the phrasing."""


def _mentions() -> tuple[tuple[str, str], ...]:
    """(lower-case text, setting) for every name, description and value phrase of a setting
    outside the code catalogue."""
    out = []
    for key in NON_CODE:
        s = BY_KEY[key]
        out += [(s.name.lower(), key), (s.description.lower(), key)]
        out += [(s.phrase(v).lower(), key) for v in s.domain]
    return tuple(out)


_MENTIONS: Final = _mentions()


def named_outside(text: str) -> str | None:
    """The setting outside the code catalogue that ``text`` names, if any (by its words)."""
    low = text.lower()
    hit = next((key for phrase, key in _MENTIONS if phrase in low), None)
    if hit is not None:
        return hit
    m = _WORDS.search(text)
    return None if m is None else f"'{m.group(0)}'"


def _spec_violation(spec: dict[str, str]) -> str | None:
    for key in NON_CODE:
        if spec[key] != BY_KEY[key].initial:
            return f"{key} is {spec[key]}, not its canonical {BY_KEY[key].initial}"
    for key in CODE_KEYS:
        if spec[key] not in CODE_DOMAINS[key]:
            return f"{key}={spec[key]} is no value of the code catalogue"
    return None


def _turn_violation(turn: object) -> str | None:
    op = getattr(turn, "op", "")
    if op == "drop":
        return "a drop turn (the code track has none: a program has no unspecified behaviour)"
    key = getattr(turn, "setting", None)
    if key is not None and key not in CODE_KEYS:
        return f"it targets {key}, a setting outside the code catalogue"
    value = getattr(turn, "value", None)
    if key is not None and value is not None and value not in CODE_DOMAINS[key]:
        return f"{key}={value} is no value of the code catalogue"
    named = named_outside(str(getattr(turn, "text", "")))
    if named is not None:
        return f"its words name {named}, outside the code catalogue"
    return None


def code_violation(scenario: Scenario) -> str | None:
    """The first rule of the code track ``scenario`` breaks, as ``initial spec: ...`` or
    ``turn N: ...``; None when it keeps them all. The scenario is assumed valid for the oracle
    (its guards are checked first)."""
    reason = _spec_violation(scenario.initial)
    if reason is not None:
        return f"initial spec: {reason}"
    for t, turn in enumerate(scenario.turns, 1):
        reason = _turn_violation(turn)
        if reason is not None:
            return f"turn {t}: {reason}"
    for t, spec in enumerate(replay(scenario)[1:], 1):
        reason = _spec_violation(spec)
        if reason is not None:
            return f"turn {t}: after it, {reason}"
    return None
