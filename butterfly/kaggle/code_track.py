"""The code track in the Kaggle notebook (contract section 7, docs/kaggle.md): the code
conversation played through kaggle-benchmarks, each answer's program observed in the fallback
sandbox, and scored as ``butterfly run --track code`` + ``butterfly score`` score it.

Inlined into the notebook beside :mod:`butterfly.kaggle.runner`, so it may import only
``core``, the code modules the notebook inlines (``program``, ``conversation``, ``probes``,
``sandbox``, ``runner``, ``spec_of_program``, ``judge``), ``engine``, the
notebook's modules before it and ``oracle``. Nothing is rewritten here: the turns are the
engine's on the code track (its messages ``code.conversation``'s, an answer read by
``program_of``), each program is observed by ``code.spec_of_program`` (the notebook's I/O, in the
sandbox) and judged by the track (``code.judge``: the CLI's own functions), and the verdict is
``core.metrics.score_scenario``'s, as in ``butterfly score``.

Model-written code never runs in the notebook's process: ``code.spec_of_program`` runs each
program in
a child process (``code.sandbox``). Kaggle has no bubblewrap, so :func:`use_fallback_sandbox`
forces the documented fallback (resource limits, a clean environment, an audit hook).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Final

from butterfly.code import sandbox
from butterfly.code.conversation import code_spec, program_of
from butterfly.code.judge import broken, figures, figures_line
from butterfly.code.spec_of_program import extract
from butterfly.core.scores import CodeScore
from butterfly.engine.conversation import Answered
from butterfly.engine.tracks import track
from butterfly.kaggle.runner import Chat, Judge, Verdict, play_verdict
from butterfly.kaggle.settings import Settings
from oracle import Scenario, replay

CODE: Final = Settings(track="code")
"""The code track's settings: chat mode, zero-shot, layout E, one answer per turn."""
Observe = Callable[[str, Mapping[str, str]], dict[str, str]]
"""(program, expected code spec) -> observed code spec: ``code.spec_of_program.extract``."""


class CodeVerdict(Verdict):
    """A code-track scenario's verdict: the spec track's, each answer's ``spec`` the judged one
    (the oracle's with the observed code settings put in), plus the settings broken per turn
    (None where the answer held no program) and the sandbox the programs ran in."""

    broken: list[int | None]
    sandbox: str


def use_fallback_sandbox(env: MutableMapping[str, str] = os.environ) -> str:
    """Force the fallback sandbox (``BUTTERFLY_SANDBOX=fallback``): Kaggle has no bubblewrap,
    and probing for it would cost a failed run per kernel. Returns the line the notebook
    prints, naming the sandbox the programs will run in."""
    env[sandbox.ENV] = "fallback"
    kind = sandbox.sandbox_kind()
    return (f"sandbox: {kind} (forced: Kaggle has no bubblewrap). Each program runs in a child "
            "process with resource limits, a clean environment and an audit hook refusing "
            "sockets, subprocesses and writes outside its own directory; weaker than "
            "bubblewrap (docs/code-track.md).")


def observe_cached(observe: Observe = extract) -> Observe:
    """``observe``, each (program, expected spec) run once per notebook (as the CLI's
    ``observations.jsonl`` does for a run): an unchanged program on a distractor turn against
    the same spec is not run again."""
    seen: dict[tuple[str, str], dict[str, str]] = {}

    def cached(program: str, expect: Mapping[str, str]) -> dict[str, str]:
        key = (program, json.dumps(dict(expect), sort_keys=True))
        if key not in seen:
            seen[key] = observe(program, expect)
        return dict(seen[key])

    return cached


def judge_with(scenario: Scenario, observe: Observe = extract) -> Judge:
    """The code track's judge of ``scenario``'s answers: each answer's program (an answer the
    engine read as no abstention holds one: ``program_of``) observed against the oracle's code
    spec of its turn, then judged by the track (``Track.judge``: the oracle's spec with the
    observed code settings put in), as ``butterfly observe`` + ``score`` judge it."""
    oracle = replay(scenario)
    code = track("code")

    def judge(turn: int, sample: Answered) -> Answered:
        if sample.abstention is not None or sample.raw is None:
            return sample
        program = program_of(sample.raw, sample.finish_reason == "length").program
        if program is None:  # pragma: no cover - the engine read it as a program
            return sample
        want = oracle[turn]
        return dataclasses.replace(sample, spec=code.judge(want, observe(program,
                                                                        code_spec(want))))

    return judge


def with_broken(v: Verdict) -> CodeVerdict:
    """A code verdict: the settings broken per turn (None where no program was observed) and
    the sandbox beside the verdict's fields."""
    return CodeVerdict(**v, broken=[None if a["spec"] is None else broken(a["spec"])
                                    for a in v["answers"]], sandbox=sandbox.sandbox_kind())


def play_code_verdict(scenario: Scenario, settings: Settings, chat: Chat, max_tokens: int,
                      observe: Observe = extract) -> CodeVerdict:
    """One code scenario played through ``chat``, each program observed then judged, scored:
    its verdict (``butterfly run --track code`` + ``butterfly score``)."""
    return with_broken(play_verdict(scenario, settings, chat, max_tokens,
                                    judge=judge_with(scenario, observe)))


def code_figures(verdicts: Sequence[CodeVerdict]) -> CodeScore:
    """The code track's own figures over the notebook's conversations, as ``butterfly score``
    counts them (broken settings per observed turn)."""
    return figures([b for v in verdicts for b in v["broken"] if b is not None],
                   (v["sandbox"] for v in verdicts))


def code_text(verdicts: Sequence[CodeVerdict]) -> str:
    """The code track's line the notebook prints under its headline, worded as ``score``'s."""
    return figures_line(code_figures(verdicts))
