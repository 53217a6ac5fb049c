"""The extractor: any program -> the spec its behaviour shows (contract section 7).

Three kinds of run, each observing several settings at once: the small probe (the input side,
the output's format, encoding, compression, line endings, dates, missing values, quoting, and the
records' order and duplicates), the error probe (one unreadable record: the error policy) and the
row-limit probe (more records than the largest limit). The expected spec chooses the probe
inputs to try first and says which settings are observable; values come from behaviour only:
the source is never read and no output is compared with the reference program's bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping

from butterfly.code import probes
from butterfly.code.catalogue import BROKEN, DOMAINS, INPUT_SIDE, KEYS, UNOBSERVED, observable
from butterfly.code.runner import Outcome, run_program

ARGS = ["input.dat", "output.dat"]
NAMES = {r[0]: r[1] for r in probes.SMALL}
NOTES = {r[0]: r[3] for r in probes.SMALL if r[3] is not None}
NULLS = {"": "empty", "NA": "NA", "null": "null"}
LIMITS = {1000: "1000", 10000: "10000", 100000: "100000", probes.BIG: "none"}


def _run(source: str, config: Mapping[str, str], rows: list[probes.Row], timeout: float,
         bad_at: int | None = None) -> Outcome:
    data = probes.make_input(config, rows, bad_at)
    return run_program(source, ARGS, b"", timeout, {ARGS[0]: data})


@functools.lru_cache(maxsize=8)
def _big_input(config: tuple[tuple[str, str], ...]) -> bytes:
    """The row-limit probe's input (built once per input configuration)."""
    return probes.make_input(dict(config), probes.big_rows())


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
    """Input configurations to try: the expected one, then each one setting away."""
    first = _input_side(expect)
    seen = [first]
    yield first
    for key in INPUT_SIDE:
        for value in DOMAINS[key]:
            config = _input_side({**first, key: value})
            tabular = config["input_format"] in ("csv", "tsv")
            if config in seen or (not tabular and key in ("delimiter", "header_row")):
                continue
            seen.append(config)
            yield config


def find_input(source: str, expect: Mapping[str, str], timeout: float
               ) -> tuple[dict[str, str], Outcome, probes.Reading] | None:
    """The first input configuration the program reads correctly, with its small-probe run."""
    rows: list[probes.Row] = [list(r) for r in probes.SMALL]
    for config in candidates(expect):
        outcome = _run(source, config, rows, timeout)
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


def read_encoding(source: str, config: Mapping[str, str], reading: probes.Reading,
                  timeout: float) -> str:
    """Input and output encoding. Latin-1 decodes any bytes, so a Latin-1 program passes UTF-8
    through unchanged: one more run, with Latin-1 input, tells the two apart (a UTF-8 program
    cannot read it)."""
    if config["encoding"] == "utf-16":
        return "utf-16" if reading.encoding == "utf-16" else BROKEN
    rows: list[probes.Row] = [list(r) for r in probes.SMALL]
    latin = _reading(_run(source, {**config, "encoding": "latin-1"}, rows, timeout))
    if latin is not None and _records_match(latin):
        return "latin-1" if latin.encoding in ("latin-1", None) else BROKEN
    return "utf-8" if reading.encoding in ("utf-8", None) else BROKEN


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


def read_limit(outcome: Outcome) -> str:
    """The row limit from a run over ``probes.BIG`` distinct records."""
    if not outcome.ok or ARGS[1] not in outcome.files:
        return BROKEN
    count = probes.count_records(outcome.files[ARGS[1]])
    return BROKEN if count is None else LIMITS.get(count, BROKEN)


def extract(source: str, expect: Mapping[str, str], timeout: float = 10.0) -> dict[str, str]:
    """The observed spec of ``source``: each setting a value, ``broken``, or ``unobserved``
    (hidden by ``expect``'s other settings, or by the program's own output)."""
    hidden = set(KEYS) - observable(expect)
    found = find_input(source, expect, timeout)
    if found is None:
        return {k: UNOBSERVED if k in hidden else BROKEN for k in KEYS}
    config, small, reading = found
    values = read_small(config, reading)
    small_rows: list[probes.Row] = [list(r) for r in probes.SMALL]
    values["encoding"] = read_encoding(source, config, reading, timeout)
    values["on_error"] = read_errors(_run(source, config, small_rows, timeout, 2), small.stderr)
    big = {ARGS[0]: _big_input(tuple(sorted(config.items())))}
    values["max_rows"] = read_limit(run_program(source, ARGS, b"", timeout, big))
    return {k: UNOBSERVED if k in hidden else values[k] for k in KEYS}
