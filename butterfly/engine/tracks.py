"""Tracks as objects: what differs between keeping the spec as JSON and keeping it as a program.

A :class:`Track` holds everything that depends on what the model keeps: the messages a turn
adds, the fingerprint and version of its prompts, how an answer is read (a spec parsed, or a
program taken) when it is played and when a run is read back, what it refuses to play (as
flags, and as a run's settings), whether an ask over the context window is an abstention,
whether its answers are programs observed in the sandbox before they are judged, how a turn's
answer is judged against the oracle (for the code track: with the observed behaviour put in),
the transcript view that shows its turns, and the answer the dry run expects. :data:`TRACKS` is
the registry; a new track is one entry (docs/design.md, "Where a change goes"). Every layer
above asks the run's :func:`track` rather than testing its name. Pure and notebook-inlinable:
imports ``core``, ``code`` and ``oracle`` only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from butterfly.code import conversation as code_conversation
from butterfly.code.judge import judged
from butterfly.code.program import render
from butterfly.core.parse import Parsed as Parsed  # what a call record stores of an answer
from butterfly.core.parse import parse_answer
from butterfly.core.prompts import PROMPT_VERSION, Message, added_messages, prompt_fingerprint
from butterfly.core.vocab import DEFAULTS, Mode, ParseMode, SCBase, Strategy
from butterfly.core.vocab import Protocol as AnswerProtocol
from oracle import Scenario

if TYPE_CHECKING:  # the flags as given, read before they become a run's settings
    from butterfly.core.options import RunOptions


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


class Asking(Protocol):
    """Where a run asks (``RunParams``, a dry run's bill): its ask points, None for every
    turn."""

    @property
    def ask_at(self) -> Sequence[int] | None: ...


@dataclass(frozen=True)
class Track:
    """One track: its name, what it is and the functions that make it what it is (subclassed
    per track)."""

    name: str
    prompt_version: int
    """The version of the track's prompts (``prompt_version`` in a new run's manifest)."""
    max_tokens: int = DEFAULTS.max_tokens
    """The most tokens per answer when ``--max-tokens`` is not given."""
    observes: bool = False
    """Its answers are programs, observed in the sandbox before they are judged: a run of it is
    observed once played (``butterfly observe``), records its sandbox, reads its turns back
    from the observations on file, has the code figures in its score, and cannot be played
    sequentially (the design decides from answers as they come)."""
    view: str = "answers"
    """The transcript view that shows its turns (``show``, the report): ``answers``, or
    ``programs`` (each turn's program diff beside its observed spec)."""
    keyed: bool = True
    """Its name is part of a run's answer key (a resume with another track is refused); the
    spec track's is not, so runs made before tracks resume as they did."""
    label: str = ""
    """What its prompt versions are called before ``prompt vN`` (``code `` for the code
    track's)."""

    def fingerprint(self, p: Played) -> str:
        """The text whose sha256 names a run's prompts (a resume refuses another)."""
        raise NotImplementedError

    def prompt_sha256(self, p: Played) -> str:
        """The sha256 of :meth:`fingerprint`: a run manifest's ``prompt_sha256``."""
        return hashlib.sha256(self.fingerprint(p).encode("utf-8")).hexdigest()

    def version_name(self, version: int | None) -> str:
        """``prompt v3`` (``code prompt v1`` on the code track); ``prompt before versions`` for
        a fingerprint without a known version."""
        if version is None:
            return "prompt before versions"
        return f"{self.label}prompt v{version}"

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

    def flags_refusal(self, o: RunOptions, layouts: Sequence[str]) -> str | None:
        """Why ``butterfly run`` cannot play these flags on this track (one line naming them),
        or None; ``layouts``: ``o.layouts`` parsed."""
        return None

    def protocol(self, chosen: AnswerProtocol) -> AnswerProtocol:
        """The output protocol a run records, given the one the flags chose."""
        return chosen

    def context_abstains(self, p: Asking) -> bool:
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
        return parse_answer(text, p.parse, truncated=truncated, protocol=p.protocol)

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

    def flags_refusal(self, o: RunOptions, layouts: Sequence[str]) -> str | None:
        """Chat mode, zero-shot, one answer per turn, layout E (contract section 7: other modes
        may follow later); its answers are programs, so no protocol of its own."""
        shown = o.layouts if isinstance(o.layouts, str) else ",".join(o.layouts)
        unsupported = [flag for flag, bad in (
            (f"--mode {o.mode}", o.mode != "chat"),
            (f"--strategy {o.strategy}", o.strategy != "zero-shot"),
            (f"--samples {o.samples}", o.samples not in (None, 1)),
            (f"--layouts {shown}", tuple(layouts) != ("E",)),
            (f"--protocol {o.protocol}", o.protocol is not None),
            (f"--ask-at {o.ask_at}", o.ask_at is not None),
        ) if bad]
        if not unsupported:
            return None
        return (f"the code track plays chat mode, zero-shot, layout E, one sample, answers as "
                f"programs: {', '.join(unsupported)} is not supported")

    def protocol(self, chosen: AnswerProtocol) -> AnswerProtocol:
        return "json"  # a program, not a spec: no JSON Schema as response_format

    def context_abstains(self, p: Asking) -> bool:
        return True  # a program that no longer fits cannot be answered: contract section 7

    def judge(self, oracle_spec: Mapping[str, str],
              observed: Mapping[str, str] | None) -> dict[str, str] | None:
        return None if observed is None else judged(observed, oracle_spec)

    def expected_answer(self, spec: Mapping[str, str]) -> str:
        return code_conversation.answer_text(render(code_conversation.code_spec(dict(spec))))


SPEC: Final = SpecTrack("spec", PROMPT_VERSION, keyed=False)
CODE: Final = CodeTrack("code", code_conversation.CODE_PROMPT_VERSION,
                        max_tokens=DEFAULTS.code_max_tokens, observes=True, view="programs",
                        label="code ")

TRACKS: Final[dict[str, Track]] = {t.name: t for t in (SPEC, CODE)}
"""The registry of tracks, by name (``RunParams.track``, a suite manifest's ``track``). The
names of the tracks it ships are ``core.vocab.TRACKS`` (argparse's choices, the schemas)."""


def track(name: str) -> Track:
    """The track named ``name``."""
    return TRACKS[name]


def registered(name: str) -> str:
    """``name`` if it names a track of the registry; else ValueError (a record's validator)."""
    if name not in TRACKS:
        raise ValueError(f"no track named {name!r} (known: {', '.join(TRACKS)})")
    return name

