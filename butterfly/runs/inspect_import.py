"""``butterfly import-inspect LOG --out RUN``: an inspect eval log of a butterfly task made into
a run directory that every command reads as a run (docs/inspect.md, "Importing an inspect
log").

The log is read by :mod:`butterfly.runs.inspect_log`. The suite it played is found by the path
the log names (or ``--suite``; a frozen suite of the same name when that path is missing) and
checked by sha256 (:func:`find_suite`), and its scope (``--per-category`` and ``--limit``) found
from the samples it selected (:func:`scope_of`). Each sample is one conversation, played again
by butterfly's engine (``engine.conversation``) with the logged answers, so its store's calls
become call records the way ``butterfly run`` makes them: the messages a turn adds are the
engine's, from the suite and the answers before it (a self-consistency turn's vote included;
their count is checked against what inspect sent), the raw answer is kept as logged and read
again by the engine (the response-size cap, then the track's reader), tokens are carried over
and priced as ``butterfly run`` prices them: by the price the user gave (``--price``,
``--price-per-mtok``; recorded as the manifest's ``params.price``), else by butterfly's price
map. The directory is written by the run writers (:func:`~butterfly.runs.store.open_run`,
:class:`~butterfly.runs.digest.LinkedLog`, :func:`~butterfly.runs.store.close_run`) into a hidden
directory beside ``--out`` and moved in at the end, the manifest last, then read back through
the run reader's integrity checks.
Inspect's own verdicts are not read: ``score`` re-scores the answers with the oracle.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from butterfly.core.pooling import Result
from butterfly.core.turns import ConversationKey
from butterfly.core.user_price import UserPrice
from butterfly.core.vocab import DEFAULTS, ErrorClass, RunStatus
from butterfly.engine.conversation import Ask
from butterfly.engine.conversation import Conversation as Engine
from butterfly.engine.tracks import Parsed, track
from butterfly.errors import UserError
from butterfly.models.price_map import Rates, rates_for
from butterfly.runs.calls import Compactor
from butterfly.runs.digest import START, LinkedLog
from butterfly.runs.inspect_log import (
    OVER_CONTEXT,
    OVER_CONTEXT_DETAIL,
    LoggedEval,
    LoggedSample,
    TurnEntry,
    read_log,
)
from butterfly.runs.lock import LOCK, writer_lock
from butterfly.runs.reader import load_run
from butterfly.runs.records import (
    CallError,
    CallRecord,
    Message,
    RunManifest,
    RunParams,
    Tokens,
)
from butterfly.runs.scope import asked, conversation_keys, select
from butterfly.runs.store import CALLS, MANIFEST, SUITE_COPY, close_run, open_run, suite_sha256
from butterfly.suite.load import SCENARIOS_DIR, load_suite, resolve_suite
from oracle import Scenario

T = TypeVar("T", int, float)


class Imported(Result):
    """What ``import-inspect`` wrote: the run's manifest and how its conversations stand."""

    out: Path
    manifest: RunManifest
    samples: int
    """Samples the log holds."""
    conversations: int
    """Conversations the eval selected (scenarios x layouts x epochs)."""
    incomplete: int
    """Conversations begun and not finished (an error, or the eval stopped)."""
    not_played: int
    """Conversations with no call in the log."""


def find_suite(logged: LoggedEval, given: Path | None) -> Path:
    """The suite file the log played: ``given`` (``--suite``: a file, or a suite's name as
    ``run --suite`` takes it), else the path the log names, else (that path missing) the frozen
    suite of the log's suite name; its sha256 must be the log's."""
    want, named = logged.meta.suite_sha256, Path(logged.meta.suite_path)
    if given is None and not named.is_file():
        frozen = SCENARIOS_DIR / f"{logged.meta.suite}.jsonl"
        if "/" in logged.meta.suite or not frozen.is_file() or suite_sha256(frozen) != want:
            raise UserError(f"{logged.path}: the suite it played, {named}, is missing: give "
                            "that suite with --suite FILE")
        return frozen
    path = named if given is None else resolve_suite(str(given))  # a file, or a suite's name
    sha = suite_sha256(path)
    if sha != want:
        raise UserError(f"{path} is not the suite the log played (its sha256 is {sha[:12]}, "
                        f"the log's {want[:12]}): give that suite with --suite FILE")
    return path


