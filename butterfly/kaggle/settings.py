"""What the Kaggle notebook plays, read once from its configuration cell and checked: a
:class:`Settings` record with the fields of ``RunParams`` that the conversation engine reads
(``butterfly.engine.conversation.Settings``), so the notebook plays exactly what ``butterfly
run`` plays with the same options (docs/kaggle.md, "What the notebook plays").

A feature the notebook cannot offer is refused here in one line that names the reason
(:data:`REFUSALS`; the parity table of docs/design.md lists them): the spec's schema as
``response_format``, self-consistency, several layouts in one run, and the lenient parser in a
kernel without ``json_repair``. What the CLI refuses, the notebook refuses in the same words
(chat mode with ask points, a reasoning strategy without ``json-last``, what a track cannot
play). Here too: the frozen suites the notebook carries and the dry run's estimate of what its
settings will send (:func:`estimate_for`). Inlined into the notebook, so it imports only
``core``, ``engine`` and ``oracle``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypedDict, TypeVar

from butterfly.core.asking import EVERY, LAST
from butterfly.core.prompts import compatible
from butterfly.core.vocab import (
    DEFAULTS,
    LAYOUTS,
    MODES,
    PARSE_MODES,
    PROTOCOLS,
    STRATEGIES,
    TRACKS,
    Mode,
    ParseMode,
    Protocol,
    SCBase,
    Strategy,
    Track,
)
from butterfly.engine.tracks import track as track_named

T = TypeVar("T", bound=str)

LAYOUT: Final = "E"
MODE: Final = "chat"
"""The default mode (``BUTTERFLY_MODE``): a conversation, the model's answers in its
history."""
STRATEGY: Final = "zero-shot"
PROTOCOL: Final = "json"
PARSE: Final = "structured"
"""The notebook's defaults: the CLI's prompt and parser (``butterfly run --protocol json``),
one conversation per scenario, layout E."""

REFUSALS: Final = {
    "schema": "protocol schema is not played in the notebook: kaggle-benchmarks sends the "
              "spec's schema as response_format only to the models its proxy marks as able, and "
              "a system message of its own to the others, so the prompt would depend on the "
              "model; protocol json asks every model for the same JSON object in the same words",
    "self-consistency": "self-consistency is not played in the notebook: it samples at a "
                        "temperature above 0 (butterfly run refuses it at 0), and "
                        "kaggle-benchmarks sends no temperature to Kaggle's models (the model "
                        "proxy's actors are built with support_temperature=False)",
    "layouts": "one layout per notebook run: the notebook plays one conversation per scenario "
               "(its per-scenario task returns one verdict); run it once per layout",
    "lenient": "parse mode lenient repairs answers with json_repair, which this kernel does not "
               "have (pip install json-repair, restart the kernel, run again)",
}
"""What the notebook cannot offer, each refused in one line that names the reason."""


class Refused(ValueError):
    """A setting the notebook does not play (one line, the reason in it)."""


@dataclass(frozen=True)
class Settings:
    """One notebook run's settings: what ``butterfly.engine.conversation.Conversation`` reads
    of a run's ``RunParams``, with the notebook's values."""

    track: Track = "spec"
    mode: Mode = MODE
    strategy: Strategy = STRATEGY
    protocol: Protocol = PROTOCOL
    parse: ParseMode = PARSE
    layouts: tuple[str, ...] = (LAYOUT,)
    ask_at: tuple[int, ...] | None = None
    max_answer_chars: int = DEFAULTS.max_answer_chars
    samples: int = 1
    sc_base: SCBase = DEFAULTS.sc_base
    seed: int = 0
    schema_output: bool = False
    cache_markers: bool = False

    @property
    def layout(self) -> str:
        return self.layouts[0]


def mode_of(text: str) -> Mode:
    """The notebook's ``MODE`` (``BUTTERFLY_MODE``, ``butterfly run --mode``): chat (the
    default, also when empty) or restate (each asked turn one stateless call)."""
    mode = text.strip() or MODE
    for m in MODES:
        if m == mode:
            return m
    raise Refused(f"BUTTERFLY_MODE={mode!r}: the notebook plays {' or '.join(MODES)}")


def ask_at_of(text: str, mode: str, default: Sequence[int] | None) -> tuple[int, ...] | None:
    """The ask points from the notebook's ``ASK_AT`` (``BUTTERFLY_ASK_AT``), read as ``butterfly
    run --ask-at`` reads its value ("5,10,20" -> those turns; "last" -> (), the last turn only;
    "all" -> None, every turn). Empty in restate mode: the suite's ``default`` (its manifest's
    ``ask_at``), as in the CLI; chat mode asks every turn and takes none."""
    text = text.strip()
    if mode != "restate":
        if text:
            raise Refused(f"BUTTERFLY_ASK_AT is for BUTTERFLY_MODE=restate (each ask a "
                          f"stateless call); mode {mode} asks every turn")
        return None
    if not text:
        return None if default is None else tuple(sorted(set(default)))
    if text in (EVERY, LAST):
        return None if text == EVERY else ()
    try:
        turns = [int(x.strip()) for x in text.split(",")]
    except ValueError:
        turns = []
    if not turns or min(turns) < 1:
        raise Refused(f"BUTTERFLY_ASK_AT takes turns from 1, comma-separated (e.g. "
                      f"5,10,20,40,80), '{LAST}' or '{EVERY}'; got {text!r}")
    return tuple(sorted(set(turns)))


def _choice(name: str, text: str, allowed: tuple[T, ...], default: str = "",
            refused: Sequence[str] = ()) -> T:
    """``text`` as the name of ``allowed`` it is (``text`` stripped; empty: ``default``), or
    :class:`Refused`: with its reason (:data:`REFUSALS`) for a name in ``refused``, a name the
    notebook cannot play."""
    given = text.strip() or default
    if given in refused:
        raise Refused(REFUSALS[given])
    for a in allowed:
        if a == given:
            return a
    raise Refused(f"{name}={given!r}: one of {', '.join(allowed)}")


def _protocol(text: str, strategy: str) -> Protocol:
    value = _choice("BUTTERFLY_PROTOCOL", text, PROTOCOLS, PROTOCOL, ("schema",))
    if not compatible(strategy, value):  # butterfly run's words (runs/run_flags.py)
        raise Refused(f"strategy {strategy} reasons before the spec: use protocol json-last "
                      "(json-first asks for the spec first, json for the spec alone)")
    return value


def _layouts(text: str) -> tuple[str, ...]:
    names = [x.strip() for x in (text.strip() or LAYOUT).split(",") if x.strip()]
    if len(names) != 1:
        raise Refused(REFUSALS["layouts"])
    return (_choice("BUTTERFLY_LAYOUT", names[0], LAYOUTS),)


def _cap(text: str) -> int:
    if not text.strip():
        return DEFAULTS.max_answer_chars
    try:
        cap = int(text.strip())
    except ValueError:
        cap = 0
    if not 1 <= cap <= DEFAULTS.max_answer_chars:
        raise Refused(f"BUTTERFLY_MAX_ANSWER_CHARS takes 1 to {DEFAULTS.max_answer_chars:,} "
                      f"characters (as --max-answer-chars); got {text.strip()!r}")
    return cap


def settings_of(track: str, *, mode: str = "", ask_at: str = "",
                default_ask_at: Sequence[int] | None = None, strategy: str = "",
                layout: str = "", protocol: str = "", parse: str = "",
                max_answer_chars: str = "", json_repair: bool = True) -> Settings:
    """The settings of the configuration cell's values (each as its ``BUTTERFLY_*`` variable
    gives it; empty: the default), checked as ``butterfly run`` checks its options, or
    :class:`Refused` in one line. ``default_ask_at``: the suite's default ask points;
    ``json_repair``: whether the kernel has it (the lenient parser needs it)."""
    played, unplayable = mode_of(mode), () if json_repair else ("lenient",)
    chosen = _choice("BUTTERFLY_STRATEGY", strategy, STRATEGIES, STRATEGY, ("self-consistency",))
    settings = Settings(
        track=_choice("track", track, TRACKS), mode=played, strategy=chosen,
        protocol=_protocol(protocol, chosen),
        parse=_choice("BUTTERFLY_PARSE", parse, PARSE_MODES, PARSE, unplayable),
        layouts=_layouts(layout), ask_at=ask_at_of(ask_at, played, default_ask_at),
        max_answer_chars=_cap(max_answer_chars))
    why = track_named(settings.track).refusal(settings)
    if why is not None:
        raise Refused(why)
    return settings


def described(s: Settings) -> str:
    """The settings in the CLI's words, as the notebook prints them before its run."""
    parts = [f"strategy {s.strategy}", f"protocol {s.protocol}", f"parse {s.parse}",
             f"layout {s.layout}"]
    if s.max_answer_chars != DEFAULTS.max_answer_chars:
        parts.append(f"max answer chars {s.max_answer_chars:,}")
    return ", ".join(parts)


