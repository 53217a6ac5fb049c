"""Hypothesis strategies for ``oracle.records.Scenario``.

* :func:`scenarios`: anything the records accept (1-10 turns, all seven ops, any order), biased
  so that the guards fire often: settings mostly from the coupling rules and a few others, values
  mostly the rules' trigger/forced values, drop wording valid most of the time.
* :func:`valid_scenarios`: built turn by turn, each turn drawn only among the candidates that the
  naive engine says keep the scenario valid.
* :func:`near_valid_scenarios`: a valid prefix, then arbitrary turns (guards fire late, in a
  rich state).

Records go through ``Scenario.model_validate_json`` (the models are strict; JSON is the supported
input path).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import cache
from typing import Any, NamedTuple, TypeVar

import naive
from hypothesis import strategies as st

from oracle.catalogue import BY_KEY, COUPLINGS, KEYS, SPEC_VALUES, canonical_initial
from oracle.records import Scenario
from oracle.replay import DROP_AMBIGUOUS_EXAMPLES

TRIGGERS = tuple(dict.fromkeys(c.trigger for c in COUPLINGS))
FORCED = tuple(dict.fromkeys(c.forced for c in COUPLINGS))
OTHERS = ("timeout_seconds", "log_level", "compression")
POOL = (*FORCED, *TRIGGERS, *OTHERS)
"""Settings most turns use: few of them, so that changes collide and shadow each other."""

T = TypeVar("T")

_SPECIAL: dict[str, tuple[str, ...]] = {}
for _c in COUPLINGS:
    _SPECIAL[_c.trigger] = (*_SPECIAL.get(_c.trigger, ()), _c.when)
    # the forced value and one value that contradicts it
    _other = next(v for v in BY_KEY[_c.forced].domain if v != _c.then)
    _SPECIAL[_c.forced] = (*_SPECIAL.get(_c.forced, ()), _c.then, _other)

# ---------------------------------------------------------------------------- wording

VALID_DROP = (
    "Remove the requirement on {name}.",
    "Drop the requirement for {name}; I have no preference.",
    "Leave {name} unspecified.",
    "{Name}: there is no requirement any more.",
    "Please take out the Requirement about {name}.",
)
INVALID_DROP = (
    "I don't care about {name} any more.",
    "Drop {name}.",
    "Remove the requirement on {name}, it doesn't matter.",
    "Set {name} to none, no requirement.",
    "Turn off {name}; the requirement is gone.",
    "Get rid of the requirement on {name}.",
    "No limit on {name}, requirement removed.",
    "Leave {name} UNSPECIFIED, I do not care.",
)
_FRAGMENTS = (
    "requirement",
    "unspecified",
    "Requirement",
    "UNSPECIFIED",
    *DROP_AMBIGUOUS_EXAMPLES,
    "NONE",
    "Don't Care",
    "nones",
    "nonexistent",
    "disabled",
    "turn offline",
    "the timeout",
    "remove",
)
_GLUE = (" ", "", "-", "_", "s ", ". ", "'", "x")


def _glued(rng: random.Random) -> str:
    """Text glued from markers, ambiguous phrases and fillers: exercises word boundaries."""
    parts = [rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 4))]
    out = parts[0]
    for p in parts[1:]:
        out += rng.choice(_GLUE) + p
    return out


def _fill(template: str, setting: str) -> str:
    name = BY_KEY[setting].name
    return template.format(name=name, Name=name[:1].upper() + name[1:])


def valid_drop_texts(setting: str) -> tuple[str, ...]:
    return tuple(_fill(t, setting) for t in VALID_DROP)


def set_text(setting: str, value: str) -> str:
    return f"Let's go with {BY_KEY[setting].phrase(value)}."


# ---------------------------------------------------------------------------- turns

SIMPLE_TEXT = {
    "undo_last": "Undo my most recent change that is still in effect.",
    "undo_earliest": "Of the changes still in effect, undo the one I made first.",
    "redo": "Actually, put that back.",
    "distractor": "By the way, my teammate runs this on Windows.",
}
HISTORY_EARLIEST = (
    "Roll back my oldest change that hasn't been undone yet.",
    "Undo the first change I never undid.",
    "Revert the earliest edit that was not reverted.",
)
"""Undo-earliest wordings that speak of undo history (v2 guard)."""


def history_turn(i: int = 0) -> dict[str, Any]:
    return {"op": "undo_earliest", "text": HISTORY_EARLIEST[i % len(HISTORY_EARLIEST)]}


def set_turn(setting: str, value: str) -> dict[str, Any]:
    return {"op": "set", "setting": setting, "value": value, "text": set_text(setting, value)}


def drop_turn(setting: str, text: str | None = None) -> dict[str, Any]:
    text = text or f"Remove the requirement on {BY_KEY[setting].name}."
    return {"op": "drop", "setting": setting, "text": text}


ONE_READING_DESC = {"output_format": "which data format the output is written in"}
"""The description with one reading where the catalogue's has two (reading 7: "what kind of
files the tool writes" once a compression change was made)."""


