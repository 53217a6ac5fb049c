"""The code track's generator (contract section 7, "Suites"; docs/code-track.md, "The suite").

A code scenario is an oracle :class:`~oracle.Scenario` like any other (one ``Spec`` type, all
twenty settings), drawn over the code catalogue (``butterfly.core.code_catalogue``): every turn
targets, and every wording names, only the fourteen code settings and their code values (no
parquet, no zstd); the six settings outside it stay at their canonical initial values; there
are no drop turns (a program has no ``unspecified`` behaviour). The recipes are the spec
track's (``generate.RECIPES``, ``chains``), played on a :class:`CodeBuilder`, which skips
every setting, value and op outside the code catalogue; each scenario is led by a few more sets,
so that it sits toward the upper end of its category's length (long chains of 14 to 18 turns).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final

from butterfly.core.code_catalogue import DOMAINS as CODE_DOMAINS
from butterfly.core.code_catalogue import KEYS as CODE_KEYS
from butterfly.core.vocab import CHAIN_MIX
from butterfly.suite.builder import (
    PLAIN,
    Builder,
    GenerationError,
    Retry,
    build,
    need,
)
from butterfly.suite.chains import generate_chains
from butterfly.suite.generate import RECIPES, by_category, proportional_counts
from oracle import Scenario, canonical_initial

CODE_COUNTS: Final[dict[str, int]] = {
    "undo_ref": 8,
    "undo_earliest": 8,
    "coupling": 7,
    "distractor": 5,
    "undo_last": 4,
    "long_chain": 4,
    "redo": 3,
    "indirect_ref": 1,
}
"""``butterfly-code``'s category counts: butterfly-40's without its drop categories (drop 4,
drop_undo 1), whose five scenarios go to undo_ref (+2), undo_earliest (+2) and coupling (+1)."""

SHORT_TURNS: Final = (6, 10)
"""The turns of a scenario of any category but long_chain (butterfly-40's limit is 10)."""
LONG_TURNS: Final = (14, 18)
"""The turns of a long chain of the code track."""
CODE_MAX_TURNS: Final = 20
"""``butterfly-code``'s turn limit (its manifest's ``max_turns``)."""

CODE_PLAIN: Final = tuple(k for k in PLAIN if k in CODE_KEYS)
"""The code settings no coupling rule involves."""
CODE_CHAIN_MIX: Final[dict[str, int]] = {op: w for op, w in CHAIN_MIX.items() if op != "drop"}
"""``generate --track code --lengths``'s default op weights: the spec track's without drop."""


def code_initial() -> dict[str, str]:
    """The initial spec of every code scenario: the canonical one, but CSV output (JSON output
    would hide the quoting and the null marker from every run until a turn changed it)."""
    return {**canonical_initial(), "output_format": "csv"}


class CodeBuilder(Builder):
    """A :class:`Builder` over the code catalogue: no drop turns, code values only."""

    keys = CODE_KEYS
    drops = False

    def domain(self, key: str) -> tuple[str, ...]:
        return CODE_DOMAINS[key]


def start(rng: random.Random) -> Builder:
    """A code candidate (``builder.build``'s ``make``)."""
    return CodeBuilder(rng, code_initial())


def _lead(b: Builder, low: int, high: int) -> None:
    """``low`` to ``high`` sets of code settings no rule involves, now and then a distractor."""
    for _ in range(b.rng.randint(low, high)):
        need(b.set(CODE_PLAIN))
        if b.rng.random() < 0.2:
            need(b.distractor())


def _long_chain(b: Builder) -> None:
    """14 to 18 turns of every op (weighted as butterfly-40's long chains), with an undo by
    description or of the earliest change, and a redo."""
    n = b.rng.randint(*LONG_TURNS)
    need(b.set())
    while len(b.turns) < n:
        need(b.any_op())
    ops = {t["op"] for t in b.turns}
    if not ops & {"undo_ref", "undo_earliest"} or "redo" not in ops:
        raise Retry


def recipe(category: str) -> Callable[[Builder], None]:
    """The code track's recipe of ``category``: the spec track's, led by two to four sets."""
    if category == "long_chain":
        return _long_chain
    if category not in CODE_COUNTS:
        raise GenerationError(f"the code track has no {category} scenarios (no drop turns)")
    base = RECIPES[category]

    def led(b: Builder) -> None:
        _lead(b, 2, 4)
        base(b)

    return led


def _fits(category: str) -> Callable[[Scenario], bool]:
    low, high = LONG_TURNS if category == "long_chain" else SHORT_TURNS
    return lambda s: low <= len(s.turns) <= high


def generate_code_one(category: str, seed: int, scenario_id: str) -> Scenario:
    """One valid code scenario of ``category`` from ``seed`` (deterministic)."""
    return build(recipe(category), seed, 300, category, scenario_id,
                 f"a valid code {category} scenario", keep=_fits(category), make=start)


def generate_code(counts: dict[str, int], seed: int, prefix: str = "code") -> list[Scenario]:
    """Code scenarios for each category in catalogue order; ids ``{prefix}-{category}-{nn}``."""
    return by_category(counts, seed, prefix, generate_code_one, tag="code-")


def generate_code_mixed(count: int, seed: int) -> list[Scenario]:
    """``butterfly generate --track code --count N --seed S``: ``count`` code scenarios in
    butterfly-code's proportions (ids ``sS-...``)."""
    return generate_code(proportional_counts(count, CODE_COUNTS), seed, prefix=f"s{seed}")


def generate_code_chains(lengths: Sequence[int], per_length: int, seed: int,
                         prefix: str = "code", mix: dict[str, int] | None = None
                         ) -> list[Scenario]:
    """``generate --track code --lengths``: code chains of exactly these lengths (op weights
    ``mix``, default :data:`CODE_CHAIN_MIX`; a drop weight is refused)."""
    weights = dict(CODE_CHAIN_MIX if mix is None else mix)
    if weights.get("drop"):
        raise GenerationError("--ops: the code track has no drop turns (drop=0 or leave it out)")
    weights.pop("drop", None)
    return generate_chains(lengths, per_length, seed, prefix=prefix, mix=weights, make=start)
