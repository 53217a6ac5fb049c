"""Tamper evidence over content: the rolling digest of ``calls.jsonl`` and the manifest's seal.

Every line of ``calls.jsonl`` (its bytes, newline included) extends a rolling sha256:
``C_0`` is 64 zeros and ``C_n = sha256(C_(n-1) as hex + line n)``. A record written since the
digest (version 2) carries ``chain_sha256 = C_(n-1)``, the digest of every line before it; the
manifest's ``seal`` holds the lines it covers, ``C`` at the last of them, and the sha256 of the
manifest's own content (parameters, counts, status). A writer continues ``C`` from the lines it
read when it resumes; closing a run seals every line.

A reader recomputes ``C`` line by line while it streams the file (nothing is held but the
running value). The first record whose link differs from the recomputed ``C`` is where the file
stopped being what was written: the line before it was edited, removed or inserted (or its own
link was). The last line has no record after it: the seal covers it, and the manifest.

Not caught: whoever rewrites records and then recomputes every later link and the seal (the
digest is evidence against edits, not a signature; the harness holds no secret to sign with).
In a run never closed (a kill -9), the records after its seal are linked, and the last of them
is vouched for by nothing until a resume seals it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from pydantic import BaseModel

from butterfly.errors import UserError
from butterfly.runs.records import RunManifest, Seal

START: Final = "0" * 64
"""``C_0``: the digest of no line."""
UNSEALED: Final = Seal(records=0, calls_sha256=START, sha256=START)
"""The seal of a manifest being made; :func:`sealed` replaces it before it is written."""
WAY_BACK: Final = ("restore the run directory from a copy, or run again into a new --out "
                   "(butterfly repair RUN keeps what it can, and says what it dropped)")


@dataclass
class Chain:
    """The rolling digest of a calls file's lines so far, and how many there are."""

    records: int = 0
    sha256: str = START

    def add(self, line: bytes) -> None:
        self.sha256 = hashlib.sha256(self.sha256.encode("ascii") + line).hexdigest()
        self.records += 1


def complete_lines(path: Path) -> Iterator[bytes]:
    """The complete lines of ``path``, none when it is missing (a torn last line, a kill
    mid-write, left out, as every reader does)."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    with f:
        for line in f:
            if line.endswith(b"\n"):
                yield line


def chain_of(path: Path) -> Chain:
    """The digest of a calls file's complete lines (a torn last line left out), unchecked."""
    chain = Chain()
    for line in complete_lines(path):
        chain.add(line)
    return chain


def linked_line(record: BaseModel, chain: Chain) -> bytes:
    """``record``'s line, linked to the digest of the lines before it (``chain_sha256``)."""
    return (record.model_copy(update={"chain_sha256": chain.sha256}).model_dump_json()
            + "\n").encode("utf-8")


class LinkedLog:
    """Append-only writer of linked records (calls, observations): one line per record,
    flushed as it is written, each linked to the digest of the lines before it (``chain``,
    continued)."""

    def __init__(self, path: Path, chain: Chain) -> None:
        self.path, self.chain = path, chain
        try:
            self._f: IO[bytes] = path.open("ab")
        except OSError as e:
            raise UserError(f"{path}: cannot write: {e.strerror or e}") from None

    def append(self, record: BaseModel) -> None:
        line = linked_line(record, self.chain)
        self._f.write(line)
        self._f.flush()
        self.chain.add(line)

    def close(self) -> None:
        self._f.close()