def _scenario_ids(logged: LoggedEval) -> set[str]:
    ids = {x.rsplit("/", 1)[0] for x in logged.selected or ()}
    return ids | {s.scenario for s in logged.samples}


def scope_of(logged: LoggedEval, suite: Sequence[Scenario], base: RunParams
             ) -> tuple[int | None, int | None]:
    """(limit, per_category) of the run: the log's metadata's when it names them, else the
    ones whose selection of the suite is the scenarios the eval selected; refused when none
    is."""
    meta = logged.meta
    if meta.limit is not None or meta.per_category is not None:
        return meta.limit, meta.per_category
    ids = _scenario_ids(logged)
    unknown = sorted(ids - {s.id for s in suite})
    if unknown:
        raise UserError(f"{logged.path}: scenario {unknown[0]} is not in the suite "
                        f"{meta.suite_path}")
    most = max(Counter(s.category for s in suite).values(), default=0)
    for per_category in (None, *range(1, most + 1)):
        for limit in (None, len(ids)):
            p = base.model_copy(update={"limit": limit, "per_category": per_category})
            if {s.id for s in select(suite, p)} == ids:
                return limit, per_category
    raise UserError(f"{logged.path}: its {len(ids)} scenarios are not a selection a run can "
                    "make (the first N of each category, then the first M): import a log of "
                    "the whole suite, or of such a selection")


def _given(meta: T | None, config: T | None, default: T) -> T:
    """The metadata's value, else the eval's generate config's, else butterfly's default."""
    return meta if meta is not None else config if config is not None else default


def _params(logged: LoggedEval, suite: Sequence[Scenario], price: UserPrice | None
            ) -> RunParams:
    m = logged.meta
    want = track(m.track).prompt_version
    if m.prompt_version != want:
        raise UserError(f"{logged.path}: the eval sent prompt version {m.prompt_version}; this "
                        f"butterfly's is {want}, and an import rebuilds each call's messages "
                        "from its own prompts: import the log with the butterfly version that "
                        "made it")
    tokens = track(m.track).max_tokens
    try:
        base = RunParams(
            temperature=_given(m.temperature, logged.temperature, DEFAULTS.temperature),
            max_tokens=_given(m.max_tokens, logged.max_tokens, tokens),
            seed=_given(m.seed, logged.seed, DEFAULTS.seed),
            schema_output=m.protocol == "schema", parse=m.parse or DEFAULTS.parse,
            layouts=m.layouts, repeats=logged.epochs, mode=m.mode, ask_at=m.ask_at,
            strategy=m.strategy, samples=m.samples, protocol=m.protocol,
            sc_base=m.sc_base or "zero-shot", track=m.track, price=price,
            max_answer_chars=m.max_answer_chars or DEFAULTS.max_answer_chars)
    except ValidationError as e:
        first = str(e.errors(include_url=False)[0]["msg"]).removeprefix("Value error, ")
        raise UserError(f"{logged.path}: eval metadata 'butterfly': {first}") from None
    limit, per_category = scope_of(logged, suite, base)
    return base.model_copy(update={"limit": limit, "per_category": per_category})


def error_kind(message: str) -> ErrorClass:
    """The class of a call's error from inspect's message (server when none is named)."""
    low = message.lower()
    if "rate limit" in low or "rate_limit" in low or "429" in low:
        return "rate_limit"
    if "timeout" in low or "timed out" in low:
        return "timeout"
    if "connect" in low:
        return "connection"
    return "server"


