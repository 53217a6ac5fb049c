"""The code catalogue: the settings whose value running ``tool.py`` can show (contract section 7).

Pure data and small functions. Domains are the spec track's (``oracle.catalogue``) minus what the
standard library cannot produce (parquet, zstd); the couplings are those among these settings.
It lives in ``core`` so that the suite generator (``butterfly.suite.code``) may draw from it;
``butterfly.core.code_catalogue`` re-exports every public name.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from oracle.catalogue import BY_KEY

BROKEN: Final = "broken"
"""An observed value: the program crashed, hung, or showed a behaviour that is no value."""

UNOBSERVED: Final = "unobserved"
"""An observed value: the spec's other settings hide this one on this turn (not judged)."""

_DROPPED: Final = frozenset({"parquet", "zstd"})

KEYS: Final[tuple[str, ...]] = (
    "input_format", "output_format", "delimiter", "header_row", "encoding", "sort_order",
    "date_format", "compression", "null_marker", "max_rows", "deduplicate", "on_error",
    "line_endings", "quote_style",
)
"""The code catalogue's settings, in the spec track's catalogue order."""

DOMAINS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {k: tuple(v for v in BY_KEY[k].domain if v not in _DROPPED) for k in KEYS})

COUPLINGS: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("input_format", "tsv", "delimiter", "tab"),
    ("output_format", "html", "encoding", "utf-8"),
)
"""(trigger, when, forced, then): section 1's couplings that concern only catalogue settings."""

INPUT_SIDE: Final[tuple[str, ...]] = ("input_format", "delimiter", "header_row", "encoding")
"""The settings a probe input must match for the program to read it."""


def canonical() -> dict[str, str]:
    """The canonical initial spec restricted to the code catalogue (a fresh dict)."""
    return {k: BY_KEY[k].initial for k in KEYS}


def apply_couplings(spec: dict[str, str]) -> dict[str, str]:
    """Apply the catalogue's couplings to ``spec`` in place and return it."""
    for trigger, when, forced, then in COUPLINGS:
        if spec[trigger] == when:
            spec[forced] = then
    return spec


def is_valid(spec: Mapping[str, str]) -> bool:
    """Every key present with a value of its domain, and the couplings hold."""
    if set(spec) != set(KEYS) or any(spec[k] not in DOMAINS[k] for k in KEYS):
        return False
    return all(spec[t] != w or spec[f] == v for t, w, f, v in COUPLINGS)


def observable(spec: Mapping[str, str]) -> frozenset[str]:
    """The settings ``spec`` lets a run show: the delimiter and header row only for CSV or TSV
    input, the quoting only for CSV output, the null marker only for table outputs."""
    hidden = set()
    if spec["input_format"] not in ("csv", "tsv"):
        hidden |= {"delimiter", "header_row"}
    if spec["output_format"] != "csv":
        hidden.add("quote_style")
    if spec["output_format"] in ("json", "jsonl"):
        hidden.add("null_marker")
    return frozenset(k for k in KEYS if k not in hidden)


def one_away() -> list[dict[str, str]]:
    """Every spec one edit away from the canonical one: one setting changed (and what the
    couplings then force: TSV input brings the tab delimiter)."""
    base = canonical()
    out = []
    for key in KEYS:
        for value in DOMAINS[key]:
            spec = apply_couplings({**base, key: value})
            if value != base[key] and spec[key] == value and is_valid(spec):
                out.append(spec)
    return out


def visible(spec: Mapping[str, str]) -> dict[str, str]:
    """``spec`` as a run can show it: hidden settings read ``unobserved`` (the extraction law:
    ``extract(render(spec), spec) == visible(spec)``)."""
    seen = observable(spec)
    return {k: spec[k] if k in seen else UNOBSERVED for k in KEYS}
