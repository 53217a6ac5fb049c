"""Seeded, template-based scenario generators, one per category.

Determinism: every random draw comes from a ``random.Random`` seeded per scenario with a value
derived by SHA-256 from the suite seed, the category and the index, and every choice is made
over tuples in catalogue order, never over sets or dict views of unknown order. The same seed
gives byte-identical output on any machine and any PYTHONHASHSEED.

Only valid scenarios come out: every candidate turn is checked by the oracle on the partial
scenario, and beyond the contract's guards the generator keeps each turn discriminative (a set,
drop, undo or redo must change the spec; a distractor names a value not in force), and never
puts undo_last right after an undo or redo (where "undo that" could read as "redo").
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Final

from butterfly.suite.builder import (
    COUPLING_PLAYS,
    PLAIN,
    Builder,
    GenerationError,
    Retry,
    build,
    need,
    one_reading,
    render,
    scenario_seed,
)
from butterfly.suite.templates import DRAWN, FAMILIES, HISTORY_PARAPHRASES
from oracle import BY_KEY, CATEGORIES, KEYS, Scenario, Turn, check, replay
from oracle.ops import REGISTRY

GENERATOR_VERSION: Final = "4"
"""4 (contract v4): chains of 40 turns or more drawn deep (``suite.deep_chains``), and the output
format's one-reading description where a compression change is in effect (reading 7)."""

DEFAULT_COUNTS: Final[dict[str, int]] = {
    "undo_ref": 6,
    "undo_earliest": 6,
    "coupling": 6,
    "distractor": 5,
    "undo_last": 4,
    "drop": 4,
    "long_chain": 4,
    "redo": 3,
    "drop_undo": 1,
    "indirect_ref": 1,
}
"""The category counts of ``butterfly-40`` (contract section 2)."""

def _sets(b: Builder, low: int, high: int) -> None:
    """Between ``low`` and ``high`` sets of settings no rule involves."""
    for _ in range(b.rng.randint(low, high)):
        need(b.set(PLAIN))


def _maybe(b: Builder, p: float, hook: Callable[[], bool]) -> None:
    """With probability ``p``, a turn the scenario cannot do without once drawn."""
    if b.rng.random() < p:
        need(hook())


def _undo_ref(b: Builder) -> None:
    _sets(b, 2, 4)
    _maybe(b, 0.4, b.distractor)
    need(b.undo_ref())
    _maybe(b, 0.3, lambda: b.set(PLAIN))


def _undo_earliest(b: Builder) -> None:
    _sets(b, 2, 4)
    if b.rng.random() < 0.6:
        # Undo the earliest-made change first, so "still in effect" is what decides the target.
        need(b.undo_ref_of(b.turns[0]["setting"]))
        need(b.set(PLAIN))
    need(b.plain("undo_earliest"))


def _coupling(b: Builder) -> None:
    trigger, when, forced = b.rng.choice(COUPLING_PLAYS)
    pattern = b.rng.randrange(3)
    if pattern == 0:
        # an explicit value, overridden by a later trigger, then the trigger undone
        need(b.set([forced]))
        _maybe(b, 0.5, lambda: b.set(PLAIN))
        need(b.set([trigger], value=when))
        need(b.undo_ref(prefer_not_last=False) if b.rng.random() < 0.5 else b.plain("undo_last"))
    elif pattern == 1:
        # a trigger, other edits, the trigger undone by description
        need(b.set([trigger], value=when))
        need(b.set(PLAIN))
        need(b.undo_ref())
    else:
        # a trigger set; later the forced setting is explicitly set to the forced value
        need(b.set(PLAIN))
        need(b.set([trigger], value=when))
        _maybe(b, 0.5, b.distractor)
        need(b.set(PLAIN))


def _distractor(b: Builder) -> None:
    for _ in range(b.rng.randint(1, 3)):
        need(b.set(PLAIN))
        _maybe(b, 0.5, b.distractor)
    need(b.distractor())


def _undo_last(b: Builder) -> None:
    _sets(b, 1, 3)
    need(b.plain("undo_last"))
    _maybe(b, 0.4, lambda: b.set(PLAIN))


