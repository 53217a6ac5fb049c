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
from typing import Final, NamedTuple

from butterfly.code import probes
from butterfly.code.runner import Budget, Outcome, Spent, run_program
from butterfly.core.code_catalogue import BROKEN, DOMAINS, INPUT_SIDE, KEYS, UNOBSERVED, observable

EXTRACTOR_VERSION: Final = 3
"""Bumped whenever a change can observe a program differently: cached observations of another
version are observed again (``butterfly observe``). 2: every input configuration tried, nearest
first; a stray CR is no line ending; UTF-16 without a byte-order mark read as UTF-16. 3: within a
budget (a run that hits a limit ends the search for its input; ``RUN_SECONDS``,
``BUDGET_SECONDS``, ``BUDGET_CPU``; the output's total cap); an output counted streamed, a line
of white space no record."""

ARGS = ["input.dat", "output.dat"]
NAMES = {r[0]: r[1] for r in probes.SMALL}
NOTES = {r[0]: r[3] for r in probes.SMALL if r[3] is not None}
NULLS = {"": "empty", "NA": "NA", "null": "null"}
LIMITS = {1000: "1000", 10000: "10000", 100000: "100000"}
PARALLEL: Final = 2
"""Runs of one program at a time after the small probe (the development machine's 2 cores)."""
RUN_SECONDS: Final = 10.0
"""Wall-clock seconds of one run of a program (and its CPU seconds, rounded up)."""
BUDGET_SECONDS: Final = 30.0
"""Wall-clock seconds of all the runs of one observed program (the reference program takes
about 1.5 s; one whose input side is wrong, up to about 8 s on a loaded machine)."""
BUDGET_CPU: Final = 30.0
"""CPU seconds of all the runs of one observed program, as the kernel accounts them (runs
side by side may pass it by one run's CPU limit)."""


class Extraction(NamedTuple):
    """An observed spec, and why settings are ``broken`` by a limit or the budget (None: no run
    hit one)."""

    observed: dict[str, str]
    reason: str | None


class Halted(Exception):
    """A run of the small probe hit a limit: the search for the input stops, all is broken."""


def budget() -> Budget:
    """A fresh budget for one observed program (``BUDGET_SECONDS``, ``BUDGET_CPU``)."""
    return Budget(BUDGET_SECONDS, BUDGET_CPU)


def _run(source: str, data: bytes, timeout: float, spend: Budget, *,
         counted: bool = False) -> Outcome:
    """A run on ``data``: the output kept (small probes), or ``counted`` streamed (row limit)."""
    keep, tally = (set(), (ARGS[1], probes.count_file)) if counted else ({ARGS[1]}, None)
    return run_program(source, ARGS, b"", timeout, {ARGS[0]: data}, keep=keep, tally=tally,
                       budget=spend)


def _small(source: str, config: Mapping[str, str], timeout: float, spend: Budget,
           bad_at: int | None = None) -> Outcome:
    """A run on the small probe in ``config`` (with ``bad_at``: the error probe)."""
    return _run(source, probes.small_input(probes.key(config), bad_at), timeout, spend)


def _reading(outcome: Outcome) -> probes.Reading | None:
    if not outcome.ok or ARGS[1] not in outcome.files:
        return None
    return probes.read(outcome.files[ARGS[1]])


def _said(probe: str, outcome: Outcome) -> str | None:
    """Why the run of ``probe`` shows nothing: the limit it hit, in words (None: none)."""
    return None if outcome.why is None else f"{probe}: the program {outcome.why}"


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


def find_input(source: str, expect: Mapping[str, str], timeout: float, spend: Budget
               ) -> tuple[dict[str, str], Outcome, probes.Reading] | None:
    """The first input configuration the program reads correctly, with its small-probe run.
    :class:`Halted` at the first run that hits a limit (a program that never ends is not run
    36 times), :class:`Spent` when the budget runs out first."""
    for n, config in enumerate(candidates(expect)):
        outcome = _small(source, config, timeout, spend)
        why = _said("the small probe" + (" (the expected input)" if n == 0 else
                                         f" (input configuration {n + 1} of 36)"), outcome)
        if why is not None:
            raise Halted(why)
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


def read_errors(outcome: Outcome, quiet: bytes) -> str:
    """The error policy from a run whose input holds one unreadable record."""
    if outcome.status is None or outcome.flooded or outcome.limit is not None:
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
    if not outcome.ok:
        return BROKEN
    count = outcome.tally
    if count == size:
        return "none" if size == probes.BIG else None
    return LIMITS.get(count, BROKEN) if count is not None and count < size else BROKEN


