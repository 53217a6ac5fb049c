"""What differs between the two tracks when a run is played, resumed, repaired or checked:
the messages a turn adds, the prompt's fingerprint, and what an answer is parsed into.

The spec track parses a spec from the answer (``core.parse``). The code track takes a program
(``code.conversation.program_of``): its record holds no spec (null) and an abstention only when
there is no program; the program's behaviour is observed when the run is scored
(``runs/observe.py``), never while it is played.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from butterfly.code import conversation
from butterfly.core.parse import parse_answer
from butterfly.core.prompts import Message, added_messages, prompt_fingerprint
from butterfly.core.vocab import Protocol, SCBase, Strategy, Track
from butterfly.runs.records import RunParams
from oracle import Scenario


class Parsed(NamedTuple):
    """What a call record stores of its answer: the spec (or null), the abstention, why."""

    spec: dict[str, str] | None
    reason: str | None
    detail: str


def prompt_sha256(strategy: Strategy = "zero-shot", protocol: Protocol = "schema",
                  sc_base: SCBase = "zero-shot", track: Track = "spec") -> str:
    """The hash of what a run's prompts are made of (a resume refuses another)."""
    text = (conversation.fingerprint() if track == "code"
            else prompt_fingerprint(strategy, protocol, sc_base))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def params_prompt_sha256(p: RunParams) -> str:
    """:func:`prompt_sha256` of a run's parameters."""
    return prompt_sha256(p.strategy, p.protocol, p.sc_base, p.track)


def turn_messages(scenario: Scenario, turn: int, previous: str | None, layout: str,
                  p: RunParams) -> list[Message]:
    """What ``turn`` adds to what was sent for the turn before it, on the run's track."""
    if p.track == "code":
        return conversation.added_messages(scenario, turn, previous)
    return added_messages(scenario, turn, previous, layout, p.mode, p.strategy, p.protocol,
                          p.sc_base)


def parse_call(text: str, p: RunParams, truncated: bool) -> Parsed:
    """An answer as its call record stores it, on the run's track."""
    if p.track == "code":
        got = conversation.program_of(text, truncated)
        return Parsed(None, got.reason, got.detail)
    parsed = parse_answer(text, p.parse, truncated=truncated, protocol=p.protocol)
    return Parsed(parsed.spec, parsed.reason, parsed.detail)
