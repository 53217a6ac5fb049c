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

An output protocol, when given, says where the object is: ``json-first`` takes the object that
opens the answer (structured and lenient: the first object or fence instead of the last; strict:
the answer must begin with it), ``json-last`` the one that closes it (strict: the answer must
end with it); anything before or after it is the explanation the protocol asks for. Strict
abstains with ``misplaced`` when the object is elsewhere. ``schema`` and ``json`` (or none) read
as above.

Every unparsable answer is a :class:`Parsed` with ``spec=None`` and a reason from
:data:`ABSTENTION_REASONS`. :func:`parse_answer` never raises on any text (an unknown *mode* is a
programming error and raises ``ValueError``).
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast

from butterfly.core.find_json import (
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
from butterfly.core.vocab import PARSE_MODES, PROTOCOLS, ParseMode

Position = Literal["first", "last"]

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


def _strict_at(s: str, position: Position) -> Parsed:
    """Strict under json-first / json-last: exactly one object (or JSON fence) at the position
    the protocol gives it, decoded and checked as in strict."""
    cand = _select(s, position)
    if cand is None:
        return _abstain("no_json", "the answer holds no JSON object")
    if position == "first" and s[: cand.begins].strip():
        return _abstain("misplaced", f"json-first: the answer does not begin with its object "
                        f"(it begins at offset {cand.begins})")
    if position == "last" and s[cand.end :].strip():
        return _abstain("misplaced", f"json-last: the answer does not end with its object "
                        f"(text follows offset {cand.end})")
    if cand.kind == "unterminated":
        return _abstain("bad_json", "the object never closes (cut off?)")
    obj, err = _decode(cand.text)
    if err is not None:
        return _abstain("bad_json", f"the object does not decode: {err}")
    return _check_exact(obj)


def _located(mode: ParseMode, text: str, position: Position = "last") -> Parsed:
    """structured and lenient: locate the last (or first) object, then decode and check it."""
    cand = _select(text, position)
    if cand is None:
        if _ends_unsure(text) or _starts_unsure(text):
            return _abstain("unsure", "the answer says UNSURE and holds no JSON object")
        return _abstain("no_json", "the answer holds no JSON object")
    if _ends_unsure(text[cand.end :]):
        return _abstain(
            "unsure", f"the answer ends with UNSURE after its last object (offset {cand.start})"
        )
    where = (f"the {position} fenced JSON block" if cand.kind == "fence"
             else f"the {position} JSON object")
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


def _parse(text: object, mode: ParseMode, truncated: bool, position: Position | None) -> Parsed:
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
        return _strict(s) if position is None else _strict_at(s, position)
    return _located(mode, s, position or "last")


def position_of(protocol: str | None) -> Position | None:
    """Where a protocol puts the answer's object: json-first first, json-last last, else None
    (the whole answer, or the last object)."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    return "first" if protocol == "json-first" else "last" if protocol == "json-last" else None


def parse_answer(
    text: str | None, mode: ParseMode = "structured", *, truncated: bool = False,
    protocol: str | None = None,
) -> Parsed:
    """The spec a model's raw answer states, or why it is an abstention. Never raises on any
    text; ``truncated`` (finish_reason "length") makes every answer an abstention;
    ``protocol`` (json-first, json-last) says where the object is."""
    if mode not in PARSE_MODES:
        raise ValueError(f"unknown parse mode {mode!r}; expected one of {', '.join(PARSE_MODES)}")
    position = position_of(protocol)
    try:
        return _parse(text, mode, truncated, position)
    except _BudgetExhausted:  # the object scan of strict_at / located gave up
        return _abstain("too_large", "the object scan ran out of budget (pathological text)")
    except Exception as e:  # the last guard: an abstention, never a crash of the run
        return _abstain("parser_error", _show_exc(e))


def main_parse(mode: str, stdin_text: str, protocol: str | None = None) -> tuple[int, str]:
    """``butterfly parse --mode M [--protocol P]``: (0, the spec as one JSON line) or
    (3, "abstention: ..."). An unknown mode or protocol gives (2, an error message)."""
    try:
        p = parse_answer(stdin_text, cast(ParseMode, mode), protocol=protocol)
    except ValueError as e:  # the mode or the protocol (parse_answer never raises on text)
        return 2, f"error: {e}"
    if p.spec is not None:
        return 0, json.dumps(p.spec)
    return 3, f"abstention: {p.reason}: {p.detail}"
