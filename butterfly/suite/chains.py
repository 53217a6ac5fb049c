"""Chains of exact lengths for the ladder (butterfly-long, ``generate --lengths``): every op
mixed by weight, undo and references reaching far back, couplings switched on and off."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final

from butterfly.core.vocab import CHAIN_MIX
from butterfly.suite.builder import (
    COUPLING_PLAYS,
    HOOKS,
    Builder,
    GenerationError,
    Hook,
    Retry,
    build,
    need,
    scenario_seed,
)
from butterfly.suite.deep_chains import DepthPlan, asked_of, deep_enough
from oracle import MAX_TURNS, OPS, UNDO_OPS, Scenario

MIX_OPS: Final = (*OPS, "indirect", "coupling")


def parse_mix(text: str) -> dict[str, int]:
    """``set=3,undo_last=1,...`` -> op weights (unnamed ops get 0). Raises GenerationError."""
    mix: dict[str, int] = {}
    for part in text.split(","):
        op, _, weight = part.strip().partition("=")
        if op not in MIX_OPS:
            raise GenerationError(f"--ops: unknown op {op!r} (known: {', '.join(MIX_OPS)})")
        if not weight.isdigit():
            raise GenerationError(f"--ops: write {op}=W with a whole number W >= 0")
        mix[op] = int(weight)
    if not mix.get("set"):
        raise GenerationError("--ops: a chain needs set turns (set=W with W >= 1)")
    return mix


def _toggle_coupling(b: Builder) -> bool:
    """Switch a rule on (its trigger to the forcing value), or off when it is on."""
    for trigger, when, _forced in b.shuffled(COUPLING_PLAYS):
        if b.spec[trigger] != when:
            if b.set([trigger], value=when):
                return True
        elif (b.undo_ref(prefer_not_last=False) if b.rng.random() < 0.5 else False) or b.set(
            [trigger]
        ):
            return True
    return False


_CHAIN_HOOKS: Final[dict[str, Hook]] = {
    "undo_ref": Builder.undo_ref_far_back,
    "indirect": Builder.indirect,
    "coupling": _toggle_coupling,
}
"""Where a chain drafts a turn otherwise than the op's hook (``builder.HOOKS``)."""


def _chain_op(b: Builder, op: str) -> bool:
    return (_CHAIN_HOOKS.get(op) or HOOKS[op])(b)


def _chain_turn(b: Builder, mix: dict[str, int]) -> None:
    if b.plan is not None and b.plan.step(b):
        return
    ops = [op for op in MIX_OPS if mix.get(op, 0) > 0]
    weights = [mix[op] for op in ops]
    for _ in range(12):
        if _chain_op(b, b.rng.choices(ops, weights)[0]):
            return
    need(b.set() or b.distractor())


def _chain(b: Builder, length: int, mix: dict[str, int], asked: tuple[int, ...]) -> None:
    """Exactly ``length`` turns drawn from ``mix`` (the draw is retried unless: some undo or redo
    when the mix has them; from 10 turns, five different ops and a rule switched on; from 20
    turns, every op of the mix and a rule switched on and later off again), with the depth
    plan of a chain of 40 turns or more asked at ``asked`` (``suite.deep_chains``)."""
    b.plan = DepthPlan.of(length, asked, b.rng, release=bool(mix.get("undo_earliest")))
    need(b.set())
    while len(b.turns) < length:
        _chain_turn(b, mix)
    ops = {t["op"] for t in b.turns}
    if not ops & set(UNDO_OPS) and any(mix.get(op) for op in UNDO_OPS):
        raise Retry
    wanted = {op for op in OPS if mix.get(op)} | ({"set"} if mix.get("indirect") else set())
    if length >= 10 and len(ops) < min(5, len(wanted)):
        raise Retry
    if length >= 10 and mix.get("coupling") and not _switched_on(b.specs, length >= 20):
        raise Retry
    if length >= 20 and not wanted <= ops:
        raise Retry


def _switched_on(specs: list[dict[str, str]], and_off: bool) -> bool:
    """Some rule's trigger holds after some turn (and, with ``and_off``, no longer later)."""
    for trigger, when, _ in COUPLING_PLAYS:
        on = [s[trigger] == when for s in specs]
        if True in on and (not and_off or False in on[on.index(True):]):
            return True
    return False


Make = Callable[[random.Random], Builder]
"""Starts a candidate (``builder.build``'s ``make``; the code track's builder)."""


def generate_chain(length: int, seed: int, scenario_id: str,
                   mix: dict[str, int] | None = None, make: Make | None = None,
                   ask_at: Sequence[int] | None = None) -> Scenario:
    """One valid chain of exactly ``length`` turns from ``seed`` (category long_chain), deep
    enough at its ask points ``ask_at`` (and its last turn) for the depth guard."""
    if not 1 <= length <= MAX_TURNS:
        raise GenerationError(f"a chain has 1 to {MAX_TURNS} turns, not {length}")
    weights = dict(CHAIN_MIX if mix is None else mix)  # the default, which --help shows
    asked = asked_of(length, ask_at)
    return build(lambda b: _chain(b, length, weights, asked), seed, 50, "long_chain",
                 scenario_id, f"a valid {length}-turn chain",
                 keep=lambda s: deep_enough(s, asked), make=make)


def generate_chains(lengths: Sequence[int], per_length: int, seed: int, prefix: str = "long",
                    mix: dict[str, int] | None = None, make: Make | None = None,
                    ask_at: Sequence[int] | None = None) -> list[Scenario]:
    """``per_length`` chains of each length, asked at ``ask_at`` (the suite's default ask
    points; None: the last turn); ids ``{prefix}-{length:03d}-{nn}``."""
    if per_length < 1:
        raise GenerationError("a suite needs at least one chain per length")
    out = []
    for length in lengths:
        for i in range(1, per_length + 1):
            sseed = scenario_seed(seed, f"chain-{length}", i)
            out.append(generate_chain(length, sseed, f"{prefix}-{length:03d}-{i:02d}", mix,
                                      make, ask_at))
    return out


