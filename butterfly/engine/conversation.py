"""The conversation engine: one conversation of a run, played without I/O (sans-I/O).

Given a scenario, its layout and repeat, and the run's settings, :class:`Conversation` says
what to ask next (:meth:`Conversation.next_ask`: the turn, the whole message list and what this
turn added to it, its sha256, the samples, each sample's seed and what else a request carries),
reads each answer (:meth:`Conversation.read`: the answer-size cap, then the track's reader), says
whether a call over the context window is an abstention or ends the conversation
(:meth:`Conversation.over_context`), makes the turn's answer from its samples (the
self-consistency vote: :meth:`Conversation.close`) and says when the conversation is over. Every
door drives it with its own I/O: the run layer (``runs/play.py``: async, records, resume,
budget), the dry run (the run layer answered in memory), the Kaggle notebook (synchronous,
kaggle-benchmarks' chat) and inspect's solver. None of them keeps a turn loop of its own.

Pure and notebook-inlinable: ``core``, ``code``, ``engine`` and ``oracle`` only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Final, Protocol

from butterfly.core.asking import asked_turns
from butterfly.core.cache_marks import cache_marks
from butterfly.core.prompts import Message, shared_start
from butterfly.core.turns import Sample, Turn, make_turn
from butterfly.engine.tracks import Parsed, Played, Track, track
from oracle import Scenario, spec_json_schema

RESPONSE_FORMAT: Final = {
    "type": "json_schema",
    "json_schema": {"name": "spec", "schema": spec_json_schema(), "strict": True},
}
"""The spec's JSON Schema as a chat-completions ``response_format`` (protocol schema)."""

SAMPLE_SEED_STRIDE: Final = 100_000
"""Sample k of repeat r is drawn with seed = seed + r + k * SAMPLE_SEED_STRIDE."""