def undo_ref_turn(setting: str, text: str | None = None) -> dict[str, Any]:
    """An undo by description; without ``text``, worded with one reading."""
    desc = BY_KEY[setting].description
    if text is None:
        text = "Undo my change to {desc} that is still in effect."
        desc = ONE_READING_DESC.get(setting, desc)
    return {"op": "undo_ref", "setting": setting, "text": text.format(desc=desc)}


# v3: wordings that trigger a second reading (contract section 2), and their one-reading forms
AMBIGUOUS_REF = (
    "Undo what I said about {desc}.",  # history
    "Put {desc} back the way it was before I changed it.",  # an undo worded as an edit
    "Revert my change to {desc}; it should go back to what it was.",
)
JUST_UNDID_REDO = ("Redo the change I just undid.", "Bring back the change I undid most recently.")
DEEP_REDO = "Redo once more: bring back the change I undid before that one."
REPLACING_SET = ("Let's go with {phrase} instead.", "Actually, I want {phrase}.",
                 "On second thought, switch to {phrase}.")
NAMED_SET = "Let's go with {phrase} instead of the value we had."
EARLIEST_TEXTS = ("Undo the earliest change that is still in effect.",
                  "Go back on the earliest change that is still in place.")
LAST_TEXTS = ("Scratch that last change.", "Go back on my last change, please.")
LINK_TEXTS = ("Use the same format for the output as for the input.",
              "Write the output in whatever format the input files are in.",
              "Set the output format to whatever the input format is right now.")


def worded_set(setting: str, value: str, template: str) -> dict[str, Any]:
    text = template.format(phrase=BY_KEY[setting].phrase(value))
    return {"op": "set", "setting": setting, "value": value, "text": text}


def simple_turn(op: str) -> dict[str, Any]:
    return {"op": op, "text": SIMPLE_TEXT[op]}


def _weighted_pool() -> tuple[dict[str, Any], ...]:
    """Every turn the arbitrary-scenario strategy can produce, repeated to weight it.

    One ``sampled_from`` draw per turn keeps generation cheap (hypothesis' per-draw overhead
    dominates otherwise).
    """
    rng = random.Random(20240601)
    by_op: dict[str, list[dict[str, Any]]] = {}
    sets = by_op["set"] = []
    for k in KEYS:
        weight = 3 if k in POOL else 1
        for v in BY_KEY[k].domain:
            sets += [set_turn(k, v)] * weight
        for v in _SPECIAL.get(k, ()):
            sets += [set_turn(k, v)] * 6
    drops = by_op["drop"] = []
    for k in KEYS:
        weight = 3 if k in POOL else 1
        drops += [drop_turn(k, t) for t in valid_drop_texts(k)] * 2 * weight
        drops += [drop_turn(k, _fill(t, k)) for t in INVALID_DROP]
        drops += [drop_turn(k, _glued(rng)) for _ in range(weight)]
    by_op["undo_ref"] = [undo_ref_turn(k) for k in KEYS for _ in range(4 if k in POOL else 1)]
    by_op["undo_ref"] += [undo_ref_turn(k, t) for k in POOL for t in AMBIGUOUS_REF]
    for op in SIMPLE_TEXT:
        by_op[op] = [simple_turn(op)]
    by_op["undo_earliest"] += [history_turn(i) for i in range(len(HISTORY_EARLIEST))]
    by_op["redo"] += [{"op": "redo", "text": t} for t in (*JUST_UNDID_REDO, DEEP_REDO)]
    by_op["undo_earliest"] += [{"op": "undo_earliest", "text": t} for t in EARLIEST_TEXTS]
    for k in POOL:
        for v in BY_KEY[k].domain[:3]:
            sets += [worded_set(k, v, t) for t in (*REPLACING_SET, NAMED_SET)]
    for v in BY_KEY["output_format"].domain:
        sets += [worded_set("output_format", v, t) for t in LINK_TEXTS] * 3
    share = {
        "set": 35,
        "drop": 12,
        "undo_last": 10,
        "undo_ref": 12,
        "undo_earliest": 10,
        "redo": 12,
        "distractor": 9,
    }
    out: list[dict[str, Any]] = []
    for op, pct in share.items():
        rng.shuffle(by_op[op])
        out += [by_op[op][i % len(by_op[op])] for i in range(pct * 20)]
    return tuple(out)


