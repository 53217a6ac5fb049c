"""Second readings (contract v3, section 2): the registry, the guard and the audit.

A scenario is valid only if every reading a careful reader could reasonably take gives the same
spec after every turn. The oracle's reading is the contract's; each :class:`Reading` here is
another way to take one turn, found by careful readers answering the frozen suites turn by turn.
A reading is triggered by the turn's words (a pattern over its text, so handwritten and users'
suites are checked too) together with its structure (what the turn does and what was done
before it). Validation replays the scenario with that one turn taken the other way
(:class:`oracle.ledger.Ledger`, no guards: what a reader does need not be valid) and rejects the
scenario when any spec differs from the oracle's.

A reading found later is one more entry of :data:`READINGS`. The generator asks
:func:`triggered_at` before it emits a wording, and words the turn another way when a reading is
triggered at all (stricter than the guard, which rejects only a reading that changes a spec).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Final, NamedTuple

from oracle.ledger import LINK, LINKED, Ledger
from oracle.ops import OPS, REGISTRY
from oracle.records import DropTurn, Scenario, SetTurn, Turn, UndoRefTurn


class Context(NamedTuple):
    """What decides whether a reading is triggered: the turn and what was done before it."""

    turn: Turn
    ledger: Ledger
    """The state before the turn (never mutated by a reading)."""
    previous_undo: str | None
    """The op of the last undo-or-redo turn before this one, if any."""
    text: str
    """The turn's text, normalised (:func:`normalise`) once for every reading."""
    previous_op: str | None = None
    """The op of the last turn before this one that was not a distractor, if any."""


Rewrite = Callable[[Ledger, Turn], bool]
"""Applies a second reading of the turn to a copy of the state before it; False when that
reading is, on this state, the oracle's own (nothing to replay)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """One second reading: when it is triggered, and what a reader who takes it does."""

    number: int
    name: str
    title: str
    ops: frozenset[str]
    """The ops it can concern (a cheap filter before its structure is looked at)."""
    words: re.Pattern[str]
    """The turn's text (lower case, plain apostrophes) must match this..."""
    one_reading: re.Pattern[str] | None
    """... and not this (wording that says which reading is meant)."""
    structure: Callable[[Context], bool]
    rewrites: tuple[Rewrite, ...]
    second: str
    """What a reader who takes the reading does, in a few words (for messages and docs)."""

    def triggered(self, ctx: Context) -> bool:
        if not self.structure(ctx) or self.words.search(ctx.text) is None:
            return False
        return self.one_reading is None or self.one_reading.search(ctx.text) is None


def normalise(text: str) -> str:
    """Lower case, typographic apostrophes made plain."""
    return text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")


def _setting(turn: Turn) -> str:
    match turn:
        case SetTurn(setting=setting) | DropTurn(setting=setting) | UndoRefTurn(setting=setting):
            return setting
    return ""


def _play(ledger: Ledger, turn: Turn) -> None:
    """One turn of the scenario as written (its op's ``reread``)."""
    REGISTRY[turn.op].reread(ledger, turn)


def _undo_family(turn: Turn) -> bool:
    return REGISTRY[turn.op].undo


# -------------------- 1. stacked redo


def _stacked(ctx: Context) -> bool:
    return ctx.turn.op == "redo" and ctx.previous_undo == "redo"


def _nothing(ledger: Ledger, turn: Turn) -> bool:
    return True


# -------------------- 2. undo by description with a history


def _history(ctx: Context) -> bool:
    return ctx.turn.op == "undo_ref" and len(ctx.ledger.changes_to(_setting(ctx.turn))) >= 2


def _most_recent_change(ledger: Ledger, turn: Turn) -> bool:
    """The most recent change to the setting is the one meant: nothing, if it is undone."""
    latest = ledger.changes_to(_setting(turn))[-1]
    return not ledger.active[latest]  # active: the oracle's target, the one change in effect


