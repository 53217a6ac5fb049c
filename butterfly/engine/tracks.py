"""Tracks as objects: what differs between keeping the spec as JSON and keeping it as a program.

A :class:`Track` holds everything that depends on what the model keeps: the messages a turn
adds, the fingerprint of its prompts, how an answer is read (a spec parsed, or a program taken),
what it refuses to play, whether an ask over the context window is an abstention, how a turn's
answer is judged against the oracle (for the code track: with the observed behaviour put in),
and the answer the dry run expects. :data:`TRACKS` is the registry; a new track is one entry
(docs/design.md, "Where a change goes"). Pure and notebook-inlinable: imports ``core``,
``code`` and ``oracle`` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

from butterfly.code import conversation as code_conversation
from butterfly.code.judge import judged
from butterfly.code.program import render
from butterfly.core.parse import parse_answer
from butterfly.core.prompts import Message, added_messages, prompt_fingerprint
from butterfly.core.vocab import Mode, ParseMode, SCBase, Strategy
from butterfly.core.vocab import Protocol as AnswerProtocol
from butterfly.core.vocab import Track as TrackName
from oracle import Scenario


class Parsed(NamedTuple):
    """What a call record stores of its answer: the spec (or null), the abstention, why."""

    spec: dict[str, str] | None
    reason: str | None
    detail: str


class Played(Protocol):
    """What a track reads of a run's settings (``runs.records.RunParams`` has it all)."""

    @property
    def mode(self) -> Mode: ...
    @property
    def strategy(self) -> Strategy: ...
    @property
    def protocol(self) -> AnswerProtocol: ...
    @property
    def sc_base(self) -> SCBase: ...
    @property
    def parse(self) -> ParseMode: ...
    @property
    def samples(self) -> int: ...
    @property
    def layouts(self) -> tuple[str, ...]: ...
    @property
    def ask_at(self) -> tuple[int, ...] | None: ...


@dataclass(frozen=True)
class Track:
    """One track: its name and the functions that make it what it is (subclassed per track)."""

    name: TrackName

    def fingerprint(self, p: Played) -> str:
        """The text whose sha256 names a run's prompts (a resume refuses another)."""
        raise NotImplementedError

    def added(self, scenario: Scenario, turn: int, previous: str | None, layout: str,
              p: Played) -> list[Message]:
        """What ``turn`` adds to what was sent for the turn before it (``previous``: the
        answer to that turn as the model sees it in its history)."""
        raise NotImplementedError

    def read(self, text: str, p: Played, truncated: bool) -> Parsed:
        """An answer as its call record stores it."""
        raise NotImplementedError

    def refusal(self, p: Played) -> str | None:
        """Why the track cannot play these settings (one line), or None."""
        return None

    def context_abstains(self, p: Played) -> bool:
        """Whether a call over the model's context window is an abstention (reason
        ``context``: the model cannot answer it) rather than a provider fault."""
        return p.ask_at is not None

    def judge(self, oracle_spec: Mapping[str, str],
              observed: Mapping[str, str] | None) -> dict[str, str] | None:
        """A turn's judged spec: the spec track's answer is its spec (``observed``); the code
        track's is the oracle's spec with the observed code settings put in."""
        return None if observed is None else dict(observed)

    def expected_answer(self, spec: Mapping[str, str]) -> str:
        """The answer the dry run counts as the completion: the oracle's, as the model would
        write it."""
        raise NotImplementedError


@dataclass(frozen=True)
class SpecTrack(Track):
    """The model keeps the spec as one JSON object (contract sections 1 to 6)."""

    def fingerprint(self, p: Played) -> str:
        return prompt_fingerprint(p.strategy, p.protocol, p.sc_base)

    def added(self, scenario: Scenario, turn: int, previous: str | None, layout: str,
              p: Played) -> list[Message]:
        return added_messages(scenario, turn, previous, layout, p.mode, p.strategy, p.protocol,
                              p.sc_base)

    def read(self, text: str, p: Played, truncated: bool) -> Parsed:
        parsed = parse_answer(text, p.parse, truncated=truncated, protocol=p.protocol)
        return Parsed(parsed.spec, parsed.reason, parsed.detail)

    def expected_answer(self, spec: Mapping[str, str]) -> str:
        return json.dumps(dict(spec))


@dataclass(frozen=True)
class CodeTrack(Track):
    """The model keeps the spec as a program, ``tool.py`` (contract section 7): chat mode,
    zero-shot, layout E, one answer per turn; its behaviour is observed in the sandbox."""

    def fingerprint(self, p: Played) -> str:
        return code_conversation.fingerprint()

    def added(self, scenario: Scenario, turn: int, previous: str | None, layout: str,
              p: Played) -> list[Message]:
        return code_conversation.added_messages(scenario, turn, previous)

    def read(self, text: str, p: Played, truncated: bool) -> Parsed:
        got = code_conversation.program_of(text, truncated)
        return Parsed(None, got.reason, got.detail)

    def refusal(self, p: Played) -> str | None:
        if p.mode != "chat":
            return "the code track is played in chat mode (--mode chat)"
        if p.strategy != "zero-shot" or p.samples != 1:
            return "the code track is played zero-shot, one answer per turn"
        if tuple(p.layouts) != ("E",):
            return "the code track is played in layout E"
        return None

    def context_abstains(self, p: Played) -> bool:
        return True  # a program that no longer fits cannot be answered: contract section 7

    def judge(self, oracle_spec: Mapping[str, str],
              observed: Mapping[str, str] | None) -> dict[str, str] | None:
        return None if observed is None else judged(observed, oracle_spec)

    def expected_answer(self, spec: Mapping[str, str]) -> str:
        return code_conversation.answer_text(render(code_conversation.code_spec(dict(spec))))


TRACKS: Final[dict[str, Track]] = {t.name: t for t in (SpecTrack("spec"), CodeTrack("code"))}
"""The registry of tracks, by name (``RunParams.track``, a suite manifest's ``track``)."""


def track(name: str) -> Track:
    """The track named ``name``."""
    return TRACKS[name]


__all__ = ["TRACKS", "CodeTrack", "Parsed", "Played", "SpecTrack", "Track", "track"]
