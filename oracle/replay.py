"""Replay: the exact spec after every turn, checked by the validity guards (:mod:`oracle.guards`).

State is the initial spec, the changes in the order they were made (each with its assignment, an
active flag and the sequence number of its latest (re)activation), and a redo stack. The spec
after a turn is the initial spec with every active change applied in the order made, then the
coupling rules. The engine keeps the uncoupled spec up to date incrementally: a set or drop
writes its setting; an undo or redo recomputes only the setting of the change it touched.

The same engine, with guards off and one rule bent, also answers "what would an agent that
ignores undo / treats undo-earliest as undo-last / ignores couplings say?" (:class:`Rules`);
the scripted agents of the harness use it. ``replay`` and ``check`` always use the exact rules.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from oracle.catalogue import (
    COUPLINGS,
    FORCED,
    TRIGGERS,
    UNSPECIFIED,
    apply_couplings,
)
from oracle.guards import (
    Change,
    Invalid,
    applicability_guard,
    coupling_guard,
    order_guard,
    source,
    text_guard,
)
from oracle.readings import first_difference
from oracle.records import (
    DropTurn,
    RedoTurn,
    Scenario,
    SetTurn,
    Turn,
    UndoEarliestTurn,
    UndoLastTurn,
    UndoRefTurn,
)
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


@dataclass(frozen=True, slots=True)
class Rules:
    """How to replay. The oracle is ``Rules()``; the others describe scripted agents."""

    undo: bool = True
    """False: undo_* and redo turns change nothing (every set and drop stays in effect)."""
    earliest_as_last: bool = False
    """True: undo_earliest deactivates the most recent active change instead."""
    couplings: bool = True
    """False: the coupling rules are not applied."""
    guards: bool = True
    """False: no validity guard is checked (for agents replaying a scenario their own way)."""
    v2: bool = True
    """False: the guards of contract v1 only (for records played before v2)."""


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
    guards = rules.guards
    if guards and apply_couplings(dict(initial)) != initial:
        raise Invalid(0, "the initial spec breaks a coupling rule")
    base = dict(initial)  # the spec before couplings, active changes applied in order made
    changes: list[Change] = []
    redo: list[Change] = []
    seq = 0  # activation sequence counter
    specs = [dict(initial)]

    def restore(setting: str) -> None:
        value = initial[setting]
        for c in changes:
            if c.active and c.setting == setting:
                value = c.value
        base[setting] = value

    for t, turn in enumerate(turns, 1):
        if guards:
            text_guard(turn, t)
        match turn:
            case SetTurn() | DropTurn():
                value = turn.value if isinstance(turn, SetTurn) else UNSPECIFIED
                changes.append(Change(len(changes), t, turn.setting, value, seq))
                seq += 1
                redo.clear()
                base[turn.setting] = value
            case RedoTurn() if rules.undo:
                if redo:
                    c = redo.pop()
                    c.active = True
                    c.activated = seq
                    c.redone = True
                    seq += 1
                    restore(c.setting)
                    if guards:
                        order_guard(changes, c.setting, base, t)
                elif guards:
                    raise Invalid(t, "redo: nothing has been undone since the last change")
            case UndoLastTurn() | UndoEarliestTurn() | UndoRefTurn() if rules.undo:
                target = _undo_target(turn, t, changes, base, rules)
                if target is not None:
                    target.active = False
                    redo.append(target)
                    restore(target.setting)
                    if guards:
                        order_guard(changes, target.setting, base, t)
            case _:
                pass  # a distractor; an undo or redo under rules that ignore undo
        spec = dict(base)
        if rules.couplings:
            apply_couplings(spec)
        if guards:
            coupling_guard(changes, base, t)
            if rules.v2:
                applicability_guard(specs[-1], spec, turn, t)
        specs.append(spec)
    return specs


def _undo_target(
    turn: UndoLastTurn | UndoEarliestTurn | UndoRefTurn,
    t: int,
    changes: list[Change],
    base: dict[str, str],
    rules: Rules,
) -> Change | None:
    guards = rules.guards
    active = [c for c in changes if c.active]
    if not active:
        if guards:
            raise Invalid(t, f"{turn.op}: no change is in effect")
        return None
    match turn:
        case UndoRefTurn():
            return _undo_ref_target(turn.setting, t, active, changes, base, guards)
        case UndoEarliestTurn() if not rules.earliest_as_last:
            return _undo_earliest_target(turn.text, t, active, base, rules)
    target = active[-1]  # undo_last, or undo_earliest read as undo_last
    if guards:
        latest = max(active, key=lambda c: c.activated)
        if latest is not target:
            raise Invalid(
                t,
                f"undo_last: {target} was made last but {latest} was reactivated "
                "later, so 'the last change' has two readings",
            )
    return target


def _undo_earliest_target(
    text: str, t: int, active: list[Change], base: dict[str, str], rules: Rules
) -> Change:
    target = active[0]
    if rules.guards:
        for c in active[1:]:
            if c.setting == target.setting:
                raise Invalid(t, f"undo_earliest: {target} is shadowed by {c}")
        for cp in COUPLINGS:
            if cp.forced == target.setting and base[cp.trigger] == cp.when:
                raise Invalid(
                    t, f"undo_earliest: {target} is shadowed by the rule '{cp.text}'"
                )
        phrase = history_wording(text) if target.redone and rules.v2 else None
        if phrase is not None:
            raise Invalid(
                t,
                f"undo_earliest: the wording {phrase!r} speaks of undo history, but {target} "
                "has been undone and redone, so the turn reads two ways",
                since=2,
            )
    return target


def _undo_ref_target(
    setting: str,
    t: int,
    active: list[Change],
    changes: list[Change],
    base: dict[str, str],
    guards: bool,
) -> Change | None:
    hits = [c for c in active if c.setting == setting]
    if guards:
        if len(hits) != 1:
            raise Invalid(
                t,
                f"undo_ref: {len(hits)} changes in effect assign {setting}; exactly one must",
            )
        if setting in FORCED:
            for cp in COUPLINGS:
                if cp.forced == setting and base[cp.trigger] == cp.when:
                    src = source(changes, cp.trigger)
                    if src is not None:
                        raise Invalid(
                            t, f"undo_ref: {setting} is also forced by {src} ('{cp.text}')"
                        )
    return hits[-1] if hits else None


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