class SuiteEntry(TypedDict):
    """A frozen suite the notebook carries (its ``SUITES``): sha256, track, default ask points,
    the second K of its recency baseline."""

    sha256: str
    track: str
    ask_at: list[int] | None
    window_k: int | None


class EstimateRow(TypedDict):
    """One scenario's estimate: its calls, and its prompt and completion tokens per model."""

    calls: int
    prompt: dict[str, int]
    completion: dict[str, int]


Rows = dict[str, EstimateRow]
"""scenario id -> its estimate."""


class AskedEstimate(TypedDict):
    ask_at: list[int]
    scenarios: Rows


class Estimate(TypedDict):
    """What :func:`estimate_for` reads of ``notebooks/estimate.json`` (suite -> rows): chat
    mode (``suites``), restate mode asking every turn, and asked at the default points."""

    suites: dict[str, Rows]
    restate: dict[str, Rows]
    asked: dict[str, AskedEstimate]


ESTIMATED: Final = (STRATEGY, PROTOCOL, (LAYOUT,))
"""The prompt the carried estimate counts (strategy, protocol, layouts): the notebook's
defaults."""


def estimate_for(estimate: Estimate, suite: str, s: Settings) -> tuple[str, Rows]:
    """The estimate (``notebooks/estimate.json``, tools/kaggle_quota.py) of each scenario of
    ``suite`` played with the settings ``s``, and what it is of; no rows when the notebook
    carries none for them (it carries the default prompt in chat mode, restate mode asking
    every turn, and restate mode asked at the suite's default ask points: another strategy,
    protocol, layout or ask points get none, and the cell says so)."""
    if (s.strategy, s.protocol, s.layouts) != ESTIMATED:
        return (f"{s.mode} mode, strategy {s.strategy}, protocol {s.protocol}, layout "
                f"{s.layout}", {})
    if s.mode == "chat":
        return "chat mode", estimate["suites"].get(suite, {})
    if s.ask_at is None:
        return "restate mode, every turn asked", estimate["restate"].get(suite, {})
    asked = estimate["asked"].get(suite)
    if asked is None or list(s.ask_at) != asked["ask_at"]:
        return f"restate mode asked at {list(s.ask_at)}", {}
    return (f"restate mode asked at turns {', '.join(map(str, s.ask_at))} and the last",
            asked["scenarios"])
