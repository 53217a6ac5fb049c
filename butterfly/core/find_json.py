"""Finding the answer in a model's text: the candidate JSON object (the last fenced JSON
block or the last top-level object), UNSURE answers, and decoding with duplicate-key and
constant checks, or bounded repair (lenient). The modes and their rules are in
:mod:`butterfly.core.parse` and docs/parser.md."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

import json_repair

ABSTENTION_REASONS: Final[tuple[str, ...]] = (
    "truncated",  # the caller says the output was cut off (finish_reason == "length")
    "empty",  # no answer, or only whitespace
    "too_large",  # over MAX_CHARS, or the object scan ran out of budget (pathological text)
    "unsure",  # the model answered UNSURE
    "no_json",  # no JSON object in the answer
    "bad_json",  # the answer's object does not decode (or, lenient, cannot be repaired)
    "not_object",  # the answer decodes to JSON that is not an object
    "duplicate_key",  # a key appears twice (lenient: twice with different values)
    "unknown_key",  # a key outside the catalogue (strict / structured)
    "missing_key",  # a catalogue key is absent
    "bad_type",  # a value that is not a string (lenient: not a string, number, bool or null)
    "out_of_domain",  # a value outside the setting's domain (and not unspecified)
    "misplaced",  # strict with json-first / json-last: the object is not where it must be
    "parser_error",  # an internal error was caught; should never happen (tests check)
)
"""Reason codes of an abstention, in the order the checks run."""

MAX_CHARS: Final = 1_000_000
"""Longer answers are abstentions (``too_large``) without being scanned."""
SCAN_STEPS: Final = 200_000
SCAN_CHARS: Final = 20_000_000
"""The object scan gives up (``too_large``) after this many steps (one per brace inside an
object) or characters read, counting re-reads after an unclosed brace. A real answer needs a few
dozen steps and one read; only pathological text (thousands of unclosed braces) reaches these
limits, after a few tenths of a second at most."""
MAX_REPAIR_CHARS: Final = 8_000
MAX_REPAIR_QUOTES: Final = 600
MAX_REPAIR_BRACKETS: Final = 40
"""Lenient repair is tried only on candidates within these limits: ``json_repair`` is pure Python
and quadratic on adversarial text (seconds for 8 KB of ``{"``); a real spec is about 1 KB."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed answer: the spec in catalogue order, or ``None`` and the abstention reason."""

    spec: dict[str, str] | None
    reason: str | None
    detail: str = ""


def _show(v: object, limit: int = 40) -> str:
    """A short ASCII rendering of a key or value for a detail message."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return "<huge integer>"
    if isinstance(v, str):
        r = ascii(v[: limit + 2])
    elif v is None or isinstance(v, bool):
        return {None: "null", True: "true", False: "false"}[v]
    elif isinstance(v, int | float):
        r = ascii(v)
    else:
        return f"<{_type_name(v)}>"  # never render nested structures (size, recursion)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _show_exc(e: BaseException) -> str:
    return _show(f"{type(e).__name__}: {e}", 120)[1:-1]


_JSON_TYPES: Final = ((type(None), "null"), (bool, "boolean"), (int | float, "number"),
                      (list, "array"), (dict, "object"), (str, "string"))
"""A decoded value's JSON type by its Python type (a bool before the numbers it is one of)."""


def _type_name(v: object) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(v, kind)), type(v).__name__)


def _abstain(reason: str, detail: str) -> Parsed:
    return Parsed(None, reason, detail)


# --------------------------------------------------------------------------------------------
# UNSURE

_WORDS: Final = re.compile(r"[a-z0-9]+")
_SPECIAL_TOKEN: Final = re.compile(r"<\|?/?[A-Za-z_][\w-]*\|?>")
_UNSURE_LABELS: Final = frozenset(tuple(label.split()) for label in (
    "", "answer", "final answer", "my answer", "my answer is", "the answer is", "response", "json",
    "text", "plaintext"))
"""The words that may come before UNSURE in an answer that says nothing else."""


