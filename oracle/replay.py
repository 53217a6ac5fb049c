"""Replay: the exact spec after every turn, and the validity guards.

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
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from oracle.catalogue import (
    COUPLINGS,
    FORCED,
    TRIGGERS,
    UNSPECIFIED,
    apply_couplings,
    inapplicable,
)
from oracle.readings import first_difference
from oracle.records import Scenario, Turn

DROP_REMOVAL: Final = re.compile(
    r"\bunspecified\b"
    r"|\b(?:remove|drop|delete|lift|take out|taking out)\b.*\brequirements?\b"
    r"|\brequirements?\b.*\b(?:removed|dropped|deleted|lifted|gone)\b"
    r"|\bno (?:longer (?:have |has |need |needs )?(?:a |any )?)?requirements?\b"
    r"|\bout of\b.*\brequirements?\b|\brequirements?\b.*\bout of\b"
)
"""A drop turn must say plainly that the requirement is removed (or the setting unspecified)."""

DROP_AMBIGUOUS: Final = re.compile(
    r"\bnone\b|\bno limits?\b|\bunlimited\b|\bdo(?:n't| not) care\b"
    r"|\bdo(?:es)?(?:n't| not) matter\b|\bno longer matters?\b"
    r"|\b(?:turn|switch)(?:s|ed|ing)?(?: it| that| this| them)? off\b"
    r"|\bdisabl\w*|\bdeactivat\w*|\bget(?:s|ting)? rid of\b"
)
"""Wording that also reads as setting a value (``none``, ``off``), so a drop may not use it."""

DROP_AMBIGUOUS_EXAMPLES: Final = (
    "none", "no limit", "unlimited", "don't care", "do not care", "doesn't matter",
    "does not matter", "no longer matters", "turn off", "switched off", "disable", "disabled",
    "deactivate", "get rid of",
)
"""Phrases the ambiguity pattern must catch (tested); documentation as much as data."""


HISTORY_WORDING: Final = re.compile(
    r"\b(?:undone|undid|un-done|reverted|rolled back|taken back|backed out|retracted"
    r"|withdrawn|cancell?ed)\b"
)
"""Undo-earliest wording that speaks of undo history ("not undone yet", "never undone",
"hasn't been undone") rather than of what is in effect: a past form of an undo verb. After its
target was undone and redone such a turn has a second reading, so it is then invalid."""

HISTORY_WORDING_EXAMPLES: Final = (
    "not undone yet", "never undone", "hasn't been undone", "that I haven't reverted",
    "not rolled back", "never taken back", "I undid",
)
"""Phrases the history pattern must catch (tested)."""


def history_wording(text: str) -> str | None:
    """The phrase of ``text`` that speaks of undo history, or None."""
    m = HISTORY_WORDING.search(normalise_text(text))
    return None if m is None else m.group(0)


def normalise_text(text: str) -> str:
    """Lower case, typographic apostrophes and quotes made plain, for the wording guards."""
    return text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")


def drop_wording_problem(text: str) -> str | None:
    """Why ``text`` is not a plain drop, or None if it is."""
    low = normalise_text(text)
    if not DROP_REMOVAL.search(low):
        return ("a drop turn must say plainly that the requirement is removed "
                "(e.g. 'remove the requirement on ...', '... unspecified')")
    m = DROP_AMBIGUOUS.search(low)
    if m:
        return f"drop wording {m.group(0)!r} also reads as a value, not as removal"
    return None


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


class _Change:
    __slots__ = ("activated", "active", "index", "redone", "setting", "turn", "value")

    def __init__(self, index: int, turn: int, setting: str, value: str, activated: int) -> None:
        self.index = index
        self.turn = turn
        self.setting = setting
        self.value = value
        self.active = True
        self.activated = activated
        self.redone = False

    def __str__(self) -> str:
        return f"the change of turn {self.turn} ({self.setting} := {self.value})"


class _Invalid(Exception):
    def __init__(self, turn: int, reason: str, since: int = 1) -> None:
        self.turn = turn
        self.reason = reason
        self.since = since


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
    except _Invalid as e:
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
    except _Invalid as e:
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
        setting = getattr(turn, "setting", None)
        if setting is None:
            continue
        out.add(setting)
        for c in COUPLINGS:
            if c.trigger == setting:
                out.add(c.forced)
    return frozenset(out)


def _text_guard(turn: Turn, t: int) -> None:
    if turn.op == "drop":
        problem = drop_wording_problem(turn.text)
        if problem is not None:
            raise _Invalid(t, problem)


def _replay(
    initial: dict[str, str], turns: Sequence[Turn], rules: Rules
) -> list[dict[str, str]]:
    guards = rules.guards
    if guards and apply_couplings(dict(initial)) != initial:
        raise _Invalid(0, "the initial spec breaks a coupling rule")
    base = dict(initial)  # the spec before couplings, active changes applied in order made
    changes: list[_Change] = []
    redo: list[_Change] = []
    seq = 0  # activation sequence counter
    specs = [dict(initial)]

    def restore(setting: str) -> None:
        value = initial[setting]
        for c in changes:
            if c.active and c.setting == setting:
                value = c.value
        base[setting] = value

    for t, turn in enumerate(turns, 1):
        op = turn.op
        if guards:
            _text_guard(turn, t)
        if op == "set" or op == "drop":
            setting = turn.setting  # type: ignore[union-attr]
            value = turn.value if op == "set" else UNSPECIFIED  # type: ignore[union-attr]
            changes.append(_Change(len(changes), t, setting, value, seq))
            seq += 1
            redo.clear()
            base[setting] = value
        elif op == "distractor" or not rules.undo:
            pass
        elif op == "redo":
            if not redo:
                if guards:
                    raise _Invalid(t, "redo: nothing has been undone since the last change")
            else:
                c = redo.pop()
                c.active = True
                c.activated = seq
                c.redone = True
                seq += 1
                restore(c.setting)
                if guards:
                    _order_guard(changes, c.setting, base, t)
        else:
            target = _undo_target(turn, t, changes, base, rules)
            if target is not None:
                target.active = False
                redo.append(target)
                restore(target.setting)
                if guards:
                    _order_guard(changes, target.setting, base, t)
        spec = dict(base)
        if rules.couplings:
            apply_couplings(spec)
        if guards:
            _coupling_guard(changes, base, t)
            if rules.v2:
                _applicability_guard(specs[-1], spec, turn, t)
        specs.append(spec)
    return specs


def _undo_target(
    turn: Turn, t: int, changes: list[_Change], base: dict[str, str], rules: Rules
) -> _Change | None:
    op = turn.op
    guards = rules.guards
    active = [c for c in changes if c.active]
    if not active:
        if guards:
            raise _Invalid(t, f"{op}: no change is in effect")
        return None
    if op == "undo_last" or (op == "undo_earliest" and rules.earliest_as_last):
        target = active[-1]
        if guards:
            latest = max(active, key=lambda c: c.activated)
            if latest is not target:
                raise _Invalid(
                    t,
                    f"undo_last: {target} was made last but {latest} was reactivated "
                    "later, so 'the last change' has two readings",
                )
        return target
    if op == "undo_earliest":
        target = active[0]
        if guards:
            for c in active[1:]:
                if c.setting == target.setting:
                    raise _Invalid(t, f"undo_earliest: {target} is shadowed by {c}")
            for cp in COUPLINGS:
                if cp.forced == target.setting and base[cp.trigger] == cp.when:
                    raise _Invalid(
                        t, f"undo_earliest: {target} is shadowed by the rule '{cp.text}'"
                    )
            phrase = history_wording(turn.text) if target.redone and rules.v2 else None
            if phrase is not None:
                raise _Invalid(
                    t,
                    f"undo_earliest: the wording {phrase!r} speaks of undo history, but {target} "
                    "has been undone and redone, so the turn reads two ways",
                    since=2,
                )
        return target
    # undo_ref
    setting = turn.setting  # type: ignore[union-attr]
    hits = [c for c in active if c.setting == setting]
    if guards:
        if len(hits) != 1:
            raise _Invalid(
                t,
                f"undo_ref: {len(hits)} changes in effect assign {setting}; exactly one must",
            )
        if setting in FORCED:
            for cp in COUPLINGS:
                if cp.forced == setting and base[cp.trigger] == cp.when:
                    src = _source(changes, cp.trigger)
                    if src is not None:
                        raise _Invalid(
                            t, f"undo_ref: {setting} is also forced by {src} ('{cp.text}')"
                        )
    return hits[-1] if hits else None


def _source(changes: list[_Change], setting: str) -> _Change | None:
    """The active change whose assignment of ``setting`` is visible, or None (initial spec)."""
    src = None
    for c in changes:
        if c.active and c.setting == setting:
            src = c
    return src


def _order_guard(changes: list[_Change], setting: str, base: dict[str, str], t: int) -> None:
    """Replaying in order made and in order (re)activated must agree on ``setting``."""
    latest: _Change | None = None
    for c in changes:
        if c.active and c.setting == setting and (latest is None or c.activated > latest.activated):
            latest = c
    if latest is not None and latest.value != base[setting]:
        raise _Invalid(
            t,
            f"{setting} differs when active changes are replayed in the order made "
            f"({base[setting]}) and in the order (re)activated ({latest.value})",
        )


def _applicability_guard(
    before: dict[str, str], after: dict[str, str], turn: Turn, t: int
) -> None:
    """No turn may make a setting of the declared list inapplicable that applied before it."""
    was = inapplicable(before)
    for key, why in inapplicable(after).items():
        if key not in was:
            raise _Invalid(
                t,
                f"{turn.op} makes {key} inapplicable ({why.on} becomes {after[why.on]}; "
                f"{why.text}), an undeclared coupling a reader may apply",
                since=2,
            )


def _coupling_guard(changes: list[_Change], base: dict[str, str], t: int) -> None:
    """No explicit assignment may be overridden by a rule whose trigger was made before it."""
    for cp in COUPLINGS:
        if base[cp.trigger] != cp.when or base[cp.forced] == cp.then:
            continue
        forced_src = _source(changes, cp.forced)
        if forced_src is None:
            continue  # the initial value, overridden by a later trigger: allowed
        trigger_src = _source(changes, cp.trigger)
        if trigger_src is None or trigger_src.index < forced_src.index:
            made = "the initial spec" if trigger_src is None else str(trigger_src)
            raise _Invalid(
                t,
                f"{forced_src} contradicts the rule '{cp.text}', whose trigger ({made}) "
                "was made before it",
            )


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
    "played_before_v2",
    "replay",
    "targeted",
]
