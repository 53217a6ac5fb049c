"""The scenario builder the generators share: a partial scenario, grown turn by turn, each
candidate turn checked by the oracle (butterfly.suite.generate says why and how).

The public API of the generators (``generate``, ``chains``, ``hard``): :class:`Builder` (a turn
of each op, :meth:`Builder.add` for a turn drawn elsewhere, :meth:`Builder.finish`), the hook
per op (:data:`HOOKS`, keyed by the oracle's op names), :func:`build` (a recipe's candidates
from one seed), :func:`need` / :class:`Retry`, and the settings recipes draw from.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Final, TypeVar

from butterfly.suite.templates import (
    DEEP_REDO,
    DISTRACTOR_MENTIONS_VALUE,
    DRAWN,
    FAMILIES,
    HISTORY_PARAPHRASES,
    ONE_READING,
    ONE_READING_DESCRIPTIONS,
)
from oracle import (
    BY_KEY,
    CHANGE_OPS,
    KEYS,
    UNDO_OPS,
    UNSPECIFIED,
    Scenario,
    Turn,
    apply_couplings,
    canonical_initial,
)
from oracle.catalogue import inapplicable
from oracle.ledger import Ledger
from oracle.ops import REGISTRY
from oracle.readings import Context, Reading, normalise, triggered, triggered_at
from oracle.replay import Replayer

if TYPE_CHECKING:
    from butterfly.suite.deep_chains import DepthPlan

T = TypeVar("T")

COUPLING_PLAYS: Final = (
    ("input_format", "tsv", "delimiter"),
    ("parallel", "on", "progress_bar"),
    ("output_format", "html", "encoding"),
)
"""(trigger, the value that switches its rule on, the setting the rule forces)."""
PLAIN: Final = tuple(k for k in KEYS if k not in {"input_format", "parallel", "output_format",
                                                  "delimiter", "progress_bar", "encoding"})
"""The settings no coupling rule involves."""

LONG_CHAIN: Final = {"set": 4, "drop": 1, "undo_last": 1, "undo_ref": 1, "undo_earliest": 1,
                     "redo": 1, "distractor": 1, "indirect": 1}
"""The ops of :meth:`Builder.any_op` (butterfly-40's long chains), each as many times as its
weight: a new op is drawn only where a recipe or a mix names it, so frozen suites keep theirs."""


class GenerationError(RuntimeError):
    pass


class Retry(Exception):
    """A recipe gave up on this candidate: the generator draws another with the same stream."""


def need(ok: bool) -> None:
    """Raise :class:`Retry` unless ``ok`` (a turn a recipe cannot do without was refused)."""
    if not ok:
        raise Retry


def scenario_seed(suite_seed: int, category: str, index: int) -> int:
    digest = hashlib.sha256(f"butterfly:{suite_seed}:{category}:{index}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


class Builder:
    """A scenario under construction; every turn is accepted only if the oracle agrees.

    The class attributes say what it draws from: the spec track's whole catalogue here; the
    code track's :class:`butterfly.suite.code.CodeBuilder` narrows them (a recipe's settings
    outside ``keys`` are skipped, so the same recipes serve both tracks)."""

    keys: tuple[str, ...] = KEYS
    """The settings a turn may target or name."""
    drops: bool = True
    """Whether a turn may drop a setting (make it unspecified)."""

    def domain(self, key: str) -> tuple[str, ...]:
        """The values a turn may give ``key``."""
        return BY_KEY[key].domain

    def __init__(self, rng: random.Random, initial: dict[str, str]) -> None:
        self.rng = rng
        self.initial = initial
        self.turns: list[dict[str, str]] = []
        self.records: list[Turn] = []
        self.specs: list[dict[str, str]] = [dict(initial)]
        self.oracle = Replayer(initial)
        """The oracle's replay of the turns so far, grown one tried turn at a time."""
        self.ledger = Ledger(initial)
        """The same turns on the guard-free ledger, for the second readings' triggers."""
        self.previous_undo: str | None = None
        self.previous_op: str | None = None
        """The op of the last turn that was not a distractor (second reading 8)."""
        self.plan: DepthPlan | None = None
        """A deep chain's plan of long-lived changes (``suite.deep_chains``): it may refuse a
        turn."""

    @property
    def spec(self) -> dict[str, str]:
        return self.specs[-1]

    def triggers(self, record: Turn) -> tuple[Reading, ...]:
        """The second readings ``record`` would trigger as the next turn."""
        return triggered(Context(record, self.ledger, self.previous_undo,
                                 normalise(record.text), self.previous_op))

    def add(self, drawn: dict[str, str]) -> bool:
        """Append the turn ``drawn`` (worded with one reading) if the oracle accepts it and it
        changes the spec (but an op of kind ``none``, a distractor); False, and nothing kept,
        otherwise."""
        op = drawn["op"]
        if op == "undo_last" and self.turns and self.turns[-1]["op"] in UNDO_OPS:
            return False
        worded = one_reading(self.initial, self.turns, self.records, drawn, self.spec,
                             self.triggers)
        if worded is None:
            return False
        turn, record = worded
        if self.plan is not None and not self.plan.allows(self, record):
            return False
        spec = self.oracle.push(record)  # every guard, as on the whole partial scenario
        if spec is None:
            return False
        if REGISTRY[op].kind != "none" and spec == self.spec:
            self.oracle.pop()
            return False
        self.turns.append(turn)
        self.records.append(record)
        self.specs.append(spec)
        REGISTRY[op].reread(self.ledger, record)
        if REGISTRY[op].undo:
            self.previous_undo = op
        if REGISTRY[op].kind != "none":
            self.previous_op = op
        return True

    def finish(self, category: str, seed: int, scenario_id: str) -> Scenario:
        """The scenario built so far, validated as a record."""
        return Scenario.model_validate(
            {"id": scenario_id, "category": category, "source": "generated", "seed": seed,
             "initial": self.initial, "turns": tuple(self.turns)},
            strict=False,
        )

    def stops_applying(self, key: str, value: str) -> bool:
        """Would ``key := value`` make a declared setting inapplicable (the v2 guard)?

        Checked before the wording is drawn, so that skipping such a value leaves the random
        stream, and so every other turn of the scenario, as it was under generator v1."""
        after = apply_couplings({**self.spec, key: value})
        return not set(inapplicable(after)) <= set(inapplicable(self.spec))

    def shuffled(self, items: Iterable[T]) -> list[T]:
        """``items`` in an order drawn from the scenario's random stream."""
        out = list(items)
        self.rng.shuffle(out)
        return out

    def word(self, family: str, **fields: str) -> tuple[str, str]:
        """A paraphrase of ``family`` drawn at random: (its text, its id ``family.index``)."""
        i = self.rng.randrange(DRAWN[family])
        return FAMILIES[family][i].format(**fields), f"{family}.{i}"

    def set(self, settings: Sequence[str] = KEYS, value: str | None = None) -> bool:
        for key in self.shuffled(k for k in settings if k in self.keys):
            s = BY_KEY[key]
            for v in self.shuffled([v for v in self.domain(key) if v != self.spec[key]]
                                   if value is None else [value]):
                if self.stops_applying(key, v):
                    continue  # rejected by the oracle anyway; skipped before any draw
                text, para = self.word("set", phrase=s.phrase(v), name=s.name)
                if self.add({"op": "set", "setting": key, "value": v, "text": text,
                             "paraphrase": para}):
                    return True
        return False

    def drop(self, settings: Sequence[str] = KEYS) -> bool:
        if not self.drops:
            return False
        for key in self.shuffled(k for k in settings if k in self.keys):
            if self.stops_applying(key, UNSPECIFIED):
                continue
            text, para = self.word("drop", name=BY_KEY[key].name)
            if self.add({"op": "drop", "setting": key, "text": text, "paraphrase": para}):
                return True
        return False

    def plain(self, op: str) -> bool:
        """A turn of an op without arguments (undo_last, undo_earliest, redo)."""
        text, para = self.word(op)
        if self.add({"op": op, "text": text, "paraphrase": para}):
            return True
        if para not in HISTORY_PARAPHRASES:
            return False
        # v2: history wording after a redo of the target; the next paraphrase speaks of what
        # is in effect (no new random draw, so every other scenario keeps its wording)
        family, _, idx = para.rpartition(".")
        i = (int(idx) + 1) % DRAWN[family]
        return self.add({"op": op, "text": FAMILIES[family][i], "paraphrase": f"{family}.{i}"})

    def undo_ref_of(self, key: str) -> bool:
        """Undo, by its description, the change to ``key``."""
        text, para = self.word("undo_ref", description=BY_KEY[key].description)
        return self.add({"op": "undo_ref", "setting": key, "text": text, "paraphrase": para})

    def changed(self) -> list[str]:
        """The settings of the set and drop turns so far, in order (repeats kept)."""
        return [t["setting"] for t in self.turns if t["op"] in CHANGE_OPS]

    def undo_ref(self, prefer_not_last: bool = True) -> bool:
        assigned = self.changed()
        order = self.shuffled(dict.fromkeys(assigned))
        if prefer_not_last and assigned:
            order.sort(key=lambda k: k == assigned[-1])  # stable: the last change goes last
        return any(self.undo_ref_of(key) for key in order)

    def undo_ref_far_back(self) -> bool:
        """Undo by description, most often the oldest change still in effect (far back)."""
        if self.rng.random() < 0.3:
            return self.undo_ref()
        return any(self.undo_ref_of(key) for key in dict.fromkeys(self.changed()))

    def distractor(self) -> bool:
        for key in self.shuffled(self.keys)[:6]:
            s = BY_KEY[key]
            i = self.rng.randrange(DRAWN["distractor"])
            if i in DISTRACTOR_MENTIONS_VALUE:
                values = [v for v in self.domain(key) if v != self.spec[key]]
                phrase = s.phrase(self.rng.choice(values))
            else:
                phrase = ""
            text = FAMILIES["distractor"][i].format(phrase=phrase, name=s.name)
            if self.add({"op": "distractor", "text": text, "paraphrase": f"distractor.{i}"}):
                return True
        return False

    def indirect(self, keys: Collection[str] | None = None) -> bool:
        """A set by indirect reference ("double the timeout"), its value resolved here
        (``keys``: only of these settings)."""
        spec = self.spec
        options: list[tuple[str, str, str]] = []
        out_domain = self.domain("output_format")
        if spec["input_format"] in out_domain and spec["output_format"] != spec["input_format"]:
            options.append(("indirect.same_format", "output_format", spec["input_format"]))
        doubled = {"30": "60", "60": "120"}.get(spec["timeout_seconds"])
        doubled = doubled if "timeout_seconds" in self.keys else None
        if doubled:
            options.append(("indirect.double_timeout", "timeout_seconds", doubled))
        tenfold = {"1000": "10000", "10000": "100000"}.get(spec["max_rows"])
        if tenfold:
            options.append(("indirect.tenfold_rows", "max_rows", tenfold))
        if keys is not None:
            options = [o for o in options if o[1] in keys]
        for family, key, value in self.shuffled(options):
            text, para = self.word(family)
            if self.add({"op": "set", "setting": key, "value": value, "text": text,
                         "paraphrase": para}):
                return True
        return False

    def draft(self, op: str) -> bool:
        """One turn of ``op`` (an op of the oracle, or ``indirect``) by its hook."""
        return HOOKS.get(op, Builder.indirect)(self)

    def any_op(self) -> bool:
        """One turn of a random op, weighted towards sets, for long chains."""
        ops = [op for op, weight in LONG_CHAIN.items() for _ in range(weight)]
        return any(self.draft(op) for op in self.shuffled(ops))


