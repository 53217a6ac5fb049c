"""The keys of a run's records and a turn's answer: its one call, or the vote of its samples.

Pure: a turn is rebuilt from records (never stored), by :func:`make_turn`, the one function that
every reader (score, flips, audit, show, report, resume) uses, so they agree on what a turn's
answer was (docs/strategies.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from butterfly.core.parse import Parsed, parse_answer
from butterfly.core.vocab import ParseMode
from butterfly.core.vote import history_text, vote


class CallKey(NamedTuple):
    """One call: a sample of a turn of a conversation."""

    scenario: str
    turn: int
    layout: str
    repeat: int
    sample: int


class TurnKey(NamedTuple):
    """One turn of one conversation, whatever its samples."""

    scenario: str
    turn: int
    layout: str
    repeat: int


class ConversationKey(NamedTuple):
    """One conversation: a scenario posed under a layout, repeat r."""

    scenario: str
    layout: str
    repeat: int


class Sample(Protocol):
    """What a turn needs of a call record (``butterfly.runs.records.CallRecord``)."""

    @property
    def sample(self) -> int: ...
    @property
    def raw(self) -> str | None: ...
    @property
    def spec(self) -> dict[str, str] | None: ...
    @property
    def abstention(self) -> str | None: ...
    @property
    def abstention_detail(self) -> str: ...
    @property
    def finish_reason(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn's answer: its one call, or the vote over its self-consistency samples."""

    spec: dict[str, str] | None
    abstention: str | None
    detail: str
    shown: str
    """The answer as the model sees it in the next turn's history (docs/strategies.md)."""
    samples: tuple[Sample, ...]

    @property
    def raw(self) -> str:
        """The raw answer of the first sample."""
        return self.samples[0].raw or ""


def make_turn(samples: Sequence[Sample], parse_mode: ParseMode | None = None,
              protocol: str | None = None) -> Turn:
    """The answer of a turn from its successful sample records (in sample order);
    ``parse_mode`` re-parses the raw answers first (reading them as ``protocol`` defines)."""
    parsed = [Parsed(rec.spec, rec.abstention, rec.abstention_detail) if parse_mode is None
              else parse_answer(rec.raw or "", parse_mode,
                                truncated=rec.finish_reason == "length", protocol=protocol)
              for rec in samples]
    if len(samples) == 1:
        one = parsed[0]
        return Turn(one.spec, one.reason, one.detail, samples[0].raw or "", tuple(samples))
    v = vote([p.spec for p in parsed])
    return Turn(v.spec, v.abstention, v.detail, history_text(v, samples[0].raw or ""),
                tuple(samples))
