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
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

import json_repair

from oracle.catalogue import DOMAINS, KEYS, SPEC_VALUES, UNSPECIFIED

ParseMode = Literal["strict", "structured", "lenient"]
MODES: Final[tuple[ParseMode, ...]] = ("strict", "structured", "lenient")

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


def _abstain(reason: str, detail: str) -> Parsed:
    return Parsed(None, reason, detail)


# --------------------------------------------------------------------------------------------
# UNSURE

_WORDS: Final = re.compile(r"[a-z0-9]+")
_SPECIAL_TOKEN: Final = re.compile(r"<\|?/?[A-Za-z_][\w-]*\|?>")
_UNSURE_LABELS: Final = frozenset(
    {
        (),
        ("answer",),
        ("final", "answer"),
        ("my", "answer"),
        ("my", "answer", "is"),
        ("the", "answer", "is"),
        ("response",),
        ("json",),
        ("text",),
        ("plaintext",),
    }
)


def _is_unsure(s: str) -> bool:
    """``s`` says UNSURE and nothing else (punctuation, markdown, a fence, a label allowed)."""
    if len(s) > 200:
        return False
    low = s.lower()
    if "unsure" not in low:
        return False
    words = _WORDS.findall(_SPECIAL_TOKEN.sub(" ", low))
    return bool(words) and words[-1] == "unsure" and tuple(words[:-1]) in _UNSURE_LABELS


def _contentful_line(text: str, *, last: bool) -> str | None:
    lines = text.splitlines()
    for line in reversed(lines) if last else lines:
        if _WORDS.search(line.lower()):
            return line
    return None


def _ends_unsure(tail: str) -> bool:
    """The last line with any letter or digit in ``tail`` is UNSURE alone."""
    if "unsure" not in tail.lower():
        return False
    line = _contentful_line(tail, last=True)
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


class _BudgetExhausted(Exception):
    pass


