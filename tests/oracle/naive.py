"""A deliberately naive second reading of the contract's replay semantics and validity guards.

Written from ``contract.md`` sections 1 and 2, not from ``oracle/replay.py``. Nothing is kept up
to date incrementally: the state is just the changes in the order they were made (each with its
setting, value, active flag and the time of its latest (re)activation) and the redo stack, and
after every turn the spec and every guard are recomputed from that full list.

The only things borrowed from the oracle are plain data: the catalogue (domains, couplings) and
the wording patterns (``DROP_REMOVAL`` / ``DROP_AMBIGUOUS`` for drops, ``HISTORY_WORDING`` for
undo-earliest), which the contract leaves to the implementation. The v2 list of settings that
stop applying is written out here again from the contract, not imported. (``oracle_outcome`` at
the end calls the oracle, for the comparison tests.)

``naive_replay`` returns the list of specs (index 0 = the initial spec) or the first violation as
``(turn, kind)``; ``kind`` is one of :data:`KINDS`. :func:`oracle_kind` maps the oracle's
human-readable reasons to the same codes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from oracle.catalogue import COUPLINGS, KEYS, SPEC_VALUES, UNSPECIFIED
from oracle.replay import (
    DROP_AMBIGUOUS,
    DROP_REMOVAL,
    HISTORY_WORDING,
    check,
    normalise_text,
    replay,
)

KINDS = (
    "initial_coupling",
    "drop_wording",
    "nothing_to_undo",
    "nothing_to_redo",
    "undo_last_ambiguous",
    "undo_ref_count",
    "undo_ref_forced",
    "undo_earliest_shadowed",
    "order_mismatch",
    "coupling_override",
    "undo_earliest_history",
    "inapplicable",
    *(f"reading_{n}" for n in range(1, 9)),
)

NOT_APPLICABLE = (
    # (setting, format setting, the format values under which it does NOT apply)
    ("delimiter", "input_format", ("json", "jsonl", "parquet", UNSPECIFIED)),
    ("header_row", "input_format", ("json", "jsonl", "parquet", UNSPECIFIED)),
    ("encoding", "output_format", ("parquet",)),
    ("line_endings", "output_format", ("parquet",)),
    ("quote_style", "output_format", ("parquet",)),
)
"""Contract v2: delimiter and header_row apply only while input_format is csv or tsv (so not
while it is unspecified either); encoding, line endings and quoting not while output is Parquet."""

INITIAL = -1
"""The made-order index of the initial spec: before every change."""


class Change(NamedTuple):
    setting: str
    value: str
    active: bool
    activated: int  # the clock tick of its latest (re)activation
    redone: bool = False  # reactivated by a redo at least once


class State(NamedTuple):
    initial: Mapping[str, str]
    changes: tuple[Change, ...]  # in the order made; the position is the made-order index
    redo: tuple[int, ...]  # made-order indices, top of the stack last
    clock: int


class Bad(NamedTuple):
    """A violated guard (returned, never raised)."""

    kind: str


# ---------------------------------------------------------------------------- spec, from scratch


def couple(spec: dict[str, str]) -> dict[str, str]:
    """A copy of ``spec`` with every coupling rule applied."""
    out = dict(spec)
    for c in COUPLINGS:
        if spec[c.trigger] == c.when:
            out[c.forced] = c.then
    return out


def uncoupled(state: State, order: str = "made") -> dict[str, str]:
    """The initial spec with every active change applied, in the order made or (re)activated."""
    spec = dict(state.initial)
    active = [c for c in state.changes if c.active]
    if order == "activated":
        active = sorted(active, key=lambda c: c.activated)
    for c in active:
        spec[c.setting] = c.value
    return spec


def spec_of(state: State, order: str = "made") -> dict[str, str]:
    return couple(uncoupled(state, order))


def visible(state: State, setting: str) -> int:
    """Made-order index of the active change whose assignment of ``setting`` is in effect."""
    found = INITIAL
    for i, c in enumerate(state.changes):
        if c.active and c.setting == setting:
            found = i
    return found


def active_indices(state: State) -> list[int]:
    return [i for i, c in enumerate(state.changes) if c.active]


# ---------------------------------------------------------------------------- guards


def drop_wording_ok(text: str) -> bool:
    low = normalise_text(text)
    says_removed = DROP_REMOVAL.search(low) is not None
    reads_as_value = DROP_AMBIGUOUS.search(low) is not None
    return says_removed and not reads_as_value


def shadowed(state: State, index: int) -> bool:
    """Is change ``index``'s assignment hidden in the current spec (by a later change or a rule)?"""
    setting = state.changes[index].setting
    if visible(state, setting) != index:
        return True
    spec = spec_of(state)
    return any(c.forced == setting and spec[c.trigger] == c.when for c in COUPLINGS)


