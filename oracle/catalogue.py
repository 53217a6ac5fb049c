"""The catalogue: 20 settings of a command-line data tool, their domains and their wording.

Everything here is data. The order of ``SETTINGS`` is the canonical order of a spec (the order
in which prompts list settings and records serialise them); nothing depends on set or dict
iteration order of anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

UNSPECIFIED: Final = "unspecified"
"""The value of a setting whose requirement the user dropped. Never a synonym of ``none``."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting of the spec, with the plain-English wording used in prompts.

    ``name`` is how a user names it ("the timeout per file"); ``description`` is the indirect
    wording used by undo-by-description turns ("how long each file may take"); ``phrases`` maps
    every value of the domain to a noun phrase ("a 60-second timeout per file").
    """

    key: str
    domain: tuple[str, ...]
    initial: str
    name: str
    description: str
    phrases: tuple[tuple[str, str], ...]

    def phrase(self, value: str) -> str:
        for v, p in self.phrases:
            if v == value:
                return p
        raise KeyError(f"{self.key} has no value {value!r}")


_TABLE: Final[dict[tuple[str, str, str, str], dict[str, str]]] = {
    ("python_version", "3.11", "the Python version", "which Python release the tool targets"): {
        "3.9": "Python 3.9",
        "3.10": "Python 3.10",
        "3.11": "Python 3.11",
        "3.12": "Python 3.12",
        "3.13": "Python 3.13",
    },
    ("input_format", "csv", "the input format", "what kind of files the tool reads"): {
        "csv": "CSV input files",
        "tsv": "TSV input files",
        "json": "JSON input files",
        "jsonl": "JSON Lines input files",
        "parquet": "Parquet input files",
    },
    ("output_format", "json", "the output format", "what kind of files the tool writes"): {
        "csv": "CSV output",
        "json": "JSON output",
        "jsonl": "JSON Lines output",
        "parquet": "Parquet output",
        "html": "an HTML report as output",
        "markdown": "Markdown tables as output",
    },
    ("delimiter", "comma", "the field delimiter", "the character that separates fields"): {
        "comma": "commas between fields",
        "tab": "tabs between fields",
        "semicolon": "semicolons between fields",
        "pipe": "pipe characters between fields",
    },
    ("header_row", "yes", "the header row", "whether the first row holds column names"): {
        "yes": "a header row of column names",
        "no": "no header row (data starts on the first line)",
    },
    ("encoding", "utf-8", "the text encoding", "how characters are encoded in the files"): {
        "utf-8": "UTF-8 encoding",
        "latin-1": "Latin-1 encoding",
        "utf-16": "UTF-16 encoding",
    },
    ("sort_order", "none", "the sort order", "the order in which rows come out"): {
        "none": "no sorting (rows stay in their original order)",
        "ascending": "rows sorted in ascending order",
        "descending": "rows sorted in descending order",
    },
    ("timeout_seconds", "30", "the timeout per file", "how long each file may take"): {
        "none": "no time limit per file",
        "10": "a 10-second timeout per file",
        "30": "a 30-second timeout per file",
        "60": "a 60-second timeout per file",
        "120": "a 120-second timeout per file",
    },
    ("log_level", "info", "the log level", "how much the tool writes to its log"): {
        "debug": "debug-level logging",
        "info": "info-level logging",
        "warning": "logging of warnings and errors only",
        "error": "logging of errors only",
    },
    ("date_format", "iso-8601", "the date format", "how dates are printed"): {
        "iso-8601": "ISO 8601 dates",
        "us": "US-style dates (month first)",
        "eu": "European-style dates (day first)",
        "unix": "Unix timestamps for dates",
    },
    ("parallel", "off", "parallel processing", "whether files are processed several at a time"): {
        "on": "parallel processing of files",
        "off": "processing one file at a time",
    },
    ("progress_bar", "on", "the progress bar", "whether progress is shown while it runs"): {
        "on": "a progress bar while it runs",
        "off": "no progress bar",
    },
    ("compression", "none", "the output compression", "how the output files are packed"): {
        "none": "uncompressed output files",
        "gzip": "gzip-compressed output",
        "zstd": "zstd-compressed output",
        "bz2": "bz2-compressed output",
    },
    ("null_marker", "empty", "the null marker", "how missing values are written"): {
        "empty": "empty fields for missing values",
        "NA": "NA for missing values",
        "null": "the word null for missing values",
    },
    ("max_rows", "none", "the row limit", "how many rows the tool reads at most"): {
        "none": "no limit on the number of rows",
        "1000": "a limit of 1,000 rows",
        "10000": "a limit of 10,000 rows",
        "100000": "a limit of 100,000 rows",
    },
    ("deduplicate", "off", "deduplication", "whether repeated rows are removed"): {
        "on": "removal of duplicate rows",
        "off": "duplicate rows kept as they are",
    },
    ("on_error", "fail", "the error policy", "what happens when a row cannot be parsed"): {
        "fail": "a policy of stopping at the first bad row",
        "skip": "a policy of skipping bad rows silently",
        "warn": "a policy of warning about each bad row and carrying on",
    },
    ("line_endings", "lf", "the line endings", "how lines end in the output"): {
        "lf": "Unix line endings (LF)",
        "crlf": "Windows line endings (CRLF)",
    },
    ("quote_style", "minimal", "the quoting style", "when fields are wrapped in quotes"): {
        "minimal": "quotes only where a field needs them",
        "all": "quotes around every field",
        "none": "no quotes around fields at all",
    },
    ("retries", "0", "the retry count", "how often a failed file is tried again"): {
        "0": "no retries for a failed file",
        "1": "one retry for a failed file",
        "3": "three retries for a failed file",
        "5": "five retries for a failed file",
    },
}
"""The settings in canonical order, one row each: (key, initial value, name, description) ->
every value of its domain, in order, with its noun phrase."""

SETTINGS: Final[tuple[Setting, ...]] = tuple(
    Setting(key, tuple(phrases), initial, name, description, tuple(phrases.items()))
    for (key, initial, name, description), phrases in _TABLE.items()
)

KEYS: Final[tuple[str, ...]] = tuple(s.key for s in SETTINGS)
BY_KEY: Final = MappingProxyType({s.key: s for s in SETTINGS})
DOMAINS: Final = MappingProxyType({s.key: frozenset(s.domain) for s in SETTINGS})
"""Explicit values of each setting (``unspecified`` excluded)."""
SPEC_VALUES: Final = MappingProxyType(
    {s.key: frozenset((*s.domain, UNSPECIFIED)) for s in SETTINGS}
)
"""Values a setting may hold in a spec: its domain plus ``unspecified``."""


@dataclass(frozen=True, slots=True)
class Coupling:
    """A declared rule: when ``trigger`` holds ``when``, ``forced`` must hold ``then``."""

    trigger: str
    when: str
    forced: str
    then: str

    @property
    def text(self) -> str:
        return f"{self.trigger} = {self.when} forces {self.forced} = {self.then}"


COUPLINGS: Final[tuple[Coupling, ...]] = (
    Coupling("input_format", "tsv", "delimiter", "tab"),
    Coupling("parallel", "on", "progress_bar", "off"),
    Coupling("output_format", "html", "encoding", "utf-8"),
)

TRIGGERS: Final = frozenset(c.trigger for c in COUPLINGS)
FORCED: Final = frozenset(c.forced for c in COUPLINGS)


def canonical_initial() -> dict[str, str]:
    """The canonical initial spec (a fresh dict, in catalogue order)."""
    return {s.key: s.initial for s in SETTINGS}


def apply_couplings(spec: dict[str, str]) -> dict[str, str]:
    """Apply the coupling rules to ``spec`` in place and return it."""
    for c in COUPLINGS:
        if spec[c.trigger] == c.when:
            spec[c.forced] = c.then
    return spec


@dataclass(frozen=True, slots=True)
class Applicability:
    """An undeclared dependency (contract v2): ``settings`` apply only while ``on`` holds one of
    ``values`` (``applies_in``) or none of them (``not_in``)."""

    settings: tuple[str, ...]
    on: str
    values: tuple[str, ...]
    applies_in: bool

    def applies(self, spec: dict[str, str]) -> bool:
        return (spec[self.on] in self.values) == self.applies_in

    @property
    def text(self) -> str:
        which = " or ".join(self.values)
        verb = "apply only while" if self.applies_in else "do not apply while"
        return f"{' and '.join(self.settings)} {verb} {self.on} is {which}"


APPLICABILITY: Final[tuple[Applicability, ...]] = (
    Applicability(("delimiter", "header_row"), "input_format", ("csv", "tsv"), True),
    Applicability(("encoding", "line_endings", "quote_style"), "output_format", ("parquet",),
                  False),
)
"""The declared list of settings that stop applying with a format (contract section 2, v2).

Not coupling rules: the oracle never changes a value because of them. They are a guard: no turn
may make one of these settings inapplicable that was applicable before it."""


def inapplicable(spec: dict[str, str]) -> dict[str, Applicability]:
    """Setting -> the declaration that makes it inapplicable in ``spec``."""
    return {k: a for a in APPLICABILITY if not a.applies(spec) for k in a.settings}


def forcing(spec: dict[str, str]) -> dict[str, Coupling]:
    """Forced setting -> the coupling that forces it, for every rule whose trigger holds."""
    return {c.forced: c for c in COUPLINGS if spec[c.trigger] == c.when}
