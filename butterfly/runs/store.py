"""The run directory on disk: create it, reopen it for resuming, append call records, close it.

A run directory holds ``manifest.json`` (what was run, its status), ``suite.jsonl`` (a copy of
the suite) and ``calls.jsonl`` (one record per call, appended and flushed as each call ends).
It is created once and then only appended to; the manifest is rewritten whole (atomically),
sealed each time with the digest of the records so far (:mod:`butterfly.runs.digest`).
Reading a run for analysis is :mod:`butterfly.runs.reader`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from butterfly import __version__
from butterfly.code.sandbox import sandbox_kind
from butterfly.core.asking import EVERY, LAST
from butterfly.core.turns import CallKey
from butterfly.core.vocab import RunStatus, Transport
from butterfly.engine.tracks import track
from butterfly.errors import UserError
from butterfly.runs.calls import CallView, Compactor, iter_records
from butterfly.runs.digest import UNSEALED, Chain, Digest, Links, check_content, sealed
from butterfly.runs.integrity import CallIndex, ParseCheck
from butterfly.runs.lock import LOCK
from butterfly.runs.records import (
    MANIFEST_SCHEMA_VERSION,
    BudgetSweep,
    CallRecord,
    RunManifest,
    RunParams,
    SuiteRef,
)
from butterfly.runs.shards import check_resume
from butterfly.runs.usage import Tally
from butterfly.runs.versions import prompt_label
from butterfly.suite.load import ROOT, sha256_file
from oracle import Scenario

MANIFEST: Final = "manifest.json"
CALLS: Final = "calls.jsonl"
SUITE_COPY: Final = "suite.jsonl"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


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


@dataclass
class RunState:
    """A run being played: its manifest, a slim view of every call recorded so far (the
    answers, and the last error of each call with none) and their running counts."""

    manifest: RunManifest
    index: CallIndex = field(default_factory=lambda: CallIndex(Path(CALLS)))
    tally: Tally = field(default_factory=Tally)
    compactor: Compactor = field(default_factory=Compactor)
    chain: Chain = field(default_factory=Chain)
    """The rolling digest of every line of calls.jsonl so far (continued by its
    :class:`~butterfly.runs.digest.LinkedLog`)."""
    unlinked: int = 0
    """Leading records made before the digest (version 1)."""

    @property
    def done(self) -> dict[CallKey, CallView]:
        return self.index.done

    @property
    def failed(self) -> dict[CallKey, CallView]:
        return self.index.failed

    def add(self, n: int, rec: CallRecord) -> None:
        """Count ``rec`` (line ``n`` of the run's file) and index its view."""
        self.tally.add(rec)
        self.index.add(n, self.compactor.view(rec))

    @property
    def lines(self) -> int:
        return self.tally.answered + self.tally.errors

    @property
    def digest(self) -> Digest:
        seal = self.manifest.seal
        return Digest(self.chain.records, None if seal is None else seal.records, self.unlinked)


def read_state(out: Path, manifest: RunManifest, *, repair: bool = False) -> RunState:
    """The run's records read once, line by line, into a :class:`RunState`, each checked as it
    is read: one answer per call, its spec the parse of its answer, its link into the digest;
    then the manifest's seal against the digest."""
    state = RunState(manifest, CallIndex(out / CALLS))
    links, parses = Links(out / CALLS, manifest.seal), ParseCheck(out / CALLS, manifest.params)
    for n, line, rec in iter_records(out / CALLS, repair=repair):
        state.add(n, rec)
        parses.add(n, rec)
        links.add(n, line, rec.chain_sha256)
    links.finish()
    state.chain, state.unlinked = links.chain, links.unlinked
    return state


def manifest_and_json(out: Path) -> tuple[RunManifest, dict[str, object]]:
    """A run's manifest, and the JSON object it was read from (what its seal covers)."""
    mpath = out / MANIFEST
    try:
        data = mpath.read_bytes()
        return RunManifest.model_validate_json(data), json.loads(data)
    except OSError as e:
        raise UserError(f"{mpath}: cannot read: {e.strerror or e}") from None
    except ValidationError as e:
        raise UserError(f"{mpath}: not a butterfly run manifest ({str(e).splitlines()[0]}): "
                        "restore it from a copy, or rebuild it from the records with "
                        "butterfly repair RUN and the run's flags") from None


def read_manifest(out: Path) -> RunManifest:
    """A run's manifest, refused when it differs from its seal."""
    manifest, obj = manifest_and_json(out)
    check_content(out / MANIFEST, manifest, obj)
    return manifest


def _check_same_run(out: Path, old: RunManifest, model: str, suite_path: Path, suite_sha: str,
                    params: RunParams) -> None:
    """Refuse to resume ``out`` with another model, suite, parameters or prompt, or at all
    when it was imported from an inspect log (its answers were played there)."""
    if old.imported_from is not None:
        raise UserError(f"--out {out} was imported from the inspect log "
                        f"{old.imported_from.log}: an imported run is read, never added to; "
                        "choose another --out (or finish the eval in inspect and import "
                        "it again)")
    if old.model != model or old.suite.sha256 != suite_sha:
        raise UserError(
            f"--out {out} holds a run of {old.model} on {old.suite.path} "
            f"(sha256 {old.suite.sha256[:12]}); this is {model} on {suite_path} "
            f"(sha256 {suite_sha[:12]}): choose another --out"
        )
    was, now_ = old.params.answer_key(), params.answer_key()
    if was != now_:
        keys = [*now_, *(k for k in was if k not in now_)]
        differ = "; ".join(f"{k} {json.dumps(was.get(k, 'spec'))} (this is "
                           f"{json.dumps(now_.get(k, 'spec'))})"
                           for k in keys if was.get(k) != now_.get(k))
        raise UserError(f"--out {out} was run with other answer-changing parameters: {differ}; "
                        "resume with the same ones or choose another --out")
    this = track(params.track)
    if old.prompt_sha256 != this.prompt_sha256(params):
        raise UserError(
            f"--out {out} was run with a different prompt "
            f"({track(old.params.track).version_name(prompt_label(old).version)}, prompt_sha256 "
            f"{old.prompt_sha256[:12]}): its answers cannot be continued with this version's "
            f"prompt ({this.version_name(this.prompt_version)}); choose another --out"
        )


def _check_same_scope(out: Path, old: RunParams, params: RunParams) -> None:
    """A resume keeps the recorded scope: the same ``--limit`` and ``--per-category``, and at
    least the recorded layouts and repeats (more of them extend the run)."""
    if (old.limit, old.per_category) != (params.limit, params.per_category):
        def flags(p: RunParams) -> str:
            return (f"--limit {'none' if p.limit is None else p.limit}, --per-category "
                    f"{'none' if p.per_category is None else p.per_category}")
        raise UserError(f"--out {out} was run with {flags(old)}; this is {flags(params)}: a "
                        "resume keeps the run's scope (give the same flags), or choose another "
                        "--out")
    if old.ask_at != params.ask_at:
        raise UserError(f"--out {out} was run with {ask_flag(old.ask_at)}; this is "
                        f"{ask_flag(params.ask_at)}: a resume keeps the run's ask points (give "
                        "the same --ask-at), or choose another --out")
    if not set(old.layouts) <= set(params.layouts) or params.repeats < old.repeats:
        raise UserError(f"--out {out} was run with --layouts {','.join(old.layouts)} and "
                        f"--repeats {old.repeats}; a resume may add layouts or repeats, never "
                        "drop recorded ones: give at least those, or choose another --out")


def ask_flag(ask_at: Sequence[int] | None) -> str:
    """A run's ask points as the flag that gives them."""
    if ask_at is None:
        return f"--ask-at {EVERY} (every turn)"
    return f"--ask-at {','.join(map(str, ask_at)) if ask_at else LAST}"


def _resumed(out: Path | None, model: str, suite_path: Path, suite_sha: str,
             params: RunParams, link: BudgetSweep | None = None) -> RunManifest | None:
    """The manifest of the run ``out`` holds, checked to be this run (refused otherwise);
    None when there is none, or it never recorded a call."""
    if out is None or not (out / MANIFEST).exists():
        return None
    old, obj = manifest_and_json(out)
    if _unstarted(out, old):
        return None
    check_content(out / MANIFEST, old, obj)
    _check_same_run(out, old, model, suite_path, suite_sha, params)
    _check_same_scope(out, old.params, params)
    check_link(out, old.budget_sweep, link)
    check_resume(out, old.model, old.params, params)
    return old


def _resume(out: Path, old: RunManifest, params: RunParams, suite_path: Path) -> RunState:
    state = read_state(out, old, repair=True)
    copy = out / SUITE_COPY
    if not copy.is_file() or sha256_file(copy) != old.suite.sha256:
        _copy_suite(suite_path, copy)  # restore the copy from the (checked) suite file
    manifest = old.model_copy(update={"params": params, "updated_at": now(), "status": "running",
                                      "failure": None,
                                      "schema_version": MANIFEST_SCHEMA_VERSION})
    state.manifest = write_manifest(out, manifest, state.chain)  # a run made before: sealed now
    return state


def check_link(out: Path, old: BudgetSweep | None, link: BudgetSweep | None) -> None:
    """A budget sweep resumes only its own runs, at the same budgets (``butterfly run`` may
    resume one of them alone: ``link`` None keeps the run's link)."""
    if link is None or old == link:
        return
    if old is None:
        raise UserError(f"{out} holds a run made alone, not budget {link.value} of the sweep "
                        f"{link.name}: choose another --out")
    raise UserError(f"{out} is budget {old.key}={old.value} of the sweep {old.name} over "
                    f"{','.join(old.values)}; this sweep is {link.key}="
                    f"{','.join(link.values)}: a resume gives the same --budget (or choose "
                    "another --out)")


def _copy_suite(suite_path: Path, copy: Path) -> None:
    try:
        shutil.copyfile(suite_path, copy)
    except OSError as e:
        raise UserError(f"{copy}: cannot write: {e.strerror or e}") from None


def _unstarted(out: Path, old: RunManifest) -> bool:
    """A run that never recorded a call (it could not start, or every call was refused); a
    repaired one is resumed whatever it kept."""
    calls = out / CALLS
    return (old.n_calls == 0 and not old.repaired
            and (not calls.exists() or calls.stat().st_size == 0))


def suite_sha256(suite_path: Path) -> str:
    """The sha256 of a suite file's bytes; one line when it cannot be read."""
    try:
        return sha256_file(suite_path)
    except OSError as e:
        raise UserError(f"{suite_path}: cannot read: {e.strerror or e}") from None


def open_run(out: Path, model: str, suite_path: Path, scenarios: Sequence[Scenario],
             params: RunParams, link: BudgetSweep | None = None) -> RunState:
    """Create the run directory, or reopen it for resuming after checking it is the same run.
    A directory whose run never recorded a call is started afresh. The caller holds the
    directory's :func:`butterfly.runs.lock.writer_lock`. ``link``: the budget sweep the run is
    one budget of (``butterfly sweep``), recorded in a new manifest and checked on a resume."""
    suite_sha = suite_sha256(suite_path)
    old = _resumed(out, model, suite_path, suite_sha, params, link)
    if old is not None:
        return _resume(out, old, params, suite_path)
    if (out / MANIFEST).exists():  # a run that never recorded a call: started afresh
        for name in (MANIFEST, CALLS, SUITE_COPY):
            with contextlib.suppress(FileNotFoundError):
                (out / name).unlink()
    try:
        out.mkdir(parents=True, exist_ok=True)
        others = [p for p in out.iterdir() if p.name != LOCK]
    except OSError as e:
        raise UserError(f"--out {out}: cannot create: {e.strerror or e}") from None
    if others:
        raise UserError(f"--out {out} is not empty and holds no run: choose another --out")
    _copy_suite(suite_path, out / SUITE_COPY)
    manifest = new_manifest(model, suite_path, suite_sha, scenarios, params)
    if link is not None:
        manifest = manifest.model_copy(update={"budget_sweep": link})
    return RunState(write_manifest(out, manifest, Chain()), CallIndex(out / CALLS))


def new_manifest(model: str, suite_path: Path, suite_sha: str, scenarios: Sequence[Scenario],
                 params: RunParams) -> RunManifest:
    """The manifest of a run about to start (unsealed, not written)."""
    stamp, t = now(), track(params.track)
    return RunManifest(
        butterfly_version=__version__,
        git_commit=git_commit(),
        model=model,
        suite=SuiteRef(path=str(suite_path), sha256=suite_sha, n_scenarios=len(scenarios)),
        params=params,
        prompt_sha256=t.prompt_sha256(params),
        prompt_version=t.prompt_version,
        started_at=stamp,
        updated_at=stamp,
        status="running",
        sandbox=sandbox_kind() if t.observes else None,  # where its programs will run
        seal=UNSEALED,
    )


def peek_state(out: Path | None, model: str, suite_path: Path, scenarios: Sequence[Scenario],
               params: RunParams) -> RunState:
    """What :func:`open_run` would start from, read without writing anything (``run
    --dry-run``): the recorded calls of ``out`` when it holds this run (refused as a resume
    would be), else an empty run held in memory."""
    suite_sha = suite_sha256(suite_path)
    old = _resumed(out, model, suite_path, suite_sha, params)
    if out is not None and old is not None:
        state = read_state(out, old)  # a torn last line is skipped, not cut off
        state.manifest = old.model_copy(update={"params": params})
        return state
    return RunState(new_manifest(model, suite_path, suite_sha, scenarios, params))


def note_transport(out: Path, state: RunState, way: Transport) -> None:
    """Add ``way`` to the manifest's ``transports`` (written now: a killed run keeps it)."""
    if way not in state.manifest.transports:
        state.manifest = write_manifest(out, state.manifest.model_copy(
            update={"transports": (*state.manifest.transports, way)}), state.chain)


def write_manifest(out: Path, manifest: RunManifest, chain: Chain) -> RunManifest:
    """Seal ``manifest`` with ``chain`` (the digest of calls.jsonl as it is now) and write it
    atomically; the manifest as written."""
    manifest = sealed(manifest, chain)
    tmp = out / (MANIFEST + ".tmp")
    try:
        tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out / MANIFEST)
    except OSError as e:
        with contextlib.suppress(OSError):  # no stray temporary file
            tmp.unlink()
        raise UserError(f"{out / MANIFEST}: cannot write: {e.strerror or e}") from None
    return manifest


def close_run(out: Path, state: RunState, status: RunStatus,
              incomplete: tuple[str, ...] = (), params: RunParams | None = None,
              failure: str | None = None) -> RunManifest:
    """Write the manifest's final status and call counts (the one place a run is closed),
    from the counts kept as records were read and written: the file is not read again."""
    update: dict[str, object] = {
        "updated_at": now(),
        "status": status,
        "n_calls": state.tally.answered,
        "n_provider_errors": state.tally.errors,
        "incomplete_scenarios": incomplete,
        "failure": failure,
        "usage": state.tally.usage((params or state.manifest.params).price,
                                   state.manifest.model),
    }
    if params is not None:
        update["params"] = params
    state.manifest = write_manifest(out, state.manifest.model_copy(update=update), state.chain)
    return state.manifest