def _original_value(ledger: Ledger, turn: Turn) -> bool:
    """"Back to the original value": every change to the setting in effect is undone. The
    undo_ref guard (exactly one change in effect assigns the setting) makes this the oracle's
    own reading today; it stays in the registry so that a change of that guard is caught."""
    hits = list(ledger.in_effect(_setting(turn)))
    if len(hits) == 1:
        return False
    for i in hits:
        ledger.deactivate(i)
    return True


# -------------------- 3. an undo worded as an edit


def _is_undo_ref(ctx: Context) -> bool:
    return ctx.turn.op == "undo_ref"


def _as_new_change(ledger: Ledger, turn: Turn) -> bool:
    """The outcome the words describe, made as a new change (which clears the redo stack and
    takes a new place in the order of changes)."""
    after = ledger.copy()
    after.undo_ref(_setting(turn))
    ledger.add(_setting(turn), after.base[_setting(turn)])
    return True


# -------------------- 4. replacing "instead"


def _edit_after_another(ctx: Context) -> bool:
    return ctx.turn.op in ("set", "drop") and ctx.ledger.last_active() is not None


def _replaces_last(ledger: Ledger, turn: Turn) -> bool:
    """The most recent change in effect is taken back and replaced by this one."""
    last = ledger.last_active()
    if last is not None:
        ledger.deactivate(last)
    _play(ledger, turn)
    return True


# -------------------- 5. standing link


def _output_set(ctx: Context) -> bool:
    return ctx.turn.op == "set" and _setting(ctx.turn) == LINKED[0]


def _link(ledger: Ledger, turn: Turn) -> bool:
    """The output follows the input while this change is in effect."""
    ledger.add(LINKED[0], LINK)
    return True


# -------------------- 6. the earliest change after a redo


def _orders_disagree(ctx: Context) -> bool:
    ledger = ctx.ledger
    return (ctx.turn.op == "undo_earliest"
            and ledger.earliest_active() != ledger.longest_in_effect())


def _longest_in_effect(ledger: Ledger, turn: Turn) -> bool:
    """The change that has been in effect longest (since it was made or brought back)."""
    i = ledger.longest_in_effect()
    if i is not None:
        ledger.deactivate(i)
    return True


# -------------------- 7. what kind of files the tool writes


def _output_kind(ctx: Context) -> bool:
    return (ctx.turn.op == "undo_ref" and _setting(ctx.turn) == "output_format"
            and bool(ctx.ledger.changes_to("compression")))


def _undo_compression(ledger: Ledger, turn: Turn) -> bool:
    """The compression change is the one meant (gzip also changes what kind of files the tool
    writes), not the output format's: the one in effect is undone, or, when it is already
    undone, nothing changes."""
    hits = list(ledger.in_effect("compression"))
    if hits:
        ledger.deactivate(hits[-1])
    return True


# -------------------- 8. an undo of the last change right after an undo


def _after_an_undo(ctx: Context) -> bool:
    return ctx.turn.op == "undo_last" and ctx.previous_op is not None and (
        REGISTRY[ctx.previous_op].kind == "undo")


def _undo_the_undo(ledger: Ledger, turn: Turn) -> bool:
    """The undo just made is what is taken back: the change it undid comes back."""
    ledger.do_redo()
    return True


