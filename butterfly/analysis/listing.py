"""``butterfly runs [DIR]``: every run directory under DIR, one line each (model, suite name,
version and sha, prompt version, layouts and repeats, mode and ask points, whether it was
imported from an inspect log, status and shard, final match, cost and its price's source, cached
prompt tokens and what they saved, reasoning tokens, cost per correct conversation or tokens
per correct conversation when unpriced: docs/metrics.md, "Efficiency"). A directory that does
not read as a run is listed with its error, never skipped silently; a run made before the
digest is labelled unsealed, a repaired one repaired, a code run with programs not yet observed
says how many turns (listing never runs a program). A run with no priced answer (an unpriced
model, or every call failed) has no cost (``-``), never $0."""

from __future__ import annotations

from pathlib import Path

from pydantic import JsonValue

from butterfly.analysis.scoring import score_run
from butterfly.core.pooling import Result
from butterfly.core.scores import EfficiencySlice
from butterfly.errors import UserError
from butterfly.runs.reader import load_run
from butterfly.runs.records import InspectSource
from butterfly.runs.store import MANIFEST


class RunLine(Result):
    """One run directory as ``butterfly runs`` lists it (``error``: why it does not read)."""

    path: str
    model: str | None = None
    suite: str | None = None
    """The suite's name: a frozen suite's, or its file's name (``score``'s ``suite``)."""
    suite_version: int | None = None
    """A frozen suite's version (None: not a suite we shipped)."""
    suite_sha256: str | None = None
    prompt_version: int | None = None
    """The prompt's version (recorded, or named by its fingerprint: runs/versions.py)."""
    layouts: str | None = None
    repeats: int | None = None
    mode: str | None = None
    """chat or restate."""
    ask_at: tuple[int, ...] | None = None
    """The turns a restate run asked besides each chain's last (``run --ask-at``; empty: the
    last turn only); None: every turn was asked (a chat run, and manifests before ask points)."""
    imported_from: InspectSource | None = None
    """The inspect eval log the run was imported from (``import-inspect``; manifest version 3);
    None for a run butterfly played."""
    status: str | None = None
    final_match: float | None = None
    n_conversations: int | None = None
    cost_usd: float | None = None
    user_price: bool = False
    """The costs were computed by the price the user gave (``run --price``)."""
    cached_tokens: int | None = None
    saved_usd: float | None = None
    """What the cached prompt tokens saved at the cached-input price."""
    reasoning_tokens: int | None = None
    efficiency: EfficiencySlice | None = None
    """Cost and tokens per (correct) conversation (``score --json``'s ``efficiency`` without
    its reasoning, latency and slices); None for a run with no call record."""
    error: str | None = None
    shard: str | None = None
    """``I/N`` for a shard of a sweep (``run --shard``); its figures are the shard's only."""
    content: str | None = None
    """What was verified of its records: sealed, or made before the digest (unsealed)."""
    sealed: bool | None = None
    repaired: int = 0
    """How many times ``butterfly repair`` rebuilt it."""
    unobserved: int = 0
    """A code run's answered turns whose program is not yet observed (not scored; ``butterfly
    observe RUN`` observes them)."""

    def to_json(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json")


def find_runs(root: Path) -> list[Path]:
    """Run directories (holding a manifest) under ``root``, itself included, in path order."""
    if not root.is_dir():
        raise UserError(f"runs: {root} is not a directory")
    return sorted(p.parent for p in root.rglob(MANIFEST) if p.is_file())


def describe(path: Path) -> RunLine:
    try:
        run = load_run(path)
        score = score_run(run)
    except UserError as e:
        return RunLine(path=str(path), error=str(e))
    m, p = run.manifest, run.params
    u = score.usage
    return RunLine(
        path=str(path), model=m.model, suite=score.suite.name,
        suite_version=score.suite.version, suite_sha256=m.suite.sha256,
        prompt_version=score.prompt.version,
        layouts=",".join(p.layouts), repeats=p.repeats, mode=p.mode, ask_at=p.ask_at,
        imported_from=m.imported_from,
        status=m.status, final_match=score.final_match, n_conversations=score.n_conversations,
        cost_usd=None if u is None or not u.priced_calls else u.cost_usd,
        user_price=p.price is not None, cached_tokens=None if u is None else u.cached_tokens,
        saved_usd=None if u is None else u.saved_usd,
        reasoning_tokens=None if u is None else u.reasoning_tokens,
        efficiency=None if score.efficiency is None else EfficiencySlice.model_validate(
            {k: getattr(score.efficiency, k) for k in EfficiencySlice.model_fields}),
        shard=None if p.shard is None else str(p.shard), content=run.digest.label(),
        sealed=run.digest.sealed is not None, repaired=len(m.repaired),
        unobserved=len(run.unobserved),
    )


def list_runs(root: Path) -> list[RunLine]:
    return [describe(p) for p in find_runs(root)]
