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

import hashlib
import random
from collections.abc import Callable, Sequence
from typing import Any, Final

from butterfly.suite.templates import DISTRACTOR_MENTIONS_VALUE, FAMILIES
from oracle import (
    BY_KEY,
    CATEGORIES,
    KEYS,
    Scenario,
    canonical_initial,
    check,
    replay,
)

GENERATOR_VERSION: Final = "1"

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

_COUPLING_PLAYS: Final = (
    ("input_format", "tsv", "delimiter"),
    ("parallel", "on", "progress_bar"),
    ("output_format", "html", "encoding"),
)
_PLAIN: Final = tuple(k for k in KEYS if k not in {"input_format", "parallel", "output_format",
                                                   "delimiter", "progress_bar", "encoding"})


class GenerationError(RuntimeError):
    pass


def scenario_seed(suite_seed: int, category: str, index: int) -> int:
    digest = hashlib.sha256(f"butterfly:{suite_seed}:{category}:{index}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


class _Builder:
    """A scenario under construction; every turn is accepted only if the oracle agrees."""

    def __init__(self, rng: random.Random, initial: dict[str, str]) -> None:
        self.rng = rng
        self.initial = initial
        self.turns: list[dict[str, Any]] = []
        self.specs: list[dict[str, str]] = [dict(initial)]

    @property
    def spec(self) -> dict[str, str]:
        return self.specs[-1]

    def _scenario(self, turns: list[dict[str, Any]]) -> Scenario:
        return Scenario.model_validate(
            {
                "id": "draft",
                "category": "long_chain",
                "source": "generated",
                "seed": 0,
                "initial": self.initial,
                "turns": tuple(turns),
            },
            strict=False,
        )

    def _try(self, turn: dict[str, Any]) -> bool:
        op = turn["op"]
        if op == "undo_last" and self.turns and self.turns[-1]["op"] in {
            "undo_last", "undo_ref", "undo_earliest", "redo"
        }:
            return False
        candidate = [*self.turns, turn]
        scenario = self._scenario(candidate)
        if check(scenario) is not None:
            return False
        specs = replay(scenario)
        if op != "distractor" and specs[-1] == specs[-2]:
            return False
        self.turns = candidate
        self.specs = specs
        return True

    def _text(self, family: str, **fields: str) -> tuple[str, str]:
        templates = FAMILIES[family]
        i = self.rng.randrange(len(templates))
        return templates[i].format(**fields), f"{family}.{i}"

    def set(self, settings: Sequence[str] = KEYS, value: str | None = None) -> bool:
        order = list(settings)
        self.rng.shuffle(order)
        for key in order:
            s = BY_KEY[key]
            values = [v for v in s.domain if v != self.spec[key]] if value is None else [value]
            self.rng.shuffle(values)
            for v in values:
                text, para = self._text("set", phrase=s.phrase(v), name=s.name)
                if self._try({"op": "set", "setting": key, "value": v, "text": text,
                              "paraphrase": para}):
                    return True
        return False

    def drop(self, settings: Sequence[str] = KEYS) -> bool:
        order = list(settings)
        self.rng.shuffle(order)
        for key in order:
            text, para = self._text("drop", name=BY_KEY[key].name)
            if self._try({"op": "drop", "setting": key, "text": text, "paraphrase": para}):
                return True
        return False

    def plain(self, op: str) -> bool:
        text, para = self._text(op)
        return self._try({"op": op, "text": text, "paraphrase": para})

    def undo_ref(self, prefer_not_last: bool = True) -> bool:
        assigned = [t["setting"] for t in self.turns if t["op"] in {"set", "drop"}]
        order = list(dict.fromkeys(assigned))
        self.rng.shuffle(order)
        if prefer_not_last and assigned:
            order.sort(key=lambda k: k == assigned[-1])  # stable: the last change goes last
        for key in order:
            text, para = self._text("undo_ref", description=BY_KEY[key].description)
            if self._try({"op": "undo_ref", "setting": key, "text": text, "paraphrase": para}):
                return True
        return False

    def distractor(self) -> bool:
        keys = list(KEYS)
        self.rng.shuffle(keys)
        for key in keys[:6]:
            s = BY_KEY[key]
            templates = FAMILIES["distractor"]
            i = self.rng.randrange(len(templates))
            if i in DISTRACTOR_MENTIONS_VALUE:
                values = [v for v in s.domain if v != self.spec[key]]
                phrase = s.phrase(self.rng.choice(values))
            else:
                phrase = ""
            text = templates[i].format(phrase=phrase, name=s.name)
            if self._try({"op": "distractor", "text": text, "paraphrase": f"distractor.{i}"}):
                return True
        return False

    def indirect(self) -> bool:
        spec = self.spec
        options: list[tuple[str, str, str]] = []
        out_domain = BY_KEY["output_format"].domain
        if spec["input_format"] in out_domain and spec["output_format"] != spec["input_format"]:
            options.append(("indirect.same_format", "output_format", spec["input_format"]))
        doubled = {"30": "60", "60": "120"}.get(spec["timeout_seconds"])
        if doubled:
            options.append(("indirect.double_timeout", "timeout_seconds", doubled))
        tenfold = {"1000": "10000", "10000": "100000"}.get(spec["max_rows"])
        if tenfold:
            options.append(("indirect.tenfold_rows", "max_rows", tenfold))
        self.rng.shuffle(options)
        for family, key, value in options:
            text, para = self._text(family)
            if self._try({"op": "set", "setting": key, "value": value, "text": text,
                          "paraphrase": para}):
                return True
        return False

    def any_op(self) -> bool:
        """One turn of a random op, weighted towards sets, for long chains."""
        ops = ["set"] * 4 + ["drop", "undo_last", "undo_ref", "undo_earliest", "redo",
                             "distractor", "indirect"]
        self.rng.shuffle(ops)
        for op in ops:
            ok = {
                "set": lambda: self.set(),
                "drop": lambda: self.drop(),
                "undo_ref": lambda: self.undo_ref(),
                "distractor": self.distractor,
                "indirect": self.indirect,
            }.get(op, lambda op=op: self.plain(op))()
            if ok:
                return True
        return False


def _need(ok: bool) -> None:
    if not ok:
        raise _Retry


class _Retry(Exception):
    pass


def _undo_ref(b: _Builder) -> None:
    for _ in range(b.rng.randint(2, 4)):
        _need(b.set(_PLAIN))
    if b.rng.random() < 0.4:
        _need(b.distractor())
    _need(b.undo_ref())
    if b.rng.random() < 0.3:
        _need(b.set(_PLAIN))


def _undo_earliest(b: _Builder) -> None:
    for _ in range(b.rng.randint(2, 4)):
        _need(b.set(_PLAIN))
    if b.rng.random() < 0.6:
        # Undo the earliest-made change first, so "still in effect" is what decides the target.
        first = b.turns[0]["setting"]
        text, para = b._text("undo_ref", description=BY_KEY[first].description)
        _need(b._try({"op": "undo_ref", "setting": first, "text": text, "paraphrase": para}))
        _need(b.set(_PLAIN))
    _need(b.plain("undo_earliest"))


def _coupling(b: _Builder) -> None:
    trigger, when, forced = b.rng.choice(_COUPLING_PLAYS)
    pattern = b.rng.randrange(3)
    if pattern == 0:
        # an explicit value, overridden by a later trigger, then the trigger undone
        _need(b.set([forced]))
        if b.rng.random() < 0.5:
            _need(b.set(_PLAIN))
        _need(b.set([trigger], value=when))
        _need(b.undo_ref(prefer_not_last=False) if b.rng.random() < 0.5 else b.plain("undo_last"))
    elif pattern == 1:
        # a trigger, other edits, the trigger undone by description
        _need(b.set([trigger], value=when))
        _need(b.set(_PLAIN))
        _need(b.undo_ref())
    else:
        # a trigger set; later the forced setting is explicitly set to the forced value
        _need(b.set(_PLAIN))
        _need(b.set([trigger], value=when))
        if b.rng.random() < 0.5:
            _need(b.distractor())
        _need(b.set(_PLAIN))


def _distractor(b: _Builder) -> None:
    for _ in range(b.rng.randint(1, 3)):
        _need(b.set(_PLAIN))
        if b.rng.random() < 0.5:
            _need(b.distractor())
    _need(b.distractor())


def _undo_last(b: _Builder) -> None:
    for _ in range(b.rng.randint(1, 3)):
        _need(b.set(_PLAIN))
    _need(b.plain("undo_last"))
    if b.rng.random() < 0.4:
        _need(b.set(_PLAIN))


def _drop(b: _Builder) -> None:
    for _ in range(b.rng.randint(0, 2)):
        _need(b.set(_PLAIN))
    _need(b.drop(_PLAIN))
    if b.rng.random() < 0.5:
        _need(b.set(_PLAIN))


def _long_chain(b: _Builder) -> None:
    n = b.rng.randint(8, 10)
    _need(b.set())
    while len(b.turns) < n:
        _need(b.any_op())
    ops = {t["op"] for t in b.turns}
    if not ops & {"undo_last", "undo_ref", "undo_earliest"}:
        raise _Retry


def _redo(b: _Builder) -> None:
    for _ in range(b.rng.randint(2, 3)):
        _need(b.set(_PLAIN))
    _need(b.undo_ref() if b.rng.random() < 0.5 else b.plain("undo_last"))
    if b.rng.random() < 0.3:
        _need(b.distractor())
    _need(b.plain("redo"))


def _drop_undo(b: _Builder) -> None:
    _need(b.set(_PLAIN))
    key = b.turns[0]["setting"] if b.rng.random() < 0.5 else None
    _need(b.drop([key]) if key else b.drop(_PLAIN))
    _need(b.plain("undo_last"))


def _indirect_ref(b: _Builder) -> None:
    if b.rng.random() < 0.5:
        _need(b.set(["input_format"], value=b.rng.choice(("json", "jsonl", "parquet"))))
    else:
        _need(b.set(["max_rows"], value=b.rng.choice(("1000", "10000"))))
    _need(b.set(_PLAIN))
    _need(b.indirect())


_RECIPES: Final[dict[str, Callable[[_Builder], None]]] = {
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
assert tuple(_RECIPES) == CATEGORIES


def generate_one(category: str, seed: int, scenario_id: str) -> Scenario:
    """One valid scenario of ``category`` from ``seed`` (deterministic)."""
    if category not in _RECIPES:
        raise GenerationError(f"unknown category {category!r}")
    rng = random.Random(seed)
    for _ in range(200):
        b = _Builder(rng, canonical_initial())
        try:
            _RECIPES[category](b)
        except _Retry:
            continue
        return Scenario.model_validate(
            {
                "id": scenario_id,
                "category": category,
                "source": "generated",
                "seed": seed,
                "initial": b.initial,
                "turns": tuple(b.turns),
            },
            strict=False,
        )
    raise GenerationError(f"could not build a valid {category} scenario from seed {seed}")


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
    out: list[Scenario] = []
    for category in CATEGORIES:
        for i in range(1, counts.get(category, 0) + 1):
            sid = f"{prefix}-{category.replace('_', '-')}-{i:02d}"
            out.append(generate_one(category, scenario_seed(seed, category, i), sid))
    return out


def _render(turn: dict[str, Any], family: str, index: int, rng: random.Random,
            spec_before: dict[str, str]) -> str:
    """The text of ``turn`` in paraphrase ``family.index`` (same op, same arguments)."""
    template = FAMILIES[family][index]
    if family == "distractor":
        key = rng.choice(KEYS)
        s = BY_KEY[key]
        value = rng.choice([v for v in s.domain if v != spec_before[key]])
        return template.format(phrase=s.phrase(value), name=s.name)
    setting = turn.get("setting")
    if setting is None:
        return template
    s = BY_KEY[setting]
    fields = {"name": s.name, "description": s.description}
    if "value" in turn:
        fields["phrase"] = s.phrase(turn["value"])
    return template.format(**fields)


def paraphrase_variants(scenario: Scenario, k: int) -> list[Scenario]:
    """``k`` versions of a generated scenario: variant v re-words every turn with paraphrase
    ``(original index + v) mod family size`` of the same family. Ops, arguments and so the
    oracle's answers are unchanged; ids are ``{id}.p{v}`` (variant 0 is the original wording)."""
    if scenario.source != "generated" or scenario.seed is None:
        raise GenerationError(f"{scenario.id}: only generated scenarios have paraphrase ids")
    specs = replay(scenario)
    out = []
    for v in range(k):
        rng = random.Random(scenario.seed * 1009 + v)
        turns = []
        for t, turn in enumerate(scenario.turns):
            d = turn.model_dump(exclude_none=True)
            family, _, idx = (turn.paraphrase or "").rpartition(".")
            size = len(FAMILIES[family])
            new = (int(idx) + v) % size
            if v:  # variant 0 keeps the original wording
                d["text"] = _render(d, family, new, rng, specs[t])
            d["paraphrase"] = f"{family}.{new}"
            turns.append(d)
        out.append(Scenario.model_validate(
            {**scenario.model_dump(exclude_none=True), "id": f"{scenario.id}.p{v}",
             "turns": tuple(turns)},
            strict=False,
        ))
    return out


def generate_mixed(count: int, seed: int, variants: int | None = None) -> list[Scenario]:
    """``butterfly generate --count N --seed S``: ``count`` scenarios in butterfly-40's
    proportions (ids ``sS-...``), each posed ``variants`` times with other paraphrases."""
    scenarios = generate(proportional_counts(count), seed, prefix=f"s{seed}")
    if variants is None:
        return scenarios
    if not 1 <= variants <= 3:
        raise GenerationError("--paraphrase-variants takes 1 to 3 (the smallest family has "
                              "three paraphrases)")
    return [v for s in scenarios for v in paraphrase_variants(s, variants)]
