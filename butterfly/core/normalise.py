"""Checking a decoded answer against the catalogue: exactly (strict, structured) or
loosely, with key matching and the synonym table (lenient; docs/parser.md)."""

from __future__ import annotations

import re
from typing import Any, Final

from butterfly.core.find_json import Parsed, _abstain, _DupDict, _show, _type_name
from oracle.catalogue import DOMAINS, KEYS, SPEC_VALUES, UNSPECIFIED


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

Written = dict[str, tuple[str, ...]]
"""Written forms by the value they are read as."""

_ON_OFF: Final[Written] = {"on": ("true", "yes", "enabled", "enable"),
                  "off": ("false", "no", "disabled", "disable")}
_YES_NO: Final[Written] = {"yes": ("true", "y", "on"), "no": ("false", "n", "off")}
_JSONL: Final[Written] = {
    "jsonl": ("ndjson", "json lines", "jsonlines", "json-lines", "json_lines")}
_NO_LIMIT: Final = ("no limit", "unlimited")

WRITTEN_AS: Final[dict[str, Written]] = {
    "input_format": _JSONL,
    "output_format": {**_JSONL, "markdown": ("md",)},
    "delimiter": {"comma": (",", "commas"), "tab": ("\\t", "tabs"),
                  "semicolon": (";", "semicolons"), "pipe": ("|", "pipes")},
    "encoding": {"utf-8": ("utf8", "utf_8", "utf 8"),
                 "latin-1": ("latin1", "latin_1", "latin 1", "iso-8859-1", "iso8859-1",
                             "iso_8859_1", "iso88591"),
                 "utf-16": ("utf16", "utf_16", "utf 16")},
    "sort_order": {"ascending": ("asc",), "descending": ("desc",),
                   "none": ("unsorted", "no sorting", "no sort")},
    "timeout_seconds": {"none": (*_NO_LIMIT, "no timeout", "no time limit", "infinite"),
                        "60": ("1 minute", "1 min"), "120": ("2 minutes", "2 min")},
    "log_level": {"warning": ("warn",), "error": ("err",)},
    "date_format": {"iso-8601": ("iso", "iso8601", "iso 8601", "iso_8601"),
                    "us": ("mm/dd/yyyy", "american"), "eu": ("dd/mm/yyyy", "european"),
                    "unix": ("epoch", "unix timestamp", "unix timestamps")},
    "compression": {"gzip": ("gz",), "zstd": ("zst", "zstandard"), "bz2": ("bzip2",),
                    "none": ("uncompressed", "no compression")},
    "null_marker": {"NA": ("n/a",), "empty": ("empty string", "blank")},
    "max_rows": {"none": (*_NO_LIMIT, "no row limit")},
    "on_error": {"warn": ("warning",), "skip": ("ignore",), "fail": ("stop", "abort", "raise")},
    "line_endings": {"lf": ("\\n", "unix", "linux"), "crlf": ("\\r\\n", "windows", "dos")},
    "quote_style": {"minimal": ("quote_minimal",), "all": ("quote_all",),
                    "none": ("quote_none",)},
    "retries": {"0": ("zero", "none", "no retries"), "1": ("one",), "3": ("three",),
                "5": ("five",)},
}
"""Per-setting value synonyms of lenient mode, by the value they are read as (the table of
docs/parser.md); besides case-insensitive matching, the on/off and yes/no words above, the
numeric forms and :data:`UNSPECIFIED_SYNONYMS`."""


def _read_as(written: Written) -> dict[str, str]:
    """Each written form of ``written`` mapped to the value it is read as."""
    return {src: dst for dst, sources in written.items() for src in sources}


SYNONYMS: Final[dict[str, dict[str, str]]] = {k: _read_as(t) for k, t in WRITTEN_AS.items()}
""":data:`WRITTEN_AS` by written form: what each is read as."""

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
            t.update(_read_as(_ON_OFF))
        elif domain == {"yes", "no"}:
            t.update(_read_as(_YES_NO))
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

_FORMS: Final[dict[str, re.Pattern[str]]] = {
    "python_version": re.compile(r"(?:c?python|py)?\s*v?(3\.\d{1,2})(?:\.\d+)?"),
    "timeout_seconds": re.compile(r"(\d{1,6})\s*(?:s|sec|secs|second|seconds)"),
    "max_rows": re.compile(r"(\d{1,3}(?:[,_ ]\d{3})+|\d{1,7})\s*(k)?(?:\s*rows)?"),
    "retries": re.compile(r"(\d{1,3})\s*(?:x|times?|retry|retries)"),
}
"""The numeric and version forms of lenient mode (docs/parser.md): group 1 is the value (for
``max_rows``, its digits with separators, and group 2 ``k`` for thousands)."""


def _string_value(k: str, v: str) -> str | None:
    raw = RAW_SYNONYMS.get(k)
    if raw is not None and v in raw:
        return raw[v]
    s = " ".join(v.lower().split())
    hit = _LOOKUP[k].get(s)
    if hit is not None:
        return hit
    m = _FORMS[k].fullmatch(s) if k in _FORMS else None
    if m is None:
        return None
    cand = m.group(1)
    if k == "max_rows":
        cand = re.sub(r"[,_ ]", "", cand) + ("000" if m.group(2) else "")
    return cand if cand in DOMAINS[k] else None


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


