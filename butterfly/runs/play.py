"""Run a suite against one model: conversations, call records, resume.

A run directory is created once and then only appended to. Re-running the same command with
the same ``--out`` resumes: the answers already recorded are reused (never sent again) and only
the missing turns are called. A scenario whose call still fails after its retries is marked
incomplete (a provider error, never a model failure) and the next run completes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Final
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from butterfly import __version__
from butterfly.core.parse import parse_answer
from butterfly.core.prompts import messages, prompt_fingerprint
from butterfly.core.vote import history_text, vote
from butterfly.errors import UserError
from butterfly.models.client import ModelClient
from butterfly.models.provider import Request
from butterfly.runs.records import (
    CallRecord,
    Message,
    RunManifest,
    RunParams,
    SuiteRef,
    Tokens,
)
from butterfly.suite.load import ROOT
from oracle import Scenario, spec_json_schema

MANIFEST: Final = "manifest.json"
CALLS: Final = "calls.jsonl"
SUITE_COPY: Final = "suite.jsonl"

RESPONSE_FORMAT: Final = {
    "type": "json_schema",
    "json_schema": {"name": "spec", "schema": spec_json_schema(), "strict": True},
}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def prompt_sha256(strategy: str = "zero-shot", protocol: str = "schema") -> str:
    return hashlib.sha256(prompt_fingerprint(strategy, protocol).encode("utf-8")).hexdigest()


def git_commit() -> str | None:
    if not (ROOT / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def redact_url(url: str | None) -> str | None:
    """Drop any user:password@ from a URL before it reaches a file."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


Key = tuple[str, int, str, int, int]
"""(scenario, turn, layout, repeat, sample): one call."""
TurnKey = tuple[str, int, str, int]
"""(scenario, turn, layout, repeat): one turn of one conversation, whatever its samples."""


def key_of(rec: CallRecord) -> Key:
    return (rec.scenario, rec.turn, rec.layout, rec.repeat, rec.sample)


@dataclass(frozen=True)
class Turn:
    """A turn's answer: its one call, or the vote over its self-consistency samples."""

    spec: dict[str, str] | None
    abstention: str | None
    detail: str
    shown: str
    """The answer as the model sees it in the next turn's history (docs/strategies.md)."""
    samples: tuple[CallRecord, ...]

    @property
    def raw(self) -> str:
        """The raw answer of the first sample."""
        return self.samples[0].raw or ""


def make_turn(samples: Sequence[CallRecord], parse_mode: str | None = None) -> Turn:
    """The answer of a turn from its successful sample records (in sample order);
    ``parse_mode`` re-parses the raw answers first."""
    parsed: list[tuple[dict[str, str] | None, str | None, str]] = []
    for rec in samples:
        if parse_mode is None:
            parsed.append((rec.spec, rec.abstention, rec.abstention_detail))
        else:
            p = parse_answer(rec.raw or "", parse_mode,  # type: ignore[arg-type]
                             truncated=rec.finish_reason == "length")
            parsed.append((p.spec, p.reason, p.detail))
    if len(samples) == 1:
        spec, reason, detail = parsed[0]
        return Turn(spec, reason, detail, samples[0].raw or "", tuple(samples))
    v = vote([p[0] for p in parsed])
    return Turn(v.spec, v.abstention, v.detail, history_text(v, samples[0].raw or ""),
                tuple(samples))


def turns(records: dict[Key, CallRecord], params: RunParams,
          parse_mode: str | None = None) -> dict[TurnKey, Turn]:
    """Every turn whose samples all have a successful answer."""
    grouped: dict[TurnKey, list[CallRecord]] = {}
    for key, rec in records.items():
        if rec.error is None and rec.raw is not None and rec.sample < params.samples:
            grouped.setdefault(key[:4], []).append(rec)
    return {
        k: make_turn(sorted(recs, key=lambda r: r.sample), parse_mode)
        for k, recs in grouped.items() if len(recs) == params.samples
    }