def _is_unsure(s: str) -> bool:
    """``s`` says UNSURE and nothing else (punctuation, markdown, a fence, a label allowed)."""
    if len(s) > 200:
        return False
    low = s.lower()
    if "unsure" not in low:
        return False
    words = _WORDS.findall(_SPECIAL_TOKEN.sub(" ", low))
    return bool(words) and words[-1] == "unsure" and tuple(words[:-1]) in _UNSURE_LABELS


def _ends_unsure(tail: str) -> bool:
    """The last line with any letter or digit in ``tail`` is UNSURE alone."""
    if "unsure" not in tail.lower():
        return False
    line = next((x for x in reversed(tail.splitlines()) if _WORDS.search(x.lower())), None)
    return line is not None and _is_unsure(line)


def _starts_unsure(text: str) -> bool:
    """The first word of ``text`` is UNSURE (used only when the answer has no JSON object)."""
    words = _WORDS.findall(_SPECIAL_TOKEN.sub(" ", text[:200].lower()))
    return bool(words) and words[0] == "unsure"


# --------------------------------------------------------------------------------------------
# Finding the answer's object

_NEXT: Final = re.compile(r'(?:[^{}"]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([{}"]?)', re.S)
"""Inside an object: skip text and whole JSON strings up to the next brace. Group 1 is ``{``,
``}``, ``"`` (a string that never closes) or empty (the end of the text). Linear: possessive."""
_OBJECT_START: Final = re.compile(r"""\{\s*+(?:["'}]|[A-Za-z_][\w-]*+\s*+:)""")
"""A brace that opens something object-like: a quoted key, ``}``, or ``identifier:``.
``{timeout}`` or ``{ x + y }`` in prose is not an object."""
_FENCE_LINE: Final = re.compile(r"[ \t]*(`{3,})[ \t]*([\w.+-]*)[ \t]*(?=\r?\n|\Z)")
_JSON_INFOS: Final = frozenset({"json", "jsonc", "json5"})


@dataclass(frozen=True, slots=True)
class _Candidate:
    text: str  # what to decode
    start: int  # offset of the candidate in the answer
    end: int  # offset just after it (the tail after it is checked for UNSURE)
    kind: Literal["object", "fence", "unterminated"]
    outer_start: int = -1  # where it begins in the answer (a fence: its opening line)

    @property
    def begins(self) -> int:
        return self.start if self.outer_start < 0 else self.outer_start


class _BudgetExhausted(Exception):
    pass


def _scan(text: str, first: bool = False) -> tuple[tuple[int, int] | None, int | None]:
    """The last complete top-level object-like span, and an object-like ``{`` after it that
    never closes (the answer was cut off), if any. With ``first``: the first complete span,
    and an object-like ``{`` before it that never closes.

    Left to right: an object starts at a ``{`` outside any object and ends at its matching ``}``
    (braces inside JSON strings ignored). A ``{`` that never closes is treated as prose and the
    scan resumes just after it, so a stray brace in prose cannot hide a later object. Quadratic
    only on pathological text, hence the step and character budget.
    """
    steps = SCAN_STEPS
    chars = SCAN_CHARS
    last: tuple[int, int] | None = None
    open_start: int | None = None
    step = _NEXT.match
    object_like = _OBJECT_START.match
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            return last, open_start
        depth = 1
        end = -1
        i = start + 1
        while True:
            m = step(text, i)
            if m is None:  # never: the pattern matches the empty string
                break
            steps -= 1
            chars -= m.end() - i
            if steps < 0 or chars < 0:
                raise _BudgetExhausted
            c = m.group(1)
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    end = m.end()
                    break
            else:
                break  # a string that never closes, or the end of the text
            i = m.end()
        if end < 0:
            if open_start is None and object_like(text, start):
                open_start = start
            pos = start + 1
        else:
            if object_like(text, start):
                last = (start, end)
                if first:
                    return last, open_start
                open_start = None
            pos = end


