"""The code track's observations: each program a run's answers hold, run in the sandbox and read
as an observed spec (``code.extract``), cached in the run directory by program hash.

``observations.jsonl`` holds one strict :class:`Observation` per (program, expected spec): a
resume or a re-score never runs a program twice. It is a cache, not evidence: the call records
hold the programs (their raw answers), and deleting the file only costs the time to observe them
again. A torn last line (a kill mid-write) is ignored and cut off before the next append; a
directory that cannot be written is observed in memory. Programs are observed two at a time
(the machine's two cores; the sandbox's children do the work).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from butterfly.code.catalogue import KEYS
from butterfly.code.extract import EXTRACTOR_VERSION, extract
from butterfly.code.sandbox import sandbox_kind

OBSERVATIONS: Final = "observations.jsonl"
WORKERS: Final = 2


class Observation(BaseModel):
    """One program observed against one expected spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = 1
    kind: Literal["butterfly-observation"] = "butterfly-observation"
    program_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    extractor: int = Field(description="The extractor's version (code.extract."
                           "EXTRACTOR_VERSION): an observation of another is made again.")
    expect: dict[str, str] = Field(description="The oracle's code spec on the turn: it chooses "
                                   "the probe inputs tried first and the settings observable.")
    observed: dict[str, str] = Field(description="Each code setting: a value, broken or "
                                     "unobserved.")
    sandbox: str = Field(description="The sandbox the program ran in (bubblewrap or fallback).")
    seconds: float = Field(ge=0, description="Wall-clock time of the observation.")
    at: str


Key = tuple[str, str]
"""(program sha256, expected spec as sorted JSON)."""


def program_sha256(program: str) -> str:
    return hashlib.sha256(program.encode("utf-8")).hexdigest()


def _key(sha: str, expect: Mapping[str, str]) -> Key:
    return sha, json.dumps({k: expect[k] for k in KEYS})


def _read(path: Path) -> tuple[dict[Key, Observation], int | None]:
    """The observations on file, and where a torn or unreadable tail starts (None: none)."""
    if not path.is_file():
        return {}, None
    data = path.read_bytes()
    out: dict[Key, Observation] = {}
    offset = 0
    for line in data.splitlines(keepends=True):
        try:
            if not line.endswith(b"\n"):
                raise ValueError("torn")
            obs = Observation.model_validate_json(line)
        except (ValueError, ValidationError):
            return out, offset
        if obs.extractor == EXTRACTOR_VERSION:  # another version's: observed again
            out.setdefault(_key(obs.program_sha256, obs.expect), obs)
        offset += len(line)
    return out, None


class Observer:
    """The observations of one run directory: read once, extended as programs are observed."""

    def __init__(self, run_dir: Path | None) -> None:
        self.path = None if run_dir is None else run_dir / OBSERVATIONS
        self.known: dict[Key, Observation] = {}
        self._cut: int | None = None
        if self.path is not None:
            self.known, self._cut = _read(self.path)

    def get(self, program: str, expect: Mapping[str, str]) -> dict[str, str] | None:
        """The observed spec of ``program`` against ``expect``, if already observed."""
        obs = self.known.get(_key(program_sha256(program), expect))
        return None if obs is None else dict(obs.observed)

    def observe(self, todo: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        """Observe every (program, expected spec) not yet known, two at a time."""
        fresh: dict[Key, tuple[str, dict[str, str]]] = {}
        for program, expect in todo:
            key = _key(program_sha256(program), expect)
            if key not in self.known:
                fresh.setdefault(key, (program, {k: expect[k] for k in KEYS}))
        if not fresh:
            return
        with ThreadPoolExecutor(WORKERS) as pool:
            done = list(pool.map(lambda item: _observe(*item), fresh.values()))
        for key, obs in zip(fresh, done, strict=True):
            self.known[key] = obs
        self._append(done)

    def _append(self, records: list[Observation]) -> None:
        if self.path is None:
            return
        try:
            if self._cut is not None:
                with self.path.open("r+b") as torn:
                    torn.truncate(self._cut)
                self._cut = None
            with self.path.open("a", encoding="utf-8") as f:
                f.writelines(r.model_dump_json() + "\n" for r in records)
        except OSError:
            self.path = None  # a read-only directory: observed in memory only


def _observe(program: str, expect: dict[str, str]) -> Observation:
    start = time.perf_counter()
    observed = extract(program, expect)
    return Observation(program_sha256=program_sha256(program), extractor=EXTRACTOR_VERSION,
                       expect=expect,
                       observed=observed, sandbox=sandbox_kind(),
                       seconds=round(time.perf_counter() - start, 3),
                       at=datetime.now(UTC).isoformat(timespec="seconds"))