Hook = Callable[[Builder], bool]
"""Drafts one turn of an op on a builder (its state, its random stream); False if none fits."""


def _plain(op: str) -> Hook:
    return lambda b: b.plain(op)


HOOKS: Final[dict[str, Hook]] = {
    "set": Builder.set,
    "drop": Builder.drop,
    "undo_last": _plain("undo_last"),
    "undo_ref": Builder.undo_ref,
    "undo_earliest": _plain("undo_earliest"),
    "redo": _plain("redo"),
    "distractor": Builder.distractor,
}
"""The generator's hook per op, keyed by the oracle's op names (``oracle.ops.REGISTRY``; a test
checks that every op has one)."""


def build(recipe: Callable[[Builder], None], seed: int, tries: int, category: str,
          scenario_id: str, what: str, keep: Callable[[Scenario], bool] = lambda s: True,
          make: Callable[[random.Random], Builder] | None = None) -> Scenario:
    """The first candidate of ``recipe`` (one random stream from ``seed``, ``tries`` candidates
    at most) that does not give up and that ``keep`` accepts; a :class:`GenerationError`
    ("could not build a valid ``what``") if there is none. ``make`` starts a candidate
    (default: a :class:`Builder` from the canonical initial spec)."""
    rng = random.Random(seed)
    for _ in range(tries):
        b = Builder(rng, canonical_initial()) if make is None else make(rng)
        try:
            recipe(b)
        except Retry:
            continue
        s = b.finish(category, seed, scenario_id)
        if keep(s):
            return s
    raise GenerationError(f"could not build {what} from seed {seed}")