def content_sha256(obj: dict[str, object]) -> str:
    """sha256 of a manifest's JSON object as canonical JSON, without ``seal.sha256``."""
    body = dict(obj)
    seal = body.get("seal")
    if isinstance(seal, dict):
        body["seal"] = {k: v for k, v in seal.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sealed(manifest: RunManifest, chain: Chain) -> RunManifest:
    """``manifest`` with the seal of ``chain`` and of its own content (a version 1 manifest,
    made before the digest, is left unsealed)."""
    if manifest.schema_version == 1:
        return manifest
    draft = manifest.model_copy(update={"seal": Seal.model_construct(
        records=chain.records, calls_sha256=chain.sha256, sha256="")})
    sha = content_sha256(json.loads(draft.model_dump_json()))
    return manifest.model_copy(update={"seal": Seal(records=chain.records,
                                                    calls_sha256=chain.sha256, sha256=sha)})


def check_content(path: Path, manifest: RunManifest, obj: dict[str, object]) -> None:
    """The manifest read (``obj``, its JSON) is the one its seal was computed over."""
    if manifest.seal is not None and content_sha256(obj) != manifest.seal.sha256:
        raise UserError(f"{path}: the manifest differs from its seal: it was edited after the "
                        f"run wrote it (its parameters, counts or status); {WAY_BACK}")


@dataclass(frozen=True)
class Digest:
    """What a reader verified of a run's content (see :meth:`label`)."""

    records: int
    """Lines of calls.jsonl read."""
    sealed: int | None
    """Lines the manifest's seal covers; None for a run made before the digest."""
    unlinked: int = 0
    """Leading records made before the digest (a run made then, resumed since)."""

    def label(self) -> str:
        if self.sealed is None:
            return ("made before the digest (issue 21): its counts, duplicates and parses are "
                    "checked, its content is not sealed")
        if self.unlinked:
            return (f"sealed; its first {self.unlinked} record(s) were made before the digest "
                    "and are sealed as they were found when it was resumed")
        if self.sealed < self.records:
            return (f"sealed to record {self.sealed} of {self.records} (not closed: the later "
                    "records are linked, the last one is sealed when the run is resumed)")
        return f"sealed ({self.records} records)"


class Links:
    """Checks each line of a calls file against the digest as it is streamed: every link, and
    the seal's digest at the line it covers. :meth:`finish` checks what only the end shows."""

    def __init__(self, path: Path, seal: Seal | None) -> None:
        self.path = path
        self.seal = seal
        self.chain = Chain()
        self.unlinked = 0
        self._at_seal = START if seal is not None and seal.records == 0 else None

    def add(self, n: int, line: bytes, link: str | None) -> None:
        """Line ``n`` (its bytes, and the link its record keeps: None for version 1)."""
        if link is None:
            if self.unlinked != self.chain.records:
                raise UserError(f"{self.path}:{n}: a record without a link (version 1) after "
                                f"linked ones: the file was edited; {WAY_BACK}")
            self.unlinked += 1
        elif link != self.chain.sha256:
            raise self._broken(n)
        self.chain.add(line)
        if self.seal is not None and self.chain.records == self.seal.records:
            self._at_seal = self.chain.sha256

    def _broken(self, n: int) -> UserError:
        if n == 1:
            where = "line 1 links to lines that are not there: lines were removed before it"
        else:
            where = (f"line {n - 1} is not the record written there (line {n} keeps the digest "
                     f"of the lines before it, which differs): it was edited, or a line was "
                     f"removed or inserted there")
        return UserError(f"{self.path}:{n - 1 if n > 1 else 1}: the digest breaks: {where}; "
                         f"{WAY_BACK}")

    def finish(self) -> None:
        """The seal's digest matches the lines it covers."""
        seal = self.seal
        if seal is None:
            if self.unlinked != self.chain.records:
                raise UserError(f"{self.path}: linked records (version 2) under a manifest made "
                                f"before the digest (version 1): the manifest was replaced; "
                                f"{WAY_BACK}")
            return
        if self._at_seal is None:
            raise UserError(f"{self.path}: holds {self.chain.records} record(s), but the "
                            f"manifest's seal covers {seal.records}: records were removed; "
                            f"{WAY_BACK}")
        if self._at_seal != seal.calls_sha256:
            raise UserError(f"{self.path}:{seal.records}: the digest breaks: line "
                            f"{seal.records} (the last the manifest's seal covers) is not the "
                            f"record written there: it was edited; {WAY_BACK}")
