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
import codecs
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
from typing import BinaryIO, Final, cast

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

READ_CAP: Final = 1024 * 1024
"""Decompressed bytes a probe's output is read up to (the small probe's five records: a few
hundred bytes; more is no table of them)."""
COUNT_CAP: Final = 16 * 1024 * 1024
"""Decompressed bytes of the row-limit probe's output counted, streamed (its largest correct
output, 100,001 ids as indented UTF-16 JSON with CRLF, is about 7 MB; more is no count)."""
CHUNK: Final = 1024 * 1024
"""Bytes read at a time when counting."""

Config = tuple[tuple[str, str], ...]
"""An input configuration as a hashable key (sorted items), for the cached inputs below."""

DATES: Final[Mapping[str, str]] = {
    "iso-8601": DAY.isoformat(), "us": DAY.strftime("%m/%d/%Y"),
    "eu": DAY.strftime("%d/%m/%Y"), "unix": str(calendar.timegm(DAY.timetuple())),
}
DELIMITERS: Final[Mapping[str, str]] = {"comma": ",", "tab": "\t", "semicolon": ";", "pipe": "|"}


def key(config: Mapping[str, str]) -> Config:
    """``config`` as a cache key."""
    return tuple(sorted(config.items()))


@functools.lru_cache(maxsize=128)
def small_input(config: Config, bad_at: int | None = None) -> bytes:
    """The small probe's input (``SMALL``) for ``config``, built once; with ``bad_at``, the
    error probe's (an unreadable record inserted there)."""
    return make_input(dict(config), [list(r) for r in SMALL], bad_at)


@functools.lru_cache(maxsize=64)
def limit_input(config: Config, count: int = BIG) -> bytes:
    """The row-limit probe's input: ``count`` distinct one-column records (short text ids),
    built once per configuration and size."""
    return make_input(dict(config), [[f"r{i}"] for i in range(count)], columns=LIMIT_COLUMNS)


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
    return out.getvalue().encode(config["encoding"])  # utf-8, latin-1 or utf-16: codec names


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


def _opened(f: BinaryIO) -> tuple[str, BinaryIO]:
    """(compression, a reader of the decompressed bytes) of a file read from its start."""
    magic = f.read(3)
    f.seek(0)
    if magic[:2] == b"\x1f\x8b":
        return "gzip", cast(BinaryIO, gzip.GzipFile(fileobj=f))
    if magic == b"BZh":
        return "bz2", cast(BinaryIO, bz2.BZ2File(f))
    return "none", f


def decompress(data: bytes, cap: int = READ_CAP) -> tuple[str, bytes]:
    """(compression, the decompressed bytes); ``ValueError`` past ``cap`` bytes (a small file
    can hold gigabytes: only what a probe reads is ever decompressed)."""
    compression, raw = _opened(io.BytesIO(data))
    out = raw.read(cap + 1)
    if len(out) > cap:
        raise ValueError(f"more than {cap} bytes decompressed")
    return compression, out


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


class _Counts:
    """What :func:`count_file` reads of an output's text, fed piece by piece: the figures
    each output format's count needs, whatever the format turns out to be."""

    def __init__(self) -> None:
        self.first = self.last = ""
        self.table = False
        self.rows = self.braces = self.lines = self.bars = self.rules = 0
        self._tail = self._line = ""

    def feed(self, text: str, final: bool = False) -> None:
        lower = text.lower()
        self.table = self.table or "<table" in self._tail + lower
        self.rows += (self._tail[-2:] + lower).count("<tr")
        self._tail = (self._tail + lower)[-5:]
        self.braces += text.count("{")
        stripped = text.strip()
        if stripped:
            self.first = self.first or stripped[0]
            self.last = stripped[-1]
        lines = (self._line + text).splitlines(keepends=True)
        self._line = ""
        if lines and not final and (lines[-1].endswith("\r") or lines[-1] == lines[-1].rstrip(
                "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029")):
            self._line = lines.pop()  # unfinished, or half of a CRLF: read with what follows
        self.lines += len(lines) - sum(map(str.isspace, lines))
        if self.first == "|":
            bars = [r for r in lines if r.lstrip().startswith("|")]
            self.bars += len(bars)
            self.rules += sum(1 for r in bars if "-" in r and not _markdown(r))

    def count(self) -> int | None:
        if self.table:
            return self.rows - 1
        if self.first == "[":
            return self.braces if self.last == "]" else None
        if self.first == "{":
            return self.lines
        if self.first == "|":
            return self.bars - self.rules - 1
        return self.lines - 1


def _counted(f: BinaryIO, encoding: str) -> int | None:
    """:class:`_Counts` of the file decoded as ``encoding``; None past ``COUNT_CAP``."""
    f.seek(0)
    decoder = codecs.getincrementaldecoder(encoding)()
    counts, total = _Counts(), 0
    raw = _opened(f)[1]  # not closed: a decompressor's close would close ``f``'s reader too
    while chunk := raw.read(CHUNK):
        total += len(chunk)
        if total > COUNT_CAP:
            return None
        counts.feed(decoder.decode(chunk))
    counts.feed(decoder.decode(b"", final=True), final=True)
    return counts.count()


def count_file(f: BinaryIO) -> int | None:
    """How many records an output file holds, streamed from disk (never held whole) and counted
    without parsing them (the row-limit probe's output is large, and its ids hold no newline,
    brace, bar or quote): table rows below the header, JSON objects, JSON lines (each holding
    more than white space), CSV lines below the header. The text is decoded as :func:`decode`
    would (a byte-order mark, little-endian UTF-16 without one, UTF-8, else Latin-1)."""
    try:
        head = _opened(f)[1].read(8192)
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            encodings = ["utf-16"]
        else:
            encodings = ["utf-16-le"] if _utf16le(head) else []
            encodings += ["utf-8", "latin-1"]
        for encoding in encodings:
            try:
                return _counted(f, encoding)
            except UnicodeDecodeError:
                if encoding == "utf-16":
                    return None
    except (OSError, EOFError, ValueError):
        pass
    return None
