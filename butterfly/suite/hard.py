"""The hard tier (butterfly-hard): the contract's hardest constructions, each scenario kept only
when every flawed scripted agent fails it."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Final

from butterfly.suite.builder import (
    _COUPLING_PLAYS,
    _PLAIN,
    GenerationError,
    _Builder,
    _finish,
    _need,
    _Retry,
    scenario_seed,
)
from butterfly.suite.chains import _far_back_undo_ref
from oracle import (
    BY_KEY,
    COUPLINGS,
    Rules,
    Scenario,
    canonical_initial,
    replay,
)

HARD_CONSTRUCTIONS: Final = (
    "earliest-after-redo",
    "trigger-undone-later",
    "shadow-exposed",
    "redo-three-deep",
    "far-reference",
)
"""The contract's hardest constructions, one recipe each (``butterfly-hard``: 8 of each)."""

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


def _fresh(b: _Builder) -> list[str]:
    used = {t.get("setting") for t in b.turns}
    return [k for k in _PLAIN if k not in used]


def _rule_on(b: _Builder) -> bool:
    """Switch on a rule whose forced value is not already in force (so ignoring it shows)."""
    plays = list(_COUPLING_PLAYS)
    b.rng.shuffle(plays)
    for trigger, when, forced in plays:
        then = next(c.then for c in COUPLINGS if c.forced == forced)
        if b.spec[trigger] != when and b.spec[forced] != then and b.set([trigger], value=when):
            return True
    return False


def _filler(b: _Builder, k: int) -> None:
    for _ in range(k):
        r = b.rng.random()
        _need((r < 0.2 and b.distractor()) or (r < 0.3 and b.drop(_fresh(b))) or b.set(_fresh(b)))


def _earliest_after_redo(b: _Builder) -> None:
    n = b.rng.randint(3, 4)
    rule_at = b.rng.randrange(1, n + 1)
    for i in range(n + 1):
        _need(_rule_on(b) if i == rule_at else b.set(_fresh(b)))
    first, second = b.turns[0]["setting"], b.turns[1]["setting"]
    for key in ((first, second) if b.rng.random() < 0.5 else (second, first)):
        text, para = b._text("undo_ref", description=BY_KEY[key].description)
        _need(b._try({"op": "undo_ref", "setting": key, "text": text, "paraphrase": para}))
    _need(b.plain("redo"))
    _need(b.plain("redo"))
    _filler(b, b.rng.randint(0, 2))
    _need(b.plain("undo_earliest"))


def _trigger_undone_later(b: _Builder) -> None:
    trigger, when, forced = b.rng.choice(_COUPLING_PLAYS)
    _need(b.set([forced]))
    _filler(b, b.rng.randint(0, 1))
    _need(b.set([trigger], value=when))
    _filler(b, b.rng.randint(2, 4))
    _need(b.undo_ref(prefer_not_last=False) if b.turns[-1]["op"] != "set" or
          b.turns[-1]["setting"] != trigger else False)
    _filler(b, b.rng.randint(0, 1))
    _need(b.plain("undo_earliest"))
    _need(_rule_on(b))
    _filler(b, b.rng.randint(0, 1))


def _shadow_exposed(b: _Builder) -> None:
    key = b.rng.choice(_PLAIN)
    _need(b.set([key]))
    _filler(b, b.rng.randint(1, 2))
    if b.rng.random() < 0.5:
        _need(_rule_on(b))
    _need(b.set([key]))  # shadows the first assignment
    _need(b.plain("undo_last"))  # ... which is exposed again
    _filler(b, b.rng.randint(1, 2))
    if not any(s[t] == w for s in b.specs[-1:] for t, w, _ in _COUPLING_PLAYS):
        _need(_rule_on(b))
    _need(b.plain("undo_earliest"))  # the exposed assignment, the earliest still in effect
    _filler(b, b.rng.randint(0, 1))


def _redo_three_deep(b: _Builder) -> None:
    _need(b.set(_fresh(b)))
    _need(_rule_on(b))
    for _ in range(b.rng.randint(2, 3)):
        _need(b.set(_fresh(b)))
    _need(b.plain("undo_last"))
    _need(_far_back_undo_ref(b))
    _need(b.plain("undo_earliest"))  # three undone changes on the redo stack
    for _ in range(b.rng.randint(2, 3)):
        _need(b.plain("redo"))
    _filler(b, b.rng.randint(0, 1))
    _need(b.plain("undo_earliest"))


def _far_reference(b: _Builder) -> None:
    _need(b.set(_fresh(b)))
    target = b.turns[0]["setting"]
    _need(b.set(_fresh(b)))
    k = b.rng.randint(5, 8)
    rule_at = b.rng.randrange(k)
    for i in range(k):
        _need(_rule_on(b)) if i == rule_at else _filler(b, 1)
    text, para = b._text("undo_ref", description=BY_KEY[target].description)
    _need(b._try({"op": "undo_ref", "setting": target, "text": text, "paraphrase": para}))
    _filler(b, b.rng.randint(0, 1))
    _need(b.plain("undo_earliest"))


_HARD: Final[dict[str, Callable[[_Builder], None]]] = {
    "earliest-after-redo": _earliest_after_redo,
    "trigger-undone-later": _trigger_undone_later,
    "shadow-exposed": _shadow_exposed,
    "redo-three-deep": _redo_three_deep,
    "far-reference": _far_reference,
}
assert tuple(_HARD) == HARD_CONSTRUCTIONS

_HARD_CATEGORY: Final = {
    "earliest-after-redo": "undo_earliest",
    "trigger-undone-later": "coupling",
    "shadow-exposed": "undo_last",
    "redo-three-deep": "redo",
    "far-reference": "undo_ref",
}


def generate_hard_one(construction: str, seed: int, scenario_id: str) -> Scenario:
    """One scenario of a hard construction that defeats every flawed agent (its final spec
    differs from each one's); candidates that do not are drawn again."""
    rng = random.Random(seed)
    for _ in range(300):
        b = _Builder(rng, canonical_initial())
        try:
            _HARD[construction](b)
        except _Retry:
            continue
        s = _finish(b, _HARD_CATEGORY[construction], seed, scenario_id)
        if len(defeated(s)) == len(FLAWED_AGENTS):
            return s
    raise GenerationError(f"could not build a hard {construction} scenario from seed {seed}")


def generate_hard(per_construction: int, seed: int, prefix: str = "hard") -> list[Scenario]:
    """``per_construction`` scenarios of each hard construction; ids ``{prefix}-{name}-{nn}``."""
    return [
        generate_hard_one(c, scenario_seed(seed, f"hard-{c}", i), f"{prefix}-{c}-{i:02d}")
        for c in HARD_CONSTRUCTIONS
        for i in range(1, per_construction + 1)
    ]


