"""Contract v3, section 3: the system message states three definitions, in every prompt, and
read literally they give the oracle's answers.

``literal_replay`` follows the system message's words and nothing else: a change is a message
that sets a value or removes a requirement; "my last change" is the change made most recently
among those still in effect; a redo brings back, of the changes undone since the latest new
change that are still undone, the one undone most recently. It agrees with the oracle on every
turn of every shipped suite (read from ``scenarios/`` now, so new suite versions are checked
too), while the v2 wording, read as literally, does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest
from conftest import ROOT

from butterfly.core.prompts import (
    CHANGES,
    FORMATS,
    PROMPT_VERSION,
    SYSTEM,
    VALUES,
    messages,
    prompt_fingerprint,
    system_message,
)
from butterfly.core.vocab import LAYOUTS, MODES, PROTOCOLS, SC_BASES, STRATEGIES
from butterfly.kaggle import runner
from butterfly.suite.load import load_suite
from oracle import Scenario, apply_couplings, replay

SUITES = sorted((ROOT / "scenarios").glob("*.jsonl"))
SCENARIO = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")[0]
STYLES = [(s, p, b) for s in STRATEGIES for p in PROTOCOLS
          for b in (SC_BASES if s == "self-consistency" else ("zero-shot",))]
LITERAL_MAX_TURNS = 200
"""Chains longer than this (a suite asked at chosen turns) are left to the oracle's own tests:
the literal reading recomputes everything from scratch at every turn."""

Reading = Literal["v3", "v2 redo", "v2 change"]


def test_the_three_definitions_are_stated() -> None:
    assert 'An undo or a redo is not itself a change: "my last change" never means an undo' in (
        CHANGES)
    assert "A new change clears what redo could bring back." in CHANGES
    assert VALUES.endswith('or "unspecified"') and "listed for that setting" in VALUES
    assert PROMPT_VERSION == 3 and f"prompt_version={PROMPT_VERSION}" in prompt_fingerprint()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("strategy", "protocol", "base"), STYLES)
def test_every_prompt_states_them(mode: str, layout: str, strategy: str, protocol: str,
                                  base: str) -> None:
    """Every mode, layout, strategy and protocol: the system message holds the definitions, and
    every message that asks for the spec allows "unspecified" (v2's "a string value from its
    list" is gone from the answer format, the json-first/json-last variants and restate)."""
    msgs = messages(SCENARIO, 2, ["{}"], layout, mode, strategy, protocol, base)
    assert msgs[0]["role"] == "system" and CHANGES in msgs[0]["content"]
    asking = [m for m in msgs if "JSON object" in m["content"]]
    assert asking and all(VALUES in m["content"] for m in asking)
    assert not any("from its list" in m["content"] for m in msgs)
    assert VALUES in FORMATS[protocol]
    assert CHANGES in system_message(strategy, protocol, base)


def test_the_docs_show_the_system_message_verbatim() -> None:
    assert SYSTEM in (ROOT / "docs" / "conversation.md").read_text("utf-8")


def test_the_kaggle_notebook_sends_them() -> None:
    sent = runner.messages_for(SCENARIO, 1, [])
    assert CHANGES in sent[0]["content"] and VALUES in sent[1]["content"]
    # the committed notebook holds these very prompts: tests/butterfly/kaggle/test_notebook.py
    # checks that it is a fresh build of the package


@dataclass
class Change:
    assign: tuple[str, str]
    active: bool = True
    undone_at: int = -1  # the turn of its latest undo


def _latest_event(changes: list[Change], made_at: list[int]) -> tuple[str, int] | None:
    """v2's "every edit the user makes is a change": the latest edit, an undo included."""
    events = [("made", t, i) for i, t in enumerate(made_at)]
    events += [("undone", c.undone_at, i) for i, c in enumerate(changes) if c.undone_at >= 0]
    if not events:
        return None
    kind, _, index = max(events, key=lambda e: e[1])
    return kind, index


def _redo_target(changes: list[Change], made_at: list[int], reading: Reading) -> int:
    if reading == "v2 redo":  # "redo puts back the change that was undone most recently"
        return max(range(len(changes)), key=lambda i: changes[i].undone_at)
    latest_new = max(made_at)
    waiting = [i for i, c in enumerate(changes) if not c.active and c.undone_at > latest_new]
    return max(waiting, key=lambda i: changes[i].undone_at)


def literal_replay(scenario: Scenario, reading: Reading = "v3") -> list[dict[str, str]]:
    """The spec after every turn (0 = initial), from the system message's words."""
    changes: list[Change] = []
    made_at: list[int] = []
    specs = [dict(scenario.initial)]
    for t, turn in enumerate(scenario.turns, 1):
        if turn.op in ("set", "drop"):
            value = turn.value if turn.op == "set" else "unspecified"  # type: ignore[union-attr]
            changes.append(Change((turn.setting, value)))  # type: ignore[union-attr]
            made_at.append(t)
        elif turn.op == "undo_last":
            last = _latest_event(changes, made_at)
            if reading == "v2 change" and last is not None and last[0] == "undone":
                changes[last[1]].active = True  # "undo my last change" undoes the undo
            else:
                i = max(i for i, c in enumerate(changes) if c.active)
                changes[i].active, changes[i].undone_at = False, t
        elif turn.op in ("undo_ref", "undo_earliest"):
            active = [i for i, c in enumerate(changes) if c.active and (
                turn.op == "undo_earliest" or c.assign[0] == turn.setting)]  # type: ignore
            i = active[0] if turn.op == "undo_earliest" else active[-1]
            changes[i].active, changes[i].undone_at = False, t
        elif turn.op == "redo":
            changes[_redo_target(changes, made_at, reading)].active = True
        spec = dict(scenario.initial)
        for c in changes:
            if c.active:
                spec[c.assign[0]] = c.assign[1]
        specs.append(apply_couplings(spec))
    return specs


def _shipped() -> list[Scenario]:
    return [s for path in SUITES for s in load_suite(path) if len(s.turns) <= LITERAL_MAX_TURNS]


def test_read_literally_the_definitions_give_the_oracle_answers() -> None:
    shipped = _shipped()
    assert len(shipped) >= 146  # butterfly-40, -long, -hard and the handwritten file at least
    for s in shipped:
        assert literal_replay(s) == replay(s), s.id


@pytest.mark.parametrize("reading", ["v2 redo", "v2 change"])
def test_the_v2_wording_read_literally_does_not(reading: Reading) -> None:
    """What the definitions fix: "redo puts back the change that was undone most recently" read
    after a redo brings back nothing new; "every edit the user makes is a change" makes "undo my
    last change" after an undo undo the undo. Each reading changes some shipped scenario."""
    differ = []
    for s in _shipped():
        try:
            if literal_replay(s, reading) != replay(s):
                differ.append(s.id)
        except (ValueError, IndexError):  # the reading finds no change to act on
            differ.append(s.id)
    assert differ
