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

from pydantic import TypeAdapter

from butterfly.suite.templates import DISTRACTOR_MENTIONS_VALUE, FAMILIES, HISTORY_PARAPHRASES
from oracle import (
    BY_KEY,
    CATEGORIES,
    COUPLINGS,
    KEYS,
    MAX_TURNS,
    OPS,
    UNSPECIFIED,
    InvalidScenario,
    Rules,
    Scenario,
    Turn,
    apply_couplings,
    canonical_initial,
    check,
    replay,
)
from oracle.catalogue import inapplicable

GENERATOR_VERSION: Final = "2"
_TURN: Final = TypeAdapter[Turn](Turn)

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
        self._records: list[Turn] = []
        self.specs: list[dict[str, str]] = [dict(initial)]

    @property
    def spec(self) -> dict[str, str]:
        return self.specs[-1]

    def _try(self, turn: dict[str, Any]) -> bool:
        op = turn["op"]
        if op == "undo_last" and self.turns and self.turns[-1]["op"] in {
            "undo_last", "undo_ref", "undo_earliest", "redo"
        }:
            return False
        record = _TURN.validate_python(turn, strict=False)
        draft = Scenario.model_construct(
            id="draft", category="long_chain", source="generated", seed=0,
            initial=self.initial, turns=(*self._records, record),
        )
        try:
            specs = replay(draft)  # every guard, on the whole partial scenario
        except InvalidScenario:
            return False
        if op != "distractor" and specs[-1] == specs[-2]:
            return False
        self.turns.append(turn)
        self._records.append(record)
        self.specs = specs
        return True

    def _stops_applying(self, key: str, value: str) -> bool:
        """Would ``key := value`` make a declared setting inapplicable (the v2 guard)?

        Checked before the wording is drawn, so that skipping such a value leaves the random
        stream, and so every other turn of the scenario, as it was under generator v1."""
        after = apply_couplings({**self.spec, key: value})
        return not set(inapplicable(after)) <= set(inapplicable(self.spec))

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
                if self._stops_applying(key, v):
                    continue  # rejected by the oracle anyway; skipped before any draw
                text, para = self._text("set", phrase=s.phrase(v), name=s.name)
                if self._try({"op": "set", "setting": key, "value": v, "text": text,
                              "paraphrase": para}):
                    return True
        return False

    def drop(self, settings: Sequence[str] = KEYS) -> bool:
        order = list(settings)
        self.rng.shuffle(order)
        for key in order:
            if self._stops_applying(key, UNSPECIFIED):
                continue
            text, para = self._text("drop", name=BY_KEY[key].name)
            if self._try({"op": "drop", "setting": key, "text": text, "paraphrase": para}):
                return True
        return False

    def plain(self, op: str) -> bool:
        text, para = self._text(op)
        if self._try({"op": op, "text": text, "paraphrase": para}):
            return True
        if para not in HISTORY_PARAPHRASES:
            return False
        # v2: history wording after a redo of the target; the next paraphrase speaks of what
        # is in effect (no new random draw, so every other scenario keeps its wording)
        family, _, idx = para.rpartition(".")
        i = (int(idx) + 1) % len(FAMILIES[family])
        return self._try({"op": op, "text": FAMILIES[family][i], "paraphrase": f"{family}.{i}"})

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
        # v2: an explicit output format, later matched to the input's (csv); moving the input
        # to a format without a delimiter would make the delimiter inapplicable
        _need(b.set(["output_format"], value=b.rng.choice(("jsonl", "html", "markdown"))))
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


def _finish(b: _Builder, category: str, seed: int, scenario_id: str) -> Scenario:
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
        return _finish(b, category, seed, scenario_id)
    raise GenerationError(f"could not build a valid {category} scenario from seed {seed}")


# ---------------------------------------------------------------------------- chains by length

DEFAULT_MIX: Final[dict[str, int]] = {
    "set": 4,
    "drop": 1,
    "undo_last": 1,
    "undo_ref": 2,
    "undo_earliest": 1,
    "redo": 2,
    "distractor": 1,
    "indirect": 1,
    "coupling": 1,
}
"""Op weights of a chain built by length: the seven ops, plus ``indirect`` (a set by indirect
reference) and ``coupling`` (a rule's trigger switched on, or off when it is on)."""

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


def _far_back_undo_ref(b: _Builder) -> bool:
    """Undo by description, most often the oldest change still in effect (far back)."""
    if b.rng.random() < 0.3:
        return b.undo_ref()
    order = list(dict.fromkeys(t["setting"] for t in b.turns if t["op"] in {"set", "drop"}))
    for key in order:
        text, para = b._text("undo_ref", description=BY_KEY[key].description)
        if b._try({"op": "undo_ref", "setting": key, "text": text, "paraphrase": para}):
            return True
    return False


def _toggle_coupling(b: _Builder) -> bool:
    """Switch a rule on (its trigger to the forcing value), or off when it is on."""
    plays = list(_COUPLING_PLAYS)
    b.rng.shuffle(plays)
    for trigger, when, _forced in plays:
        if b.spec[trigger] != when:
            if b.set([trigger], value=when):
                return True
        elif (b.undo_ref(prefer_not_last=False) if b.rng.random() < 0.5 else False) or b.set(
            [trigger]
        ):
            return True
    return False