class Maker:
    """Makes the call records of one conversation, as ``butterfly run`` makes them."""

    def __init__(self, logged: LoggedEval, params: RunParams) -> None:
        self.logged = logged
        self.params = params
        self.rates: Rates | None = rates_for(logged.run_model, params.price)
        self.compactor = Compactor()

    def _tokens(self, e: TurnEntry) -> tuple[Tokens, float | None, float | None]:
        u = e.usage
        tokens = Tokens(prompt=u.prompt_tokens, completion=u.completion_tokens,
                        cached=u.cached_tokens, reasoning=u.reasoning_tokens,
                        cache_write=u.cache_write_tokens)
        p, c = u.prompt_tokens, u.completion_tokens
        if self.rates is None or p is None or c is None or e.error is not None:
            return tokens, None, None
        return (tokens, self.rates.usd(p, c, u.cached_tokens, u.cache_write_tokens),
                self.rates.saved(p, u.cached_tokens))

    def record(self, conv: Engine, key: ConversationKey, ask: Ask, e: TurnEntry,
               added: tuple[Message, ...], at: str) -> CallRecord:
        tokens, cost, saved = self._tokens(e)
        raw, finish, read = self.read(conv, e)
        return CallRecord(
            chain_sha256=START, scenario=key.scenario, turn=e.turn, layout=key.layout,
            repeat=key.repeat, sample=e.sample, messages_sha256=ask.messages_sha256,
            messages_added=added, raw=raw, raw_chars=e.raw_chars, finish_reason=finish,
            spec=read.spec, abstention=read.reason, abstention_detail=read.detail,
            latency_s=round(e.latency_s or 0.0, 6), tokens=tokens, cost_usd=cost,
            saved_usd=saved, attempts=1, at=at,
            error=None if e.error is None else CallError(kind=error_kind(e.error),
                                                         message=e.error))

    @staticmethod
    def read(conv: Engine, e: TurnEntry) -> tuple[str | None, str | None, Parsed]:
        """A logged call's raw answer, finish reason and reading, as ``butterfly run`` records
        them: read again by the engine (the response-size cap, then the track's reader; the
        log's own reading is not trusted); a call over the context window (inspect's stop
        reason ``model_length``) where the engine says it is an abstention is one (reason
        ``context``, answered with nothing)."""
        if e.error is not None:
            return None, e.finish_reason, Parsed(None, None, "")
        if e.finish_reason == OVER_CONTEXT:
            over = conv.over_context(e.abstention_detail or OVER_CONTEXT_DETAIL)
            if over is not None:
                return "", None, over
        return e.raw, e.finish_reason, conv.read(e.raw, e.finish_reason, e.raw_chars)

    def entries(self, s: Scenario, sample: LoggedSample) -> dict[tuple[int, int], TurnEntry]:
        """The sample's calls by (turn, sample); a call the run does not make is refused."""
        where = f"{self.logged.path}: sample {sample.id} (epoch {sample.repeat + 1})"
        turns = set(asked(s, self.params))
        out: dict[tuple[int, int], TurnEntry] = {}
        for e in sample.turns:
            if e.turn not in turns or e.sample >= self.params.samples:
                raise UserError(f"{where}: turn {e.turn} (sample {e.sample}) is not a call of "
                                "the eval's parameters")
            if (e.turn, e.sample) in out:
                raise UserError(f"{where}: turn {e.turn} (sample {e.sample}) is logged twice")
            out[(e.turn, e.sample)] = e
        return out

    def conversation(self, s: Scenario, sample: LoggedSample) -> tuple[list[CallRecord], bool]:
        """The records of one sample, its conversation played again by the engine with the
        logged answers: each asked turn until the first one not answered; and whether every
        asked turn was answered."""
        key = ConversationKey(s.id, sample.layout, sample.repeat)
        by_call = self.entries(s, sample)
        conv = Engine(s, self.params, sample.layout, sample.repeat)
        at = sample.at or self.logged.source.created
        out: list[CallRecord] = []
        while (ask := conv.next_ask()) is not None:
            added = tuple(Message.model_validate(m) for m in ask.added)
            got = [by_call.get((ask.turn, k)) for k in range(ask.samples)]
            for e in (x for x in got if x is not None):
                self._check_sent(sample, e, len(ask.messages))
                out.append(self.record(conv, key, ask, e, added, at))
            if any(x is None or x.error is not None for x in got):
                if sample.error is not None and all(x is None for x in got):
                    stop = TurnEntry(turn=ask.turn, raw="", messages_sent=len(ask.messages),
                                     error=sample.error)
                    out.append(self.record(conv, key, ask, stop, added, at))
                conv.fail()
                return out, False
            conv.close([self.compactor.view(r) for r in out[-ask.samples:]])
        return out, True

    def _check_sent(self, sample: LoggedSample, e: TurnEntry, ours: int) -> None:
        if e.messages_sent != ours:
            raise UserError(
                f"{self.logged.path}: sample {sample.id} (epoch {sample.repeat + 1}), turn "
                f"{e.turn}: inspect sent {e.messages_sent} message(s) where butterfly's prompt "
                f"has {ours}: the eval's messages are not butterfly's, so its answers are not "
                "a butterfly run")


