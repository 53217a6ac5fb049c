"""The code track's observations: each program a run's answers hold, run in the sandbox and read
as an observed spec (``code.spec_of_program``), kept in the run directory by program hash.

``observations.jsonl`` holds one strict :class:`Observation` per (program, expected spec),
appended and flushed as each is made, so a killed run keeps every observation it finished.
**Sealed** as the call records are (docs/code-track.md, "Observations on disk"): each line
carries the rolling sha256 of the lines before it (``chain_sha256``, the digest of
:mod:`butterfly.runs.digest`), and ``observations.seal`` (an :class:`ObservationSeal`, rewritten
atomically after each append) holds how many lines it covers and the digest at the last. A
reader checks both as it streams the file and names the line an edit broke; lines past the
seal (a writer killed between its two writes, or a line added by hand) are not used: their
programs count as not yet observed.

Only writers observe: ``butterfly run --track code`` (after its conversations are played) and
``butterfly observe RUN``, each holding the run's write lock (:func:`observe_programs`). Every
reader (score, show, report, export, compare, flips, runs) reads observations and never runs a
program. Programs are observed two at a time (``WORKERS``: the machine's two cores), each within
its budget (``code.spec_of_program``); SIGINT, SIGTERM or an error stops every running program at
once,
and its private directory is removed (``code.runner``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Final, Literal

from pydantic import BaseModel, Field, ValidationError

from butterfly.code.runner import sweep_stale
from butterfly.code.sandbox import ENV, bubblewrap_problem, sandbox_kind
from butterfly.code.spec_of_program import EXTRACTOR_VERSION, budget, observe
from butterfly.core.code_catalogue import KEYS
from butterfly.core.pooling import Result
from butterfly.errors import UserError
from butterfly.runs.digest import Chain, LinkedLog, complete_lines
from butterfly.runs.records import SHA256, StrictModel

OBSERVATIONS: Final = "observations.jsonl"
SEAL: Final = "observations.seal"
WORKERS: Final = 2
WAY_BACK: Final = (f"observations are a record of what the programs did, made again at will: "
                   f"delete {OBSERVATIONS} and {SEAL}, then observe the programs again with "
                   "butterfly observe RUN")


class Observation(StrictModel):
    """One program observed against one expected spec (version 2: linked into the digest of
    the lines before it, and why settings are broken by a limit)."""

    schema_version: Literal[1, 2] = 2
    kind: Literal["butterfly-observation"] = "butterfly-observation"
    program_sha256: str = Field(pattern=SHA256)
    extractor: int = Field(description="The extractor's version (code.spec_of_program."
                           "EXTRACTOR_VERSION): an observation of another is made again.")
    expect: dict[str, str] = Field(description="The oracle's code spec on the turn: it chooses "
                                   "the probe inputs tried first and the settings observable.")
    observed: dict[str, str] = Field(description="Each code setting: a value, broken or "
                                     "unobserved.")
    reason: str | None = Field(default=None, description="Why settings are broken by a limit "
                               "or the observation's budget (a program that never ends, a "
                               "flood); null when no run hit one.")
    sandbox: str = Field(description="The sandbox the program ran in (bubblewrap or fallback).")
    seconds: float = Field(ge=0, description="Wall-clock time of the observation.")
    at: str
    chain_sha256: str | None = Field(default=None, pattern=SHA256, description=(
        "The rolling sha256 of every line before this one (docs/running.md, \"Tamper "
        "evidence\"); null in version 1, made before observations were sealed."))


class ObservationSeal(StrictModel):
    """``observations.seal``: the lines of ``observations.jsonl`` it covers and the digest at
    the last of them."""

    schema_version: Literal[1] = 1
    kind: Literal["butterfly-observation-seal"] = "butterfly-observation-seal"
    observations: int = Field(ge=0, description="Lines of observations.jsonl covered.")
    observations_sha256: str = Field(pattern=SHA256, description=(
        "The rolling sha256 of those lines (64 zeros for none)."))


Key = tuple[str, str]
"""(program sha256, expected spec as sorted JSON)."""


def program_sha256(program: str) -> str:
    return hashlib.sha256(program.encode("utf-8")).hexdigest()


def key_of(sha256: str, expect: Mapping[str, str]) -> Key:
    """The key of the program whose hash is ``sha256`` observed against ``expect``."""
    return sha256, json.dumps({k: expect[k] for k in KEYS})


@dataclass
class Observations:
    """What a run directory's observations hold, checked: those in use (``known``: sealed, of
    this extractor), the digest of the sealed lines and where they end on disk, and the lines
    past the seal (not used)."""

    known: dict[Key, Observation] = field(default_factory=dict)
    chain: Chain = field(default_factory=Chain)
    end: int = 0
    unsealed: int = 0

    def get(self, program: str, expect: Mapping[str, str]) -> Observation | None:
        return self.known.get(key_of(program_sha256(program), expect))


def _seal(run_dir: Path) -> ObservationSeal | None:
    path = run_dir / SEAL
    try:
        return ObservationSeal.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    except ValidationError as e:
        raise UserError(f"{path}: not an observation seal ({str(e).splitlines()[0]}): it was "
                        f"edited or damaged; {WAY_BACK}") from None


def _parsed(path: Path, n: int, line: bytes) -> Observation:
    try:
        return Observation.model_validate_json(line)
    except ValidationError as e:
        raise UserError(f"{path}:{n}: not an observation ({str(e).splitlines()[0]}): the file "
                        f"was edited or damaged; {WAY_BACK}") from None


def read_observations(run_dir: Path) -> Observations:
    """A run directory's observations, every link and the seal checked as the file is streamed
    (one clear line naming what was edited); never runs a program."""
    path, seal = run_dir / OBSERVATIONS, _seal(run_dir)
    covers = 0 if seal is None else seal.observations
    out, sealed = Observations(), Chain()  # sealed: the digest at the last line covered
    for n, line in enumerate(complete_lines(path), 1):
        obs = _parsed(path, n, line)
        unlinked = obs.schema_version == 1 and obs.chain_sha256 is None  # made before seals
        if not unlinked and obs.chain_sha256 != out.chain.sha256:
            where = (f"line {n - 1} is not the observation written there (line {n} keeps the "
                     "digest of the lines before it, which differs)" if n > 1 else
                     "line 1 links to lines that are not there")
            raise UserError(f"{path}:{max(1, n - 1)}: the observations' digest breaks: {where}: "
                            f"it was edited, or a line was removed or inserted; {WAY_BACK}")
        out.chain.add(line)
        if n <= covers:
            out.end += len(line)
            if obs.schema_version == 2 and obs.extractor == EXTRACTOR_VERSION:
                out.known.setdefault(key_of(obs.program_sha256, obs.expect), obs)
            if n == covers:
                sealed = Chain(out.chain.records, out.chain.sha256)
        else:
            out.unsealed += 1
    if seal is not None and (sealed.records, sealed.sha256) != (covers, seal.observations_sha256):
        what = (f"holds {out.chain.records} line(s), but {SEAL} covers {covers}: lines were "
                "removed" if sealed.records != covers else
                f"line {covers} (the last {SEAL} covers) is not the observation written there: "
                "it was edited")
        raise UserError(f"{path}: the observations' digest breaks: {what}; {WAY_BACK}")
    if out.unsealed:  # the chain a writer continues is the sealed lines'
        out.chain = sealed
    return out


class ObservationLog(LinkedLog):
    """Appends observations to a run directory as each is made: its line (linked, flushed),
    then the seal, rewritten atomically. Opened on what :func:`read_observations` found: a torn
    line or lines past the seal are cut off first (they were vouched for by nothing)."""

    def __init__(self, run_dir: Path, found: Observations) -> None:
        super().__init__(run_dir / OBSERVATIONS, Chain(found.chain.records, found.chain.sha256))
        self.seal = run_dir / SEAL
        try:
            self._f.truncate(found.end)
        except OSError as e:
            raise UserError(f"{self.path}: cannot write: {e.strerror or e}") from None

    def append(self, record: BaseModel) -> None:
        tmp = self.seal.with_name(SEAL + ".tmp")
        try:
            super().append(record)
            tmp.write_text(ObservationSeal(observations=self.chain.records,
                                           observations_sha256=self.chain.sha256)
                           .model_dump_json() + "\n", encoding="utf-8")
            os.replace(tmp, self.seal)
        except OSError as e:
            raise UserError(f"{self.path}: cannot write: {e.strerror or e}") from None


def carry(sources: Iterable[Path], out: Path) -> int:
    """The observations of ``sources`` (shards, each checked) in the new run directory ``out``,
    each (program, expected spec) once, sealed anew (``butterfly merge``); how many."""
    seen: dict[Key, Observation] = {}
    for source in sources:
        for key, obs in read_observations(source).known.items():
            seen.setdefault(key, obs)
    if seen:
        log = ObservationLog(out, Observations())
        try:
            for obs in seen.values():
                log.append(obs)
        finally:
            log.close()
    return len(seen)


def _observe(program: str, expect: dict[str, str], stop: threading.Event) -> Observation:
    start = time.perf_counter()
    spend = budget()
    spend.stop = stop
    got = observe(program, expect, spend)
    return Observation(program_sha256=program_sha256(program), extractor=EXTRACTOR_VERSION,
                       expect=expect, observed=got.observed, reason=got.reason,
                       sandbox=sandbox_kind(), seconds=round(time.perf_counter() - start, 3),
                       at=datetime.now(UTC).isoformat(timespec="seconds"))


def check_sandbox(allow_fallback: bool) -> None:
    """Refuse to observe under the fallback sandbox as root, unless ``allow_fallback``: as
    root its audit hook cannot stop a program from reading this user's files."""
    if os.geteuid() != 0 or allow_fallback or sandbox_kind() != "fallback":
        return
    why = bubblewrap_problem() or f"{ENV}=fallback"
    raise UserError(f"observe: the sandbox here is the fallback ({why}) and this process is "
                    "root: the fallback cannot stop a program from reading this user's files "
                    "(docs/code-track.md, \"The sandbox\"); install bubblewrap (apt-get install "
                    "bubblewrap), observe as another user, or pass --allow-fallback to accept it")


