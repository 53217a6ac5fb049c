"""``butterfly merge SHARD_DIR ... --out RUN``: join the shards of a sweep into one run.

Each shard is read through the run reader (:func:`butterfly.runs.reader.load_run`: suite copy,
counts, one answer per call), then they are checked against each other: one suite, one model,
one answer key, parse mode, prompt and version, one scope (limit, per-category, layouts,
repeats), shards 1..N of one N each exactly once, and every call inside its shard's slice (so
no call is in two shards). Any refusal is one line, and nothing is written.

The merged run is a normal run directory: its manifest (no shard, status the worst of the
shards', counts and usage summed from the records, ``merged_from`` naming the shards), the
suite copy, and ``calls.jsonl`` with the shards' records copied shard by shard (so the order of
the arguments does not matter), each linked anew into the merged file's digest (its content
unchanged; records made before the digest are copied as they are, under an unsealed manifest),
and the manifest sealed over them. The lines are streamed, one at a time. Every
file is written into a hidden directory beside ``--out`` and moved in at the end, the
manifest last: a killed merge leaves no run that reads as complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from butterfly.core.turns import ConversationKey
from butterfly.core.vocab import RunStatus
from butterfly.errors import UserError
from butterfly.runs.calls import iter_records
from butterfly.runs.digest import Chain, linked_line
from butterfly.runs.lock import LOCK, writer_lock
from butterfly.runs.observe import OBSERVATIONS, SEAL, carry
from butterfly.runs.reader import load_run
from butterfly.runs.records import CallRecord, MergedShard, RunManifest, RunParams, Shard
from butterfly.runs.scope import conversation_keys, select
from butterfly.runs.shards import served
from butterfly.runs.store import CALLS, MANIFEST, SUITE_COPY, ask_flag, now, write_manifest
from butterfly.runs.usage import Tally
from butterfly.suite.load import load_suite

BEST_TO_WORST: tuple[RunStatus, ...] = ("complete", "incomplete", "budget", "interrupted",
                                        "failed")
"""Statuses from best to worst: the merged run has the worst of its shards'."""


def _read_shard(path: Path) -> RunManifest:
    """A shard's manifest, after the reader's integrity checks; a whole run, or a shard
    still being written, is refused."""
    manifest = load_run(path).manifest
    if manifest.params.shard is None:
        raise UserError(f"merge: {path} is not a shard (it was run without --shard I/N): "
                        "merge joins the shards of one sweep")
    if manifest.status == "running":
        raise UserError(f"merge: {path} (shard {manifest.params.shard}) is still being "
                        "written: wait for it to end, then merge")
    return manifest


def _shard(m: RunManifest) -> Shard:
    if m.params.shard is None:  # _read_shard refused it already
        raise UserError("merge: a run that is not a shard")
    return m.params.shard


def _scope(p: RunParams) -> str:
    return (f"--limit {p.limit}, --per-category {p.per_category}, --layouts "
            f"{','.join(p.layouts)}, --repeats {p.repeats}, {ask_flag(p.ask_at)}")


def _differences(a: RunManifest, b: RunManifest) -> str | None:
    """What makes two shards parts of different sweeps (None: the same sweep)."""
    pa, pb = a.params, b.params
    checks: list[tuple[object, object, Callable[[RunManifest], str]]] = [
        (a.suite.sha256, b.suite.sha256, lambda m: f"suite {m.suite.path} (sha256 "
                                                   f"{m.suite.sha256[:12]})"),
        (a.model, b.model, lambda m: f"model {m.model}"),
        (served(a.model, pa), served(b.model, pb),
         lambda m: f"deployments serving {', '.join(served(m.model, m.params))}"),
        (pa.answer_key(), pb.answer_key(), lambda m: "answer-changing parameters "
                                                     f"{m.params.answer_key()}"),
        (pa.parse, pb.parse, lambda m: f"--parse {m.params.parse}"),
        (pa.price, pb.price, lambda m: "no --price" if m.params.price is None
         else f"--price {m.params.price.label()}"),
        (a.prompt_sha256, b.prompt_sha256, lambda m: f"prompt sha256 {m.prompt_sha256[:12]}"),
        (a.butterfly_version, b.butterfly_version, lambda m: f"butterfly "
                                                             f"{m.butterfly_version}"),
        (a.schema_version, b.schema_version, lambda m: "a manifest of version "
                                                       f"{m.schema_version}"),
        (_scope(pa), _scope(pb), lambda m: _scope(m.params)),
        (_shard(a).count, _shard(b).count, lambda m: f"{_shard(m).count} shards"),
    ]
    for x, y, show in checks:
        if x != y:
            return f"{show(a)} vs {show(b)}"
    return None


def check_shards(paths: Sequence[Path], manifests: Sequence[RunManifest]) -> None:
    """Refuse shards that are not exactly shards 1..N of one sweep."""
    first = manifests[0]
    for path, m in zip(paths[1:], manifests[1:], strict=True):
        why = _differences(first, m)
        if why is not None:
            raise UserError(f"merge: {paths[0]} and {path} are not shards of one sweep: {why}")
    seen: dict[int, Path] = {}
    for path, m in zip(paths, manifests, strict=True):
        index = _shard(m).index
        if index in seen:
            raise UserError(f"merge: {seen[index]} and {path} are both shard {_shard(m)}: "
                            "give each shard once")
        seen[index] = path
    count = _shard(first).count
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise UserError(f"merge: shard(s) {', '.join(missing)} missing: give every shard of "
                        f"the sweep (a lost shard is re-run with its own --shard and --out, "
                        "then merged)")


