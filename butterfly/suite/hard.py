"""The hard tier (butterfly-hard): the contract's hardest constructions, each scenario kept only
when every flawed scripted agent fails it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from butterfly.suite import builder
from butterfly.suite.builder import COUPLING_PLAYS, PLAIN, Builder, need
from oracle import COUPLINGS, Rules, Scenario, replay

FLAWED_AGENTS: Final[dict[str, Rules]] = {
    "last-edit": Rules(undo=False, guards=False),
    "lifo": Rules(earliest_as_last=True, guards=False),
    "no-coupling": Rules(couplings=False, guards=False),
}
"""The scripted flaws a hard scenario must defeat (the same rules as ``butterfly.core.agents``)."""


def defeated(scenario: Scenario) -> tuple[str, ...]:
    """The flawed agents whose final spec differs from the oracle's on ``scenario``."""
    final = replay(scenario)[-1]
    return tuple(a for a, rules in FLAWED_AGENTS.items() if replay(scenario, rules)[-1] != final)


def _fresh(b: Builder) -> list[str]:
    used = {t.get("setting") for t in b.turns}
    return [k for k in PLAIN if k not in used]


def _rule_on(b: Builder) -> bool:
    """Switch on a rule whose forced value is not already in force (so ignoring it shows)."""
    for trigger, when, forced in b.shuffled(COUPLING_PLAYS):
        then = next(c.then for c in COUPLINGS if c.forced == forced)
        if b.spec[trigger] != when and b.spec[forced] != then and b.set([trigger], value=when):
            return True
    return False


def _filler(b: Builder, k: int) -> None:
    for _ in range(k):
        r = b.rng.random()
        need((r < 0.2 and b.distractor()) or (r < 0.3 and b.drop(_fresh(b))) or b.set(_fresh(b)))


def _earliest_after_redo(b: Builder) -> None:
    n = b.rng.randint(3, 4)
    rule_at = b.rng.randrange(1, n + 1)
    for i in range(n + 1):
        need(_rule_on(b) if i == rule_at else b.set(_fresh(b)))
    first, second = b.turns[0]["setting"], b.turns[1]["setting"]
    for key in ((first, second) if b.rng.random() < 0.5 else (second, first)):
        need(b.undo_ref_of(key))
    need(b.plain("redo"))
    need(b.plain("redo"))
    _filler(b, b.rng.randint(0, 2))
    need(b.plain("undo_earliest"))


def _trigger_undone_later(b: Builder) -> None:
    trigger, when, forced = b.rng.choice(COUPLING_PLAYS)
    need(b.set([forced]))
    _filler(b, b.rng.randint(0, 1))
    need(b.set([trigger], value=when))
    _filler(b, b.rng.randint(2, 4))
    need(b.undo_ref(prefer_not_last=False) if b.turns[-1]["op"] != "set" or
          b.turns[-1]["setting"] != trigger else False)
    _filler(b, b.rng.randint(0, 1))
    need(b.plain("undo_earliest"))
    need(_rule_on(b))
    _filler(b, b.rng.randint(0, 1))


def _shadow_exposed(b: Builder) -> None:
    key = b.rng.choice(PLAIN)
    need(b.set([key]))
    _filler(b, b.rng.randint(1, 2))
    if b.rng.random() < 0.5:
        need(_rule_on(b))
    need(b.set([key]))  # shadows the first assignment
    need(b.plain("undo_last"))  # ... which is exposed again
    _filler(b, b.rng.randint(1, 2))
    if not any(s[t] == w for s in b.specs[-1:] for t, w, _ in COUPLING_PLAYS):
        need(_rule_on(b))
    need(b.plain("undo_earliest"))  # the exposed assignment, the earliest still in effect
    _filler(b, b.rng.randint(0, 1))


def _redo_three_deep(b: Builder) -> None:
    need(b.set(_fresh(b)))
    need(_rule_on(b))
    for _ in range(b.rng.randint(2, 3)):
        need(b.set(_fresh(b)))
    need(b.plain("undo_last"))
    need(b.undo_ref_far_back())
    need(b.plain("undo_earliest"))  # three undone changes on the redo stack
    for _ in range(b.rng.randint(2, 3)):
        need(b.plain("redo"))
    _filler(b, b.rng.randint(0, 1))
    need(b.plain("undo_earliest"))


def _far_reference(b: Builder) -> None:
    need(b.set(_fresh(b)))
    target = b.turns[0]["setting"]
    need(b.set(_fresh(b)))
    k = b.rng.randint(5, 8)
    rule_at = b.rng.randrange(k)
    for i in range(k):
        need(_rule_on(b)) if i == rule_at else _filler(b, 1)
    need(b.undo_ref_of(target))
    _filler(b, b.rng.randint(0, 1))
    need(b.plain("undo_earliest"))


_HARD: Final[dict[str, tuple[Callable[[Builder], None], str]]] = {
    "earliest-after-redo": (_earliest_after_redo, "undo_earliest"),
    "trigger-undone-later": (_trigger_undone_later, "coupling"),
    "shadow-exposed": (_shadow_exposed, "undo_last"),
    "redo-three-deep": (_redo_three_deep, "redo"),
    "far-reference": (_far_reference, "undo_ref"),
}
"""Each hard construction's recipe and the category its scenarios are recorded under."""
HARD_CONSTRUCTIONS: Final = tuple(_HARD)
"""The contract's hardest constructions, one recipe each (``butterfly-hard``: 8 of each)."""


def generate_hard_one(construction: str, seed: int, scenario_id: str) -> Scenario:
    """One scenario of a hard construction that defeats every flawed agent (its final spec
    differs from each one's); candidates that do not are drawn again."""
    recipe, category = _HARD[construction]
    return builder.build(recipe, seed, 300, category, scenario_id,
                         f"a hard {construction} scenario",
                         keep=lambda s: len(defeated(s)) == len(FLAWED_AGENTS))


def generate_hard(per_construction: int, seed: int, prefix: str = "hard") -> list[Scenario]:
    """``per_construction`` scenarios of each hard construction; ids ``{prefix}-{name}-{nn}``."""
    return [
        generate_hard_one(c, builder.scenario_seed(seed, f"hard-{c}", i), f"{prefix}-{c}-{i:02d}")
        for c in HARD_CONSTRUCTIONS
        for i in range(1, per_construction + 1)
    ]