def one_reading(
    initial: dict[str, str], before: Sequence[dict[str, str]], records: Sequence[Turn],
    turn: dict[str, str], spec: dict[str, str],
    triggers: Callable[[Turn], tuple[Reading, ...]] | None = None,
) -> tuple[dict[str, str], Turn] | None:
    """``turn`` worded so that no second reading is triggered after ``before`` (its records
    ``records``; ``spec`` the spec before it): the wording as drawn, or the one-reading
    paraphrase that stands in for it (``templates.ONE_READING``); None if there is none.
    ``triggers``: the readings a record would trigger next (default: replays ``records``)."""
    fire = triggers or (lambda r: triggered_at(initial, records, r))
    record = _record(turn)
    if not fire(record):
        return turn, record
    drawn = turn.get("paraphrase", "")
    described = ONE_READING_DESCRIPTIONS.get(turn.get("setting", ""))
    tries: list[tuple[str, str | None]] = [(p, None) for p in ONE_READING.get(drawn, ())]
    if described is not None and turn["op"] == "undo_ref":
        tries += [(p, described) for p in (drawn, *ONE_READING.get(drawn, ()))]
    for para, description in tries:
        if para == DEEP_REDO and not _undos_then_redos(before):
            continue
        text = render(para, turn, spec, description)
        if text is None:
            continue
        new = {**turn, "text": text, "paraphrase": para}
        record = _record(new)
        if not fire(record):
            return new, record
    return None


