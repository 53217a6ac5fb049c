"""The probes' cheap parts (contract section 7): inputs built once per configuration, the
row-limit probe's output counted without parsing it in every output format, and the row limit
read from the smallest probe that shows it (a wrong program is still caught)."""

from __future__ import annotations

import bz2
import gzip
import io

import pytest

from butterfly.code import probes
from butterfly.code.program import render
from butterfly.code.runner import Outcome
from butterfly.code.spec_of_program import extract, limit_sizes, read_limit
from butterfly.core.code_catalogue import canonical

IDS = [f"r{i}" for i in range(7)]
OUTPUTS = {
    "csv": "id\n" + "".join(f"{i}\n" for i in IDS),
    "csv, no last newline, a blank line": "id\r\n\r\n" + "\r\n".join(IDS),
    "json, indented": "[\n" + ",\n".join(f'  {{\n    "id": "{i}"\n  }}' for i in IDS) + "\n]\n",
    "jsonl": "".join(f'{{"id": "{i}"}}\n' for i in IDS) + "\n",
    "markdown": "| id |\n|:---:|\n" + "".join(f"| {i} |\n" for i in IDS),
    "html page": "<!DOCTYPE html><html><body><TABLE><tbody><tr><th>id</th></tr>\n"
                 + "".join(f"<tr><td>{i}</td></tr>\n" for i in IDS) + "</tbody></table>",
}


@pytest.mark.parametrize("name", OUTPUTS)
@pytest.mark.parametrize("wrap", [lambda b: b, gzip.compress, bz2.compress],
                         ids=["plain", "gzip", "bz2"])
def test_records_are_counted_in_every_output_format(name, wrap) -> None:  # type: ignore[no-untyped-def]
    for codec in ("utf-8", "utf-16"):
        assert probes.count_file(io.BytesIO(wrap(OUTPUTS[name].encode(codec)))) == len(IDS), codec


def test_a_json_array_cut_short_is_not_counted() -> None:
    assert probes.count_file(io.BytesIO(OUTPUTS["json, indented"].rstrip()[:-1].encode())) is None


def test_inputs_are_built_once_per_configuration() -> None:
    config = probes.key({"input_format": "csv", "delimiter": "comma", "header_row": "yes",
                         "encoding": "utf-8"})
    assert probes.limit_input(config, 1001) is probes.limit_input(config, 1001)
    assert probes.limit_input(config, 1001).count(b"\n") == 1002  # the header, 1,001 ids
    assert probes.small_input(config, 2) is probes.small_input(config, 2)


def _outcome(count: int) -> Outcome:
    """A run whose output (streamed and counted, as the runner's ``tally`` does) holds
    ``count`` ids."""
    output = OUTPUTS["csv"].split("\n")[0].encode() + b"\n" + b"".join(
        b"r%d\n" % i for i in range(count))
    return Outcome(0, b"", b"", tally=probes.count_file(io.BytesIO(output)))


def test_the_row_limit_is_read_from_the_smallest_probe_that_shows_it() -> None:
    assert limit_sizes({"max_rows": "1000"}) == [1001, probes.BIG]
    assert limit_sizes({"max_rows": "none"}) == [probes.BIG]
    assert read_limit(_outcome(1000), 1001) == "1000"
    assert read_limit(_outcome(1000), 10001) == "1000"
    assert read_limit(_outcome(1001), 1001) is None  # every record came out: a bigger probe
    assert read_limit(_outcome(1200), 1001) == "broken"  # more records than it was given
    assert read_limit(_outcome(999), 1001) == "broken"  # no limit of the catalogue


@pytest.mark.parametrize(("expected", "actual"), [("1000", "none"), ("10000", "1000")])
def test_a_wrong_row_limit_is_caught_whatever_limit_is_expected(expected: str,
                                                                actual: str) -> None:
    program = render({**canonical(), "max_rows": actual})
    assert extract(program, {**canonical(), "max_rows": expected})["max_rows"] == actual


def test_a_stray_carriage_return_is_no_line_ending() -> None:
    from butterfly.code.probes import line_endings

    assert line_endings("a\r\nb\r\n") == "crlf" and line_endings("a\nb\n") == "lf"
    assert line_endings("a\r\r\nb\r\r\n") is None  # both terminators translated: broken
    assert line_endings("a\r\nb\n") is None


def test_utf16_through_bz2_has_no_mark_and_reads_as_utf16() -> None:
    from butterfly.code.program import render
    from butterfly.code.spec_of_program import extract
    from butterfly.core.code_catalogue import apply_couplings, canonical, visible

    spec = apply_couplings({**canonical(), "encoding": "utf-16", "compression": "bz2"})
    assert extract(render(spec), spec) == visible(spec)


def test_a_program_two_input_edits_behind_is_read_not_broken() -> None:
    from butterfly.code.program import render
    from butterfly.code.spec_of_program import extract
    from butterfly.core.code_catalogue import canonical, visible

    spec = {**canonical(), "output_format": "csv"}
    expect = {**spec, "encoding": "latin-1", "header_row": "no"}
    assert extract(render(spec), expect) == visible(spec)  # wrong on those two settings only