def observe_limit(source: str, config: Mapping[str, str], expect: Mapping[str, str],
                  timeout: float, spend: Budget) -> tuple[str, str | None]:
    """The row limit, from the smallest probe that shows it, and why it is broken by a limit."""
    for size in limit_sizes(expect):
        outcome = _run(source, probes.limit_input(probes.key(config), size), timeout, spend,
                       counted=True)
        value = read_limit(outcome, size)
        if value is not None:
            return value, _said(f"the row-limit probe ({size:,} records)", outcome)
    return BROKEN, None


Later = tuple[Future[tuple[str, str | None]], Future[Outcome], Future[Outcome] | None]


def _later(source: str, config: Mapping[str, str], expect: Mapping[str, str], timeout: float,
           spend: Budget) -> Later:
    """The runs after the small probe, which do not depend on each other: the row limit, the
    error probe and (UTF-8 read) the encoding probe, ``PARALLEL`` at a time; all done on return
    (a stop request, or an error in one, stops the others at once)."""
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        try:
            limit = pool.submit(observe_limit, source, config, expect, timeout, spend)
            errors = pool.submit(_small, source, config, timeout, spend, 2)
            latin = (pool.submit(_small, source, {**config, "encoding": "latin-1"}, timeout, spend)
                     if config["encoding"] == "utf-8" else None)  # the encoding probe
        except BaseException:
            spend.stop.set()
            raise
    return limit, errors, latin


def _outcome(future: Future[Outcome], probe: str) -> tuple[Outcome | None, str | None]:
    """A later run's outcome and why it shows nothing; (None, why) when the budget ran out
    before it could start."""
    try:
        outcome = future.result()
    except Spent as e:
        return None, f"{probe}: {e}"
    return outcome, _said(probe, outcome)


def _read_later(config: Mapping[str, str], small: Outcome, reading: probes.Reading,
                later: Later) -> tuple[dict[str, str], list[str]]:
    """The encoding, error policy and row limit from the later runs, and why any is broken."""
    limit, errors, latin = later
    why: list[str | None] = []
    try:
        max_rows, said = limit.result()
    except Spent as e:
        max_rows, said = BROKEN, f"the row-limit probe: {e}"
    why.append(said)
    err, said = _outcome(errors, "the error probe")
    why.append(said)
    found = {"max_rows": max_rows,
             "on_error": BROKEN if err is None else read_errors(err, small.stderr)}
    latin_out, said = (None, None) if latin is None else _outcome(latin, "the encoding probe")
    why.append(said)
    if latin is not None and (latin_out is None or latin_out.limit is not None):
        found["encoding"] = BROKEN  # the Latin-1 run hit a limit: no reading of the encoding
    else:
        found["encoding"] = read_encoding(config, reading,
                                          None if latin_out is None else _reading(latin_out))
    return found, [w for w in why if w is not None]


def observe(source: str, expect: Mapping[str, str], spend: Budget | None = None,
            timeout: float | None = None) -> Extraction:
    """The observed spec of ``source`` (each setting a value, ``broken``, or ``unobserved``:
    hidden by ``expect``'s other settings, or by the program's own output) within ``spend``
    (default: a fresh :func:`budget`), each run at most ``timeout`` seconds (``RUN_SECONDS``),
    and why settings are broken by a limit. ``runner.Stopped`` when the budget's stop request
    came."""
    spend = budget() if spend is None else spend
    timeout = RUN_SECONDS if timeout is None else timeout
    hidden = set(KEYS) - observable(expect)
    all_broken = {k: UNOBSERVED if k in hidden else BROKEN for k in KEYS}
    try:
        found = find_input(source, expect, timeout, spend)
    except (Halted, Spent) as e:
        return Extraction(all_broken, f"{e}: every setting broken")
    if found is None:
        return Extraction(all_broken, None)
    config, small, reading = found
    values = read_small(config, reading)
    later, why = _read_later(config, small, reading,
                             _later(source, config, expect, timeout, spend))
    values.update(later)
    observed = {k: UNOBSERVED if k in hidden else values[k] for k in KEYS}
    return Extraction(observed, "; ".join(why) or None)


def extract(source: str, expect: Mapping[str, str], timeout: float = RUN_SECONDS
            ) -> dict[str, str]:
    """The observed spec of ``source`` (:func:`observe`, a fresh budget)."""
    return observe(source, expect, None, timeout).observed