READINGS: Final[tuple[Reading, ...]] = (
    Reading(
        1, "stacked-redo", "a redo right after a redo, worded as the change just undone",
        frozenset({"redo"}),
        re.compile(
            r"\b(?:just|most recently|last) (?:undid|undone|reverted|rolled back|took back"
            r"|taken back|scratched)\b|\b(?:undid|undone|reverted|rolled back|took back"
            r"|taken back) (?:most recently|last|just now)\b"
        ),
        None, _stacked, (_nothing,),
        "nothing changes: the change just undone is already back",
    ),
    Reading(
        2, "undo-ref-history", "an undo by description of a setting changed more than once",
        frozenset({"undo_ref"}),
        re.compile(r"\S"),  # any wording that does not say which change is meant:
        re.compile(r"\bstill in effect\b|\bstill active\b|\bstill stands\b"),
        _history, (_most_recent_change, _original_value),
        "the most recent change to that setting is undone (nothing, if it already is), "
        "or the setting goes back to its original value",
    ),
    Reading(
        3, "undo-as-edit", "an undo by description worded as the outcome",
        frozenset({"undo_ref"}),
        re.compile(
            r"\bback the way it was\b|\bback to (?:what|how) it was\b|\bthe way it was before\b"
            r"|\bback to (?:its|the) (?:original|previous|old|earlier)\b"
            r"|\bkeep the original\b|\brestore (?:the )?(?:original|previous)\b"
        ),
        None, _is_undo_ref, (_as_new_change,),
        "a new change that sets that value (it clears what redo could bring back and takes a "
        "new place in the order of changes)",
    ),
    Reading(
        4, "replacing-instead", 'a set or drop worded "instead", "on second thought" or '
        '"actually" while another change is in effect',
        frozenset({"set", "drop"}),
        re.compile(r"\binstead\b|\bon second thoughts?\b|\bactually\b"),
        re.compile(r"\binstead of\b(?!\s+(?:that|this|it)\b)"),
        _edit_after_another, (_replaces_last,),
        "the most recent change in effect is taken back and replaced by this one",
    ),
    Reading(
        5, "standing-link", "an indirect reference to the input format",
        frozenset({"set"}),
        re.compile(
            r"\bsame format\b|\bwhatever (?:format|the input)\b|\bmatch(?:es|ing)? the input\b"
            r"|\bformat (?:as|of) the input\b|\bthe input'?s format\b"
        ),
        re.compile(r"\bright now\b|\bcurrently\b|\bat the moment\b|\bis now\b|\bonce\b"),
        _output_set, (_link,),
        "the output keeps following the input while this change is in effect",
    ),
    Reading(
        6, "earliest-after-redo", "an undo of the earliest change when a redo brought back a "
        "change made before one that has been in effect longer",
        frozenset({"undo_earliest"}),
        re.compile(r"\S"),  # any wording that does not say "made":
        re.compile(r"\bmade\b"),
        _orders_disagree, (_longest_in_effect,),
        "the change that has been in effect longest is undone (a redo counted as making it "
        "anew)",
    ),
    Reading(
        7, "output-kind", "an undo of the output format worded as what kind of files the tool "
        "writes, once a compression change has been made",
        frozenset({"undo_ref"}),
        re.compile(r"\bkinds? of (?:output )?files?\b(?! (?:the tool|it) reads)"),
        re.compile(r"\bformat\b"),
        _output_kind, (_undo_compression,),
        "the compression change is the one meant (compressing also changes what kind of files "
        "the tool writes): undone, or nothing if it is already",
    ),
    Reading(
        8, "undo-last-after-an-undo", "an undo of the last change right after an undo",
        frozenset({"undo_last"}),
        re.compile(r"\S"),  # any wording that does not say the change is still in effect:
        re.compile(r"\bstill in effect\b"),
        _after_an_undo, (_undo_the_undo,),
        "the undo just made is taken back: the change it undid comes back",
    ),
)
"""The registry: the contract's five in its order (the numbers are its list's), then the ones
careful readers found in the frozen suites (6 in v3, 7 and 8 in v4: ``docs/readings.md``)."""

BY_NAME: Final = {r.name: r for r in READINGS}


# ---------------------------------------------------------------------------- walking a scenario


def contexts(initial: dict[str, str], turns: Sequence[Turn]) -> Iterator[tuple[int, Context]]:
    """(turn number, context) for every turn, the state kept by one ledger: a context's ledger
    is the state before its turn only until the iteration goes on (it is then updated)."""
    ledger = Ledger(initial)
    previous: str | None = None
    last: str | None = None
    for t, turn in enumerate(turns, 1):
        yield t, Context(turn, ledger, previous, normalise(turn.text), last)
        _play(ledger, turn)
        if _undo_family(turn):
            previous = turn.op
        last = _last_op(last, turn)


_BY_OP: Final = {op: tuple(r for r in READINGS if op in r.ops) for op in OPS}
"""Op -> the readings that can trigger on it (an op no reading names has none)."""