TURN_POOL = _weighted_pool()
turns = st.sampled_from(TURN_POOL)
"""One arbitrary turn (any of the seven ops)."""


# ---------------------------------------------------------------------------- initial specs


@st.composite
def initial_specs(draw: st.DrawFn, valid_only: bool = False) -> dict[str, str]:
    """Mostly canonical; otherwise random values on the pool settings, usually coupled."""
    spec = canonical_initial()
    if draw(st.integers(0, 9)) < 6:
        return spec
    for k in draw(st.lists(st.sampled_from(POOL), max_size=len(POOL), unique=True)):
        spec[k] = draw(st.sampled_from(sorted(SPEC_VALUES[k])))
    if valid_only or draw(st.integers(0, 4)) > 0:
        spec = naive.couple(spec)
    return spec


# ---------------------------------------------------------------------------- scenarios


def build(initial: dict[str, str], turn_list: list[dict[str, Any]], n: int = 0) -> Scenario:
    record = {
        "id": f"hyp-{n:04d}",
        "category": "long_chain",
        "source": "handwritten",
        "initial": initial,
        "turns": turn_list,
    }
    return Scenario.model_validate_json(json.dumps(record))


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Any scenario the records accept, biased towards collisions, shadowing and couplings."""
    init = draw(initial_specs())
    return build(init, draw(st.lists(turns, min_size=1, max_size=10)))


def _fits(state: naive.State, turn: dict[str, Any]) -> bool:
    return not isinstance(naive.step(state, turn), naive.Bad)


@cache
def _index(n: int) -> st.SearchStrategy[int]:
    return st.integers(0, n - 1)


def _pick(draw: st.DrawFn, xs: Sequence[T]) -> T:
    return xs[draw(_index(len(xs)))]


class Profile(NamedTuple):
    """How a valid scenario is grown: op weights (by repetition) and the settings sets use."""

    ops: tuple[str, ...]
    set_settings: tuple[str, ...]


PROFILES = (
    Profile(
        ("set", "set", "set", "drop", "undo_last", "undo_last", "undo_ref", "undo_ref",
         "undo_earliest", "undo_earliest", "redo", "redo", "redo", "distractor"),
        (*FORCED * 3, *TRIGGERS * 3, *OTHERS * 2, *KEYS),
    ),
    # couplings: sets and drops on the rules' settings only
    Profile(
        ("set", "set", "set", "set", "drop", "undo_last", "undo_ref", "undo_ref",
         "undo_earliest", "redo"),
        (*FORCED, *TRIGGERS),
    ),
    # history: many undos and redos over few settings
    Profile(
        ("set", "set", "undo_last", "undo_ref", "undo_earliest", "undo_earliest", "redo",
         "redo", "redo"),
        (*FORCED, "timeout_seconds", "input_format"),
    ),
    # redo of an early change: undos by reference or earliest over distinct settings, then redo
    Profile(
        ("set", "set", "set", "undo_last", "undo_ref", "undo_ref", "undo_earliest",
         "undo_earliest", "redo", "redo", "redo"),
        (*OTHERS, "retries", "max_rows", "parallel"),
    ),
)


def draw_valid_turn(
    draw: st.DrawFn, state: naive.State, profile: Profile = PROFILES[0]
) -> dict[str, Any]:
    """One turn that keeps a valid scenario valid (according to the naive engine)."""
    options: dict[str, list[dict[str, Any]]] = {"distractor": [simple_turn("distractor")]}
    for op in ("undo_last", "undo_earliest", "redo"):
        turn = simple_turn(op)
        if _fits(state, turn):
            options[op] = [turn]
    if "undo_earliest" in options and _fits(state, history_turn()):
        options["undo_earliest"].append(history_turn())
    refs = [undo_ref_turn(s) for s in dict.fromkeys(c.setting for c in state.changes)]
    refs = [t for t in refs if _fits(state, t)]
    if refs:
        options["undo_ref"] = refs
    drops = [drop_turn(s) for s in POOL if _fits(state, drop_turn(s))]
    if drops:
        options["drop"] = drops
    op = _pick(draw, [op for op in profile.ops if op in options or op == "set"])
    if op == "set":
        s = _pick(draw, profile.set_settings)
        weighted = (*BY_KEY[s].domain, *_SPECIAL.get(s, ()) * 3)
        ok = [v for v in weighted if _fits(state, set_turn(s, v))]
        assert ok, f"no valid value for {s}"  # the forced value is always acceptable
        return set_turn(s, _pick(draw, ok))
    turn = _pick(draw, options[op])
    if op == "drop":
        turn = drop_turn(turn["setting"], _pick(draw, valid_drop_texts(turn["setting"])))
    return turn


@st.composite
def valid_turn_lists(
    draw: st.DrawFn, min_turns: int = 1, max_turns: int = 10
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    init, turn_list, _ = draw(_valid_runs(min_turns, max_turns))
    return init, turn_list
@st.composite
def _valid_runs(
    draw: st.DrawFn, min_turns: int, max_turns: int
) -> tuple[dict[str, str], list[dict[str, Any]], list[naive.State]]:
    """(initial, turns, the naive state before the first turn and after each turn)."""
    init = draw(initial_specs(valid_only=True))
    state = naive.start(init)
    assert isinstance(state, naive.State)
    states = [state]
    n = draw(st.integers(min_turns, max_turns))
    profile = _pick(draw, PROFILES)
    out: list[dict[str, Any]] = []
    for _ in range(n):
        turn = draw_valid_turn(draw, state, profile)
        nxt = naive.step(state, turn)
        assert isinstance(nxt, naive.State), (turn, nxt)
        state = nxt
        states.append(state)
        out.append(turn)
    return init, out, states


@st.composite
def valid_scenarios(draw: st.DrawFn, min_turns: int = 1, max_turns: int = 10) -> Scenario:
    """Scenarios the naive engine accepts, built one valid turn at a time."""
    init, turn_list = draw(valid_turn_lists(min_turns, max_turns))
    return build(init, turn_list)


SHARP_CANDIDATES = (
    *(simple_turn(op) for op in SIMPLE_TEXT),
    history_turn(),
    *(undo_ref_turn(k) for k in POOL),
    *(set_turn(k, v) for k in POOL for v in BY_KEY[k].domain),
    *(drop_turn(k) for k in POOL),
    *(drop_turn(k, _fill(t, k)) for k in POOL[:3] for t in INVALID_DROP[:3]),
)


RARE = ("undo_last_ambiguous", "undo_ref_forced", "undo_earliest_shadowed", "coupling_override",
        "undo_earliest_history")
"""Guards that need a particular history to fire, rarest first."""


def violating_turns(state: naive.State) -> dict[str, list[dict[str, Any]]]:
    """Candidate next turns that the naive engine rejects, grouped by the guard they violate."""
    out: dict[str, list[dict[str, Any]]] = {}
    for turn in SHARP_CANDIDATES:
        r = naive.step(state, turn)
        if isinstance(r, naive.Bad):
            out.setdefault(r.kind, []).append(turn)
    return out


@st.composite
def near_valid_scenarios(draw: st.DrawFn) -> Scenario:
    """A valid prefix (0-9 turns), then 1 or more other turns.

    Half the time the first turn after the prefix is one the naive engine rejects; then, when
    some prefix of the valid run reaches a state where a rare guard can fire, the prefix is cut
    there and the turn violates the rarest such guard (so that all get exercised in rich states).
    """
    k = draw(st.integers(0, 9))
    init, prefix, states = draw(_valid_runs(k, k))
    first: list[dict[str, Any]] = []
    if draw(st.booleans()):
        bad_at = [violating_turns(s) for s in states]
        rarest = next((r for r in RARE if any(r in bad for bad in bad_at)), None)
        if rarest is not None and draw(st.integers(0, 3)):
            i = _pick(draw, [i for i, bad in enumerate(bad_at) if rarest in bad])
            kinds = [rarest]
        else:
            i = k
            kinds = sorted(bad_at[i])
        prefix = prefix[:i]
        if kinds:
            first = [_pick(draw, bad_at[i][_pick(draw, kinds)])]
    size = len(prefix) + len(first)
    rest = draw(st.lists(turns, min_size=1 - len(first), max_size=10 - size))
    return build(init, prefix + first + rest)


def make(*turn_list: dict[str, Any], initial: dict[str, str] | None = None) -> Scenario:
    """A scenario from explicit turns (for the example-based tests)."""
    return build(initial or canonical_initial(), list(turn_list))


def _reworded(turn: dict[str, Any], choice: int) -> dict[str, Any]:
    """``turn`` with a wording that may trigger a second reading (same op and arguments)."""
    op = turn["op"]
    if op == "redo":
        texts = (*JUST_UNDID_REDO, DEEP_REDO)
        return {**turn, "text": texts[choice % len(texts)]}
    if op == "undo_ref":
        return undo_ref_turn(turn["setting"], AMBIGUOUS_REF[choice % len(AMBIGUOUS_REF)])
    if op == "undo_last":  # right after an undo: the undo, or the change? (reading 8)
        return {**turn, "text": LAST_TEXTS[choice % len(LAST_TEXTS)]}
    if op == "undo_earliest" and turn["text"] == SIMPLE_TEXT["undo_earliest"]:
        return {**turn, "text": EARLIEST_TEXTS[choice % len(EARLIEST_TEXTS)]}
    if op == "set":
        if turn["setting"] == "output_format" and choice % 2:
            return {**turn, "text": LINK_TEXTS[choice % len(LINK_TEXTS)]}
        texts = (*REPLACING_SET, NAMED_SET)
        return worded_set(turn["setting"], turn["value"], texts[choice % len(texts)])
    return turn


def _stack_up(init: dict[str, str], turn_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two undos then two redos after ``turn_list``, as far as they keep it valid (stacked
    redos are rare otherwise)."""
    state = naive.naive_replay(init, turn_list, readings=False)
    if isinstance(state, tuple):
        return turn_list
    out = list(turn_list)
    for op in ("undo_earliest", "undo_last", "redo", "redo"):
        trial = [*out, simple_turn(op)]
        if isinstance(naive.naive_replay(init, trial, readings=False), tuple):
            trial = [*out, simple_turn("undo_earliest" if op != "redo" else "redo")]
            if isinstance(naive.naive_replay(init, trial, readings=False), tuple):
                break
        out = trial
    return out


