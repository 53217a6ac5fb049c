"""Scenario and suite records: strict, versioned pydantic models.

A record is checked here for everything that can be checked on its own (field types, setting
names, value domains, turn count, the seed rule). What needs the history of a scenario (undo
targets, ambiguity guards) is checked by :mod:`oracle.replay`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)

from oracle.catalogue import DOMAINS, KEYS, SETTINGS, SPEC_VALUES

SCHEMA_VERSION: Final = 1
MAX_TURNS: Final = 200
"""The most turns a scenario record may have (contract v2: 1 to 200 in any suite of the ladder)."""
ASKED_MAX_TURNS: Final = 10_000
"""The most turns of a scenario in a suite asked at chosen turns (contract v3, sections 2 and 4):
a suite whose manifest names default ask points (``ask_at``), such as butterfly-horizon."""
TURN_LIMITS: Final = {"butterfly-40": 10}
"""Suites with a stricter turn limit than :data:`MAX_TURNS`: the default suite keeps 1 to 10."""


def turn_limit(suite: str) -> int:
    """The most turns a scenario of the suite named ``suite`` may have."""
    return TURN_LIMITS.get(suite, MAX_TURNS)


CATEGORIES: Final[tuple[str, ...]] = (
    "undo_ref",
    "undo_earliest",
    "coupling",
    "distractor",
    "undo_last",
    "drop",
    "long_chain",
    "redo",
    "drop_undo",
    "indirect_ref",
)
"""Scenario categories, in the order of the contract's table for ``butterfly-40``."""

def _known_setting(key: str) -> str:
    if key not in DOMAINS:
        raise ValueError(f"unknown setting {key!r}")
    return key


def _known_category(name: str) -> str:
    if name not in CATEGORIES:
        raise ValueError(f"unknown category {name!r} (known: {', '.join(CATEGORIES)})")
    return name


def spec_json_schema() -> dict[str, Any]:
    """JSON Schema of a spec: exactly the 20 keys, each a string of its domain or unspecified."""
    return {
        "type": "object",
        "properties": {
            s.key: {"type": "string", "enum": [*s.domain, "unspecified"]} for s in SETTINGS
        },
        "required": list(KEYS),
        "additionalProperties": False,
    }


def check_spec(spec: dict[str, str]) -> dict[str, str]:
    """Reject a spec that lacks a setting, has an unknown one or a value outside its domain.

    Returns a new dict in catalogue order.
    """
    unknown = [k for k in spec if k not in SPEC_VALUES]
    if unknown:
        raise ValueError(f"unknown setting {unknown[0]!r}")
    missing = [k for k in KEYS if k not in spec]
    if missing:
        raise ValueError(f"missing setting{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    for k in KEYS:
        v = spec[k]
        if v not in SPEC_VALUES[k]:
            allowed = ", ".join((*sorted(DOMAINS[k]), "unspecified"))
            raise ValueError(f"{k}: value {v!r} is not one of {allowed}")
    return {k: spec[k] for k in KEYS}


SettingKey = Annotated[
    str,
    AfterValidator(_known_setting),
    WithJsonSchema({"type": "string", "enum": list(KEYS)}),
]
Spec = Annotated[
    dict[str, str],
    AfterValidator(check_spec),
    WithJsonSchema(spec_json_schema()),
]
"""A spec: the 20 settings' values, checked by :func:`check_spec` when a record is read (to a type
checker, a ``dict[str, str]``). The one spec type: the harness imports it from ``oracle``."""
Category = Annotated[
    str,
    AfterValidator(_known_category),
    WithJsonSchema({"type": "string", "enum": list(CATEGORIES)}),
]

_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)


class TurnBase(BaseModel):
    """What every turn record has; one subclass per op, its ``op`` a one-value ``Literal``
    (:mod:`oracle.ops` pairs each with the op's semantics)."""

    model_config = _STRICT
    text: str = Field(min_length=1, description="The user's words for this turn.")
    paraphrase: str | None = Field(
        default=None,
        description="Which template paraphrase produced the text (generated turns only).",
    )


class SetTurn(TurnBase):
    """A new change: setting := value."""

    op: Literal["set"]
    setting: SettingKey
    value: str

    @model_validator(mode="after")
    def _value_in_domain(self) -> SetTurn:
        domain = SETTINGS[KEYS.index(self.setting)].domain
        if self.value not in domain:
            hint = " (a dropped requirement is a drop turn)" if self.value == "unspecified" else ""
            raise ValueError(
                f"value {self.value!r} is not in the domain of {self.setting} "
                f"({', '.join(domain)}){hint}"
            )
        return self


class DropTurn(TurnBase):
    """A new change: setting := unspecified."""

    op: Literal["drop"]
    setting: SettingKey


class UndoLastTurn(TurnBase):
    op: Literal["undo_last"]


class UndoRefTurn(TurnBase):
    """Undo the one active change that assigned ``setting`` (named indirectly in the text)."""

    op: Literal["undo_ref"]
    setting: SettingKey


class UndoEarliestTurn(TurnBase):
    op: Literal["undo_earliest"]


