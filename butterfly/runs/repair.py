"""``butterfly repair RUN [RUN FLAGS]``: rebuild a damaged run directory from its records, on
request only (no reader or resume ever repairs anything).

1. **The manifest**: RUN's own when it reads; when it is lost or unreadable, one rebuilt from
   the flags of the ``butterfly run`` command that made RUN (refused without them). The records
   say what they can of those flags, and are checked against them: every call belongs to one of
   the conversations the flags play, and every first turn's messages are the prompt the flags
   send (layout, mode, strategy, protocol, the scenario's words). The model, temperature, max
   tokens, seed and model arguments are in no record: they are taken as given.
2. **The records**: each line of ``calls.jsonl`` that is a call record, in the run, whose spec
   is the parse of its answer and that is not a second answer for its call is kept, linked into
   a new digest; every other line is dropped and named (its call is asked again when the run's
   command is re-run).
3. **What is written**: the old files stay beside the new ones (``*.before-repair``); the new
   manifest says ``interrupted``, records the repair (what the checks found, what was dropped)
   under ``repaired`` and is sealed. ``butterfly run`` with the run's flags resumes it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from pydantic import ValidationError

from butterfly.core.pooling import Result
from butterfly.core.turns import CallKey, ConversationKey
from butterfly.engine.tracks import track
from butterfly.errors import UserError
from butterfly.runs.digest import Chain, linked_line
from butterfly.runs.integrity import ParseCheck, key_of
from butterfly.runs.lock import writer_lock
from butterfly.runs.reader import load_run
from butterfly.runs.records import (
    MANIFEST_SCHEMA_VERSION,
    CallRecord,
    Repair,
    RunManifest,
    RunParams,
)
from butterfly.runs.scope import asked, conversation_keys, select
from butterfly.runs.store import (
    CALLS,
    MANIFEST,
    SUITE_COPY,
    manifest_and_json,
    new_manifest,
    now,
    suite_sha256,
    write_manifest,
)
from butterfly.runs.usage import Tally
from butterfly.suite.load import load_suite
from oracle import Scenario

BEFORE: Final = ".before-repair"


@dataclass(frozen=True)
class Identity:
    """What a lost manifest held that no record does: the run's model, suite and flags."""

    model: str
    suite_path: Path
    params: RunParams


class RepairResult(Result):
    """What ``butterfly repair`` did: the run, what its checks found, the manifest written, the
    records kept and the lines dropped."""

    out: Path
    found: str | None
    """What the checks found before the repair; None: the run read intact (nothing done)."""
    manifest: RunManifest | None = None
    kept: int = 0
    dropped: tuple[str, ...] = ()


def _found(out: Path) -> str | None:
    try:
        load_run(out)
    except UserError as e:
        return str(e)
    return None


def _rebuilt(out: Path, who: Identity) -> RunManifest:
    """A manifest from the flags given: the suite copy must be that suite."""
    sha = suite_sha256(who.suite_path)
    if (out / SUITE_COPY).exists() and suite_sha256(out / SUITE_COPY) != sha:
        raise UserError(f"repair: {out / SUITE_COPY} is not the suite {who.suite_path} (sha256 "
                        f"{sha[:12]}): give the --suite the run was made with")
    chosen = select(load_suite(who.suite_path, played=True), who.params)
    # as a new run's (its first prompts were checked to be this version's; a code run's
    # sandbox is this machine's), interrupted
    fresh = new_manifest(who.model, who.suite_path, sha, chosen, who.params)
    return fresh.model_copy(update={"status": "interrupted"})


def _manifest(out: Path, who: Identity | None) -> tuple[RunManifest, bool]:
    """RUN's manifest (and False), or one rebuilt from the flags (and True)."""
    try:
        manifest, _ = manifest_and_json(out)
    except UserError:
        if who is None:
            raise UserError(f"repair: {out} has no readable {MANIFEST}: give the flags of the "
                            "butterfly run command that made it (butterfly repair RUN --model "
                            "M [--suite S --limit N ...]) to rebuild it") from None
        return _rebuilt(out, who), True
    if who is not None:
        raise UserError(f"repair: {out / MANIFEST} reads, and repair keeps its parameters: "
                        "give no run flags")
    return manifest, False


