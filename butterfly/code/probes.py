"""Probe inputs and readings of output bytes (pure: no program runs here).

A probe input is built for an input configuration (format, delimiter, header row, encoding),
once: ``small_input`` and ``limit_input`` are cached per configuration (pure functions).
A reading turns an output file's bytes into values: its compression from the magic bytes, its
encoding from a byte-order mark or the bytes of a non-ASCII name, its line endings, its format
by shape, and its records as rows of values, whatever the layout around them (an HTML table in a
full page, JSON with any indentation, CSV with any quoting).
"""

from __future__ import annotations

import bz2
import calendar
import csv
import datetime
import functools
import gzip
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Final

Row = list[str | None]

COLUMNS: Final = ("id", "name", "date", "note")
DAY: Final = datetime.date(2024, 3, 25)
SMALL: Final[tuple[tuple[str, str, str, str | None], ...]] = (
    ("c3", "Zoë", "2024-03-25", "plain"),
    ("a1", "Ann", "2024-03-25", None),
    ("d4", "Bo", "2024-03-25", "x,y"),
    ("a1", "Ann", "2024-03-25", None),
    ("b2", "Cy", "2024-03-25", "z"),
)
"""The small probe: unsorted ids, one exact duplicate, a missing value, a value holding a comma,
a non-ASCII name, and dates whose day exceeds 12 (so US and EU orders differ)."""

BIG: Final = 100_001
"""Records in the row-limit probe: one more than the largest limit."""

LIMIT_COLUMNS: Final = ("id",)
"""The row-limit probe's one column (the header's names are the columns, so a narrow record is
as readable as a wide one, and costs the program about half as much)."""

Config = tuple[tuple[str, str], ...]
"""An input configuration as a hashable key (sorted items), for the cached inputs below."""

DATES: Final[Mapping[str, str]] = {
    "iso-8601": DAY.isoformat(), "us": DAY.strftime("%m/%d/%Y"),
    "eu": DAY.strftime("%d/%m/%Y"), "unix": str(calendar.timegm(DAY.timetuple())),
}
DELIMITERS: Final[Mapping[str, str]] = {"comma": ",", "tab": "\t", "semicolon": ";", "pipe": "|"}
CODECS: Final[Mapping[str, str]] = {"utf-8": "utf-8", "latin-1": "latin-1", "utf-16": "utf-16"}


def key(config: Mapping[str, str]) -> Config:
    """``config`` as a cache key."""
    return tuple(sorted(config.items()))


def limit_rows(count: int) -> list[Row]:
    """``count`` distinct one-column records for the row-limit probe (short text ids)."""
    return [[f"r{i}"] for i in range(count)]


@functools.lru_cache(maxsize=128)
def small_input(config: Config, bad_at: int | None = None) -> bytes:
    """The small probe's input (``SMALL``) for ``config``, built once; with ``bad_at``, the
    error probe's (an unreadable record inserted there)."""
    return make_input(dict(config), [list(r) for r in SMALL], bad_at)


@functools.lru_cache(maxsize=64)
def limit_input(config: Config, count: int = BIG) -> bytes:
    """The row-limit probe's input: ``count`` one-column records, built once per configuration
    and size."""
    return make_input(dict(config), limit_rows(count), columns=LIMIT_COLUMNS)


def make_input(config: Mapping[str, str], rows: list[Row], bad_at: int | None = None,
               columns: tuple[str, ...] = COLUMNS) -> bytes:
    """``rows`` (of ``columns``) written as ``config`` says; with ``bad_at``, an unreadable
    record there."""
    fmt = config["input_format"]
    out = io.StringIO(newline="")
    if fmt in ("csv", "tsv"):
        delim = "\t" if fmt == "tsv" else DELIMITERS[config["delimiter"]]
        writer = csv.writer(out, delimiter=delim, lineterminator="\n")
        lines: list[Row] = [list(columns)] if config["header_row"] == "yes" else []
        lines += [["" if v is None else v for v in r] for r in rows]
        if bad_at is not None:
            lines.insert(bad_at + len(lines) - len(rows), ["only", "two"])
        writer.writerows(lines)
    else:
        items: list[object] = [dict(zip(columns, r, strict=True)) for r in rows]
        if bad_at is not None:
            items.insert(bad_at, 42)
        if fmt == "json":
            json.dump(items, out, ensure_ascii=False)
        else:
            texts = [json.dumps(i, ensure_ascii=False) for i in items]
            if bad_at is not None:
                texts[bad_at] = "{not json"
            out.write("\n".join(texts) + "\n")
    return out.getvalue().encode(CODECS[config["encoding"]])


@dataclass(frozen=True, slots=True)
class Reading:
    """An output file read as values."""

    compression: str
    encoding: str | None
    line_endings: str | None
    output_format: str
    text: str
    header: list[str]
    rows: list[Row]


