"""Tamper evidence: what a run directory must agree with before anything is read from it.

- the suite copy hashes to the manifest's ``suite.sha256``;
- a closed run (any status but ``running``) holds exactly the calls its manifest counts;
- no call has two answers (two writers, or an edited file);
- each stored spec (or abstention) is the parse of its stored raw answer, in the run's parse
  mode and protocol, as when it was played;
- the rolling digest of the records and the manifest's seal (:mod:`butterfly.runs.digest`);
- over several runs, one scenario id means one scenario (compared by content, not by suite).

Each refusal is one line that says what is wrong and how to recover.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from butterfly.core.turns import CallKey
from butterfly.engine.tracks import track
from butterfly.errors import UserError
from butterfly.runs.calls import CallView, Record
from butterfly.runs.digest import WAY_BACK
from butterfly.runs.records import CallRecord, RunManifest, RunParams
from oracle import Scenario


def key_of(rec: Record) -> CallKey:
    return CallKey(rec.scenario, rec.turn, rec.layout, rec.repeat, rec.sample)


@dataclass
class CallIndex:
    """The answer of every call (``done``), and the last error of every call with no answer
    (``failed``), built line by line. Two answers for one call are refused."""

    path: Path
    done: dict[CallKey, CallView] = field(default_factory=dict)
    failed: dict[CallKey, CallView] = field(default_factory=dict)
    _line: dict[CallKey, int] = field(default_factory=dict)

    def add(self, n: int, rec: CallView) -> None:
        """Record ``rec``, read from line ``n``."""
        key = key_of(rec)
        if rec.error is not None:
            if key not in self.done:
                self.failed[key] = rec
            return
        if key in self.done:
            raise UserError(
                f"{self.path}:{n}: a second answer for call (scenario {rec.scenario}, turn "
                f"{rec.turn}, layout {rec.layout}, repeat {rec.repeat}, sample {rec.sample}); "
                f"the first is on line {self._line[key]}: two writers, or an edited file. Keep "
                "one line per call (delete the later ones), or run again into a new --out")
        self.done[key] = rec
        self._line[key] = n
        self.failed.pop(key, None)


class ParseCheck:
    """Each stored spec or abstention is what the parser makes of the stored raw answer, read
    as the run read it when it played (its ``--parse`` and ``--protocol``, a truncated answer
    an abstention, an answer cut at ``--max-answer-chars`` too_large): an edited spec, or an
    edited answer under its old spec, is refused. The
    parses of the last :data:`HELD` distinct answers are kept (repeated answers: parsed once)."""

    HELD = 4096

    def __init__(self, path: Path, params: RunParams) -> None:
        self.path = path
        self.params = params
        self.track = track(params.track)
        self._seen: dict[tuple[str, bool], tuple[dict[str, str] | None, str | None]] = {}

    def _parse(self, raw: str, truncated: bool) -> tuple[dict[str, str] | None, str | None]:
        got = self._seen.get((raw, truncated))
        if got is None:
            p = self.track.read(raw, self.params, truncated)
            if len(self._seen) >= self.HELD:
                self._seen.clear()
            got = self._seen[(raw, truncated)] = (p.spec, p.reason)
        return got

    def add(self, n: int, rec: CallRecord) -> None:
        if rec.raw is None:
            return
        if rec.raw_chars is not None:  # cut at the response-size cap: too_large, whatever is left
            want: tuple[dict[str, str] | None, str | None] = (None, "too_large")
        elif (rec.raw == "" and rec.abstention == "context"
              and self.track.context_abstains(self.params)):
            want = (None, "context")  # over the context window: no answer to parse
        else:
            want = self._parse(rec.raw, rec.finish_reason == "length")
        if want != (rec.spec, rec.abstention):
            stored = "abstention" if rec.spec is None else "spec"
            raise UserError(
                f"{self.path}:{n}: the stored {stored} is not the parse of the stored raw "
                f"answer (--parse {self.params.parse}, --protocol {self.params.protocol}): the "
                f"record was edited; {WAY_BACK}")


def check_counts(out: Path, manifest: RunManifest, answered: int, errors: int) -> None:
    """A closed run holds the calls its manifest counts (a running one is still growing)."""
    if manifest.status == "running":
        return
    if (answered, errors) != (manifest.n_calls, manifest.n_provider_errors):
        raise UserError(
            f"{out}: calls.jsonl holds {answered} answered and {errors} failed call(s), but the "
            f"manifest ({manifest.status}) counts {manifest.n_calls} and "
            f"{manifest.n_provider_errors}: the file was cut or edited. Restore it from a copy, "
            "or re-run the run's command to ask the missing calls again")


def check_suite_copy(manifest: RunManifest, copy: Path) -> None:
    try:
        sha = hashlib.sha256(copy.read_bytes()).hexdigest()
    except OSError as e:
        raise UserError(f"{copy}: cannot read the run's suite copy: {e.strerror or e}; copy "
                        f"the suite back: cp {manifest.suite.path} {copy}") from None
    if sha != manifest.suite.sha256:
        raise UserError(
            f"{copy}: the suite copy does not match the manifest (sha256 {sha[:12]}, recorded "
            f"{manifest.suite.sha256[:12]}): it was edited or damaged. Copy the suite the run "
            f"played back: cp {manifest.suite.path} {copy}")


def check_one_meaning(runs: Sequence[tuple[Path, Sequence[Scenario]]]) -> None:
    """Refuse runs in which one scenario id stands for two different scenarios."""
    seen: dict[str, tuple[str, Path]] = {}
    for path, scenarios in runs:
        for s in scenarios:
            content = s.to_json()
            first = seen.setdefault(s.id, (content, path))
            if first[0] != content:
                raise UserError(
                    f"scenario {s.id} means two different scenarios: one in {first[1]}, "
                    f"another in {path} (their suites share the id, not the content); "
                    "compare runs of one suite, or give the scenarios distinct ids")
