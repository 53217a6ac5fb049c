"""A toy op, defined in a module of its own and registered where docs/design.md says a new op
goes, is replayed, guarded, re-read by the second readings' ledger and drafted by the generator
without any other change: nothing dispatches on op names beside the registries.

The toy op ``reset`` makes a new change that puts a setting back to its initial value. Its
record is built with ``model_construct``: a record read from a file is validated against the
``Turn`` union of ``oracle/records.py``, the one line of a real op this test cannot add.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from butterfly.suite import builder, templates
from butterfly.suite.builder import PLAIN, Builder
from oracle import Rules, Scenario, canonical_initial, check, replay
from oracle.ops import REGISTRY
from oracle.readings import triggered_at
from oracle.records import SetTurn, UndoLastTurn

TOY = '''
"""The toy op: one record class, its step, its guard, its ledger step, its hook."""

from __future__ import annotations

from typing import Literal

from butterfly.suite.builder import Builder
from oracle import BY_KEY, KEYS
from oracle.engine import Engine
from oracle.guards import Invalid
from oracle.ledger import Ledger
from oracle.ops import Op
from oracle.records import TurnBase


class ResetTurn(TurnBase):
    op: Literal["reset"]
    setting: str


def step(e: Engine, turn: ResetTurn, t: int) -> None:
    e.make(t, turn.setting, e.initial[turn.setting])


def reread(ledger: Ledger, turn: ResetTurn) -> None:
    ledger.add(turn.setting, ledger.initial[turn.setting])


def says_reset(turn: ResetTurn, t: int) -> None:
    if "reset" not in turn.text.lower():
        raise Invalid(t, "reset: the turn must say reset")


OP = Op("reset", ResetTurn, "change", step, reread, ("reset",), (says_reset,))
FAMILY = ("Reset {name} to what it was at the start.", "Please reset {name}.")


def hook(b: Builder) -> bool:
    keys = [k for k in KEYS if b.spec[k] != b.initial[k]]
    b.rng.shuffle(keys)
    for key in keys:
        text, para = b.word("reset", name=BY_KEY[key].name)
        if b.add({"op": "reset", "setting": key, "text": text, "paraphrase": para}):
            return True
    return False
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The toy module, imported from a file, and registered: the op in ``oracle.ops``, its
    family in ``templates``, its hook in ``builder.HOOKS``."""
    path = tmp_path / "toy_reset_op.py"
    path.write_text(TOY)
    spec = importlib.util.spec_from_file_location("toy_reset_op", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "toy_reset_op", module)
    spec.loader.exec_module(module)
    monkeypatch.setitem(REGISTRY, "reset", module.OP)
    monkeypatch.setitem(templates.FAMILIES, "reset", module.FAMILY)
    monkeypatch.setitem(templates.DRAWN, "reset", len(module.FAMILY))
    monkeypatch.setitem(builder.HOOKS, "reset", module.hook)
    return module


def _scenario(*turns: object) -> Scenario:
    return Scenario.model_construct(id="toy", category="long_chain", source="generated", seed=0,
                                    initial=canonical_initial(), turns=turns)


def _set_then_reset(toy: ModuleType, text: str = "Reset the log level.") -> Scenario:
    return _scenario(
        SetTurn(op="set", setting="log_level", value="debug", text="Log everything."),
        toy.ResetTurn.model_construct(op="reset", setting="log_level", text=text),
    )


def test_replay_plays_the_toy_op_by_its_registered_step(toy: ModuleType) -> None:
    initial = canonical_initial()
    specs = replay(_set_then_reset(toy))
    assert specs[1]["log_level"] == "debug" != initial["log_level"]
    assert specs[2] == initial
    assert check(_set_then_reset(toy)) is None  # the readings' ledger re-reads it too


def test_the_toy_change_is_a_change_the_engine_can_undo(toy: ModuleType) -> None:
    s = _set_then_reset(toy)
    undo = UndoLastTurn(op="undo_last", text="Undo that last change.")
    specs = replay(s.model_copy(update={"turns": (*s.turns, undo)}))
    assert specs[3]["log_level"] == "debug"
    assert replay(s, Rules(undo=False, guards=False))[2] == canonical_initial()  # not an undo


def test_the_toy_ops_guard_runs(toy: ModuleType) -> None:
    v = check(_set_then_reset(toy, text="Put the log level back."))
    assert v is not None and v.turn == 2 and v.reason == "reset: the turn must say reset"


def test_unregistered_the_toy_op_is_unknown_to_replay(toy: ModuleType,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(REGISTRY, "reset")
    with pytest.raises(KeyError, match="reset"):
        replay(_set_then_reset(toy))


def test_the_generator_drafts_the_toy_op_by_its_hook(toy: ModuleType) -> None:
    b = Builder(random.Random(7), canonical_initial())
    assert b.set(PLAIN)
    assert b.draft("reset")
    assert b.turns[-1]["op"] == "reset" and b.turns[-1]["paraphrase"] in {"reset.0", "reset.1"}
    assert isinstance(b.records[-1], toy.ResetTurn)
    assert b.specs[-1] == canonical_initial()
    assert b.plain("undo_last")  # the toy change is undone like any other
    assert b.specs[-1] == b.specs[1]
    assert triggered_at(b.initial, b.records[:-1], b.records[-1]) == ()