def _chain_op(b: _Builder, op: str) -> bool:
    if op == "set":
        return b.set()
    if op == "drop":
        return b.drop()
    if op == "undo_ref":
        return _far_back_undo_ref(b)
    if op == "distractor":
        return b.distractor()
    if op == "indirect":
        return b.indirect()
    if op == "coupling":
        return _toggle_coupling(b)
    return b.plain(op)


def _chain_turn(b: _Builder, mix: dict[str, int]) -> None:
    ops = [op for op in MIX_OPS if mix.get(op, 0) > 0]
    weights = [mix[op] for op in ops]
    for _ in range(12):
        if _chain_op(b, b.rng.choices(ops, weights)[0]):
            return
    _need(b.set() or b.distractor())


def _chain(b: _Builder, length: int, mix: dict[str, int]) -> None:
    """Exactly ``length`` turns drawn from ``mix`` (the draw is retried unless: some undo or redo
    when the mix has them; from 10 turns, five different ops and a rule switched on; from 20
    turns, every op of the mix and a rule switched on and later off again)."""
    _need(b.set())
    while len(b.turns) < length:
        _chain_turn(b, mix)
    ops = {t["op"] for t in b.turns}
    if not ops & {"undo_last", "undo_ref", "undo_earliest", "redo"} and any(
        mix.get(op) for op in ("undo_last", "undo_ref", "undo_earliest", "redo")
    ):
        raise _Retry
    wanted = {op for op in OPS if mix.get(op)} | ({"set"} if mix.get("indirect") else set())
    if length >= 10 and len(ops) < min(5, len(wanted)):
        raise _Retry
    if length >= 10 and mix.get("coupling") and not _switched_on(b.specs, length >= 20):
        raise _Retry
    if length >= 20 and not wanted <= ops:
        raise _Retry


def _switched_on(specs: list[dict[str, str]], and_off: bool) -> bool:
    """Some rule's trigger holds after some turn (and, with ``and_off``, no longer later)."""
    for trigger, when, _ in _COUPLING_PLAYS:
        on = [s[trigger] == when for s in specs]
        if True in on and (not and_off or False in on[on.index(True):]):
            return True
    return False


def generate_chain(length: int, seed: int, scenario_id: str,
                   mix: dict[str, int] | None = None) -> Scenario:
    """One valid chain of exactly ``length`` turns from ``seed`` (category long_chain)."""
    if not 1 <= length <= MAX_TURNS:
        raise GenerationError(f"a chain has 1 to {MAX_TURNS} turns, not {length}")
    mix = dict(DEFAULT_MIX if mix is None else mix)
    rng = random.Random(seed)
    for _ in range(50):
        b = _Builder(rng, canonical_initial())
        try:
            _chain(b, length, mix)
        except _Retry:
            continue
        return _finish(b, "long_chain", seed, scenario_id)
    raise GenerationError(f"could not build a valid {length}-turn chain from seed {seed}")


def generate_chains(lengths: Sequence[int], per_length: int, seed: int, prefix: str = "long",
                    mix: dict[str, int] | None = None) -> list[Scenario]:
    """``per_length`` chains of each length; ids ``{prefix}-{length:03d}-{nn}``."""
    if per_length < 1:
        raise GenerationError("a suite needs at least one chain per length")
    out = []
    for length in lengths:
        for i in range(1, per_length + 1):
            sseed = scenario_seed(seed, f"chain-{length}", i)
            out.append(generate_chain(length, sseed, f"{prefix}-{length:03d}-{i:02d}", mix))
    return out


# ---------------------------------------------------------------------------- the hard tier

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
        v = check(scenario.model_copy(update={"turns": tuple(probe)}))
        if v is not None and v.turn == t + 1:
            out.add(t)
    return out


def paraphrase_variants(scenario: Scenario, k: int) -> list[Scenario]:
    """``k`` versions of a generated scenario: variant v re-words every turn with paraphrase
    ``(original index + v) mod family size`` of the same family. Ops, arguments and so the
    oracle's answers are unchanged; ids are ``{id}.p{v}`` (variant 0 is the original wording)."""
    if scenario.source != "generated" or scenario.seed is None:
        raise GenerationError(f"{scenario.id}: only generated scenarios have paraphrase ids")
    specs = replay(scenario)
    in_effect_only = _history_refused(scenario)
    used: dict[int, set[int]] = {}
    out = []
    for v in range(k):
        rng = random.Random(scenario.seed * 1009 + v)
        turns = []
        for t, turn in enumerate(scenario.turns):
            d = turn.model_dump(exclude_none=True)
            family, _, idx = (turn.paraphrase or "").rpartition(".")
            size = len(FAMILIES[family])
            new = (int(idx) + v) % size
            if t in in_effect_only:
                # v2: this turn's target was undone and redone, so history wording ("hasn't
                # been undone yet") would read two ways; take the next in-effect paraphrase
                while f"{family}.{new}" in HISTORY_PARAPHRASES or new in used.get(t, ()):
                    new = (new + 1) % size
                used.setdefault(t, set()).add(new)
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