def _twice_then_ref(init: dict[str, str], turn_list: list[dict[str, Any]], key: str
                    ) -> list[dict[str, Any]]:
    """``key`` set twice, the second change undone, then an undo by description of ``key``
    (undo by description with a history), as far as that keeps it valid."""
    a, b = [v for v in BY_KEY[key].domain if v != init[key]][:2]
    out = list(turn_list)
    for turn in (set_turn(key, a), set_turn(key, b), simple_turn("undo_last"),
                 undo_ref_turn(key)):
        trial = [*out, turn]
        if isinstance(naive.naive_replay(init, trial, readings=False), tuple):
            break
        out = trial
    return out


def _kind_of_files(init: dict[str, str], turn_list: list[dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    """A compression change and an output-format change, then an undo of the output format by
    the catalogue's description ("what kind of files the tool writes"), as far as that keeps it
    valid."""
    out = list(turn_list)
    gz = next(v for v in BY_KEY["compression"].domain if v != init["compression"])
    md = next(v for v in ("markdown", "csv") if v != init["output_format"])
    for turn in (set_turn("compression", gz), set_turn("output_format", md),
                 undo_ref_turn("output_format", "Undo the change I made to {desc}.")):
        trial = [*out, turn]
        if isinstance(naive.naive_replay(init, trial, readings=False), tuple):
            break
        out = trial
    return out


def _earliest_after_redo(init: dict[str, str], turn_list: list[dict[str, Any]]
                        ) -> list[dict[str, Any]]:
    """The earliest change undone and brought back, then undo-earliest worded without "made"
    (the earliest change after a redo), as far as that keeps it valid."""
    out = list(turn_list)
    for turn in (simple_turn("undo_earliest"), simple_turn("redo"),
                 {"op": "undo_earliest", "text": EARLIEST_TEXTS[0]}):
        trial = [*out, turn]
        if isinstance(naive.naive_replay(init, trial, readings=False), tuple):
            break
        out = trial
    return out


@st.composite
def read_scenarios(draw: st.DrawFn) -> Scenario:
    """A valid scenario (v1 and v2 guards) with some set, undo_ref and redo turns reworded so
    that a second reading (contract v3) may be triggered: rewording keeps every other guard."""
    init, turn_list = draw(valid_turn_lists(2, 8))
    shape = draw(st.integers(0, 4))
    if shape == 4:
        turn_list = _kind_of_files(init, turn_list)
    elif shape == 1:
        turn_list = _stack_up(init, turn_list)
    elif shape == 2:
        turn_list = _twice_then_ref(init, turn_list, _pick(draw, OTHERS))
    elif shape == 3:
        turn_list = _earliest_after_redo(init, turn_list)
    out = []
    for turn in turn_list:
        choice = draw(st.integers(0, 11))
        out.append(_reworded(turn, choice) if choice < 6 else turn)
    return build(init, out)