def _scan(text: str) -> tuple[tuple[int, int] | None, int | None]:
    """The last complete top-level object-like span, and an object-like ``{`` after it that
    never closes (the answer was cut off), if any.

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
                open_start = None
            pos = end


@dataclass(frozen=True, slots=True)
class _Fence:
    content_start: int
    content_end: int
    end: int


def _fences(text: str) -> list[_Fence]:
    """Closed fenced blocks that hold JSON: info ``json``/``jsonc``/``json5``, or no info and
    content starting with ``{`` or ``[``. Fences are whole lines (CommonMark-like)."""
    if "```" not in text:
        return []
    out: list[_Fence] = []
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
                out.append(_Fence(opener.end(), m.start(), m.end()))
            opener = None
    return out


def _select(text: str) -> _Candidate | None:
    """The answer's candidate object: whichever comes last of the last object-like span, the last
    JSON fence, and an unterminated object after both."""
    last, open_start = _scan(text)
    fences = _fences(text)
    if open_start is not None and any(
        f.content_start <= open_start < f.content_end for f in fences
    ):
        open_start = None  # a broken object inside a fence: the fence is the candidate
    best: _Candidate | None = None
    rank = -1
    if last is not None:
        best, rank = _Candidate(text[last[0] : last[1]], last[0], last[1], "object"), last[1]
    if fences:
        f = fences[-1]
        if f.end > rank:
            best = _Candidate(
                text[f.content_start : f.content_end], f.content_start, f.end, "fence"
            )
            rank = f.end
    if open_start is not None and open_start > rank:
        best = _Candidate(text[open_start:], open_start, len(text), "unterminated")
    return best


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


def _type_name(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


def _names(keys: list[str], limit: int = 8) -> str:
    shown = ", ".join(k if k in SPEC_VALUES else _show(k) for k in keys[:limit])
    return shown + (f" (+{len(keys) - limit} more)" if len(keys) > limit else "")


# --------------------------------------------------------------------------------------------
# Checking keys and values


_ALLOWED: Final[tuple[tuple[str, frozenset[str]], ...]] = tuple((k, SPEC_VALUES[k]) for k in KEYS)


def _check_exact(obj: Any) -> Parsed:
    """strict / structured: exactly the 20 keys, string values from the catalogue."""
    if type(obj) is dict and len(obj) == len(_ALLOWED):  # the fast path of a good answer
        spec: dict[str, str] = {}
        for k, allowed in _ALLOWED:
            v = obj.get(k)
            if type(v) is not str or v not in allowed:
                break
            spec[k] = v
        else:
            return Parsed(spec, None)
    if not isinstance(obj, dict):
        return _abstain("not_object", f"the answer is a JSON {_type_name(obj)}, not an object")
    if isinstance(obj, _DupDict):
        return _abstain("duplicate_key", f"key(s) given more than once: {_names(obj.duplicates)}")
    unknown = [k for k in obj if k not in SPEC_VALUES]
    missing = [k for k in KEYS if k not in obj]
    if unknown:
        extra = f"; missing: {_names(missing)}" if missing else ""
        return _abstain("unknown_key", f"unknown key(s): {_names(unknown)}{extra}")
    if missing:
        return _abstain("missing_key", f"missing: {_names(missing, 20)}")
    bad_type: list[str] = []
    bad_value: list[str] = []
    for k in KEYS:
        v = obj[k]
        if not isinstance(v, str):
            bad_type.append(f"{k} is a {_type_name(v)} ({_show(v)})")
        elif v not in SPEC_VALUES[k]:
            bad_value.append(f"{k}={_show(v)}")
    if bad_type:
        return _abstain("bad_type", "non-string value(s): " + "; ".join(bad_type))
    if bad_value:
        return _abstain("out_of_domain", "value(s) outside the catalogue: " + ", ".join(bad_value))
    return Parsed({k: obj[k] for k in KEYS}, None)


_KEY_JUNK: Final = re.compile(r"[^0-9a-z]+")


def _key_norm(k: str) -> str:
    return _KEY_JUNK.sub("", k.lower())


_KEY_INDEX: Final[dict[str, str]] = {_key_norm(k): k for k in KEYS}
assert len(_KEY_INDEX) == len(KEYS)  # catalogue self-check: normalised keys stay distinct

# ---- lenient value synonyms (documented in docs/parser.md; keys are lower-case, whitespace
# ---- collapsed; every target is checked against the catalogue at import)

UNSPECIFIED_SYNONYMS: Final = ("unspecified", "not specified", "not-specified", "not_specified")
"""Spellings read as ``unspecified`` in lenient mode. ``none``, ``null`` (the string), ``n/a``,
the empty string, ``default`` and ``unset`` are NOT among them; JSON ``null`` is."""

_ON_OFF: Final = {
    "true": "on",
    "false": "off",
    "yes": "on",
    "no": "off",
    "enabled": "on",
    "disabled": "off",
    "enable": "on",
    "disable": "off",
}
_YES_NO: Final = {"true": "yes", "false": "no", "y": "yes", "n": "no", "on": "yes", "off": "no"}
_JSONL: Final = {
    "ndjson": "jsonl",
    "json lines": "jsonl",
    "jsonlines": "jsonl",
    "json-lines": "jsonl",
    "json_lines": "jsonl",
}

SYNONYMS: Final[dict[str, dict[str, str]]] = {
    "input_format": dict(_JSONL),
    "output_format": {**_JSONL, "md": "markdown"},
    "delimiter": {
        ",": "comma",
        "commas": "comma",
        "\\t": "tab",
        "tabs": "tab",
        ";": "semicolon",
        "semicolons": "semicolon",
        "|": "pipe",
        "pipes": "pipe",
    },
    "encoding": {
        "utf8": "utf-8",
        "utf_8": "utf-8",
        "utf 8": "utf-8",
        "latin1": "latin-1",
        "latin_1": "latin-1",
        "latin 1": "latin-1",
        "iso-8859-1": "latin-1",
        "iso8859-1": "latin-1",
        "iso_8859_1": "latin-1",
        "iso88591": "latin-1",
        "utf16": "utf-16",
        "utf_16": "utf-16",
        "utf 16": "utf-16",
    },
    "sort_order": {
        "asc": "ascending",
        "desc": "descending",
        "unsorted": "none",
        "no sorting": "none",
        "no sort": "none",
    },
    "timeout_seconds": {
        "no limit": "none",
        "unlimited": "none",
        "no timeout": "none",
        "no time limit": "none",
        "infinite": "none",
        "1 minute": "60",
        "1 min": "60",
        "2 minutes": "120",
        "2 min": "120",
    },
    "log_level": {"warn": "warning", "err": "error"},
    "date_format": {
        "iso": "iso-8601",
        "iso8601": "iso-8601",
        "iso 8601": "iso-8601",
        "iso_8601": "iso-8601",
        "mm/dd/yyyy": "us",
        "dd/mm/yyyy": "eu",
        "american": "us",
        "european": "eu",
        "epoch": "unix",
        "unix timestamp": "unix",
        "unix timestamps": "unix",
    },
    "compression": {
        "gz": "gzip",
        "zst": "zstd",
        "zstandard": "zstd",
        "bzip2": "bz2",
        "uncompressed": "none",
        "no compression": "none",
    },
    "null_marker": {"n/a": "NA", "empty string": "empty", "blank": "empty"},
    "max_rows": {"no limit": "none", "unlimited": "none", "no row limit": "none"},
    "on_error": {
        "warning": "warn",
        "ignore": "skip",
        "stop": "fail",
        "abort": "fail",
        "raise": "fail",
    },
    "line_endings": {
        "\\n": "lf",
        "\\r\\n": "crlf",
        "unix": "lf",
        "linux": "lf",
        "windows": "crlf",
        "dos": "crlf",
    },
    "quote_style": {"quote_minimal": "minimal", "quote_all": "all", "quote_none": "none"},
    "retries": {
        "zero": "0",
        "one": "1",
        "three": "3",
        "five": "5",
        "none": "0",
        "no retries": "0",
    },
}
"""Per-setting value synonyms of lenient mode (besides case-insensitive matching, the on/off and
yes/no words below, the numeric forms and :data:`UNSPECIFIED_SYNONYMS`)."""

RAW_SYNONYMS: Final[dict[str, dict[str, str]]] = {
    "delimiter": {"\t": "tab"},
    "line_endings": {"\n": "lf", "\r\n": "crlf"},
}
"""Whitespace values, matched before trimming (a real tab or newline character)."""


def _build_lookup() -> dict[str, dict[str, str]]:
    table: dict[str, dict[str, str]] = {}
    for k in KEYS:
        domain = DOMAINS[k]
        t: dict[str, str] = {}
        if domain == {"on", "off"}:
            t.update(_ON_OFF)
        elif domain == {"yes", "no"}:
            t.update(_YES_NO)
        t.update(SYNONYMS.get(k, {}))
        t.update({w: UNSPECIFIED for w in UNSPECIFIED_SYNONYMS})
        t.update({v.lower(): v for v in SPEC_VALUES[k]})  # canonical values always win
        for src, dst in (*t.items(), *RAW_SYNONYMS.get(k, {}).items()):
            assert dst in SPEC_VALUES[k], (k, src, dst)  # table self-check (data, not input)
        table[k] = t
    return table


_LOOKUP: Final = _build_lookup()
_BOOL: Final[dict[str, dict[bool, str]]] = {
    k: ({True: "on", False: "off"} if DOMAINS[k] == {"on", "off"} else {True: "yes", False: "no"})
    for k in KEYS
    if DOMAINS[k] in ({"on", "off"}, {"yes", "no"})
}
_NUMERIC: Final[dict[str, dict[float, str]]] = {
    k: {float(v): v for v in DOMAINS[k] if re.fullmatch(r"\d+(?:\.\d+)?", v)} for k in KEYS
}
"""Numbers of each domain: 60 -> "60", and 3.1 (how JSON reads 3.10) -> "3.10"."""

_PY_VERSION: Final = re.compile(r"(?:c?python|py)?\s*v?(3\.\d{1,2})(?:\.\d+)?")
_SECONDS: Final = re.compile(r"(\d{1,6})\s*(?:s|sec|secs|second|seconds)")
_ROWS: Final = re.compile(r"(\d{1,3}(?:[,_ ]\d{3})+|\d{1,7})\s*(k)?(?:\s*rows)?")
_RETRIES: Final = re.compile(r"(\d{1,3})\s*(?:x|times?|retry|retries)")


def _string_value(k: str, v: str) -> str | None:
    raw = RAW_SYNONYMS.get(k)
    if raw is not None and v in raw:
        return raw[v]
    s = " ".join(v.lower().split())
    hit = _LOOKUP[k].get(s)
    if hit is not None:
        return hit
    m: re.Match[str] | None
    if k == "python_version":
        m = _PY_VERSION.fullmatch(s)
        cand = m.group(1) if m else None
    elif k == "timeout_seconds":
        m = _SECONDS.fullmatch(s)
        cand = m.group(1) if m else None
    elif k == "max_rows":
        m = _ROWS.fullmatch(s)
        cand = None
        if m:
            digits = re.sub(r"[,_ ]", "", m.group(1))
            cand = digits + "000" if m.group(2) else digits
    elif k == "retries":
        m = _RETRIES.fullmatch(s)
        cand = m.group(1) if m else None
    else:
        cand = None
    return cand if cand is not None and cand in DOMAINS[k] else None


def _lenient_value(k: str, v: Any) -> tuple[str | None, str]:
    """(normalised value, "") or (None, "bad_type" | "out_of_domain")."""
    if isinstance(v, str):
        if v in SPEC_VALUES[k]:
            return v, ""
        out = _string_value(k, v)
        return (out, "") if out is not None else (None, "out_of_domain")
    if v is None:
        return UNSPECIFIED, ""
    if isinstance(v, bool):
        b = _BOOL.get(k)
        return (b[v], "") if b is not None else (None, "out_of_domain")
    if isinstance(v, int | float):
        num = _NUMERIC[k].get(v)
        return (num, "") if num is not None else (None, "out_of_domain")
    return None, "bad_type"


def _check_lenient(obj: Any, *, unwrap: bool = True) -> Parsed:
    exact = _check_exact(obj)
    if exact.spec is not None:
        return exact  # the fast path, and lenient is a superset of structured by construction
    if not isinstance(obj, dict):
        return _abstain("not_object", f"the answer is a JSON {_type_name(obj)}, not an object")
    groups: dict[str, list[Any]] = {}
    for raw_key, v in obj.items():
        k = _KEY_INDEX.get(_key_norm(str(raw_key)))
        if k is not None:
            groups.setdefault(k, []).append(v)
    if not groups and unwrap:
        # {"spec": {...}}: one object-valued entry that holds catalogue keys is the spec
        inner = [
            v
            for v in obj.values()
            if isinstance(v, dict) and any(_key_norm(str(x)) in _KEY_INDEX for x in v)
        ]
        if len(inner) == 1:
            return _check_lenient(inner[0], unwrap=False)
    if isinstance(obj, _DupDict):
        conflicting = [k for k in obj.conflicting if _key_norm(k) in _KEY_INDEX]
        if conflicting:
            return _abstain(
                "duplicate_key", f"key(s) given twice with different values: {_names(conflicting)}"
            )
    missing = [k for k in KEYS if k not in groups]
    if missing:
        return _abstain("missing_key", f"missing: {_names(missing, 20)}")
    spec: dict[str, str] = {}
    bad_type: list[str] = []
    bad_value: list[str] = []
    conflicts: list[str] = []
    for k in KEYS:
        results = {_lenient_value(k, v) for v in groups[k]}
        if len(results) > 1:
            conflicts.append(k)
            continue
        ((value, problem),) = results
        if value is not None:
            spec[k] = value
        elif problem == "bad_type":
            bad_type.append(f"{k} is a {_type_name(groups[k][0])}")
        else:
            bad_value.append(f"{k}={_show(groups[k][0])}")
    if conflicts:
        return _abstain(
            "duplicate_key", f"setting(s) given twice with different values: {_names(conflicts)}"
        )
    if bad_type:
        return _abstain("bad_type", "unusable value(s): " + "; ".join(bad_type))
    if bad_value:
        return _abstain("out_of_domain", "value(s) outside the catalogue: " + ", ".join(bad_value))
    return Parsed(spec, None)


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
    if mode not in MODES:
        raise ValueError(f"unknown parse mode {mode!r}; expected one of {', '.join(MODES)}")
    try:
        return _parse(text, mode, truncated)
    except Exception as e:  # the last guard: an abstention, never a crash of the run
        return _abstain("parser_error", _show_exc(e))


_MODE_BY_NAME: Final[dict[str, ParseMode]] = {m: m for m in MODES}


def main_parse(mode: str, stdin_text: str) -> tuple[int, str]:
    """``butterfly parse --mode M``: (0, the spec as one JSON line) or (3, "abstention: ...").
    An unknown mode gives (2, an error message)."""
    m = _MODE_BY_NAME.get(mode)
    if m is None:
        return 2, f"error: unknown parse mode {mode!r}; expected one of {', '.join(MODES)}"
    p = parse_answer(stdin_text, m)
    if p.spec is not None:
        return 0, json.dumps(p.spec)
    return 3, f"abstention: {p.reason}: {p.detail}"
