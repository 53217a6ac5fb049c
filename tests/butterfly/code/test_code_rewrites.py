"""Behaviour-preserving rewrites of the reference program extract to the same spec, and a
program that gets a setting wrong is caught by that setting's probe (contract section 7)."""

from __future__ import annotations

import pytest

from butterfly.code.agents import by_hand as csv_by_hand
from butterfly.code.agents import edit, full_page, indented, renamed, reordered
from butterfly.code.program import render
from butterfly.code.spec_of_program import extract
from butterfly.core.code_catalogue import BROKEN, DOMAINS, KEYS, apply_couplings, canonical, visible


def inlined(source: str) -> str:
    """``show_json`` inlined at its one call site and deleted."""
    start = source.index("def show_json")
    end = source.index("def ", start + 1)
    body = source[:start] + source[end:]
    return edit(body, "show_json(record.get(c))",
                "(None if record.get(c) is None else show(record.get(c)))")


def comprehension(source: str) -> str:
    """The deduplicating loop as a comprehension over ``dict.fromkeys``."""
    start = source.index("    seen = set()")
    end = source.index("    return unique\n") + len("    return unique\n")
    new = ("    keys = dict.fromkeys(tuple(r.get(c) for c in columns) for r in records)\n"
           "    return [dict(zip(columns, key)) for key in keys]\n")
    return source[:start] + new + source[end:]


def by_hand(source: str) -> str:
    """CSV written by hand instead of through the csv module (minimal quoting)."""
    return csv_by_hand(source, "minimal")


REWRITES = [
    ("reordered", {}, reordered),
    ("renamed", {"sort_order": "descending"}, renamed),
    ("inlined", {"date_format": "eu"}, inlined),
    ("comprehension", {"deduplicate": "on", "sort_order": "ascending"}, comprehension),
    ("full_page", {"output_format": "html", "null_marker": "NA"}, full_page),
    ("indented", {"input_format": "jsonl", "compression": "gzip"}, indented),
    ("by_hand", {"output_format": "csv", "line_endings": "crlf"}, by_hand),
]


@pytest.mark.parametrize(("name", "change", "rewrite"), REWRITES, ids=[r[0] for r in REWRITES])
def test_a_behaviour_preserving_rewrite_extracts_to_the_same_spec(name, change, rewrite) -> None:  # type: ignore[no-untyped-def]
    spec = apply_couplings({**canonical(), **change})
    source = rewrite(render(spec))
    assert source != render(spec)
    assert extract(source, spec) == visible(spec)


def _base(key: str) -> dict[str, str]:
    """The canonical spec, with CSV output where the setting shows only there."""
    shown_in_csv = key in ("quote_style", "null_marker")
    return {**canonical(), "output_format": "csv"} if shown_in_csv else canonical()


@pytest.mark.parametrize("key", KEYS)
def test_each_probe_catches_a_program_with_its_setting_wrong(key: str) -> None:
    base = _base(key)
    wrong = next(v for v in DOMAINS[key] if v != base[key] and (key, v) != ("input_format", "tsv"))
    program = render(apply_couplings({**base, key: wrong}))
    got = extract(program, base)[key]
    assert got != base[key] and got in (wrong, BROKEN)


def test_a_tsv_reader_is_read_as_the_nearest_configuration_it_reads() -> None:
    """TSV honours quotes as CSV does, so a TSV reader reads exactly what a CSV reader with tabs
    reads: asked for CSV with commas, it is wrong on the delimiter (the nearest explanation),
    and asked for TSV it is right."""
    tsv = apply_couplings({**canonical(), "input_format": "tsv"})
    got = extract(render(tsv), canonical())
    assert (got["input_format"], got["delimiter"]) == ("csv", "tab")
    assert extract(render(tsv), tsv) == visible(tsv)


WRONG_BY_HAND = [
    ("sort_order", {"sort_order": "ascending"}, "r.get(columns[0])", "r.get(columns[1])"),
    ("on_error", {}, 'sys.exit(f"error: {message}")', "raise ValueError(message)"),
    ("date_format", {}, "return day.isoformat()", 'return day.strftime("%Y/%m/%d")'),
    ("null_marker", {"output_format": "csv"}, 'else ""', 'else "-"'),
]


@pytest.mark.parametrize(("key", "change", "old", "new"), WRONG_BY_HAND,
                         ids=[w[0] for w in WRONG_BY_HAND])
def test_a_behaviour_that_is_no_value_is_broken(key: str, change: dict[str, str], old: str,
                                                new: str) -> None:
    spec = {**canonical(), **change}
    assert extract(edit(render(spec), old, new), spec)[key] == BROKEN
