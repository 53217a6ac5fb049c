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

from collections.abc import Iterator, Mapping
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


def _answers(suite: tuple[Scenario, ...], records: Mapping[CallKey, Record]
             ) -> Iterator[tuple[CallKey, Record, str | None, dict[str, str]]]:
    """Each answered call (its first sample): its key, its record, its program (None: it
    holds none) and the oracle's spec on its turn."""
    by_id = {s.id: s for s in suite}
    oracle = lru_cache(maxsize=None)(lambda sid: replay(by_id[sid]))
    for key, rec in records.items():
        if rec.error is None and rec.raw is not None and key.sample == 0:
            yield key, rec, _program(rec), oracle(key.scenario)[key.turn]


def programs(suite: tuple[Scenario, ...], records: Mapping[CallKey, Record]
             ) -> dict[CallKey, tuple[str, dict[str, str]]]:
    """Every answered call's program with the oracle's code spec on its turn: what observing a
    run observes."""
    return {key: (program, code_spec(want)) for key, _, program, want in _answers(suite, records)
            if program is not None}


def code_turns(run_dir: Path, suite: tuple[Scenario, ...],
               records: Mapping[CallKey, Record]) -> CodeTurns:
    """Every answered turn of a code run whose program is observed (read from ``run_dir``),
    and those whose program is not."""
    found = read_observations(run_dir)
    out: dict[TurnKey, Turn] = {}
    unobserved: set[TurnKey] = set()
    sandboxes: set[str] = set()
    for key, rec, program, want in _answers(suite, records):
        turn = TurnKey(key.scenario, key.turn, key.layout, key.repeat)
        spec = None
        if program is not None:
            seen = found.get(program, code_spec(want))
            if seen is None:
                unobserved.add(turn)
                continue
            sandboxes.add(seen.sandbox)
            spec = judged(seen.observed, want)
        out[turn] = Turn(spec, rec.abstention, rec.abstention_detail, rec.raw or "", (rec,))
    return CodeTurns(out, frozenset(unobserved), tuple(sorted(sandboxes)))