def _fences(text: str) -> list[_Candidate]:
    """Closed fenced blocks that hold JSON: info ``json``/``jsonc``/``json5``, or no info and
    content starting with ``{`` or ``[``. Fences are whole lines (CommonMark-like)."""
    if "```" not in text:
        return []
    out: list[_Candidate] = []
    opener: re.Match[str] | None = None
    pos = 0
    while (idx := text.find("```", pos)) >= 0:
        nl = text.find("\n", idx)
        pos = len(text) if nl < 0 else nl + 1
        m = _FENCE_LINE.match(text, text.rfind("\n", 0, idx) + 1)
        if m is None:
            continue  # backticks inside a line: not a fence
        if opener is None:
            opener = m
        elif not m.group(2) and len(m.group(1)) >= len(opener.group(1)):
            info = opener.group(2).lower()
            content = text[opener.end() : m.start()]
            if info in _JSON_INFOS or (not info and content.lstrip()[:1] in ("{", "[")):
                out.append(_Candidate(content, opener.end(), m.end(), "fence", opener.start()))
            opener = None
    return out


def _select(text: str, position: Literal["first", "last"] = "last") -> _Candidate | None:
    """The answer's candidate object: whichever comes last of the last object-like span, the last
    JSON fence, and an unterminated object after both (a later one wins only when it ends later:
    an unterminated one, when it starts later); ``position="first"``: whichever begins first of
    the first span, the first fence and an unterminated object before both."""
    first = position == "first"
    span, open_start = _scan(text, first)
    fences = _fences(text)
    found: list[_Candidate] = []
    if span is not None:
        found.append(_Candidate(text[span[0] : span[1]], span[0], span[1], "object"))
    if fences:
        found.append(fences[0] if first else fences[-1])
    inside = ([(c.begins, c.end) for c in found] if first  # a broken object inside a candidate
              else [(f.start, f.start + len(f.text)) for f in fences])  # or inside any fence
    if open_start is not None and not any(lo <= open_start < hi for lo, hi in inside):
        found.append(_Candidate(text[open_start:], open_start, len(text), "unterminated"))
    if first:
        return min(found, key=lambda c: c.begins, default=None)
    return max(found, key=lambda c: c.start if c.kind == "unterminated" else c.end, default=None)


# --------------------------------------------------------------------------------------------
# Decoding


class _DupDict(dict[str, Any]):
    """A decoded object in which some key appeared more than once."""

    __slots__ = ("conflicting", "duplicates")

    duplicates: list[str]
    conflicting: list[str]  # duplicated keys whose values differ


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    out = _DupDict(d)
    seen: dict[str, Any] = {}
    dups: dict[str, None] = {}  # insertion-ordered sets
    conflicting: dict[str, None] = {}
    for k, v in pairs:
        if k in seen:
            dups[k] = None
            if k not in conflicting and seen[k] != v:
                conflicting[k] = None
        else:
            seen[k] = v
    out.duplicates = list(dups)
    out.conflicting = list(conflicting)
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(object_pairs_hook=_pairs_hook, parse_constant=_reject_constant)


def _decode(s: str) -> tuple[Any, str | None]:
    """(value, None), or (None, why it does not decode)."""
    try:
        return _DECODER.decode(s), None
    except json.JSONDecodeError as e:
        return None, f"{e.msg}: line {e.lineno} column {e.colno}"
    except RecursionError:
        return None, "nested too deeply"
    except Exception as e:  # ValueError (NaN, huge integers), MemoryError, ...
        return None, _show_exc(e)


def _repair(s: str) -> tuple[Any, str | None]:
    """Lenient: json_repair on a candidate within the size limits."""
    if (
        len(s) > MAX_REPAIR_CHARS
        or s.count('"') + s.count("'") > MAX_REPAIR_QUOTES
        or s.count("{") + s.count("[") > MAX_REPAIR_BRACKETS
    ):
        return None, "too large or too nested to repair"
    try:
        # stream_stable: without it json_repair right-strips a string ending in a newline, so
        # "\n" (line_endings) would come back as ""
        value = json_repair.loads(s, skip_json_loads=True, stream_stable=True)
    except RecursionError:
        return None, "nested too deeply to repair"
    except Exception as e:
        return None, f"could not repair: {_show_exc(e)}"
    if isinstance(value, list) and s.lstrip().startswith("{"):
        # json_repair returns a list when text follows the object: the last object is the answer
        dicts = [v for v in value if isinstance(v, dict)]
        if dicts:
            value = dicts[-1]
    if not isinstance(value, dict):
        return None, "could not repair it into an object"
    return value, None