@dataclass
class RunState:
    manifest: RunManifest
    done: dict[Key, CallRecord] = field(default_factory=dict)
    failed: dict[Key, CallRecord] = field(default_factory=dict)


def read_calls(path: Path, *, repair: bool = False) -> list[CallRecord]:
    """All call records. A torn last line (a kill mid-write: no newline yet) is ignored, and cut
    off the file when ``repair``; any other bad line is a corrupt run directory."""
    if not path.exists():
        return []
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    if cut < len(data) and repair:
        with path.open("r+b") as f:
            f.truncate(cut)
    records: list[CallRecord] = []
    for n, line in enumerate(data[:cut].splitlines(), 1):
        try:
            records.append(CallRecord.model_validate_json(line))
        except ValidationError as e:
            raise UserError(f"{path}:{n}: corrupt call record: {str(e).splitlines()[0]}") from None
    return records


def open_run(out: Path, model: str, suite_path: Path, scenarios: Sequence[Scenario],
             params: RunParams) -> RunState:
    """Create the run directory, or reopen it for resuming after checking it is the same run."""
    suite_bytes = suite_path.read_bytes()
    suite_sha = hashlib.sha256(suite_bytes).hexdigest()
    mpath = out / MANIFEST
    if mpath.exists():
        try:
            old = RunManifest.model_validate_json(mpath.read_text(encoding="utf-8"))
        except ValidationError as e:
            raise UserError(f"{mpath}: not a butterfly run manifest: "
                            f"{str(e).splitlines()[0]}") from None
        if old.model != model or old.suite.sha256 != suite_sha:
            raise UserError(
                f"--out {out} holds a run of {old.model} on {old.suite.path} "
                f"(sha256 {old.suite.sha256[:12]}); this is {model} on {suite_path} "
                f"(sha256 {suite_sha[:12]}): choose another --out"
            )
        if old.params.answer_key() != params.answer_key():
            raise UserError(
                f"--out {out} was run with other answer-changing parameters "
                f"({json.dumps(old.params.answer_key())}); resume with the same ones or choose "
                "another --out"
            )
        if old.prompt_sha256 != prompt_sha256(params.strategy, params.protocol):
            raise UserError(
                f"--out {out} was run with a different prompt (prompt_sha256 "
                f"{old.prompt_sha256[:12]}): its answers cannot be continued with this version's "
                "prompt; choose another --out"
            )
        manifest = old.model_copy(update={"params": params, "updated_at": now(),
                                          "status": "running"})
        state = RunState(manifest)
        for rec in read_calls(out / CALLS, repair=True):
            key = key_of(rec)
            if rec.error is None:
                state.done[key] = rec
                state.failed.pop(key, None)
            elif key not in state.done:
                state.failed[key] = rec
        return state
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--out {out}: cannot create: {e.strerror or e}") from None
    if any(out.iterdir()):
        raise UserError(f"--out {out} is not empty and holds no run: choose another --out")
    shutil.copyfile(suite_path, out / SUITE_COPY)
    stamp = now()
    manifest = RunManifest(
        butterfly_version=__version__,
        git_commit=git_commit(),
        model=model,
        suite=SuiteRef(path=str(suite_path), sha256=suite_sha, n_scenarios=len(scenarios)),
        params=params,
        prompt_sha256=prompt_sha256(params.strategy, params.protocol),
        started_at=stamp,
        updated_at=stamp,
        status="running",
    )
    write_manifest(out, manifest)
    return RunState(manifest)


def write_manifest(out: Path, manifest: RunManifest) -> None:
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out / MANIFEST)


class CallLog:
    """Append-only writer of call records: one line per call, flushed as it is written."""

    def __init__(self, path: Path) -> None:
        self._f: IO[str] = path.open("a", encoding="utf-8")

    def append(self, record: CallRecord) -> None:
        self._f.write(record.model_dump_json() + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


@dataclass
class Progress:
    """What a progress display is told; the CLI renders it (rich bar or plain lines)."""

    total: int
    done: int = 0
    errors: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.perf_counter)
    on_update: Callable[[Progress], None] | None = None

    def add(self, rec: CallRecord) -> None:
        self.done += 1
        if rec.error is not None:
            self.errors += 1
        if not rec.cached:  # tokens served from the cache were not generated now
            self.completion_tokens += rec.tokens.completion or 0
        if self.on_update is not None:
            self.on_update(self)


