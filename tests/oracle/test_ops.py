"""The op registry (``oracle/ops.py``): one entry per turn type, the tuples derived from it, and
the naive twin kept apart from it."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from oracle import CHANGE_OPS, OPS, UNDO_OPS
from oracle.ops import REGISTRY
from oracle.records import Turn

HERE = Path(__file__).resolve().parent


def test_each_op_names_its_records_literal() -> None:
    for name, op in REGISTRY.items():
        assert op.name == name
        assert typing.get_args(op.record.model_fields["op"].annotation) == (name,)


def test_the_turn_union_holds_exactly_the_registrys_records() -> None:
    union = typing.get_args(typing.get_args(Turn)[0])
    assert set(union) == {op.record for op in REGISTRY.values()}


def test_the_op_tuples_derive_from_the_registry() -> None:
    assert OPS == ("set", "drop", "undo_last", "undo_ref", "undo_earliest", "redo", "distractor")
    assert UNDO_OPS == ("undo_last", "undo_ref", "undo_earliest", "redo")
    assert CHANGE_OPS == ("set", "drop")
    assert tuple(n for n in OPS if REGISTRY[n].kind in ("undo", "redo")) == UNDO_OPS


def test_the_naive_twin_does_not_read_the_registry() -> None:
    """The second oracle stays independent: no op registry, no engine, no ledger."""
    for name in ("naive.py", "naive_readings.py"):
        tree = ast.parse((HERE / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module not in {"oracle.ops", "oracle.engine", "oracle.ledger"}, name
                if node.module == "oracle":
                    assert not {a.name for a in node.names} & {"Op", "ops", "engine"}, name
