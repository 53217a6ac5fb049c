"""A run as one part of a sharded sweep: shards (``--shard I/N``), replicas (``--router``), and
what a resume of either must keep (docs/scale.md). A budget sweep, one run per reasoning budget,
is another thing: :mod:`butterfly.runs.budget_sweep`.

A shard plays a deterministic slice of the run's (scenario, layout, repeat) conversations,
balanced by calls: the conversations, longest first (suite order breaking ties), each go to
the shard with the fewest calls so far (the lowest index breaking ties). The slice depends on
nothing but the suite and the parameters (``--limit``, ``--per-category``, ``--layouts``,
``--repeats``, ``--samples``, ``--ask-at``), so every machine of a sweep computes the same slices.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from butterfly.core.asking import n_asked
from butterfly.errors import UserError
from butterfly.models.router import RouterConfig
from butterfly.runs.records import RouterRef, RunParams, Shard
from butterfly.runs.run_price import check_same_price
from oracle import Scenario

C = TypeVar("C", bound=tuple[Scenario, str, int])


def parse_shard(text: str | Shard | None) -> Shard | None:
    """``I/N`` (1 <= I <= N) as a :class:`Shard`; one clear line otherwise."""
    if text is None or isinstance(text, Shard):
        return text
    index, sep, count = str(text).strip().partition("/")
    try:
        if not sep:
            raise ValueError
        return Shard(index=int(index), count=int(count))
    except (ValueError, ValidationError):
        raise UserError(f"--shard takes I/N with 1 <= I <= N (e.g. 1/4), got {text!r}"
                        ) from None


def owners(costs: Sequence[int], count: int) -> list[int]:
    """The shard (0-based) of each item: longest first, each to the least-loaded shard."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    loads = [(0, k) for k in range(count)]
    owner = [0] * len(costs)
    for i in order:
        load, k = heapq.heappop(loads)
        owner[i] = k
        heapq.heappush(loads, (load + costs[i], k))
    return owner


def shard_slice(convs: Sequence[C], shard: Shard, samples: int = 1,
                ask_at: Sequence[int] | None = None) -> list[C]:
    """The conversations of ``shard``, in suite order (each costs asked turns x samples calls:
    every turn, unless the run asks at chosen turns)."""
    owner = owners([n_asked(len(s.turns), ask_at) * samples for s, _, _ in convs], shard.count)
    return [c for c, k in zip(convs, owner, strict=True) if k == shard.index - 1]


def router_ref(config: RouterConfig) -> RouterRef:
    """What the manifest records of a router file: never a key."""
    return RouterRef(path=str(config.path), sha256=config.fingerprint(), models=config.models(),
                     deployments=tuple(f"{m} @ {b or '-'}"
                                       for m, b in config.served()))


def served(model: str, params: RunParams) -> tuple[str, ...]:
    """The models a run's calls were served as: its router group's, or its model."""
    return params.router.models if params.router is not None else (model,)


def check_resume(out: Path, model: str, old: RunParams, params: RunParams) -> None:
    """A resume keeps the run's shard (and, for a shard, exactly its layouts and repeats: the
    slice depends on them), and serves the same model: another router file is fine when its
    deployments serve what the first served (replicas are interchangeable)."""
    if old.shard != params.shard:
        def shown(s: Shard | None) -> str:
            return "no --shard" if s is None else f"--shard {s}"
        raise UserError(f"--out {out} was run with {shown(old.shard)}; this is "
                        f"{shown(params.shard)}: a resume keeps the run's shard (give the same "
                        "flag), or choose another --out")
    if old.shard is not None and (old.layouts, old.repeats) != (params.layouts, params.repeats):
        raise UserError(f"--out {out} is shard {old.shard} of a sweep with --layouts "
                        f"{','.join(old.layouts)} and --repeats {old.repeats}: a shard resumes "
                        "with exactly those (its slice depends on them)")
    check_same_price(out, old.price, params.price)
    if served(model, old) != served(model, params):
        raise UserError(f"--out {out} was served {', '.join(served(model, old))}; this is "
                        f"{', '.join(served(model, params))}: a resume may change the "
                        "replicas (--router, --api-base), never the model they serve")