def forced_by_a_change(state: State, setting: str) -> bool:
    """A rule forces ``setting`` now, and its trigger's value comes from an active change."""
    spec = spec_of(state)
    return any(
        c.forced == setting and spec[c.trigger] == c.when and visible(state, c.trigger) != INITIAL
        for c in COUPLINGS
    )


def not_applying(spec: Mapping[str, str]) -> set[str]:
    return {k for k, fmt, values in NOT_APPLICABLE if spec[fmt] in values}


def coupling_overrides(state: State) -> bool:
    """An explicit assignment in effect is overridden by a rule whose trigger was made before it."""
    base = uncoupled(state)
    for c in COUPLINGS:
        if base[c.trigger] != c.when or base[c.forced] == c.then:
            continue
        forced_at = visible(state, c.forced)
        if forced_at == INITIAL:
            continue  # not an explicit assignment
        if visible(state, c.trigger) < forced_at:
            return True
    return False


# ---------------------------------------------------------------------------- one turn


def start(initial: Mapping[str, str]) -> State | Bad:
    spec = {k: initial[k] for k in KEYS}
    if couple(spec) != spec:
        return Bad("initial_coupling")
    return State(spec, (), (), 0)


def _deactivate(state: State, i: int) -> State:
    c = state.changes[i]
    changes = (*state.changes[:i], c._replace(active=False), *state.changes[i + 1 :])
    return state._replace(changes=changes, redo=(*state.redo, i))


def step(state: State, turn: Mapping[str, Any]) -> State | Bad:
    """The state after one turn, or the guard it violates. ``turn`` is a plain dict."""
    before = state
    op = turn["op"]
    if op == "drop" and not drop_wording_ok(turn["text"]):
        return Bad("drop_wording")

    if op in ("set", "drop"):
        value = turn["value"] if op == "set" else UNSPECIFIED
        new = Change(turn["setting"], value, True, state.clock)
        state = State(state.initial, (*state.changes, new), (), state.clock + 1)
    elif op == "distractor":
        pass
    elif op == "redo":
        if not state.redo:
            return Bad("nothing_to_redo")
        i = state.redo[-1]
        c = state.changes[i]._replace(active=True, activated=state.clock, redone=True)
        changes = (*state.changes[:i], c, *state.changes[i + 1 :])
        state = State(state.initial, changes, state.redo[:-1], state.clock + 1)
    elif op in ("undo_last", "undo_earliest", "undo_ref"):
        active = active_indices(state)
        if not active:
            return Bad("nothing_to_undo")
        if op == "undo_last":
            target = max(active)
            latest = max(active, key=lambda i: state.changes[i].activated)
            if latest != target:
                return Bad("undo_last_ambiguous")
        elif op == "undo_earliest":
            target = min(active)
            if shadowed(state, target):
                return Bad("undo_earliest_shadowed")
            history = HISTORY_WORDING.search(normalise_text(turn["text"])) is not None
            if state.changes[target].redone and history:
                return Bad("undo_earliest_history")
        else:
            hits = [i for i in active if state.changes[i].setting == turn["setting"]]
            if len(hits) != 1:
                return Bad("undo_ref_count")
            if forced_by_a_change(state, turn["setting"]):
                return Bad("undo_ref_forced")
            target = hits[0]
        state = _deactivate(state, target)
    else:  # pragma: no cover - the records only allow the seven ops
        raise ValueError(f"unknown op {op!r}")

    if spec_of(state, "made") != spec_of(state, "activated"):
        return Bad("order_mismatch")
    if coupling_overrides(state):
        return Bad("coupling_override")
    if not_applying(spec_of(state)) - not_applying(spec_of(before)):
        return Bad("inapplicable")
    return state


