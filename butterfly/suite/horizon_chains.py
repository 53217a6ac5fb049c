"""Chains of thousands of edits whose op mix stays hard at every length (butterfly-horizon,
``generate --lengths ... --ask-at``; contract v3, section 2, and docs/ladder.md).

A chain drawn turn by turn from fixed op weights decays as it grows: once every setting has a
long history, the guards refuse most undos by description (two changes in effect assign the
setting) and most undos of the earliest change (it is shadowed), so what is left is sets,
undo-last and redo. This planner keeps the hard ops valid instead of hoping for them:

- at most one change in effect per setting: a new change goes to a setting that has none in
  effect (a *free* one), so an undo by description of any setting with a change in effect names
  exactly one change, and the earliest change in effect is never shadowed by a change;
- undo by description names, most often, the oldest change in effect (so references reach far
  back), worded with the one-reading paraphrases that say "still in effect" wherever the setting
  has a history (``templates.ONE_READING``);
- a redo brings back what was just undone, so a change can be undone and redone many times and
  an undo of it later reaches back to where it was made;
- the weights follow the state: fewer free settings, more undos; more, more new changes.

Every turn is still checked by the oracle as it is added (every guard, and no second reading
triggered), as for every generated suite. Each step reads the oracle's state of the settings
(twenty lists of the few changes in effect), so a chain costs time linear in its length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from butterfly.suite.builder import (
    COUPLING_PLAYS,
    HOOKS,
    PLAIN,
    Builder,
    GenerationError,
    Hook,
    build,
    need,
    scenario_seed,
)
from butterfly.suite.deep_chains import DepthPlan, asked_of, deep_enough
from oracle import ASKED_MAX_TURNS, Scenario

HORIZON_MIX: Final[dict[str, int]] = {
    "set": 18, "drop": 3, "distractor": 20, "undo_last": 3, "indirect": 2, "coupling": 4,
    "undo_ref": 24, "undo_earliest": 8, "redo": 36,
}
"""The planner's base weights (per 100 turns drawn); :func:`_weights` moves them with the
state. The hard ops (undo by description, undo earliest, redo) weigh 52: some are refused where
the guards or the state do not allow them, and what is drawn instead is a plain op."""

HARD_OPS: Final = ("undo_ref", "undo_earliest", "redo")
"""The ops the contract counts as hard at length (at least 30% of turns at every length)."""

OPENING: Final = 10
"""The first turns, where few changes exist yet: the hard ops weigh more there, so that the
first ten turns of a chain are as hard as the rest."""

FAR: Final = 0.8
"""How often an undo by description names the oldest change in effect that it can name (else
one drawn at random among them)."""


def _weights(b: Builder) -> dict[str, int]:
    """The base weights, moved by how many settings are free (have no change in effect), by
    the opening and by the redo stack (no redo weight when it is empty)."""
    free = len(_free(b))
    w = dict(HORIZON_MIX)
    if free <= 3:
        w["set"], w["drop"], w["indirect"] = 4, 0, 0
        w["undo_ref"] += 10
    elif free >= 10:
        w["set"] += 20
    if len(b.turns) < OPENING:
        w["undo_ref"], w["undo_earliest"], w["distractor"] = 60, 30, 5
    if not b.oracle.engine.redo:
        w["redo"] = 0
    return w


def _free(b: Builder) -> list[str]:
    """The settings a new change may go to: none of their changes is in effect."""
    live = b.oracle.engine.live
    return [k for k in b.keys if not live[k]]


def _set_free(b: Builder) -> bool:
    free = _free(b)
    return bool(free) and b.set(free)


def _drop_free(b: Builder) -> bool:
    free = [k for k in _free(b) if k in PLAIN]
    return bool(free) and b.drop(free)


def _indirect(b: Builder) -> bool:
    return b.indirect(keys=_free(b))


def _coupling(b: Builder) -> bool:
    """Switch a rule on (its trigger free), or off again by undoing its trigger's change."""
    live = b.oracle.engine.live
    for trigger, when, _forced in b.shuffled(COUPLING_PLAYS):
        if b.spec[trigger] != when:
            if not live[trigger] and b.set([trigger], value=when):
                return True
        elif len(live[trigger]) == 1 and b.undo_ref_of(trigger):
            return True
    return False


def _undo_ref(b: Builder) -> bool:
    """Undo by description a change in effect that is the only one of its setting: the oldest
    such change most often (far back), else one drawn at random."""
    live = b.oracle.engine.live
    single = sorted((hits[0].index, k) for k, hits in live.items() if len(hits) == 1)
    keys = [k for _, k in single]
    if b.rng.random() >= FAR:
        b.rng.shuffle(keys)
    return any(b.undo_ref_of(k) for k in keys[:4])


_HOOKS: Final[dict[str, Hook]] = {
    "set": _set_free,
    "drop": _drop_free,
    "indirect": _indirect,
    "coupling": _coupling,
    "undo_ref": _undo_ref,
    **{op: HOOKS[op] for op in ("distractor", "undo_last", "undo_earliest", "redo")},
}
"""The planner's hook per op of :data:`HORIZON_MIX` (the builder's where it draws as it does)."""


def _turn(b: Builder) -> None:
    """One turn: what the depth plan needs now, else an op drawn by the state's weights, then
    the others in a random order until one fits (a distractor always does)."""
    if b.plan is not None and b.plan.step(b):
        return
    w = _weights(b)
    ops = [op for op in w if w[op] > 0]
    first = b.rng.choices(ops, [w[op] for op in ops])[0]
    for op in (first, *b.shuffled(op for op in ops if op != first)):
        if _HOOKS[op](b):
            return
    need(b.distractor())


def _horizon(b: Builder, length: int, asked: tuple[int, ...]) -> None:
    b.plan = DepthPlan.of(length, asked, b.rng, shadow=False)
    need(_set_free(b))
    while len(b.turns) < length:
        _turn(b)


def generate_horizon_chain(length: int, seed: int, scenario_id: str,
                           ask_at: Sequence[int] | None = None) -> Scenario:
    """One valid chain of exactly ``length`` turns (1 to 10,000) from ``seed``, deep enough
    at its ask points ``ask_at`` (and its last turn) for the depth guard."""
    if not 1 <= length <= ASKED_MAX_TURNS:
        raise GenerationError(f"a chain has 1 to {ASKED_MAX_TURNS:,} turns, not {length}")
    asked = asked_of(length, ask_at)
    return build(lambda b: _horizon(b, length, asked), seed, TRIES, "long_chain",
                 scenario_id, f"a valid {length}-turn chain", keep=lambda s: deep_enough(s, asked))


TRIES: Final = 5
"""Candidates drawn for one chain before the generator gives up."""


def generate_horizon(lengths: Sequence[int], per_length: int, seed: int,
                     prefix: str = "horizon", ask_at: Sequence[int] | None = None
                     ) -> list[Scenario]:
    """``per_length`` chains of each length, asked at ``ask_at`` (the suite's default ask
    points); ids ``{prefix}-{length:05d}-{nn}``."""
    if per_length < 1:
        raise GenerationError("a suite needs at least one chain per length")
    return [
        generate_horizon_chain(n, scenario_seed(seed, f"horizon-{n}", i),
                               f"{prefix}-{n:05d}-{i:02d}", ask_at)
        for n in lengths for i in range(1, per_length + 1)
    ]