def _drop(b: Builder) -> None:
    _sets(b, 0, 2)
    need(b.drop(PLAIN))
    _maybe(b, 0.5, lambda: b.set(PLAIN))


def _long_chain(b: Builder) -> None:
    n = b.rng.randint(8, 10)
    need(b.set())
    while len(b.turns) < n:
        need(b.any_op())
    if not any(REGISTRY[t["op"]].kind == "undo" for t in b.turns):  # a redo alone is not enough
        raise Retry


def _redo(b: Builder) -> None:
    _sets(b, 2, 3)
    need(b.undo_ref() if b.rng.random() < 0.5 else b.plain("undo_last"))
    _maybe(b, 0.3, b.distractor)
    need(b.plain("redo"))


def _drop_undo(b: Builder) -> None:
    need(b.set(PLAIN))
    key = b.turns[0]["setting"] if b.rng.random() < 0.5 else None
    need(b.drop([key]) if key else b.drop(PLAIN))
    need(b.plain("undo_last"))


def _indirect_ref(b: Builder) -> None:
    if b.rng.random() < 0.5:
        # v2: an explicit output format, later matched to the input's (csv); moving the input
        # to a format without a delimiter would make the delimiter inapplicable
        need(b.set(["output_format"], value=b.rng.choice(("jsonl", "html", "markdown"))))
    else:
        need(b.set(["max_rows"], value=b.rng.choice(("1000", "10000"))))
    need(b.set(PLAIN))
    need(b.indirect())


RECIPES: Final[dict[str, Callable[[Builder], None]]] = {
    "undo_ref": _undo_ref,
    "undo_earliest": _undo_earliest,
    "coupling": _coupling,
    "distractor": _distractor,
    "undo_last": _undo_last,
    "drop": _drop,
    "long_chain": _long_chain,
    "redo": _redo,
    "drop_undo": _drop_undo,
    "indirect_ref": _indirect_ref,
}
"""The recipe of each category (the code track's generator reuses them on its builder)."""
assert tuple(RECIPES) == CATEGORIES


def generate_one(category: str, seed: int, scenario_id: str) -> Scenario:
    """One valid scenario of ``category`` from ``seed`` (deterministic)."""
    if category not in RECIPES:
        raise GenerationError(f"unknown category {category!r}")
    return build(RECIPES[category], seed, 200, category, scenario_id,
                 f"a valid {category} scenario")


