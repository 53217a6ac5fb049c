"""``calls.jsonl`` streamed: each record validated once, kept only as a slim view.

A call record on disk carries what was sent (``messages_added``: in restate mode the whole
prompt, every turn) beside what came back. No reader needs the messages once the record is
checked, so a run is held as one :class:`CallView` per call: its key, the raw answer, the
parsed spec or abstention, finish reason, tokens, cost, cache flag, error and reasoning.
Equal answers, specs, token counts and repeated strings are shared between views
(:class:`Compactor`), so a 10,000-scenario run is held in a small multiple of its answers'
size, not of its file's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from butterfly.errors import UserError
from butterfly.runs.digest import complete_lines
from butterfly.runs.records import CallError, CallRecord, InvalidUsage, Tokens

TAIL: Final = 1 << 16
"""Bytes read from the end of the file at a time to find a torn last line."""


@dataclass(frozen=True, slots=True)
class CallView:
    """What every reader needs of one call record (the messages sent are left on disk)."""

    scenario: str
    turn: int
    layout: str
    repeat: int
    sample: int
    raw: str | None
    finish_reason: str | None
    spec: dict[str, str] | None
    """Shared between views with an equal spec: never mutate it."""
    abstention: str | None
    abstention_detail: str
    tokens: Tokens
    cost_usd: float | None
    cached: bool
    error: CallError | None
    raw_chars: int | None = None
    """Set when ``raw`` is only the first characters of a longer answer (the cap)."""
    reasoning_content: str | None = None
    saved_usd: float | None = None
    invalid_usage: InvalidUsage | None = None
    """Set when the provider's token counts could not be right (no tokens, no price)."""
    latency_s: float | None = None
    """The call's latency; None for an answer the cache served (no call was sent)."""


Record = CallView | CallRecord
"""A call as read: its record whole, or its slim view (what every reader of a call takes)."""


@dataclass
class Compactor:
    """Makes views of records, sharing equal specs, token counts and strings between them."""

    _specs: dict[tuple[str, ...], dict[str, str]] = field(default_factory=dict)
    _tokens: dict[tuple[int | None, ...], Tokens] = field(default_factory=dict)
    _raws: dict[str, str] = field(default_factory=dict)

    def spec(self, spec: dict[str, str] | None) -> dict[str, str] | None:
        if spec is None:
            return None
        values = tuple(sys.intern(v) for v in spec.values())
        shared = self._specs.get(values)
        if shared is None or tuple(shared) != tuple(spec):
            shared = {sys.intern(k): v for k, v in zip(spec, values, strict=True)}
            self._specs.setdefault(values, shared)
        return shared

    def tokens(self, t: Tokens) -> Tokens:
        return self._tokens.setdefault((t.prompt, t.completion, t.cached, t.reasoning), t)

    def raw(self, raw: str | None) -> str | None:
        """Equal answers (a deterministic model, a scripted agent) held once."""
        return None if raw is None else self._raws.setdefault(raw, raw)

    def view(self, rec: CallRecord) -> CallView:
        return CallView(
            sys.intern(rec.scenario), rec.turn, sys.intern(rec.layout), rec.repeat, rec.sample,
            self.raw(rec.raw), rec.finish_reason, self.spec(rec.spec),
            None if rec.abstention is None else sys.intern(rec.abstention),
            sys.intern(rec.abstention_detail), self.tokens(rec.tokens), rec.cost_usd,
            rec.cached, rec.error, rec.raw_chars, rec.reasoning_content, rec.saved_usd,
            rec.invalid_usage, None if rec.cached else rec.latency_s)


def _cut(path: Path) -> tuple[int, int]:
    """(size, offset after the last newline): a kill mid-write leaves a torn last line."""
    with path.open("rb") as f:
        size = f.seek(0, 2)
        end = size
        while end > 0:
            start = max(0, end - TAIL)
            f.seek(start)
            at = f.read(end - start).rfind(b"\n")
            if at >= 0:
                return size, start + at + 1
            end = start
    return size, 0


def _corrupt(path: Path, n: int, e: ValidationError) -> UserError:
    return UserError(f"{path}:{n}: corrupt call record ({str(e).splitlines()[0]}): restore the "
                     "file from a copy, or butterfly repair RUN (it drops that line: its call is "
                     "asked again when the run's command is re-run)")


def _cut_torn(path: Path) -> None:
    """Cut a torn last line (a kill mid-write: no newline yet) off the file."""
    try:
        size, cut = _cut(path)
        if cut < size:
            with path.open("r+b") as torn:
                torn.truncate(cut)
    except OSError as e:
        raise UserError(f"{path}: cannot repair: {e.strerror or e}") from None


def iter_records(path: Path, *, repair: bool = False
                 ) -> Iterator[tuple[int, bytes, CallRecord]]:
    """(line number, the line's bytes, record) of every call record, read line by line and
    validated once. A torn last line (a kill mid-write: no newline yet) is ignored, and cut off
    the file when ``repair``; any other bad line is a corrupt run directory."""
    if repair and path.exists():
        _cut_torn(path)
    for n, line in enumerate(complete_lines(path), 1):
        try:
            yield n, line, CallRecord.model_validate_json(line)
        except ValidationError as e:
            raise _corrupt(path, n, e) from None


def read_calls(path: Path, *, repair: bool = False) -> list[CallRecord]:
    """Every call record, whole (tests and tools; readers keep :class:`CallView` instead)."""
    return [rec for _, _, rec in iter_records(path, repair=repair)]