class RedoTurn(TurnBase):
    op: Literal["redo"]


class DistractorTurn(TurnBase):
    op: Literal["distractor"]


Turn = Annotated[  # every op's record class (oracle.ops.REGISTRY holds the same)
    SetTurn | DropTurn | UndoLastTurn | UndoRefTurn | UndoEarliestTurn | RedoTurn | DistractorTurn,
    Field(discriminator="op"),
]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class Scenario(BaseModel):
    """One scenario: an initial spec and 1 to 10,000 user turns. The record allows
    :data:`ASKED_MAX_TURNS`; a suite's own limit is stricter (:func:`turn_limit`: 200, 10 in
    ``butterfly-40``) unless its manifest names default ask points (``SuiteManifest.ask_at``),
    which allows up to 10,000; ``butterfly.suite.load.load_suite`` enforces it."""

    model_config = _STRICT
    schema_version: Literal[1] = SCHEMA_VERSION
    id: str = Field(pattern=_ID.pattern)
    category: Category
    source: Literal["handwritten", "generated"]
    seed: int | None = Field(default=None, description="Per-scenario seed (generated only).")
    initial: Spec
    turns: tuple[Turn, ...] = Field(min_length=1, max_length=ASKED_MAX_TURNS)

    @model_validator(mode="after")
    def _seed_rule(self) -> Scenario:
        if self.source == "generated" and self.seed is None:
            raise ValueError("a generated scenario records its seed")
        if self.source == "handwritten" and self.seed is not None:
            raise ValueError("a handwritten scenario has no seed")
        return self

    def to_json(self) -> str:
        """One JSON Lines record: fields in declaration order, no absent optionals."""
        return self.model_dump_json(exclude_none=True)


class DepthRow(BaseModel):
    """The depth of a suite at one ask point, over the chains asked there (contract v4,
    section 8; ``oracle.depth``)."""

    model_config = _STRICT
    turn: int = Field(ge=1, description="The ask point t.")
    chains: int = Field(ge=0, description="Chains asked at t.")
    shown: float = Field(ge=0, description="Median number of changes that show at t.")
    oldest: float = Field(ge=0, description="Median age (turns) of the oldest change that "
                          "shows at t.")
    median_age: float = Field(ge=0, description="Median age over every change that shows.")
    bands_covered: int = Field(ge=0, description="Chains whose changes that show cover every "
                               "age band [t/2, t), [t/4, t/2), ... down to 10 turns.")
    half_matches: int = Field(ge=0, description="Chains where window:k=t/2 (the last t/2 "
                              "messages) matches the oracle.")
    tenth_matches: int = Field(ge=0, description="Chains where window:k=t/10 matches.")


class SuiteManifest(BaseModel):
    """Provenance of a frozen suite file: how to regenerate it and the hash it must have."""

    model_config = _STRICT
    schema_version: Literal[1] = SCHEMA_VERSION
    name: str
    version: int = Field(ge=1, description="The suite's own version (docs/suite-changelog.md).")
    track: Literal["spec", "code"] = Field(
        default="spec", description="What the model keeps: the spec (JSON) or a program "
        "(docs/code-track.md); a code suite holds code-catalogue values only, no drop turns."
    )
    file: str
    generator_version: str
    seed: int
    handwritten: str | None = Field(
        description="The handwritten scenarios file merged into the suite (null: none)."
    )
    n_scenarios: int
    max_turns: int = Field(ge=1, le=ASKED_MAX_TURNS, description="The suite's turn limit "
                           "(enforced when the suite is loaded with this manifest beside it): at "
                           "most 200, or 10,000 for a suite with default ask points.")
    counts: dict[str, int] = Field(description="Scenarios per category.")
    lengths: dict[str, int] | None = Field(
        default=None, description="Scenarios per number of turns, for suites built by length."
    )
    ask_at: list[int] | None = Field(
        default=None, description="The suite's default ask points (contract v3, section 4): "
        "the turns a run in restate mode asks at when it names none; the last turn of every "
        "chain is always asked. Null: every turn is asked."
    )
    window_k: int | None = Field(
        default=None, ge=1, description="The second K of the recency baseline window:k=K that "
        "tables show beside no-op and last-edit (contract v4, section 8; the first is half the "
        "shortest asked length of 40 turns or more). Null: none."
    )
    depth: list[DepthRow] | None = Field(
        default=None, description="The suite's depth per ask point of 40 turns or more "
        "(``butterfly validate --depth``). Null: no chain reaches 40 turns."
    )
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @model_validator(mode="after")
    def _asked_limit(self) -> SuiteManifest:
        if self.max_turns > MAX_TURNS and not self.ask_at:
            raise ValueError(f"max_turns {self.max_turns}: above {MAX_TURNS} only for a suite "
                             "with default ask points (ask_at)")
        return self

    def to_json(self) -> str:
        """The manifest file's text: ``ask_at`` written only when the suite names ask points,
        so the manifests frozen before it existed stay byte for byte."""
        skip = {k for k in ("ask_at", "window_k", "depth") if getattr(self, k) is None}
        return self.model_dump_json(indent=2, exclude=skip) + "\n"