def decompress(data: bytes) -> tuple[str, bytes]:
    if data[:2] == b"\x1f\x8b":
        return "gzip", gzip.decompress(data)
    if data[:3] == b"BZh":
        return "bz2", bz2.decompress(data)
    return "none", data


def _utf16le(data: bytes) -> bool:
    """UTF-16 without a byte-order mark (Python writes none through ``bz2.open``): little-endian
    text whose every second byte is zero, as the probes' mostly-ASCII records are."""
    return len(data) >= 4 and len(data) % 2 == 0 and not any(data[1::2][:4096])


def decode(data: bytes) -> tuple[str | None, str]:
    """(encoding, text); the encoding is None when the bytes cannot tell (ASCII only)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16", data.decode("utf-16")
    if _utf16le(data):
        try:
            return "utf-16", data.decode("utf-16-le")
        except UnicodeDecodeError:
            pass
    if data.isascii():
        return None, data.decode("ascii")
    try:
        return "utf-8", data.decode("utf-8")
    except UnicodeDecodeError:
        return "latin-1", data.decode("latin-1")


def line_endings(text: str) -> str | None:
    """lf or crlf when every line ends so; None (no value) for a mix or a stray CR (as
    ``\r\r\n``, from a CRLF line terminator inside a CRLF-translating file)."""
    crlf = text.count("\r\n")
    if text.count("\r") != crlf:
        return None
    lf = text.count("\n") - crlf
    if crlf and not lf:
        return "crlf"
    if lf and not crlf:
        return "lf"
    return None


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.rows:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _markdown(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = re.split(r"(?<!\\)\|", line.strip("|"))
        cells = [c.strip().replace("\\|", "|") for c in cells]
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        rows.append(cells)
    return rows


def _objects(items: list[object]) -> tuple[list[str], list[Row]]:
    dicts = [i for i in items if isinstance(i, dict)]
    if len(dicts) != len(items):
        raise ValueError("a JSON record is not an object")
    header = list(dict.fromkeys(k for d in dicts for k in d))
    return header, [[None if d.get(k) is None else str(d.get(k)) for k in header] for d in dicts]


def _table(text: str) -> tuple[str, list[str], list[Row]]:
    stripped = text.strip()
    if "<table" in stripped.lower():
        parser = _Cells()
        parser.feed(stripped)
        grid: list[list[str]] = [r for r in parser.rows if r]
        fmt = "html"
    elif stripped.startswith("["):
        return ("json", *_objects(json.loads(stripped)))
    elif stripped.startswith("{"):
        return ("jsonl", *_objects([json.loads(x) for x in stripped.splitlines() if x.strip()]))
    elif stripped.startswith("|"):
        grid, fmt = _markdown(stripped), "markdown"
    else:
        grid = [r for r in csv.reader(io.StringIO(stripped), escapechar="\\") if r]
        fmt = "csv"
    if not grid:
        raise ValueError("no header row")
    return fmt, grid[0], [list(r) for r in grid[1:]]


def read(data: bytes) -> Reading | None:
    """The values an output file shows, or None when it holds no readable table."""
    try:
        compression, raw = decompress(data)
        encoding, text = decode(raw)
        fmt, header, rows = _table(text)
    except (OSError, EOFError, ValueError, UnicodeDecodeError, csv.Error):
        return None
    return Reading(compression, encoding, line_endings(text), fmt, text, header, rows)


def by_column(reading: Reading, names: tuple[str, ...]) -> list[Row]:
    """Rows as values in ``names`` order when the header holds those names, else as printed."""
    if all(n in reading.header for n in names):
        index = [reading.header.index(n) for n in names]
        return [[r[i] if i < len(r) else None for i in index] for r in reading.rows]
    return reading.rows


def count_records(data: bytes) -> int | None:
    """How many records an output file holds, counted without parsing them (the row-limit
    probe's output is large, and its ids hold no newline, brace, bar or quote): table rows below
    the header, JSON objects, JSON lines or CSV lines."""
    try:
        text = decode(decompress(data)[1])[1].strip()
    except (OSError, EOFError, ValueError, UnicodeDecodeError):
        return None
    if "<table" in text.lower():
        return text.lower().count("<tr") - 1
    if text.startswith("["):
        return text.count("{") if text.endswith("]") else None
    lines = text.splitlines()
    blank = lines.count("")
    if text.startswith("{"):
        return len(lines) - blank
    if text.startswith("|"):
        rows = [r for r in lines if r.lstrip().startswith("|")]
        rules = sum(1 for r in rows if "-" in r and not _markdown(r))
        return len(rows) - rules - 1
    return len(lines) - blank - 1