def proportional_counts(n: int, base: dict[str, int] = DEFAULT_COUNTS) -> dict[str, int]:
    """Split ``n`` over the categories in ``base``'s proportions (largest remainder).

    Every category gets at least one scenario when ``n`` is at least the number of categories.
    """
    if n < 1:
        raise GenerationError("a suite needs at least one scenario")
    total = sum(base.values())
    floor = 1 if n >= len(base) else 0
    counts = {c: max(floor, n * k // total) for c, k in base.items()}
    rema = sorted(base, key=lambda c: (-(n * base[c] % total), CATEGORIES.index(c)))
    i = 0
    while sum(counts.values()) < n:
        counts[rema[i % len(rema)]] += 1
        i += 1
    while sum(counts.values()) > n:
        c = max(counts, key=lambda c: (counts[c], -CATEGORIES.index(c)))
        counts[c] -= 1
    return counts


def generate(counts: dict[str, int], seed: int, prefix: str = "gen") -> list[Scenario]:
    """Scenarios for each category in catalogue order; ids ``{prefix}-{category}-{nn}``."""
    return by_category(counts, seed, prefix, generate_one)


def by_category(counts: dict[str, int], seed: int, prefix: str,
                one: Callable[[str, int, str], Scenario], tag: str = "") -> list[Scenario]:
    """``counts[category]`` scenarios made by ``one(category, seed, id)`` for each category in
    catalogue order; ids ``{prefix}-{category}-{nn}``, seeds drawn from ``{tag}{category}``."""
    out: list[Scenario] = []
    for category in CATEGORIES:
        for i in range(1, counts.get(category, 0) + 1):
            sid = f"{prefix}-{category.replace('_', '-')}-{i:02d}"
            out.append(one(category, scenario_seed(seed, f"{tag}{category}", i), sid))
    return out


def _render(turn: dict[str, str], family: str, index: int, rng: random.Random,
            spec_before: dict[str, str]) -> str | None:
    """The text of ``turn`` in paraphrase ``family.index`` (same op, same arguments)."""
    if family == "distractor":
        template = FAMILIES[family][index]
        key = rng.choice(KEYS)
        s = BY_KEY[key]
        value = rng.choice([v for v in s.domain if v != spec_before[key]])
        return template.format(phrase=s.phrase(value), name=s.name)
    return render(f"{family}.{index}", turn, spec_before)


def _history_refused(scenario: Scenario) -> set[int]:
    """Indices of undo_earliest turns where a history-wording paraphrase would be invalid."""
    history = next(iter(sorted(HISTORY_PARAPHRASES)))
    family, _, idx = history.rpartition(".")
    out = set()
    for t, turn in enumerate(scenario.turns):
        if turn.op != "undo_earliest":
            continue
        probe = list(scenario.turns)
        probe[t] = turn.model_copy(update={"text": FAMILIES[family][int(idx)]})
        v = check(scenario.model_copy(update={"turns": tuple(probe)}), readings=False)
        if v is not None and v.turn == t + 1:
            out.add(t)
    return out


def paraphrase_variants(scenario: Scenario, k: int) -> list[Scenario]:
    """``k`` versions of a generated scenario: variant v re-words every turn with paraphrase
    ``(original index + v) mod family size`` of the same family (the drawn paraphrases only:
    ``templates.DRAWN``), then, as the generator does, with the one-reading paraphrase that
    stands in for it where a second reading would be triggered. Ops, arguments and so the
    oracle's answers are unchanged; ids are ``{id}.p{v}`` (variant 0 is the original wording)."""
    if scenario.source != "generated" or scenario.seed is None:
        raise GenerationError(f"{scenario.id}: only generated scenarios have paraphrase ids")
    specs = replay(scenario)
    in_effect_only = _history_refused(scenario)
    used: dict[int, set[int]] = {}
    return [
        _variant(scenario, random.Random(scenario.seed * 1009 + v), v, specs, in_effect_only,
                 used)
        for v in range(k)
    ]


def _variant(scenario: Scenario, rng: random.Random, v: int, specs: list[dict[str, str]],
             in_effect_only: set[int], used: dict[int, set[int]]) -> Scenario:
    turns: list[dict[str, str]] = []
    records: list[Turn] = []
    for t, turn in enumerate(scenario.turns):
        d = turn.model_dump(exclude_none=True)
        family, _, idx = (turn.paraphrase or "").rpartition(".")
        size = DRAWN[family]
        new = ((int(idx) if int(idx) < size else 0) + v) % size  # a stand-in rotates from 0
        if t in in_effect_only:
            # v2: this turn's target was undone and redone, so history wording ("hasn't
            # been undone yet") would read two ways; take the next in-effect paraphrase
            while f"{family}.{new}" in HISTORY_PARAPHRASES or new in used.get(t, ()):
                new = (new + 1) % size
            used.setdefault(t, set()).add(new)
        if v:  # variant 0 keeps the original wording
            d["text"] = _render(d, family, new, rng, specs[t]) or d["text"]
            d["paraphrase"] = f"{family}.{new}"
        worded = one_reading(scenario.initial, turns, records, d, specs[t])
        if worded is None:
            raise GenerationError(f"{scenario.id}.p{v}: turn {t + 1} has no wording with one "
                                  "reading")
        turns.append(worded[0])
        records.append(worded[1])
    return Scenario.model_validate(
        {**scenario.model_dump(exclude_none=True), "id": f"{scenario.id}.p{v}",
         "turns": tuple(turns)},
        strict=False,
    )


def generate_mixed(count: int, seed: int) -> list[Scenario]:
    """``butterfly generate --count N --seed S``: ``count`` scenarios in butterfly-40's
    proportions (ids ``sS-...``)."""
    return generate(proportional_counts(count), seed, prefix=f"s{seed}")
