"""The one reader of a run directory: :func:`load_run` returns a typed :class:`Run`.

Every analysis (score, flips, audit, show, report, compare, calibrate) starts from a ``Run``:
its manifest, the suite copy, a slim view of the latest record of every call
(:class:`butterfly.runs.calls.CallView`: the file is read line by line, each record validated
once, its messages left on disk), and the turns rebuilt from them
(:func:`butterfly.core.turns.make_turn`), under the named key types of ``core.turns``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from butterfly.core.turns import CallKey, ConversationKey, Turn, TurnKey, make_turn
from butterfly.core.vocab import ParseMode, Protocol
from butterfly.engine.tracks import Played, Track, track
from butterfly.errors import UserError
from butterfly.runs.calls import CallView, Compactor, Record
from butterfly.runs.code_turns import CodeTurns, code_turns
from butterfly.runs.digest import Digest
from butterfly.runs.integrity import check_counts, check_one_meaning, check_suite_copy
from butterfly.runs.lock import writer_alive
from butterfly.runs.records import RunManifest, RunParams
from butterfly.runs.scope import conversation_keys, played, select
from butterfly.runs.store import MANIFEST, SUITE_COPY, RunState, read_manifest, read_state
from butterfly.suite.load import load_suite
from oracle import Scenario


def turns(records: Mapping[CallKey, Record], params: RunParams,
          parse_mode: ParseMode | None = None,
          protocol: Protocol | None = None,
          compactor: Compactor | None = None) -> dict[TurnKey, Turn]:
    """Every turn whose samples all have a successful answer. ``parse_mode`` or ``protocol``
    read the raw answers again, by the run's track (the run's mode and protocol fill in the one
    not given); the ``compactor`` then shares their equal specs."""
    again = None
    if parse_mode is not None or protocol is not None:
        again = Again(track(params.track), params.model_copy(update={
            "parse": parse_mode or params.parse, "protocol": protocol or params.protocol}))
    if params.samples == 1:  # a turn is its one call: no grouping (a dict of lists per turn)
        out = {TurnKey(key.scenario, key.turn, key.layout, key.repeat): _turn((rec,), again)
               for key, rec in records.items() if _answered(rec, 1)}
    else:
        out = _voted(records, params.samples, again)
    if compactor is not None and (again is not None or params.samples > 1):
        for k, turn in out.items():
            out[k] = dataclasses.replace(turn, spec=compactor.spec(turn.spec))
    return out


def _answered(rec: Record, samples: int) -> bool:
    return rec.error is None and rec.raw is not None and rec.sample < samples




@dataclass(frozen=True)
class Again:
    """Answers read again by their track with other settings (``score --parse``)."""

    track: Track
    reading: Played

    def record(self, rec: Record) -> Record:
        """``rec`` as these settings read it; an answer cut at the response-size cap
        (``raw_chars`` set) keeps its recorded verdict, too_large (its first N characters
        could hold a spec that the whole answer was never read for), and a call over the
        context window its abstention (there is no answer to read)."""
        if rec.raw_chars is not None or (rec.raw == "" and rec.abstention == "context"):
            return rec
        p = self.track.read(rec.raw or "", self.reading,
                            truncated=rec.finish_reason == "length")
        if isinstance(rec, CallView):
            return dataclasses.replace(rec, spec=p.spec, abstention=p.reason,
                                       abstention_detail=p.detail)
        return rec.model_copy(update={"spec": p.spec, "abstention": p.reason,
                                      "abstention_detail": p.detail})


def _voted(records: Mapping[CallKey, Record], samples: int,
           again: Again | None) -> dict[TurnKey, Turn]:
    """The turns of a self-consistency run: each the vote of all its ``samples``."""
    grouped: dict[TurnKey, list[Record]] = {}
    for key, rec in records.items():
        if _answered(rec, samples):
            grouped.setdefault(TurnKey(key.scenario, key.turn, key.layout, key.repeat),
                               []).append(rec)
    return {k: _turn(sorted(recs, key=lambda r: r.sample), again)
            for k, recs in grouped.items() if len(recs) == samples}


def _turn(recs: Sequence[Record], again: Again | None) -> Turn:
    """:func:`make_turn` of the records, read again first when ``again`` says how."""
    return make_turn(recs if again is None else [again.record(r) for r in recs])


@dataclass(frozen=True)
class Run:
    """A run directory, read once: what was run, on which suite, and every answer. A frozen
    dataclass, not a pydantic model: it holds the records as read (slim views, compacted,
    each validated once as it streamed) and caches what it computes from them (turns per
    parse mode), which a validated model would copy or refuse."""

    path: Path
    manifest: RunManifest
    suite: tuple[Scenario, ...]
    """The whole suite copy, in file order (the run plays :attr:`scenarios`)."""
    records: dict[CallKey, CallView]
    """The latest record of every call (its slim view): its answer, or its last error."""
    _turns: dict[tuple[ParseMode | None, Protocol | None], dict[TurnKey, Turn]] = field(
        default_factory=dict, repr=False, compare=False)
    compactor: Compactor = field(default_factory=Compactor, repr=False, compare=False)
    digest: Digest = field(default_factory=lambda: Digest(0, None), compare=False)
    """What was verified of its content (:mod:`butterfly.runs.digest`)."""
    _code: list[CodeTurns] = field(default_factory=list, repr=False, compare=False)

    @property
    def params(self) -> RunParams:
        return self.manifest.params

    @property
    def model(self) -> str:
        return self.manifest.model

    @property
    def track(self) -> Track:
        """The track the run was played on (``butterfly.engine.tracks``)."""
        return track(self.params.track)

    @property
    def scenarios(self) -> list[Scenario]:
        """The scenarios this run plays (``--per-category`` and ``--limit`` applied; of a
        shard, those with a conversation in its slice)."""
        return played(select(self.suite, self.params), self.params)

    @property
    def attempted(self) -> frozenset[ConversationKey]:
        """Conversations with at least one call record (an answer or an error)."""
        return frozenset(ConversationKey(k.scenario, k.layout, k.repeat) for k in self.records)

    def conversations(self) -> list[ConversationKey]:
        """Every conversation the run plays, scenario by scenario."""
        return conversation_keys(select(self.suite, self.params), self.params)

    def turns(self, parse_mode: ParseMode | None = None,
              protocol: Protocol | None = None) -> dict[TurnKey, Turn]:
        """Each answered turn (``parse_mode`` or ``protocol`` re-parse the raw answers);
        computed once."""
        if self.track.observes:  # programs are observed, not parsed: one reading
            return self.code().turns
        key = (parse_mode, protocol)
        if key not in self._turns:
            self._turns[key] = turns(self.records, self.params, parse_mode, protocol,
                                     self.compactor)
        return self._turns[key]

    def code(self) -> CodeTurns:
        """A code run's turns, from the observations on file (read once; no program runs)."""
        if not self._code:
            self._code.append(code_turns(self.path, self.suite, self.records))
        return self._code[0]

    @property
    def unobserved(self) -> frozenset[TurnKey]:
        """The answered turns whose program is not yet observed (a code run's; they are not
        in :meth:`turns`): ``butterfly observe RUN`` observes them."""
        return self.code().unobserved if self.track.observes else frozenset()

    def layout(self, layout: str | None) -> str:
        """``layout``, or the run's first; a clear error for a layout the run does not have."""
        lay = layout or self.params.layouts[0]
        if lay not in self.params.layouts:
            raise UserError(f"{self.path}: no layout {lay} in this run (it has "
                            f"{','.join(self.params.layouts)})")
        return lay