class Terminated(SystemExit):
    """SIGTERM while programs were observed (exit status 143, as the signal's own)."""


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in the main thread while programs run (its default
    ends the process at once, leaving the programs' directories behind); as it was after."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Observed(Result):
    """What observing a run did (``butterfly observe``): the (program, expected spec) pairs it
    observed now, those already on file, the sandbox it used (None: nothing to observe) and
    the seconds it took."""

    run: str
    observed: int
    known: int
    sandbox: str | None
    seconds: float


OnDone = Callable[[int, int], None]
"""Told (observed so far, to observe) after each observation is kept."""


def observe_programs(run_dir: Path, todo: Iterable[tuple[str, Mapping[str, str]]],
                     on_done: OnDone | None = None) -> Observed:
    """Observe every (program, expected spec) of ``todo`` not yet on file in ``run_dir``,
    ``WORKERS`` at a time, each appended and sealed as it finishes. The caller holds the run's
    write lock. On SIGINT, SIGTERM or an error every running program is stopped at once (its
    private directory removed) and what finished is kept."""
    found = read_observations(run_dir)
    fresh: dict[Key, tuple[str, dict[str, str]]] = {}
    on_file: set[Key] = set()
    for program, expect in todo:
        key = key_of(program_sha256(program), expect)
        if key in found.known:
            on_file.add(key)
        elif key not in fresh:
            fresh[key] = (program, {k: expect[k] for k in KEYS})
    known = len(on_file)
    if not fresh:
        path = run_dir / OBSERVATIONS
        if path.is_file() and path.stat().st_size != found.end:
            ObservationLog(run_dir, found).close()  # a torn or unsealed tail: cut off
        return Observed(run=str(run_dir), observed=0, known=known, sandbox=None, seconds=0.0)
    start, kind = time.perf_counter(), sandbox_kind()
    sweep_stale()
    log = ObservationLog(run_dir, found)
    try:
        _observe_all(log, list(fresh.values()), on_done)
    finally:
        log.close()
    return Observed(run=str(run_dir), observed=len(fresh), known=known, sandbox=kind,
                    seconds=round(time.perf_counter() - start, 3))


def _observe_all(log: ObservationLog, items: list[tuple[str, dict[str, str]]],
                 on_done: OnDone | None) -> None:
    stop = threading.Event()
    kept: set[Future[Observation]] = set()
    with _sigterm_raises(), ThreadPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(_observe, program, expect, stop) for program, expect in items]
        if on_done is not None:
            on_done(0, len(futures))
        try:
            for future in as_completed(futures):
                log.append(future.result())
                kept.add(future)
                if on_done is not None:
                    on_done(len(kept), len(futures))
        except BaseException:
            stop.set()  # every running program ends now; its directory is removed
            pool.shutdown(wait=True, cancel_futures=True)
            for future in futures:  # what finished meanwhile is kept too
                if future.done() and not future.cancelled() and future.exception() is None \
                        and future not in kept:
                    with contextlib.suppress(UserError):
                        log.append(future.result())
            raise
