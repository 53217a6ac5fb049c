"""The code track's programs observed as ``butterfly score`` observes them (docs/code-track.md).

An answer's program is taken by ``code.conversation.program_of``, run and observed in the
sandbox by ``code.spec_of_program`` (in a child process, never in inspect's); the scorer judges the
observation against the oracle by the track (``engine.tracks``, ``Track.judge``: the function
``butterfly score``, ``runs/code_turns.py``, and the Kaggle notebook use). The observation runs
in a worker thread, so the sandbox's child process never blocks inspect's event loop, two at a
time whatever inspect's concurrency (``runs.observe.WORKERS``, as ``butterfly score`` observes:
a program starved of the CPU could hit its time limit and be judged broken); a (program,
expected spec) pair is observed once per process, as a run's ``observations.jsonl`` keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import anyio
import anyio.lowlevel

from butterfly.code.conversation import code_spec, program_of
from butterfly.code.spec_of_program import extract
from butterfly.runs.observe import WORKERS

_SEEN: dict[tuple[str, str], dict[str, str]] = {}
_LIMITS: dict[object, anyio.CapacityLimiter] = {}
HELD = 4096
"""Observations kept in memory (the oldest are let go first)."""


def _limiter() -> anyio.CapacityLimiter:
    """The observations' limiter of the running event loop (each eval runs its own)."""
    token = anyio.lowlevel.current_token()
    if token not in _LIMITS:
        _LIMITS.clear()
        _LIMITS[token] = anyio.CapacityLimiter(WORKERS)
    return _LIMITS[token]


def _observe(program: str, expect: Mapping[str, str]) -> dict[str, str]:
    key = (program, json.dumps(dict(expect), sort_keys=True))
    if key not in _SEEN:
        if len(_SEEN) >= HELD:
            del _SEEN[next(iter(_SEEN))]
        _SEEN[key] = extract(program, expect)
    return dict(_SEEN[key])


async def observed(raw: str, truncated: bool, want: Mapping[str, str]) -> dict[str, str] | None:
    """What the program of an answer does, observed against the oracle's spec ``want`` (None:
    the answer holds no program)."""
    program = program_of(raw, truncated).program
    if program is None:
        return None
    return await anyio.to_thread.run_sync(_observe, program, code_spec(dict(want)),
                                          limiter=_limiter())
