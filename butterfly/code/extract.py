"""The extractor: any program -> the spec its behaviour shows (contract section 7).

Four kinds of run, each observing several settings at once: the small probe (the input side,
the output's format, encoding, compression, line endings, dates, missing values, quoting, and the
records' order and duplicates), the encoding probe (Latin-1 input, when the configuration read
is UTF-8), the error probe (one unreadable record: the error policy) and the row-limit probe
(more records than the largest limit, or one more than the expected limit). The expected spec
chooses the probe inputs to try first and says which settings are observable; values come from
behaviour only: the source is never read and no output is compared with the reference
program's bytes. Probe inputs are built once per configuration (``probes.small_input``,
``probes.limit_input``); the runs after the small probe are independent and run side by side
(``PARALLEL``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

from butterfly.code import probes
from butterfly.code.catalogue import BROKEN, DOMAINS, INPUT_SIDE, KEYS, UNOBSERVED, observable
from butterfly.code.runner import Outcome, run_program

EXTRACTOR_VERSION: Final = 2
"""Bumped whenever a change can observe a program differently: cached observations of another
version are observed again (``runs/observe.py``). 2: every input configuration tried, nearest
first; a stray CR is no line ending; UTF-16 without a byte-order mark read as UTF-16."""

ARGS = ["input.dat", "output.dat"]
NAMES = {r[0]: r[1] for r in probes.SMALL}
NOTES = {r[0]: r[3] for r in probes.SMALL if r[3] is not None}
NULLS = {"": "empty", "NA": "NA", "null": "null"}
LIMITS = {1000: "1000", 10000: "10000", 100000: "100000"}
PARALLEL: Final = 2
"""Runs of one program at a time after the small probe (the development machine's 2 cores)."""


def _run(source: str, data: bytes, timeout: float) -> Outcome:
    return run_program(source, ARGS, b"", timeout, {ARGS[0]: data})


def _small(source: str, config: Mapping[str, str], timeout: float,
           bad_at: int | None = None) -> Outcome:
    """A run on the small probe in ``config`` (with ``bad_at``: the error probe)."""
    return _run(source, probes.small_input(probes.key(config), bad_at), timeout)


def _reading(outcome: Outcome) -> probes.Reading | None:
    if not outcome.ok or ARGS[1] not in outcome.files:
        return None
    return probes.read(outcome.files[ARGS[1]])


def _rows(reading: probes.Reading) -> list[probes.Row]:
    rows = probes.by_column(reading, probes.COLUMNS)
    if rows is reading.rows:
        rows = probes.by_column(reading, ("col1", "col2", "col3", "col4"))
    return rows


def _records_match(reading: probes.Reading) -> bool:
    """The small probe's records came through: every name and every note in its place."""
    rows = _rows(reading)
    if any(len(r) != len(probes.COLUMNS) for r in rows):
        return False
    if {(r[0], r[1]) for r in rows} != set(NAMES.items()):
        return False
    return all(r[3] == NOTES[str(r[0])] for r in rows if r[0] in NOTES)


def _input_side(expect: Mapping[str, str]) -> dict[str, str]:
    config = {k: expect[k] for k in INPUT_SIDE}
    if config["input_format"] == "tsv":
        config["delimiter"] = "tab"
    return config


def candidates(expect: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """Input configurations to try: the expected one, then every other, nearest first (by how
    many input-side settings differ). A program that reads another configuration than the
    expected one is wrong on those settings only, never ``broken`` on its output's: a no-op
    program two input edits behind is still read."""
    first = _input_side(expect)
    configs: list[dict[str, str]] = []
    for values in itertools.product(*(DOMAINS[k] for k in INPUT_SIDE)):
        config = _input_side(dict(zip(INPUT_SIDE, values, strict=True)))
        if config["input_format"] not in ("csv", "tsv"):  # no delimiter, no header to read
            config.update(delimiter=first["delimiter"], header_row=first["header_row"])
        if config not in configs:
            configs.append(config)
    yield from sorted(configs, key=lambda c: sum(c[k] != first[k] for k in INPUT_SIDE))


def find_input(source: str, expect: Mapping[str, str], timeout: float
               ) -> tuple[dict[str, str], Outcome, probes.Reading] | None:
    """The first input configuration the program reads correctly, with its small-probe run."""
    for config in candidates(expect):
        outcome = _small(source, config, timeout)
        reading = _reading(outcome)
        if reading is not None and _records_match(reading):
            return config, outcome, reading
    return None


def _order(ids: list[str]) -> tuple[str, str]:
    """(deduplicate, sort_order) from the ids as printed."""
    dedupe = {1: "on", 2: "off"}.get(ids.count("a1"), BROKEN)
    unique = list(dict.fromkeys(ids))
    first = list(dict.fromkeys(r[0] for r in probes.SMALL))
    orders = {"none": first, "ascending": sorted(first), "descending": sorted(first)[::-1]}
    sort = next((k for k, v in orders.items() if v == unique), BROKEN)
    return dedupe, sort


def _quoting(text: str) -> str:
    if '"c3"' in text:
        return "all"
    if '"x,y"' in text:
        return "minimal"
    return "none" if "x\\,y" in text else BROKEN


def read_small(config: Mapping[str, str], reading: probes.Reading) -> dict[str, str]:
    """Every setting the small probe shows."""
    rows = _rows(reading)
    dates = {str(r[2]) for r in rows}
    known = {v: k for k, v in probes.DATES.items()}
    dedupe, sort = _order([str(r[0]) for r in rows])
    nulls = {r[3] for r in rows if r[0] == "a1"}
    found = {
        **config,
        "output_format": reading.output_format, "compression": reading.compression,
        "line_endings": reading.line_endings or BROKEN,
        "date_format": known.get(dates.pop(), BROKEN) if len(dates) == 1 else BROKEN,
        "deduplicate": dedupe, "sort_order": sort,
        "null_marker": UNOBSERVED if nulls == {None} else
        (NULLS.get(str(nulls.pop()), BROKEN) if len(nulls) == 1 else BROKEN),
        "quote_style": _quoting(reading.text) if reading.output_format == "csv" else UNOBSERVED,
    }
    if config["input_format"] not in ("csv", "tsv"):
        found["delimiter"] = found["header_row"] = UNOBSERVED
    return found


def read_encoding(config: Mapping[str, str], reading: probes.Reading,
                  latin: probes.Reading | None) -> str:
    """Input and output encoding. Latin-1 decodes any bytes, so a Latin-1 program passes UTF-8
    through unchanged: ``latin``, a run with Latin-1 input, tells the two apart (a UTF-8 program
    cannot read it). When the configuration read is Latin-1, the small probe was that run."""
    if config["encoding"] == "utf-16":
        return "utf-16" if reading.encoding == "utf-16" else BROKEN
    if config["encoding"] == "latin-1":
        latin = reading
    if latin is not None and _records_match(latin):
        return "latin-1" if latin.encoding in ("latin-1", None) else BROKEN
    return "utf-8" if reading.encoding in ("utf-8", None) else BROKEN


def latin_probe(source: str, config: Mapping[str, str], timeout: float) -> probes.Reading | None:
    """The encoding probe: the small probe in Latin-1."""
    return _reading(_small(source, {**config, "encoding": "latin-1"}, timeout))


def read_errors(outcome: Outcome, quiet: bytes) -> str:
    """The error policy from a run whose input holds one unreadable record."""
    if outcome.status is None or outcome.flooded:
        return BROKEN
    if outcome.status != 0:
        err = outcome.stderr
        return "fail" if err.strip() and b"Traceback" not in err else BROKEN
    reading = _reading(outcome)
    if reading is None or not _records_match(reading):
        return BROKEN
    louder = len(outcome.stderr.splitlines()) > len(quiet.splitlines())
    return "warn" if louder else "skip"


def limit_sizes(expect: Mapping[str, str]) -> list[int]:
    """Record counts of the row-limit probe, smallest first: one more than the expected limit
    (it shows that limit, or any smaller one), then ``probes.BIG`` (it shows every limit)."""
    expected = expect["max_rows"]
    return [int(expected) + 1, probes.BIG] if expected in ("1000", "10000") else [probes.BIG]


def read_limit(outcome: Outcome, size: int) -> str | None:
    """The row limit from a run over ``size`` distinct records; None when all of them came out
    of fewer than ``probes.BIG`` (the limit, if any, is larger: a bigger probe tells)."""
    if not outcome.ok or ARGS[1] not in outcome.files:
        return BROKEN
    count = probes.count_records(outcome.files[ARGS[1]])
    if count == size:
        return "none" if size == probes.BIG else None
    return LIMITS.get(count, BROKEN) if count is not None and count < size else BROKEN


def observe_limit(source: str, config: Mapping[str, str], expect: Mapping[str, str],
                  timeout: float) -> str:
    """The row limit, from the smallest probe that shows it."""
    for size in limit_sizes(expect):
        value = read_limit(_run(source, probes.limit_input(probes.key(config), size), timeout),
                           size)
        if value is not None:
            return value
    return BROKEN


def _later(source: str, config: Mapping[str, str], expect: Mapping[str, str], timeout: float
           ) -> tuple[Future[str], Future[Outcome], Future[probes.Reading | None] | None]:
    """The runs after the small probe, which do not depend on each other: the row limit, the
    error probe and (UTF-8 read) the encoding probe, ``PARALLEL`` at a time; all done on return."""
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        limit = pool.submit(observe_limit, source, config, expect, timeout)
        errors = pool.submit(_small, source, config, timeout, 2)
        latin = (pool.submit(latin_probe, source, config, timeout)
                 if config["encoding"] == "utf-8" else None)
    return limit, errors, latin


def extract(source: str, expect: Mapping[str, str], timeout: float = 10.0) -> dict[str, str]:
    """The observed spec of ``source``: each setting a value, ``broken``, or ``unobserved``
    (hidden by ``expect``'s other settings, or by the program's own output)."""
    hidden = set(KEYS) - observable(expect)
    found = find_input(source, expect, timeout)
    if found is None:
        return {k: UNOBSERVED if k in hidden else BROKEN for k in KEYS}
    config, small, reading = found
    values = read_small(config, reading)
    limit, errors, latin = _later(source, config, expect, timeout)
    values["encoding"] = read_encoding(config, reading, latin.result() if latin else None)
    values["on_error"] = read_errors(errors.result(), small.stderr)
    values["max_rows"] = limit.result()
    return {k: UNOBSERVED if k in hidden else values[k] for k in KEYS}
