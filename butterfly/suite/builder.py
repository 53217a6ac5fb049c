"""The scenario builder the generators share: a partial scenario, grown turn by turn, each
candidate turn checked by the oracle (butterfly.suite.generate says why and how).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Final

from pydantic import TypeAdapter

from butterfly.suite.templates import (
    DEEP_REDO,
    DISTRACTOR_MENTIONS_VALUE,
    DRAWN,
    FAMILIES,
    HISTORY_PARAPHRASES,
    ONE_READING,
)
from oracle import (
    BY_KEY,
    KEYS,
    UNSPECIFIED,
    InvalidScenario,
    Scenario,
    Turn,
    apply_couplings,
    replay,
)
from oracle.catalogue import inapplicable
from oracle.readings import triggered_at

_TURN: Final = TypeAdapter[Turn](Turn)


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
        self.turns: list[dict[str, str]] = []
        self._records: list[Turn] = []
        self.specs: list[dict[str, str]] = [dict(initial)]

    @property
    def spec(self) -> dict[str, str]:
        return self.specs[-1]

    def _try(self, drawn: dict[str, str]) -> bool:
        op = drawn["op"]
        if op == "undo_last" and self.turns and self.turns[-1]["op"] in {
            "undo_last", "undo_ref", "undo_earliest", "redo"
        }:
            return False
        worded = self._one_reading(drawn)
        if worded is None:
            return False
        turn, record = worded
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

    def _one_reading(self, turn: dict[str, str]) -> tuple[dict[str, str], Turn] | None:
        return one_reading(self.initial, self.turns, self._records, turn, self.spec)

    def _stops_applying(self, key: str, value: str) -> bool:
        """Would ``key := value`` make a declared setting inapplicable (the v2 guard)?

        Checked before the wording is drawn, so that skipping such a value leaves the random
        stream, and so every other turn of the scenario, as it was under generator v1."""
        after = apply_couplings({**self.spec, key: value})
        return not set(inapplicable(after)) <= set(inapplicable(self.spec))

    def _text(self, family: str, **fields: str) -> tuple[str, str]:
        i = self.rng.randrange(DRAWN[family])
        return FAMILIES[family][i].format(**fields), f"{family}.{i}"

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
        i = (int(idx) + 1) % DRAWN[family]
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
            i = self.rng.randrange(DRAWN["distractor"])
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


def one_reading(
    initial: dict[str, str], before: Sequence[dict[str, str]], records: Sequence[Turn],
    turn: dict[str, str], spec: dict[str, str],
) -> tuple[dict[str, str], Turn] | None:
    """``turn`` worded so that no second reading is triggered after ``before`` (its records
    ``records``; ``spec`` the spec before it): the wording as drawn, or the one-reading
    paraphrase that stands in for it (``templates.ONE_READING``); None if there is none."""
    record = _TURN.validate_python(turn, strict=False)
    if not triggered_at(initial, records, record):
        return turn, record
    for para in ONE_READING.get(turn.get("paraphrase", ""), ()):
        if para == DEEP_REDO and not _undos_then_redos(before):
            continue
        text = render(para, turn, spec)
        if text is None:
            continue
        new = {**turn, "text": text, "paraphrase": para}
        record = _TURN.validate_python(new, strict=False)
        if not triggered_at(initial, records, record):
            return new, record
    return None


def render(paraphrase: str, turn: dict[str, str], spec: dict[str, str]) -> str | None:
    """The text of ``turn`` (not a distractor) in ``paraphrase`` (``family.index``), ``spec``
    being the spec before it; None where the paraphrase does not fit (``{old}`` of a setting
    left unspecified)."""
    family, _, index = paraphrase.rpartition(".")
    template = FAMILIES[family][int(index)]
    setting = turn.get("setting")
    if setting is None:
        return template
    s = BY_KEY[setting]
    fields = {"name": s.name, "description": s.description}
    if "value" in turn:
        fields["phrase"] = s.phrase(turn["value"])
    if "{old}" in template:
        if spec[setting] == UNSPECIFIED:
            return None
        fields["old"] = s.phrase(spec[setting])
    return template.format(**fields)


def _undos_then_redos(turns: Sequence[dict[str, str]]) -> bool:
    """Since the last set or drop, every undo came before every redo (distractors aside)."""
    ops: list[str] = []
    for t in reversed(turns):
        if t["op"] in {"set", "drop"}:
            break
        if t["op"] != "distractor":
            ops.append(t["op"])
    ops.reverse()
    first_redo = ops.index("redo") if "redo" in ops else len(ops)
    return all(op == "redo" for op in ops[first_redo:])


def _need(ok: bool) -> None:
    if not ok:
        raise _Retry


class _Retry(Exception):
    pass


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


