"""The turns of a code-track run: each answer's program judged against the oracle from its
observation on file. Reading never runs a program: a program not yet observed leaves its turn
out of the answered turns and in :attr:`CodeTurns.unobserved` (``butterfly observe RUN``
observes it).

A turn's spec, as the spec track's metrics read it, is :func:`butterfly.code.judge.judged` of
its observation (shared with the Kaggle notebook, so both give the same figures). An answer
without a program (or whose program does not compile) is an abstention with its reason, as its
call record says.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from butterfly.code.conversation import code_spec, program_of
from butterfly.code.judge import judged
from butterfly.core.turns import CallKey, Turn, TurnKey
from butterfly.runs.calls import Record
from butterfly.runs.observe import read_observations
from oracle import Scenario, replay


class CodeTurns(NamedTuple):
    """The answered turns (each with an observed program, or an abstention), the turns whose
    program is not yet observed, and the sandboxes the observations used ran in."""

    turns: dict[TurnKey, Turn]
    unobserved: frozenset[TurnKey]
    sandboxes: tuple[str, ...]


def _program(rec: Record) -> str | None:
    if rec.error is not None or rec.raw is None or rec.abstention is not None:
        return None
    return program_of(rec.raw, rec.finish_reason == "length").program


def _answered(records: Mapping[CallKey, Record]) -> dict[CallKey, Record]:
    return {k: r for k, r in records.items()
            if r.error is None and r.raw is not None and k.sample == 0}


def programs(suite: tuple[Scenario, ...], records: Mapping[CallKey, Record]
             ) -> dict[CallKey, tuple[str, dict[str, str]]]:
    """Every answered call's program with the oracle's code spec on its turn: what observing a
    run observes."""
    by_id = {s.id: s for s in suite}
    oracle = lru_cache(maxsize=None)(lambda sid: replay(by_id[sid]))
    out = {}
    for key, rec in _answered(records).items():
        program = _program(rec)
        if program is not None:
            out[key] = (program, code_spec(oracle(key.scenario)[key.turn]))
    return out


def code_turns(run_dir: Path, suite: tuple[Scenario, ...],
               records: Mapping[CallKey, Record]) -> CodeTurns:
    """Every answered turn of a code run whose program is observed (read from ``run_dir``),
    and those whose program is not."""
    by_id = {s.id: s for s in suite}
    oracle = lru_cache(maxsize=None)(lambda sid: replay(by_id[sid]))
    found = read_observations(run_dir)
    out: dict[TurnKey, Turn] = {}
    unobserved: set[TurnKey] = set()
    sandboxes: set[str] = set()
    for key, rec in _answered(records).items():
        turn = TurnKey(key.scenario, key.turn, key.layout, key.repeat)
        program, spec = _program(rec), None
        if program is not None:
            want = oracle(key.scenario)[key.turn]
            seen = found.get(program, code_spec(want))
            if seen is None:
                unobserved.add(turn)
                continue
            sandboxes.add(seen.sandbox)
            spec = judged(seen.observed, want)
        out[turn] = Turn(spec, rec.abstention, rec.abstention_detail, rec.raw or "", (rec,))
    return CodeTurns(out, frozenset(unobserved), tuple(sorted(sandboxes)))
