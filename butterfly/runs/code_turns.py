"""The turns of a code-track run: each answer's program observed and judged against the oracle.

A turn's spec, as the spec track's metrics read it, is :func:`butterfly.code.judge.judged` of
its observation (shared with the Kaggle notebook, so both give the same figures). An answer
without a program (or whose program does not compile) is an abstention with its reason, as its
call record says.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from butterfly.code.conversation import code_spec, program_of
from butterfly.code.judge import judged
from butterfly.core.turns import CallKey, Turn, TurnKey
from butterfly.runs.calls import CallView
from butterfly.runs.observe import Observer
from butterfly.runs.records import CallRecord
from oracle import Scenario, replay

Record = CallView | CallRecord


def _program(rec: Record) -> str | None:
    if rec.error is not None or rec.raw is None or rec.abstention is not None:
        return None
    return program_of(rec.raw, rec.finish_reason == "length").program


def code_turns(run_dir: Path | None, suite: tuple[Scenario, ...],
               records: Mapping[CallKey, Record]) -> dict[TurnKey, Turn]:
    """Every answered turn of a code run, its program observed (cached in ``run_dir``)."""
    by_id = {s.id: s for s in suite}
    oracle = lru_cache(maxsize=None)(lambda sid: replay(by_id[sid]))
    answered = {k: r for k, r in records.items()
                if r.error is None and r.raw is not None and k.sample == 0}
    programs = {k: _program(r) for k, r in answered.items()}
    observer = Observer(run_dir)
    observer.observe((p, code_spec(oracle(k.scenario)[k.turn]))
                     for k, p in programs.items() if p is not None)
    out: dict[TurnKey, Turn] = {}
    for key, rec in answered.items():
        program = programs[key]
        spec = None
        if program is not None:
            want = oracle(key.scenario)[key.turn]
            seen = observer.get(program, code_spec(want))
            spec = None if seen is None else judged(seen, want)
        out[TurnKey(key.scenario, key.turn, key.layout, key.repeat)] = Turn(
            spec, rec.abstention, rec.abstention_detail, rec.raw or "", (rec,))
    return out
