"""The naive twin's second readings (contract v3, section 2), written again from the contract.

It does not import ``oracle.readings``: the trigger words are matched as sequences of word
tokens (not regular expressions), and a second reading is replayed from scratch over the whole
scenario with a plain list of changes, recomputing the spec after every turn. Only plain data is
borrowed (the catalogue's couplings and value lists, through ``naive``).

``first_reading(initial, turns, specs)`` returns ``(turn, "reading_N")`` for the first turn (and,
at that turn, the lowest-numbered reading) whose second reading gives a spec other than
``specs`` (the oracle's) after some turn, or None. Readings 1 to 5 are the contract's; 6 (the
earliest change after a redo) was found by careful readers of the v3 suites, 7 (what kind of
files the tool writes, once a compression change has been made) and 8 (an undo of the last
change right after an undo) by those of the v4 suites.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import naive

from oracle.catalogue import SPEC_VALUES, UNSPECIFIED

FOLLOW = "<follows the input format>"
UNDOISH = ("undo_last", "undo_ref", "undo_earliest", "redo")


# ---------------------------------------------------------------------------- words as tokens


def tokens(text: str) -> list[str]:
    plain = text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")
    return re.findall(r"[a-z0-9']+", plain)


def has(text: str, phrases: Sequence[str]) -> bool:
    """Does ``text`` hold one of ``phrases`` as consecutive word tokens?"""
    words = tokens(text)
    for phrase in phrases:
        p = phrase.split()
        if any(words[i : i + len(p)] == p for i in range(len(words) - len(p) + 1)):
            return True
    return False


UNDONE = ("undid", "undone", "reverted", "rolled back", "took back", "taken back")
JUST_UNDONE = (
    *[f"{a} {b}" for a, b in itertools.product(("just", "most recently", "last"),
                                                 (*UNDONE, "scratched"))],
    *[f"{a} {b}" for a, b in itertools.product(UNDONE, ("most recently", "last", "just now"))],
)
STILL = ("still in effect", "still active", "still stands")
OUTCOME = (
    "back the way it was", "back to what it was", "back to how it was", "the way it was before",
    *[f"back to {a} {b}" for a, b in itertools.product(("its", "the"),
                                                       ("original", "previous", "old",
                                                        "earlier"))],
    "keep the original", "restore the original", "restore original", "restore the previous",
    "restore previous",
)
REPLACING = ("instead", "on second thought", "on second thoughts", "actually")
VAGUE_AFTER_INSTEAD_OF = ("that", "this", "it", "before", "what", "the old", "the previous",
                          "the last", "the earlier", "the other", "the current")
LINKING = ("same format", "whatever format", "whatever the input", "match the input",
           "matches the input", "matching the input", "format as the input",
           "format of the input", "the input's format", "the inputs format")
PINNED = ("right now", "currently", "at the moment", "is now", "once")
KIND_OF_FILES = ("kind of files", "kinds of files", "kind of file", "kind of output files",
                 "kinds of output files", "kind of output file")
READ_FILES = ("the tool reads", "it reads")


def names_replaced_value(text: str) -> bool:
    """'X instead of Y' with Y a value (not 'that', 'the old one', ...)."""
    words = tokens(text)
    for i in range(len(words) - 1):
        if words[i : i + 2] == ["instead", "of"]:
            rest = " ".join(words[i + 2 :])
            if not any(rest == v or rest.startswith(v + " ") for v in VAGUE_AFTER_INSTEAD_OF):
                return True
    return False


# ---------------------------------------------------------------------------- a free replay


def free_replay(initial: Mapping[str, str], turns: Sequence[Mapping[str, Any]]
                ) -> list[dict[str, str]]:
    """Specs after every turn (index 0 = initial), no guard; a turn may be a list of turns
    (done one after the other, one spec after them) or ``{"op": "follow"}`` (a linked change)."""
    changes: list[list[Any]] = []  # [setting, value, active, when it last came into effect]
    redo: list[int] = []
    specs = [spec_now(initial, changes)]
    for turn in turns:
        for part in turn if isinstance(turn, list) else [turn]:
            do(part, changes, redo)
        specs.append(spec_now(initial, changes))
    return specs


def do(turn: Mapping[str, Any], changes: list[list[Any]], redo: list[int]) -> None:
    op = turn["op"]
    live = [i for i, c in enumerate(changes) if c[2]]
    now = 1 + max((c[3] for c in changes), default=0)
    if op in ("set", "drop", "follow"):
        value = {"set": turn.get("value"), "drop": UNSPECIFIED, "follow": FOLLOW}[op]
        changes.append([turn.get("setting", "output_format"), value, True, now])
        redo.clear()
    elif op == "redo" and redo:
        i = redo.pop()
        changes[i][2] = True
        changes[i][3] = now
    elif op in ("undo_last", "undo_earliest", "undo_ref"):
        if op == "undo_ref":
            live = [i for i in live if changes[i][0] == turn["setting"]]
        if live:
            i = live[0] if op == "undo_earliest" else live[-1]
            changes[i][2] = False
            redo.append(i)
    elif op == "off":  # a change taken back by a reading
        changes[turn["index"]][2] = False
        redo.append(turn["index"])


def spec_now(initial: Mapping[str, str], changes: list[list[Any]]) -> dict[str, str]:
    spec = dict(initial)
    for setting, value, active, _ in changes:
        if active:
            spec[setting] = value
    if spec["output_format"] == FOLLOW:
        followed = spec["input_format"]
        ok = followed in SPEC_VALUES["output_format"]
        spec["output_format"] = followed if ok else "-- no such output format --"
    return naive.couple(spec)


# ---------------------------------------------------------------------------- the readings


def made_before(turns: Sequence[Mapping[str, Any]], t: int) -> tuple[list[list[Any]], list[int]]:
    """The changes (and redo stack) just before turn ``t`` (1-based)."""
    changes: list[list[Any]] = []
    redo: list[int] = []
    for turn in turns[: t - 1]:
        do(turn, changes, redo)
    return changes, redo


def alternatives(initial: Mapping[str, str], turns: Sequence[Mapping[str, Any]], t: int
                 ) -> list[tuple[int, Any]]:
    """(reading number, the turn as that reading takes it) for every reading turn ``t`` has."""
    turn = turns[t - 1]
    op, text = turn["op"], turn["text"]
    changes, _ = made_before(turns, t)
    live = [i for i, c in enumerate(changes) if c[2]]
    out: list[tuple[int, Any]] = []
    before = [u["op"] for u in turns[: t - 1] if u["op"] in UNDOISH]
    if op == "redo" and before and before[-1] == "redo" and has(text, JUST_UNDONE):
        out.append((1, {"op": "distractor"}))
    if op == "undo_ref":
        mine = [i for i, c in enumerate(changes) if c[0] == turn["setting"]]
        if len(mine) >= 2 and not has(text, STILL):
            if not changes[mine[-1]][2]:
                out.append((2, {"op": "distractor"}))
            live_mine = [i for i in mine if changes[i][2]]
            if len(live_mine) > 1:
                out.append((2, [{"op": "off", "index": i} for i in live_mine]))
        if has(text, OUTCOME):
            value = value_after_undo(initial, turns, t)
            out.append((3, {"op": "set", "setting": turn["setting"], "value": value}))
    if op in ("set", "drop") and live and has(text, REPLACING) and not names_replaced_value(text):
        out.append((4, [{"op": "off", "index": live[-1]}, dict(turn)]))
    if (op == "set" and turn["setting"] == "output_format" and has(text, LINKING)
            and not has(text, PINNED)):
        out.append((5, {"op": "follow"}))
    if (op == "undo_ref" and turn["setting"] == "output_format" and _kind_of_output(text)
            and not has(text, ("format",)) and any(c[0] == "compression" for c in changes)):
        compressing = [i for i in live if changes[i][0] == "compression"]
        out.append((7, {"op": "off", "index": compressing[-1]} if compressing
                    else {"op": "distractor"}))
    last = [u["op"] for u in turns[: t - 1] if u["op"] != "distractor"]
    if (op == "undo_last" and last and last[-1] in ("undo_last", "undo_ref", "undo_earliest")
            and not has(text, ("still in effect",))):
        out.append((8, {"op": "redo"}))
    if op == "undo_earliest" and live and not has(text, ("made",)):
        longest = sorted(live, key=lambda i: changes[i][3])[0]
        if longest != live[0]:
            out.append((6, {"op": "off", "index": longest}))
    return out


def _kind_of_output(text: str) -> bool:
    """"kind of files" not followed by what the tool reads."""
    words = tokens(text)
    for phrase in KIND_OF_FILES:
        p = phrase.split()
        for i in range(len(words) - len(p) + 1):
            if words[i : i + len(p)] == p:
                after = " ".join(words[i + len(p) : i + len(p) + 3])
                if not any(after.startswith(r) for r in READ_FILES):
                    return True
    return False


def value_after_undo(initial: Mapping[str, str], turns: Sequence[Mapping[str, Any]], t: int
                     ) -> str:
    """The setting's value (before couplings) once turn ``t``, an undo_ref, is done."""
    changes, redo = made_before(turns, t)
    do(turns[t - 1], changes, redo)
    value = None
    for setting, v, active, _ in changes:
        if active and setting == turns[t - 1]["setting"]:
            value = v
    return value if value is not None else initial[turns[t - 1]["setting"]]


def first_reading(initial: Mapping[str, str], turns: Sequence[Mapping[str, Any]],
                  specs: Sequence[Mapping[str, str]]) -> tuple[int, str] | None:
    for t in range(1, len(turns) + 1):
        for number, alt in alternatives(initial, turns, t):
            rewritten = [*turns[: t - 1], alt, *turns[t:]]
            if free_replay(initial, rewritten) != list(specs):
                return (t, f"reading_{number}")
    return None
