"""Replay: the exact spec after every turn, checked by the validity guards (:mod:`oracle.guards`).

The spec after a turn is the initial spec with every active change applied in the order made,
then the coupling rules. Each turn is played by its op's step (:data:`oracle.ops.REGISTRY`, the
steps and the state in :mod:`oracle.engine`), after the guards on its words; the guards that
concern every turn (couplings, applicability) follow it.

The same engine, with guards off and one rule bent, also answers "what would an agent that
ignores undo / treats undo-earliest as undo-last / ignores couplings say?" (:class:`Rules`);
the scripted agents of the harness use it. ``replay`` and ``check`` always use the exact rules.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from oracle.catalogue import COUPLINGS, TRIGGERS, apply_couplings
from oracle.engine import Checkpoint, Engine, Rules
from oracle.guards import Invalid, applicability_guard, coupling_guard
from oracle.ops import REGISTRY
from oracle.readings import first_difference
from oracle.records import DropTurn, Scenario, SetTurn, Turn, UndoRefTurn
from oracle.wording import (
    DROP_AMBIGUOUS,
    DROP_AMBIGUOUS_EXAMPLES,
    DROP_REMOVAL,
    HISTORY_WORDING,
    HISTORY_WORDING_EXAMPLES,
    drop_wording_problem,
    history_wording,
    normalise_text,
)


@dataclass(frozen=True, slots=True)
class Violation:
    """Why a scenario is invalid: the first guard that failed, at which turn (0 = the record)."""

    scenario: str
    turn: int
    reason: str
    since: int = 1
    """The contract version that added the guard (2: inapplicable settings, history wording;
    3: second readings)."""

    def __str__(self) -> str:
        return f"scenario {self.scenario}, turn {self.turn}: {self.reason}"


class InvalidScenario(ValueError):
    def __init__(self, violation: Violation) -> None:
        super().__init__(str(violation))
        self.violation = violation


ORACLE: Final = Rules()


PLAYED_BEFORE_V2: Final = frozenset({
    # hw-undo-earliest-after-undo
    "4d10ce93e9dbaee19c7d8d0cb85005a7263dee8c69ac71812419c632d3de6678",
    "7eaa94f14688ef63ef654d00e1d735813c405bc8eb7c12264696220a9497d356",  # gen-long-chain-03
    "920bddf16e9b777573a2fae990d725d0893414a791f386026bfa5ea22258e78a",  # hw-indirect-same-format
})
"""SHA-256 of the records (``Scenario.to_json()``) of butterfly-40 v1 that the v2 guards reject.

Runs played on v1 hold them. The v2 guards only remove readings; they never change a spec, so
:func:`replay` still answers these exact records (and nothing else) as v1 did, and committed
runs stay readable. :func:`check` still reports their violation: a suite holding them is not
valid under contract v2 (``butterfly validate`` says so)."""


def played_before_v2(scenario: Scenario) -> bool:
    """Is ``scenario`` one of the v1 records kept replayable (:data:`PLAYED_BEFORE_V2`)?"""
    return hashlib.sha256(scenario.to_json().encode("utf-8")).hexdigest() in PLAYED_BEFORE_V2


def replay(scenario: Scenario, rules: Rules = ORACLE) -> list[dict[str, str]]:
    """The spec after every turn, index 0 being the initial spec.

    With guards on (the default), raises :class:`InvalidScenario` at the first violated guard.
    """
    try:
        return _replay(scenario.initial, scenario.turns, rules)
    except Invalid as e:
        if e.since == 2 and rules.v2 and played_before_v2(scenario):
            return _replay(scenario.initial, scenario.turns, replace(rules, v2=False))
        raise InvalidScenario(Violation(scenario.id, e.turn, e.reason, e.since)) from None


def check(scenario: Scenario, readings: bool = True) -> Violation | None:
    """The first guard the scenario violates, or None if it is valid.

    ``readings``: also the v3 guard, a second reading that changes a spec
    (:mod:`oracle.readings`); checked after every other guard has passed. Off for a run's copy
    of the suite it played: a reading rejects a wording, it never changes the oracle's spec."""
    try:
        specs = _replay(scenario.initial, scenario.turns, ORACLE)
    except Invalid as e:
        return Violation(scenario.id, e.turn, e.reason, e.since)
    if readings:
        d = first_difference(scenario, specs)
        if d is not None:
            return Violation(scenario.id, d.turn, d.reason(), since=3)
    return None