class Settings(Played, Protocol):
    """What the engine reads of a run's settings (``runs.records.RunParams`` has it all)."""

    @property
    def track(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def schema_output(self) -> bool: ...
    @property
    def max_answer_chars(self) -> int: ...
    @property
    def cache_markers(self) -> bool: ...


def cut_detail(raw_chars: int, kept: int) -> str:
    """Why an answer cut at the response-size cap is an abstention."""
    return (f"the answer has {raw_chars} characters, over the response-size cap "
            f"(--max-answer-chars {kept}): its first {kept} are kept")


LONG_MESSAGE: Final = 4096
"""A restated message at least this long is escaped past where it parts from the previous
turn's (:class:`Sent`)."""


def _escaped(content: str, before: tuple[str, str] | None) -> str:
    """``content`` as a JSON string (``json.dumps`` with ``ensure_ascii=False``). JSON escapes
    each character alone, so when ``before`` (a previous message and its JSON string) shares a
    long start with it, only the parts after that start are escaped."""
    if before is None or len(content) < LONG_MESSAGE:
        return encode_basestring(content)
    old, old_json = before
    k = shared_start(old, content)
    old_tail = len(encode_basestring(old[k:])) - 1  # its escaped part after k, and its quote
    return old_json[:len(old_json) - old_tail] + encode_basestring(content[k:])[1:]


class Sent:
    """The messages of a conversation so far, extended turn by turn, and the running sha256
    of their JSON (``json.dumps(messages, ensure_ascii=False)``, hashed piece by piece). In
    restate mode each turn's messages are whole again, and the user message is the previous
    turn's with one edit more: it is escaped only past where it parts from that one (a
    5,000-turn chain asked at every turn escaped 900 MB; issue 34)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._hash = hashlib.sha256(b"[")
        self._before: list[tuple[str, str]] = []
        """The previous restated turn's message contents and their JSON strings, in order."""

    def _json(self, m: Message, before: tuple[str, str] | None) -> tuple[str, str]:
        """The message's JSON, and its content's JSON string ('' when it has other keys)."""
        if list(m) != ["role", "content"] or not isinstance(m["content"], str) \
                or not isinstance(m["role"], str):
            return json.dumps(m, ensure_ascii=False), ""
        content = _escaped(m["content"], before)
        return f'{{"role": {encode_basestring(m["role"])}, "content": {content}}}', content

    def extend(self, added: Sequence[Message], restate: bool) -> None:
        before: list[tuple[str, str]] = []
        if restate:  # each turn's list is whole: start afresh
            self.messages, self._hash = [], hashlib.sha256(b"[")
            before, self._before = self._before, []
        for i, m in enumerate(added):
            text, content = self._json(m, before[i] if i < len(before) and before[i][1] else None)
            if restate:
                self._before.append((m.get("content", ""), content))
            piece = text.encode("utf-8")
            self._hash.update(piece if not self.messages else b", " + piece)
            self.messages.append(m)

    def sha256(self) -> str:
        h = self._hash.copy()
        h.update(b"]")
        return h.hexdigest()


@dataclass(frozen=True)
class Ask:
    """One asked turn: what every door sends for it (once per sample)."""

    scenario: str
    turn: int
    layout: str
    repeat: int
    messages: Sequence[Message]
    """The whole list sent (chat mode: everything so far; restate mode: this ask's own); the
    conversation's own list, valid until the next ask (a door that keeps it copies it)."""
    added: tuple[Message, ...]
    """What this turn added to the list sent for the turn before it."""
    messages_sha256: str
    samples: int
    base_seed: int
    response_format: Mapping[str, object] | None
    cache_marks: tuple[int, ...]
    """The messages a Claude model's prompt cache is marked on (``core.cache_marks``)."""

    def seed(self, sample: int) -> int:
        """The seed of sample ``sample``: seed + repeat + sample * stride."""
        return self.base_seed + self.repeat + sample * SAMPLE_SEED_STRIDE

    def meta(self, sample: int) -> dict[str, str | int]:
        """What a request carries besides its messages (the scripted agents answer from it)."""
        meta: dict[str, str | int] = {"scenario": self.scenario, "turn": self.turn,
                                      "layout": self.layout, "repeat": self.repeat}
        if self.samples > 1:
            meta["sample"] = sample
        return meta


@dataclass
class Conversation:
    """One conversation, played turn by turn (see the module docstring)."""

    scenario: Scenario
    settings: Settings
    layout: str = "E"
    repeat: int = 0
    turns: list[Turn] = field(default_factory=list)
    """The answers of the asked turns so far."""
    _sent: Sent = field(default_factory=Sent)
    _asked: list[int] = field(default_factory=list)
    _pending: Ask | None = None
    _ended: bool = False

    @property
    def track(self) -> Track:
        return track(self.settings.track)

    @property
    def asked(self) -> Sequence[int]:
        """The turns of the scenario this run asks (``core.asking``)."""
        return asked_turns(len(self.scenario.turns), self.settings.ask_at)

    @property
    def over(self) -> bool:
        """Every asked turn has its answer, or a failure ended the conversation."""
        return self._ended or len(self.turns) == len(self.asked)

    def next_ask(self) -> Ask | None:
        """The next asked turn's request, or None when the conversation is over. The turn
        before it must be closed first (:meth:`close`): its answer is in this turn's history."""
        if self._pending is not None:
            return self._pending
        if self.over:
            return None
        t = self.asked[len(self.turns)]
        previous = self.turns[-1].shown if self.turns else None
        added = self.track.added(self.scenario, t, previous, self.layout, self.settings)
        restate = self.settings.mode == "restate"
        self._sent.extend(added, restate)
        msgs = self._sent.messages
        p = self.settings
        self._pending = Ask(
            scenario=self.scenario.id, turn=t, layout=self.layout, repeat=self.repeat,
            messages=msgs, added=tuple(added), messages_sha256=self._sent.sha256(),
            samples=p.samples, base_seed=p.seed,
            response_format=RESPONSE_FORMAT if p.schema_output else None,
            cache_marks=cache_marks(msgs, p.mode) if p.cache_markers else (),
        )
        return self._pending

    def read(self, text: str, finish_reason: str | None = None,
             raw_chars: int | None = None) -> Parsed:
        """An answer as its record stores it: cut at the response-size cap (an abstention,
        ``too_large``, whatever it says; ``raw_chars``: the length before a transport cut it),
        else read by the track (``finish_reason`` "length": cut off at the token limit)."""
        cap = self.settings.max_answer_chars
        if raw_chars is None and len(text) > cap:
            raw_chars = len(text)
        if raw_chars is not None:
            return Parsed(None, "too_large", cut_detail(raw_chars, min(cap, len(text))))
        return self.track.read(text, self.settings, truncated=finish_reason == "length")

    def over_context(self, why: str) -> Parsed | None:
        """A call over the model's context window: an abstention (reason ``context``) where
        the model cannot answer it (an ask at a chosen turn, a code turn), the conversation
        going on; else None (a provider fault: the door ends the run or the conversation)."""
        if self.track.context_abstains(self.settings):
            return Parsed(None, "context", why)
        return None

    def close(self, samples: Sequence[Sample]) -> Turn:
        """The asked turn's answer from its samples' records (in sample order): its one
        answer, or the vote of its self-consistency samples; it goes into the next turn's
        history."""
        if self._pending is None:
            raise RuntimeError("close: no turn is asked (call next_ask first)")
        turn = make_turn(sorted(samples, key=lambda s: s.sample))
        self.turns.append(turn)
        self._pending = None
        return turn

    def fail(self) -> None:
        """A call of the asked turn failed after its retries: the conversation ends here
        (incomplete: a provider fault, never a model failure)."""
        self._pending, self._ended = None, True

    def specs(self) -> list[dict[str, str] | None]:
        """Each asked turn's answered spec (None: an abstention), for the scorer."""
        return [t.spec for t in self.turns]


@dataclass(frozen=True)
class Answered:
    """A sample's record as the engine's doors build it without a run directory (the notebook,
    inspect's scorer): what :func:`butterfly.core.turns.make_turn` reads."""

    sample: int
    raw: str | None
    spec: dict[str, str] | None
    abstention: str | None
    abstention_detail: str
    finish_reason: str | None = None


def answered(conv: Conversation, sample: int, text: str, finish_reason: str | None = None,
             raw_chars: int | None = None) -> Answered:
    """One sample's answer read by the engine, as a record :meth:`Conversation.close` takes."""
    p = conv.read(text, finish_reason, raw_chars)
    return Answered(sample, text, p.spec, p.reason, p.detail, finish_reason)

