"""The oracle (``oracle.replay`` / ``oracle.check``) against the naive second reading in naive.py.

Same validity verdict, same first violating turn, same guard (reasons mapped to short codes by
``naive.oracle_kind``), and for valid scenarios the same spec after every turn.
"""

from __future__ import annotations

import naive
import pytest
import strategies as gen
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from sweep import CI, examples

import oracle


def assert_agree(scenario: oracle.Scenario) -> list[dict[str, str]] | tuple[int, str]:
    expected = naive.naive(scenario)
    got = naive.oracle_outcome(scenario)
    record = scenario.to_json()
    if isinstance(expected, tuple) or isinstance(got, tuple):
        assert got == expected, f"verdicts differ on {record}"
        if isinstance(got, tuple) and got[1].startswith("reading_"):
            # a second reading rejects the wording; replay still gives the oracle's specs
            assert oracle.replay(scenario) == naive.naive(scenario, readings=False)
            return expected
        with pytest.raises(oracle.InvalidScenario) as info:
            oracle.replay(scenario)
        assert info.value.violation == oracle.check(scenario)
    else:
        assert len(got) == len(scenario.turns) + 1
        for t, (o, n) in enumerate(zip(got, expected, strict=True)):
            assert o == n, f"turn {t} differs on {record}"
            assert list(o) == list(oracle.KEYS), "the spec is not in catalogue order"
    return expected


@settings(CI, max_examples=examples(2000))
@given(st.one_of(gen.scenarios(), gen.near_valid_scenarios(), gen.read_scenarios()))
def test_oracle_agrees_with_naive(scenario: oracle.Scenario) -> None:
    assert_agree(scenario)


@settings(CI, max_examples=examples(1000))
@given(gen.valid_scenarios())
def test_valid_scenarios_replay_identically(scenario: oracle.Scenario) -> None:
    assert oracle.check(scenario) is None, scenario.to_json()
    assert oracle.replay(scenario) == naive.naive(scenario)


GUARDS = [k for k in naive.KINDS if k != "order_mismatch"]


@pytest.mark.parametrize("kind", GUARDS)
def test_generators_reach_every_guard_and_both_agree(kind: str) -> None:
    """The random scenarios above do exercise every reachable guard (order_mismatch is not
    reachable: see test_laws.test_order_guard_is_implied_by_the_undo_guards)."""

    def fires(s: oracle.Scenario) -> bool:
        r = naive.naive(s)
        return isinstance(r, tuple) and r[1] == kind

    # a second reading is searched for in the strategy that rewords turns to reach one: in the
    # union it is rare enough that the search once found it after 2,000 examples and once (in a
    # make test worker, whose example stream differed) not in 3,000
    strategy = (gen.read_scenarios() if kind.startswith("reading_") else
                st.one_of(gen.scenarios(), gen.near_valid_scenarios(), gen.read_scenarios()))
    found = find(
        strategy,
        fires,
        settings=settings(CI, max_examples=3000, phases=[Phase.generate]),
    )
    assert_agree(found)