def load_run(path: Path | str) -> Run:
    """Read a run directory: manifest, suite copy, and the latest record of every call, after
    checking them against each other and against the manifest's seal
    (:mod:`butterfly.runs.integrity`, :mod:`butterfly.runs.digest`). A manifest that says
    ``running`` while no process holds the directory's write lock is read as ``interrupted``."""
    out = Path(path)
    if not (out / MANIFEST).is_file():
        raise UserError(f"{out}: not a run directory (no {MANIFEST})")
    manifest = read_manifest(out)
    check_suite_copy(manifest, out / SUITE_COPY)
    suite = tuple(load_suite(out / SUITE_COPY, played=True))
    state = read_state(out, manifest)
    check_counts(out, manifest, state.tally.answered, state.tally.errors)
    if manifest.status == "running" and not writer_alive(out):
        # its writer died without closing it (kill -9, a power cut): the run is interrupted,
        # whatever the manifest still says; the next run of the same command resumes it
        manifest = manifest.model_copy(update={"status": "interrupted"})
    return run_of(out, manifest, suite, state)


def run_of(out: Path, manifest: RunManifest, suite: Sequence[Scenario], state: RunState) -> Run:
    """The :class:`Run` of a state already read (or just played): nothing is read again."""
    records = state.done if not state.failed else {**state.failed, **state.done}
    return Run(out, manifest, tuple(suite), records, compactor=state.compactor,
               digest=state.digest)


def check_same_scenarios(runs: Sequence[Run]) -> None:
    """Refuse runs in which one scenario id stands for two different scenarios."""
    check_one_meaning([(r.path, r.suite) for r in runs])
