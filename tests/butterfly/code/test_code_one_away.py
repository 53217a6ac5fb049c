"""The extraction law for every spec one edit away from the canonical one (contract section 7):
its reference program extracts to it on every observable setting."""

from __future__ import annotations

import pytest

from butterfly.code.catalogue import DOMAINS, KEYS, canonical, one_away, visible
from butterfly.code.extract import extract
from butterfly.code.program import render


@pytest.mark.parametrize("spec", one_away(),
                         ids=lambda s: next(f"{k}={v}" for k, v in s.items()
                                            if v != canonical()[k]))
def test_every_spec_one_setting_away_extracts_to_itself(spec: dict[str, str]) -> None:
    assert extract(render(spec), spec) == visible(spec)


def test_one_away_covers_every_value_of_every_setting() -> None:
    away = one_away()
    base = canonical()
    for key in KEYS:
        shown = {base[key]} | {s[key] for s in away}
        assert shown == set(DOMAINS[key]), key