def targeted(scenario: Scenario) -> frozenset[str]:
    """Settings some turn targets, explicitly or through a coupling (for change radius).

    A set, drop or undo_ref turn targets its setting; a turn that assigns a coupling's trigger
    also targets the setting that rule forces.
    """
    out: set[str] = set()
    for turn in scenario.turns:
        match turn:
            case SetTurn(setting=setting) | DropTurn(setting=setting) | UndoRefTurn(
                setting=setting
            ):
                pass
            case _:
                continue
        out.add(setting)
        for c in COUPLINGS:
            if c.trigger == setting:
                out.add(c.forced)
    return frozenset(out)


def _replay(
    initial: dict[str, str], turns: Sequence[Turn], rules: Rules
) -> list[dict[str, str]]:
    if rules.guards and apply_couplings(dict(initial)) != initial:
        raise Invalid(0, "the initial spec breaks a coupling rule")
    engine = Engine(initial, rules)
    specs = [dict(initial)]
    for t, turn in enumerate(turns, 1):
        specs.append(_step(engine, turn, t, specs[-1]))
    return specs


def _step(engine: Engine, turn: Turn, t: int, before: dict[str, str]) -> dict[str, str]:
    """Turn ``t``, played on ``engine`` after its guards; the spec after it. ``before``: the
    spec before it."""
    rules = engine.rules
    op = REGISTRY[turn.op]
    if rules.guards:
        for guard in op.guards:
            guard(turn, t)
    if rules.undo or not op.undo:  # rules that ignore undo: an undo or redo does nothing
        op.step(engine, turn, t)
    spec = dict(engine.base)
    if rules.couplings:
        apply_couplings(spec)
    if rules.guards:
        coupling_guard(engine.live, engine.base, t)
        if rules.v2:
            applicability_guard(before, spec, turn, t)
    return spec


class Replayer:
    """The oracle's replay one turn at a time, each turn tried: a turn a guard rejects leaves
    the state as it was. The generators grow a scenario this way (every guard but second
    readings, exactly as :func:`replay` of the whole partial scenario would check them, in time
    linear in its length instead of quadratic)."""

    __slots__ = ("_checkpoint", "engine", "specs")

    def __init__(self, initial: dict[str, str]) -> None:
        self.engine = Engine(initial, ORACLE)
        self.specs: list[dict[str, str]] = [dict(initial)]
        self._checkpoint: Checkpoint | None = None
        if apply_couplings(dict(initial)) != initial:
            self.specs = []  # the initial spec breaks a rule: no turn is ever accepted

    def push(self, turn: Turn) -> dict[str, str] | None:
        """The spec after ``turn`` played next, or None (and nothing kept) if a guard rejects
        it; :meth:`pop` takes it back."""
        if not self.specs:
            return None
        cp = self.engine.checkpoint()
        try:
            spec = _step(self.engine, turn, len(self.specs), self.specs[-1])
        except Invalid:
            self.engine.rollback(cp)
            return None
        self.engine.journal = None
        self._checkpoint = cp
        self.specs.append(spec)
        return spec

    def pop(self) -> None:
        """Take back the turn :meth:`push` accepted last (once)."""
        if self._checkpoint is None:
            raise RuntimeError("pop: no turn to take back")
        self.engine.rollback(self._checkpoint)
        self._checkpoint = None
        self.specs.pop()


__all__ = [
    "DROP_AMBIGUOUS",
    "DROP_AMBIGUOUS_EXAMPLES",
    "DROP_REMOVAL",
    "HISTORY_WORDING",
    "HISTORY_WORDING_EXAMPLES",
    "ORACLE",
    "PLAYED_BEFORE_V2",
    "TRIGGERS",
    "InvalidScenario",
    "Replayer",
    "Rules",
    "Violation",
    "check",
    "drop_wording_problem",
    "history_wording",
    "normalise_text",
    "played_before_v2",
    "replay",
    "targeted",
]