class Scope:
    """The calls a run makes (its asked turns), and the first prompt of each conversation."""

    def __init__(self, suite: Sequence[Scenario], params: RunParams) -> None:
        self.params = params
        self.by_id = {s.id: s for s in select(suite, params)}
        self.convs = frozenset(conversation_keys(list(self.by_id.values()), params))

    def why_not(self, rec: CallRecord) -> str | None:
        """Why ``rec`` is not a call of this run (None: it is)."""
        s = self.by_id.get(rec.scenario)
        if (s is None or ConversationKey(rec.scenario, rec.layout, rec.repeat) not in self.convs
                or rec.turn not in asked(s, self.params) or rec.sample >= self.params.samples):
            return (f"a call (scenario {rec.scenario}, turn {rec.turn}, layout {rec.layout}, "
                    f"repeat {rec.repeat}, sample {rec.sample}) the run does not make")
        first = asked(s, self.params)[0]  # turn 1, unless the run asks at chosen turns
        if rec.turn == first and [m.model_dump() for m in rec.messages_added] != self._first(rec):
            return f"its prompt is not what the flags send (scenario {rec.scenario})"
        return None

    def _first(self, rec: CallRecord) -> list[dict[str, str]]:
        p = self.params
        sent = track(p.track).added(self.by_id[rec.scenario], rec.turn, None, rec.layout, p)
        return [dict(m) for m in sent]


def _read(n: int, line: bytes, kept: Kept) -> CallRecord | None:
    if not line.endswith(b"\n"):
        kept.dropped.append(f"line {n}: torn (no newline)")
        return None
    try:
        return CallRecord.model_validate_json(line)
    except ValidationError as e:
        kept.dropped.append(f"line {n}: not a call record ({str(e).splitlines()[0]})")
        return None


@dataclass
class Kept:
    """Keeps a record (linked into the new digest, written) or drops it with its reason: the
    records kept so far, their digest and counts, and the lines dropped."""

    scope: Scope
    parses: ParseCheck
    rebuilt: bool
    out: IO[bytes]
    chain: Chain = field(default_factory=Chain)
    tally: Tally = field(default_factory=Tally)
    answered: set[CallKey] = field(default_factory=set)
    dropped: list[str] = field(default_factory=list)

    def why_not(self, n: int, rec: CallRecord) -> str | None:
        why = self.scope.why_not(rec)
        if why is not None and self.rebuilt:
            raise UserError(f"repair: {CALLS}:{n}: {why}: give the flags the run was made with")
        try:
            self.parses.add(n, rec)
        except UserError:
            why = why or "its spec is not the parse of its answer"
        if why is None and rec.error is None and key_of(rec) in self.answered:
            why = "a second answer for its call"
        return why

    def flush(self, pending: tuple[int, CallRecord] | None) -> None:
        if pending is None:
            return
        n, rec = pending
        why = self.why_not(n, rec)
        if why is not None:
            self.dropped.append(f"line {n}: {why}")
            return
        if rec.error is None:
            self.answered.add(key_of(rec))
        line = linked_line(rec.model_copy(update={"schema_version": 2}), self.chain)
        self.out.write(line)
        self.chain.add(line)
        self.tally.add(rec)


def _records(out: Path, manifest: RunManifest, rebuilt: bool, suite: Path) -> Kept:
    """Write the kept records to ``calls.jsonl.repairing`` (one record held back until the
    next line's link says whether it is what was written); a refusal leaves no such file."""
    try:
        return _kept(out, manifest, rebuilt, suite)
    except BaseException:
        (out / (CALLS + ".repairing")).unlink(missing_ok=True)
        raise


