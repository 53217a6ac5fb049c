"""Reading a model's answer: the spec it states, or a named reason why it is an abstention.

Three modes (see ``docs/parser.md`` for the full rules and the synonym table):

- ``strict``: the whole answer, trimmed, is one JSON object with exactly the 20 keys and string
  values from the catalogue (a domain value or ``unspecified``).
- ``structured``: the answer is the *last* JSON object in the text: the last fenced JSON block or
  the last top-level object, whichever comes later. An echoed prompt, a draft or a thought before
  it is ignored; the seed-000 lesson is that an echoed prompt must never be read as the answer, so
  when that last object is malformed the answer is an abstention, never an earlier object.
  Keys and values then as in strict.
- ``lenient``: the same object as structured, then keys matched loosely, unknown keys ignored,
  numbers, booleans, ``null`` and obvious value synonyms normalised, and malformed JSON repaired
  with ``json_repair``. Whenever structured returns a spec, lenient returns the same spec.

Every unparsable answer is a :class:`Parsed` with ``spec=None`` and a reason from
:data:`ABSTENTION_REASONS`. :func:`parse_answer` never raises on any text (an unknown *mode* is a
programming error and raises ``ValueError``).
"""

from __future__ import annotations

import json
from typing import Any, Final

from butterfly.core.extract import (
    ABSTENTION_REASONS,
    MAX_CHARS,
    Parsed,
    _abstain,
    _BudgetExhausted,
    _decode,
    _ends_unsure,
    _is_unsure,
    _repair,
    _select,
    _show_exc,
    _starts_unsure,
)
from butterfly.core.normalise import (
    RAW_SYNONYMS,
    SYNONYMS,
    UNSPECIFIED_SYNONYMS,
    _check_exact,
    _check_lenient,
)
from butterfly.core.vocab import PARSE_MODES, ParseMode

__all__ = [
    "ABSTENTION_REASONS",
    "MAX_CHARS",
    "RAW_SYNONYMS",
    "SYNONYMS",
    "UNSPECIFIED_SYNONYMS",
    "Parsed",
    "main_parse",
    "parse_answer",
]

# --------------------------------------------------------------------------------------------
# The modes


def _strict(s: str) -> Parsed:
    obj, err = _decode(s)
    if err is not None:
        if "{" not in s:
            return _abstain("no_json", "the answer holds no JSON object")
        return _abstain("bad_json", f"the answer is not exactly one JSON object: {err}")
    return _check_exact(obj)


def _located(mode: ParseMode, text: str) -> Parsed:
    """structured and lenient: locate the last object, then decode and check it."""
    try:
        cand = _select(text)
    except _BudgetExhausted:
        return _abstain("too_large", "the object scan ran out of budget (pathological text)")
    if cand is None:
        if _ends_unsure(text) or _starts_unsure(text):
            return _abstain("unsure", "the answer says UNSURE and holds no JSON object")
        return _abstain("no_json", "the answer holds no JSON object")
    if _ends_unsure(text[cand.end :]):
        return _abstain(
            "unsure", f"the answer ends with UNSURE after its last object (offset {cand.start})"
        )
    where = "the last fenced JSON block" if cand.kind == "fence" else "the last JSON object"
    where += f" (offset {cand.start})"
    obj: Any = None
    err: str | None = "it never closes (cut off?)"
    if cand.kind != "unterminated":
        obj, err = _decode(cand.text)
    if err is None:
        return _check_exact(obj) if mode == "structured" else _check_lenient(obj)
    if mode == "structured":
        return _abstain("bad_json", f"{where} does not decode: {err}")
    obj, rerr = _repair(cand.text)
    if rerr is not None:
        return _abstain("bad_json", f"{where} does not decode ({err}) and {rerr}")
    return _check_lenient(obj)


def _parse(text: object, mode: ParseMode, truncated: bool) -> Parsed:
    if truncated:
        return _abstain("truncated", "the output was cut off (finish_reason 'length')")
    if text is None:
        return _abstain("empty", "no answer")
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return _abstain("parser_error", f"the answer is a {type(text).__name__}, not text")
    if len(text) > MAX_CHARS:
        return _abstain("too_large", f"the answer has {len(text)} characters (limit {MAX_CHARS})")
    s = text.strip().lstrip("\ufeff").strip()
    if not s:
        return _abstain("empty", "the answer is empty" if not text else "the answer is whitespace")
    if _is_unsure(s):
        return _abstain("unsure", "the answer is UNSURE")
    if mode == "strict":
        return _strict(s)
    return _located(mode, s)


def parse_answer(
    text: str | None, mode: ParseMode = "structured", *, truncated: bool = False
) -> Parsed:
    """The spec a model's raw answer states, or why it is an abstention. Never raises on any
    text; ``truncated`` (finish_reason "length") makes every answer an abstention."""
    if mode not in PARSE_MODES:
        raise ValueError(f"unknown parse mode {mode!r}; expected one of {', '.join(PARSE_MODES)}")
    try:
        return _parse(text, mode, truncated)
    except Exception as e:  # the last guard: an abstention, never a crash of the run
        return _abstain("parser_error", _show_exc(e))


_MODE_BY_NAME: Final[dict[str, ParseMode]] = {m: m for m in PARSE_MODES}


def main_parse(mode: str, stdin_text: str) -> tuple[int, str]:
    """``butterfly parse --mode M``: (0, the spec as one JSON line) or (3, "abstention: ...").
    An unknown mode gives (2, an error message)."""
    m = _MODE_BY_NAME.get(mode)
    if m is None:
        return 2, f"error: unknown parse mode {mode!r}; expected one of {', '.join(PARSE_MODES)}"
    p = parse_answer(stdin_text, m)
    if p.spec is not None:
        return 0, json.dumps(p.spec)
    return 3, f"abstention: {p.reason}: {p.detail}"