def render(paraphrase: str, turn: dict[str, str], spec: dict[str, str],
           description: str | None = None) -> str | None:
    """The text of ``turn`` (not a distractor) in ``paraphrase`` (``family.index``), ``spec``
    being the spec before it (``description``: another indirect description of its setting
    than the catalogue's); None where the paraphrase does not fit (``{old}`` of a setting left
    unspecified)."""
    family, _, index = paraphrase.rpartition(".")
    template = FAMILIES[family][int(index)]
    setting = turn.get("setting")
    if setting is None:
        return template
    s = BY_KEY[setting]
    fields = {"name": s.name, "description": description or s.description}
    if "value" in turn:
        fields["phrase"] = s.phrase(turn["value"])
    if "{old}" in template:
        if spec[setting] == UNSPECIFIED:
            return None
        fields["old"] = s.phrase(spec[setting])
    return template.format(**fields)


def _record(turn: dict[str, str]) -> Turn:
    """The turn's record, validated by its op's record class."""
    record: Turn = REGISTRY[turn["op"]].record.model_validate(turn, strict=False)
    return record


def _undos_then_redos(turns: Sequence[dict[str, str]]) -> bool:
    """Since the last set or drop, every undo came before every redo (distractors aside)."""
    ops: list[str] = []
    for t in reversed(turns):
        if t["op"] in CHANGE_OPS:
            break
        if t["op"] in UNDO_OPS:
            ops.append(t["op"])
    ops.reverse()
    first_redo = ops.index("redo") if "redo" in ops else len(ops)
    return all(op == "redo" for op in ops[first_redo:])