def _status(logged: LoggedEval, incomplete: Sequence[str], unplayed: int
            ) -> tuple[RunStatus, str | None]:
    """The run's status (and failure) from the log's and from what it played: interrupted
    when a selected conversation has no call, as a run stopped before it."""
    status = logged.source.status
    if status == "error":
        return "failed", f"inspect's eval ended in an error: {logged.error or 'none recorded'}"
    if status in ("cancelled", "started") or unplayed:
        return "interrupted", None
    return ("incomplete" if incomplete else "complete"), None


def _samples(logged: LoggedEval, chosen: Sequence[Scenario], params: RunParams
             ) -> list[tuple[Scenario, LoggedSample]]:
    """Each sample with its scenario, in the order the run plays its conversations."""
    keys = {k: i for i, k in enumerate(conversation_keys(chosen, params))}
    by_id = {s.id: s for s in chosen}
    seen: dict[ConversationKey, LoggedSample] = {}
    for sample in logged.samples:
        key = ConversationKey(sample.scenario, sample.layout, sample.repeat)
        if key not in keys:
            raise UserError(f"{logged.path}: sample {sample.id} (epoch {sample.repeat + 1}) is "
                            "not a conversation of the eval's suite, layouts and epochs")
        if key in seen:
            raise UserError(f"{logged.path}: sample {sample.id} (epoch {sample.repeat + 1}) "
                            "is logged twice")
        seen[key] = sample
    return [(by_id[k.scenario], seen[k]) for k in sorted(seen, key=keys.__getitem__)]


def _write(tmp: Path, out: Path, logged: LoggedEval, suite_path: Path, params: RunParams
           ) -> Imported:
    """Write the run into ``tmp`` (to be moved to ``out``)."""
    chosen = select(load_suite(suite_path, played=True), params)
    state = open_run(tmp, logged.run_model, suite_path, chosen, params)
    maker, log = Maker(logged, params), LinkedLog(tmp / CALLS, state.chain)
    incomplete: dict[str, None] = {}
    begun = unfinished = 0
    try:
        for s, sample in _samples(logged, chosen, params):
            records, complete = maker.conversation(s, sample)
            for rec in records:
                log.append(rec)
                state.add(state.lines + 1, rec)
            begun += bool(records)
            if records and not complete:
                incomplete[s.id] = None
                unfinished += 1
    finally:
        log.close()
    every = len(conversation_keys(chosen, params))
    status, failure = _status(logged, tuple(incomplete), every - begun)
    state.manifest = state.manifest.model_copy(update={
        "imported_from": logged.source, "started_at": logged.source.created})
    manifest = close_run(tmp, state, status, tuple(incomplete), failure=failure)
    return Imported(out=out, manifest=manifest, samples=len(logged.samples), conversations=every,
                    incomplete=unfinished, not_played=every - begun)


def _check_out(out: Path) -> None:
    if not out.exists():
        return
    others = sorted(p.name for p in out.iterdir() if p.name != LOCK) if out.is_dir() else [""]
    if (out / MANIFEST).exists():
        raise UserError(f"--out {out} holds a run: import into a new directory")
    if others:
        raise UserError(f"--out {out} is not empty and holds no run: choose another --out")


def import_log(log: Path, out: Path, suite: Path | None = None,
               price: UserPrice | None = None) -> Imported:
    """Import the inspect eval log ``log`` into the new run directory ``out`` (see the
    module's docstring); ``suite``: the suite file to use instead of the one the log names;
    ``price``: the price every call is priced by (None: butterfly's price map)."""
    _check_out(out)
    logged = read_log(log)
    if not logged.samples:
        raise UserError(f"{log}: the log holds no samples (an eval run with --no-log-samples, "
                        "or stopped before its first): there is nothing to import")
    suite_path = find_suite(logged, suite)
    params = _params(logged, load_suite(suite_path, played=True), price)
    created = not out.exists()
    try:
        with writer_lock(out):
            _check_out(out)
            tmp = out.parent / f".{out.name}.importing"
            shutil.rmtree(tmp, ignore_errors=True)  # a killed import's leftovers
            try:
                imported = _write(tmp, out, logged, suite_path, params)
                for name in (SUITE_COPY, CALLS, MANIFEST):  # the manifest last
                    os.replace(tmp / name, out / name)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    load_run(out)  # read back through every integrity check, as any reader will
    return imported
