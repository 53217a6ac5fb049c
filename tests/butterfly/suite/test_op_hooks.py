"""The generator reads the oracle's op registry: a hook per op, a paraphrase family per id."""

from __future__ import annotations

from butterfly.core.vocab import CHAIN_MIX
from butterfly.suite.builder import HOOKS, LONG_CHAIN
from butterfly.suite.chains import MIX_OPS
from butterfly.suite.templates import DRAWN, FAMILIES
from oracle import OPS
from oracle.ops import REGISTRY


def test_every_oracle_op_has_a_generator_hook() -> None:
    assert tuple(HOOKS) == OPS


def test_every_ops_families_are_templates_and_every_family_is_an_ops() -> None:
    named = [f for op in REGISTRY.values() for f in op.families]
    assert len(named) == len(set(named))
    assert set(named) == set(FAMILIES) == set(DRAWN)


def test_the_mixes_name_only_ops_and_the_two_generator_moves() -> None:
    assert set(LONG_CHAIN) <= {*OPS, "indirect"}
    assert tuple(CHAIN_MIX) == MIX_OPS