@dataclass(frozen=True)
class RunResult:
    out: Path
    n_calls: int
    provider_errors: int
    incomplete: tuple[str, ...]
    interrupted: bool = False


async def _play(
    scenario: Scenario,
    layout: str,
    repeat: int,
    client: ModelClient,
    state: RunState,
    log: CallLog,
    progress: Progress,
    *,
    model: str,
    params: RunParams,
) -> bool:
    """Play one conversation to its end; False if a call failed after its retries."""
    answers: list[str] = []
    sent: list[dict[str, str]] = []
    for t in range(1, len(scenario.turns) + 1):
        msgs = messages(scenario, t, answers, layout, params.mode, params.strategy,
                        params.protocol)
        added = msgs if params.mode == "restate" else msgs[len(sent):]
        sent = msgs
        have: list[CallRecord] = []
        todo: list[int] = []
        for k in range(params.samples):
            prior = state.done.get((scenario.id, t, layout, repeat, k))
            if prior is not None and prior.raw is not None:
                have.append(prior)
            else:
                todo.append(k)
        if todo:  # the samples of a turn share one prompt: hash and copy it once
            sha = hashlib.sha256(
                json.dumps(msgs, ensure_ascii=False).encode("utf-8")).hexdigest()
            added_msgs = tuple(Message.model_validate(m) for m in added)
            calls = [_call(scenario, t, layout, repeat, k, msgs, sha, added_msgs, client,
                           model=model, params=params) for k in todo]
            fresh = [await calls[0]] if len(calls) == 1 else await asyncio.gather(*calls)
            for rec in fresh:
                log.append(rec)
                progress.add(rec)
                if rec.error is None:
                    state.done[key_of(rec)] = rec
            if any(rec.error is not None for rec in fresh):
                return False
            have += fresh
        answers.append(make_turn(sorted(have, key=lambda r: r.sample)).shown)
    return True


SAMPLE_SEED_STRIDE: Final = 100_000
"""Sample k of repeat r is drawn with seed = seed + r + k * SAMPLE_SEED_STRIDE."""


async def _call(
    scenario: Scenario,
    t: int,
    layout: str,
    repeat: int,
    sample: int,
    msgs: list[dict[str, str]],
    messages_sha256: str,
    added: tuple[Message, ...],
    client: ModelClient,
    *,
    model: str,
    params: RunParams,
) -> CallRecord:
    """One call and its record (``error`` set when it failed after its retries)."""
    meta: dict[str, str | int] = {"scenario": scenario.id, "turn": t, "layout": layout,
                                  "repeat": repeat}
    if params.samples > 1:
        meta["sample"] = sample
    request = Request(
        model=model,
        messages=tuple(msgs),
        temperature=params.temperature,
        max_tokens=params.max_tokens,
        seed=params.seed + repeat + sample * SAMPLE_SEED_STRIDE,
        response_format=RESPONSE_FORMAT if params.schema_output else None,
        meta=meta,
    )
    outcome = await client.call(request)
    resp = outcome.response
    if resp is None:
        parsed_spec, reason, detail = None, None, ""
    else:
        p = parse_answer(resp.text, params.parse, truncated=resp.finish_reason == "length")
        parsed_spec, reason, detail = p.spec, p.reason, p.detail
    return CallRecord(
        scenario=scenario.id,
        turn=t,
        layout=layout,
        repeat=repeat,
        sample=sample,
        messages_sha256=messages_sha256,
        messages_added=added,
        raw=None if resp is None else resp.text,
        finish_reason=None if resp is None else resp.finish_reason,
        spec=parsed_spec,
        abstention=reason,
        abstention_detail=detail,
        latency_s=round(outcome.latency_s, 6),
        tokens=Tokens(
            prompt=None if resp is None else resp.prompt_tokens,
            completion=None if resp is None else resp.completion_tokens,
        ),
        attempts=outcome.attempts,
        cached=outcome.cached,
        error=outcome.error,
        at=now(),
    )