def _kept(out: Path, manifest: RunManifest, rebuilt: bool, suite: Path) -> Kept:
    """The old file's digest is taken up again at each record's link as it is read: where a
    link disagrees with the lines before it, the line before it is not what was written."""
    scope = Scope(load_suite(suite, played=True), manifest.params)
    seal, running = manifest.seal, Chain()
    pending: tuple[int, CallRecord] | None = None
    with (out / (CALLS + ".repairing")).open("wb") as w, (out / CALLS).open("rb") as f:
        kept = Kept(scope, ParseCheck(out / CALLS, manifest.params), rebuilt, w)
        for n, line in enumerate(f, 1):
            rec = _read(n, line, kept)
            if rec is not None and rec.chain_sha256 is not None:
                if n > 1 and rec.chain_sha256 != running.sha256 and pending is not None:
                    kept.dropped.append(f"line {pending[0]}: the digest line {n} keeps "
                                        "disagrees (this line was edited, or a line removed "
                                        "or inserted after it)")
                    pending = None
                running.sha256 = rec.chain_sha256
            kept.flush(pending)
            running.add(line)
            pending = None if rec is None else (n, rec)
        if (pending is not None and seal is not None and seal.records == pending[0]
                and seal.calls_sha256 != running.sha256):
            kept.dropped.append(f"line {pending[0]}: not the record written there (the "
                                "manifest's seal disagrees)")
            pending = None
        kept.flush(pending)
    return kept


def _suite_copy(out: Path, manifest: RunManifest) -> None:
    """Put back an edited or lost suite copy from the suite file the manifest names, when that
    file is the suite the run played."""
    copy, sha = out / SUITE_COPY, manifest.suite.sha256
    if copy.is_file() and suite_sha256(copy) == sha:
        return
    source = Path(manifest.suite.path)
    if not source.is_file() or suite_sha256(source) != sha:
        raise UserError(f"repair: {copy} is not the suite the run played (sha256 {sha[:12]}) "
                        f"and neither is {source}: copy that suite to {copy} first")
    copy.write_bytes(source.read_bytes())


def _check_room(out: Path) -> None:
    if not (out / CALLS).is_file():
        raise UserError(f"repair: {out} holds no {CALLS}: there are no records to keep; run "
                        "again into it")
    for name in (CALLS, MANIFEST):
        if (out / (name + BEFORE)).exists():
            raise UserError(f"repair: {out / (name + BEFORE)} is left from an earlier repair: "
                            "move it away first")


def _write(out: Path, manifest: RunManifest, kept: Kept, found: str, rebuilt: bool
           ) -> RunManifest:
    repair = Repair(at=now(), rebuilt_manifest=rebuilt, dropped=tuple(kept.dropped),
                    found=found)
    new = manifest.model_copy(update={
        "schema_version": MANIFEST_SCHEMA_VERSION, "status": "interrupted", "updated_at": now(),
        "failure": None,
        "n_calls": kept.tally.answered, "n_provider_errors": kept.tally.errors,
        "incomplete_scenarios": (),
        "usage": kept.tally.usage(manifest.params.price, manifest.model),
        "repaired": (*manifest.repaired, repair)})
    try:
        os.replace(out / CALLS, out / (CALLS + BEFORE))
        os.replace(out / (CALLS + ".repairing"), out / CALLS)
        if (out / MANIFEST).exists():
            os.replace(out / MANIFEST, out / (MANIFEST + BEFORE))
    except OSError as e:
        raise UserError(f"repair: {out}: cannot write: {e.strerror or e}") from None
    return write_manifest(out, new, kept.chain)


def repair(out: Path, who: Identity | None = None) -> RepairResult:
    """Repair the run directory ``out`` (see the module's docstring); nothing is done to a
    run that reads intact."""
    if not out.is_dir():
        raise UserError(f"repair: {out} is not a directory")
    with writer_lock(out):
        found = _found(out)
        if found is None:
            return RepairResult(out=out, found=None)
        _check_room(out)
        manifest, rebuilt = _manifest(out, who)
        if who is None:
            _suite_copy(out, manifest)
        kept = _records(out, manifest, rebuilt, out / SUITE_COPY if who is None
                        else who.suite_path)
        if who is not None:  # the records fit the flags: the suite they give is the run's
            (out / SUITE_COPY).write_bytes(who.suite_path.read_bytes())
        written = _write(out, manifest, kept, found, rebuilt)
    return RepairResult(out=out, found=found, manifest=written,
                        kept=kept.tally.answered + kept.tally.errors, dropped=tuple(kept.dropped))
