"""The extraction law for specs one edit away from the canonical one (contract section 7): its
reference program extracts to it on every observable setting. For the budget of make test the
law runs here on the values no rewrite or other test extracts as expected (``CHOSEN``);
``bench/code.py --laws N`` checks all 31 specs and N random ones."""

from __future__ import annotations

import pytest

from butterfly.code.program import render
from butterfly.code.spec_of_program import extract
from butterfly.core.code_catalogue import DOMAINS, KEYS, canonical, one_away, visible

CHOSEN = ("input_format=tsv", "input_format=json", "output_format=jsonl",
          "output_format=markdown", "delimiter=semicolon", "header_row=no", "encoding=latin-1",
          "encoding=utf-16", "date_format=unix", "compression=bz2", "max_rows=100000",
          "on_error=warn", "quote_style=none")
"""The rewrites cover csv and html output, jsonl input, gzip, eu dates, both sort orders,
deduplication, NA and crlf; tests/butterfly/code/test_code_probes.py the limits 1000 and 10000."""


def label(spec: dict[str, str]) -> str:
    return next(f"{k}={v}" for k, v in spec.items() if v != canonical()[k])


@pytest.mark.parametrize("spec", [s for s in one_away() if label(s) in CHOSEN], ids=label)
def test_specs_one_setting_away_extract_to_themselves(spec: dict[str, str]) -> None:
    assert extract(render(spec), spec) == visible(spec)


def test_the_chosen_specs_are_one_away() -> None:
    assert set(CHOSEN) <= {label(s) for s in one_away()}


def test_one_away_covers_every_value_of_every_setting() -> None:
    away = one_away()
    base = canonical()
    for key in KEYS:
        shown = {base[key]} | {s[key] for s in away}
        assert shown == set(DOMAINS[key]), key