# ---------------------------------------------------------------------------- whole scenarios


def turn_dicts(scenario: Any) -> tuple[Mapping[str, str], list[dict[str, Any]]]:
    """(initial, turns as plain dicts) from a Scenario, or from an already plain record dict."""
    record = scenario if isinstance(scenario, Mapping) else scenario.model_dump()
    return record["initial"], [dict(t) for t in record["turns"]]


def naive_replay(
    initial: Mapping[str, str], turns: Sequence[Mapping[str, Any]], readings: bool = True
) -> list[dict[str, str]] | tuple[int, str]:
    """The spec after every turn (index 0 = initial), or the first violation ``(turn, kind)``;
    ``readings``: also the v3 guard (``naive_readings``), after every other guard passed."""
    for k in KEYS:
        assert initial[k] in SPEC_VALUES[k], (k, initial[k])
    state = start(initial)
    if isinstance(state, Bad):
        return (0, state.kind)
    specs = [spec_of(state)]
    for t, turn in enumerate(turns, 1):
        nxt = step(state, turn)
        if isinstance(nxt, Bad):
            return (t, nxt.kind)
        state = nxt
        specs.append(spec_of(state))
    if readings:
        import naive_readings  # the readings replay with this module's couplings

        found = naive_readings.first_reading(initial, turns, specs)
        if found is not None:
            return found
    return specs


def naive(scenario: Any, readings: bool = True) -> list[dict[str, str]] | tuple[int, str]:
    return naive_replay(*turn_dicts(scenario), readings=readings)


# ---------------------------------------------------------------------------- the oracle's words

_REASONS = (
    ("the initial spec breaks a coupling rule", "initial_coupling"),
    ("a drop turn must say plainly", "drop_wording"),
    ("drop wording", "drop_wording"),
    ("nothing has been undone", "nothing_to_redo"),
    ("no change is in effect", "nothing_to_undo"),
    ("has two readings", "undo_last_ambiguous"),
    ("changes in effect assign", "undo_ref_count"),
    ("is also forced by", "undo_ref_forced"),
    ("is shadowed by", "undo_earliest_shadowed"),
    ("replayed in the order made", "order_mismatch"),
    ("contradicts the rule", "coupling_override"),
    ("speaks of undo history", "undo_earliest_history"),
    ("inapplicable", "inapplicable"),
)


def oracle_kind(reason: str) -> str:
    """The short code of an oracle violation reason (raises if the wording is unknown)."""
    reading = re.match(r"second reading (\d) \(", reason)
    if reading:
        return f"reading_{reading.group(1)}"
    hits = {kind for needle, kind in _REASONS if needle in reason}
    if len(hits) != 1:
        raise ValueError(f"cannot classify oracle reason {reason!r} (matches: {sorted(hits)})")
    return hits.pop()


def agreed_violation(scenario: Any) -> tuple[int, str] | None:
    """(turn, short code) of the oracle's first violation, or None, asserting that the naive
    twin says the same (the example-based tests' check)."""
    v = check(scenario)
    got = None if v is None else (v.turn, oracle_kind(v.reason))
    expected = naive(scenario)
    assert got == (expected if isinstance(expected, tuple) else None), scenario.to_json()
    return got


def oracle_outcome(scenario: Any) -> list[dict[str, str]] | tuple[int, str]:
    """The oracle's answer in the naive engine's shape: specs, or ``(turn, kind)``."""
    v = check(scenario)
    if v is not None:
        return (v.turn, oracle_kind(v.reason))
    return replay(scenario)