def triggered(ctx: Context) -> tuple[Reading, ...]:
    """The readings this turn's words and structure trigger."""
    return tuple(r for r in _BY_OP.get(ctx.turn.op, ()) if r.triggered(ctx))


def triggered_at(initial: dict[str, str], before: Sequence[Turn], turn: Turn
                 ) -> tuple[Reading, ...]:
    """The readings ``turn`` would trigger after the turns ``before`` (for the generator)."""
    _, ctx = next(islice(contexts(initial, [*before, turn]), len(before), None))
    return triggered(ctx)


def _last_op(last: str | None, turn: Turn) -> str | None:
    """The op of the last turn that was not a distractor, once ``turn`` is played."""
    return last if REGISTRY[turn.op].kind == "none" else turn.op


class Difference(NamedTuple):
    """A second reading that changes the spec: where it is triggered and where it shows."""

    reading: Reading
    turn: int
    """The turn that reads two ways."""
    shows: int
    """The first turn whose spec differs."""
    setting: str
    oracle: str
    second: str

    def reason(self) -> str:
        r = self.reading
        return (f"second reading {r.number} ({r.name}, {r.title}): read as '{r.second}', "
                f"{self.setting} would be {self.second} where the oracle has {self.oracle} "
                f"after turn {self.shows}")


def differences(scenario: Scenario, specs: Sequence[dict[str, str]]) -> Iterator[Difference]:
    """Every (turn, reading) whose second reading changes some spec, in turn order, then in
    the registry's; ``specs`` is the oracle's replay of ``scenario``."""
    turns = scenario.turns
    for t, ctx in contexts(scenario.initial, turns):
        for reading in triggered(ctx):
            for rewrite in reading.rewrites:
                diff = _replay_from(ctx, rewrite, turns, t, specs)
                if diff is not None:
                    yield Difference(reading, t, *diff)
                    break


def _replay_from(ctx: Context, rewrite: Rewrite, turns: Sequence[Turn], t: int,
                 specs: Sequence[dict[str, str]]) -> tuple[int, str, str, str] | None:
    """Replay from turn ``t`` with the turn rewritten; the first spec that differs."""
    ledger = ctx.ledger.copy()
    if not rewrite(ledger, ctx.turn):
        return None
    u = t
    while True:
        spec, want = ledger.spec(), specs[u]
        if spec != want:
            key = next(k for k in want if spec[k] != want[k])
            return u, key, want[key], spec[key]
        if u == len(turns):
            return None
        turn = turns[u]
        _play(ledger, turn)
        u += 1


def first_difference(scenario: Scenario, specs: Sequence[dict[str, str]]) -> Difference | None:
    """The first second reading that changes a spec (the v3 guard), or None."""
    return next(differences(scenario, specs), None)


class Tally(NamedTuple):
    """What one reading would change in a suite (``butterfly validate --readings``)."""

    reading: Reading
    scenarios: int
    """Scenarios where the reading changes some spec."""
    turns: int
    """Turns whose second reading changes some spec."""
    triggered: int
    """Turns whose words and structure trigger the reading (changing a spec or not)."""


def audit(replayed: Iterable[tuple[Scenario, Sequence[dict[str, str]]]]) -> list[Tally]:
    """Per reading of the registry, what it would change over ``(scenario, oracle specs)``."""
    counts = {r.name: [0, 0, 0] for r in READINGS}
    for scenario, specs in replayed:
        for _, ctx in contexts(scenario.initial, scenario.turns):
            for r in triggered(ctx):
                counts[r.name][2] += 1
        hit = set()
        for d in differences(scenario, specs):
            counts[d.reading.name][1] += 1
            hit.add(d.reading.name)
        for name in hit:
            counts[name][0] += 1
    return [Tally(r, *counts[r.name]) for r in READINGS]


__all__ = [
    "BY_NAME",
    "READINGS",
    "Context",
    "Difference",
    "Reading",
    "Tally",
    "audit",
    "contexts",
    "differences",
    "first_difference",
    "normalise",
    "triggered",
    "triggered_at",
]