async def run_suite(
    scenarios: Sequence[Scenario],
    client: ModelClient,
    state: RunState,
    out: Path,
    progress: Progress,
) -> RunResult:
    """Play every scenario (at most ``concurrency`` conversations at once) and close the run."""
    params = state.manifest.params
    model = state.manifest.model
    log = CallLog(out / CALLS)
    slots = asyncio.Semaphore(max(1, params.concurrency))
    incomplete: list[str] = []
    interrupted = False

    async def one(s: Scenario, layout: str, repeat: int) -> None:
        async with slots:
            ok = await _play(s, layout, repeat, client, state, log, progress, model=model,
                             params=params)
        if not ok and s.id not in incomplete:
            incomplete.append(s.id)

    try:
        await asyncio.gather(*(one(s, layout, r) for s, layout, r in conversations(scenarios,
                                                                                  params)))
    except (asyncio.CancelledError, KeyboardInterrupt):
        interrupted = True
        raise
    finally:
        log.close()
        order = {s.id: i for i, s in enumerate(scenarios)}
        done_ids = tuple(sorted(incomplete, key=order.__getitem__))
        all_records = read_calls(out / CALLS)
        manifest = state.manifest.model_copy(update={
            "updated_at": now(),
            "status": "interrupted" if interrupted else ("incomplete" if done_ids else "complete"),
            "n_calls": sum(1 for r in all_records if r.error is None),
            "n_provider_errors": sum(1 for r in all_records if r.error is not None),
            "incomplete_scenarios": done_ids,
        })
        write_manifest(out, manifest)
        state.manifest = manifest
    return RunResult(out, manifest.n_calls, manifest.n_provider_errors, done_ids)


def select(scenarios: Sequence[Scenario], params: RunParams) -> list[Scenario]:
    """The scenarios a run plays: the first ``per_category`` of each category, then ``limit``."""
    chosen = list(scenarios)
    if params.per_category is not None:
        seen: dict[str, int] = {}
        kept = []
        for s in chosen:
            seen[s.category] = seen.get(s.category, 0) + 1
            if seen[s.category] <= params.per_category:
                kept.append(s)
        chosen = kept
    if params.limit is not None:
        chosen = chosen[: params.limit]
    return chosen


def conversations(
    scenarios: Sequence[Scenario], params: RunParams
) -> list[tuple[Scenario, str, int]]:
    """Every (scenario, layout, repeat) a run plays, scenario by scenario."""
    return [(s, layout, r) for s in scenarios for layout in params.layouts
            for r in range(params.repeats)]


def pending_calls(scenarios: Sequence[Scenario], state: RunState) -> int:
    return sum(
        1 for s, layout, r in conversations(scenarios, state.manifest.params)
        for t in range(1, len(s.turns) + 1)
        for k in range(state.manifest.params.samples)
        if (s.id, t, layout, r, k) not in state.done
    )


def load_run_records(out: Path) -> tuple[RunManifest, list[Scenario], dict[Key, CallRecord]]:
    """Everything a scorer needs from a run directory: manifest, suite copy, latest records."""
    from butterfly.suite.load import load_suite

    mpath = out / MANIFEST
    if not mpath.is_file():
        raise UserError(f"{out}: not a run directory (no {MANIFEST})")
    try:
        manifest = RunManifest.model_validate_json(mpath.read_text(encoding="utf-8"))
    except ValidationError as e:
        raise UserError(f"{mpath}: not a butterfly run manifest: "
                        f"{str(e).splitlines()[0]}") from None
    scenarios = load_suite(out / SUITE_COPY, played=True)
    records: dict[Key, CallRecord] = {}
    for rec in read_calls(out / CALLS):
        key = key_of(rec)
        if rec.error is None or key not in records:
            records[key] = rec
    return manifest, scenarios, records