def _distinct(paths: Sequence[Path]) -> None:
    seen: dict[Path, Path] = {}
    for p in paths:
        real = p.resolve()
        if real in seen:
            raise UserError(f"merge: {seen[real]} and {p} are the same directory: give each "
                            "shard once")
        seen[real] = p


def _slice_of(path: Path, m: RunManifest) -> frozenset[ConversationKey]:
    suite = load_suite(path / SUITE_COPY, played=True)
    return frozenset(conversation_keys(select(suite, m.params), m.params))


def _copy(path: Path, m: RunManifest, out: IO[bytes], chain: Chain) -> Iterator[CallRecord]:
    """Copy a shard's call records to ``out``, checking each and linking it into ``chain``
    (the merged file's digest), and yield them."""
    keys = _slice_of(path, m)
    src = path / CALLS
    for n, line, rec in iter_records(src):
        if ConversationKey(rec.scenario, rec.layout, rec.repeat) not in keys:
            raise UserError(f"merge: {src}:{n}: a call of conversation (scenario "
                            f"{rec.scenario}, layout {rec.layout}, repeat {rec.repeat}), which "
                            f"is not in shard {m.params.shard}'s slice: a call copied between "
                            "shards (a duplicate), or an edited file")
        if rec.chain_sha256 is not None:
            line = linked_line(rec, chain)
        out.write(line)
        chain.add(line)
        yield rec


def _merged_manifest(paths: Sequence[Path], shards: Sequence[RunManifest],
                     records: Iterator[CallRecord]) -> RunManifest:
    first, tally = shards[0], Tally()
    for rec in records:
        tally.add(rec)
    bases = {m.params.api_base for m in shards}
    routers = [m.params.router for m in shards]
    params = first.params.model_copy(update={
        "shard": None, "api_base": bases.pop() if len(bases) == 1 else None,
        "router": routers[0] if all(r is not None for r in routers) else None})
    order = {s.id: i for i, s in enumerate(load_suite(paths[0] / SUITE_COPY, played=True))}
    incomplete = sorted({sid for m in shards for sid in m.incomplete_scenarios},
                        key=order.__getitem__)
    status = max((m.status for m in shards), key=BEST_TO_WORST.index)
    return first.model_copy(update={
        "params": params, "status": status, "updated_at": now(),
        "started_at": min(m.started_at for m in shards),
        "n_calls": tally.answered, "n_provider_errors": tally.errors,
        "incomplete_scenarios": tuple(incomplete),
        "usage": tally.usage(first.params.price, first.model),
        "failure": next((m.failure for m in shards if m.failure), None),
        "merged_from": tuple(MergedShard(path=str(p), shard=_shard(m), status=m.status)
                             for p, m in zip(paths, shards, strict=True))})


def _check_empty(out: Path) -> None:
    others = sorted(p.name for p in out.iterdir() if p.name != LOCK)
    if others:
        raise UserError(f"merge: --out {out} is not empty (it holds {others[0]}): merge into a "
                        "new directory")


def _write(paths: Sequence[Path], shards: Sequence[RunManifest], tmp: Path) -> RunManifest:
    shutil.copyfile(paths[0] / SUITE_COPY, tmp / SUITE_COPY)
    chain = Chain()
    with (tmp / CALLS).open("wb") as f:
        records = (rec for p, m in zip(paths, shards, strict=True)
                   for rec in _copy(p, m, f, chain))
        manifest = _merged_manifest(paths, shards, records)
    carry(paths, tmp)  # the programs the shards observed are not run again
    return write_manifest(tmp, manifest, chain)


def merge(shard_dirs: Sequence[Path | str], out: Path | str) -> RunManifest:
    """Join shards 1..N of one sweep (in any order) into the run directory ``out``."""
    if not shard_dirs:
        raise UserError("merge: give the shard directories")
    dirs, target = [Path(p) for p in shard_dirs], Path(out)
    _distinct(dirs)
    read = sorted(((p, _read_shard(p)) for p in dirs), key=lambda x: _shard(x[1]).index)
    paths, shards = [p for p, _ in read], [m for _, m in read]
    check_shards(paths, shards)
    created = not target.exists()
    try:
        return _write_locked(paths, shards, target)
    except BaseException:
        if created:  # leave no directory behind a refused, failed or interrupted merge
            for name in (SUITE_COPY, CALLS, OBSERVATIONS, SEAL, LOCK):
                with contextlib.suppress(OSError):
                    (target / name).unlink()
            with contextlib.suppress(OSError):
                target.rmdir()
        raise


def _write_locked(paths: Sequence[Path], shards: Sequence[RunManifest], out: Path
                  ) -> RunManifest:
    with writer_lock(out):
        _check_empty(out)
        tmp = out.parent / f".{out.name}.merging"
        try:
            shutil.rmtree(tmp, ignore_errors=True)  # a killed merge's leftovers
            tmp.mkdir(parents=True)
            manifest = _write(paths, shards, tmp)
            for name in (SUITE_COPY, CALLS, OBSERVATIONS, SEAL, MANIFEST):  # the manifest last
                if name == MANIFEST or (tmp / name).exists():
                    os.replace(tmp / name, out / name)
        except OSError as e:
            raise UserError(f"merge: --out {out}: cannot write: {e.strerror or e}") from None
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)
    return manifest
