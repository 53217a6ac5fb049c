"""The extraction law for random specs (contract section 7): extracting the reference renderer's
program for a spec gives that spec on every observable setting (hypothesis, derandomised; the
specs one setting away are tests/butterfly/code/test_code_one_away.py; ``bench/code.py --laws
1000`` checks 1,000 seeded random specs)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from butterfly.code.program import render
from butterfly.code.spec_of_program import extract
from butterfly.core.code_catalogue import (
    DOMAINS,
    KEYS,
    apply_couplings,
    canonical,
    is_valid,
    visible,
)


def test_the_canonical_program_extracts_to_the_canonical_spec() -> None:
    spec = canonical()
    assert extract(render(spec), spec) == visible(spec)


specs = st.fixed_dictionaries({k: st.sampled_from(DOMAINS[k]) for k in KEYS}).map(
    apply_couplings)


@settings(derandomize=True, max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(specs)
def test_random_specs_extract_to_themselves(spec: dict[str, str]) -> None:
    assert is_valid(spec)
    assert extract(render(spec), spec) == visible(spec)
