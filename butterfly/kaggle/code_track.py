"""The code track in the Kaggle notebook (contract section 7, docs/kaggle.md): the code
conversation played through kaggle-benchmarks, each answer's program observed in the fallback
sandbox, and scored as ``butterfly run --track code`` + ``butterfly score`` score it.

Inlined into the notebook beside :mod:`butterfly.kaggle.runner`, so it may import only
``core``, the code modules the notebook inlines (``code.catalogue``, ``program``,
``conversation``, ``probes``, ``sandbox``, ``runner``, ``extract``, ``judge``) and ``oracle``.
Nothing is rewritten here: the messages are ``code.conversation``'s, the program is taken by
``program_of``, observed by ``code.extract`` and judged by ``code.judge`` (the CLI's own
functions), and the verdict is ``core.metrics.score_scenario``'s, as in ``butterfly score``.

Model-written code never runs in the notebook's process: ``code.extract`` runs each program in
a child process (``code.sandbox``). Kaggle has no bubblewrap, so :func:`use_fallback_sandbox`
forces the documented fallback (resource limits, a clean environment, an audit hook).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Final

from butterfly.code import sandbox
from butterfly.code.conversation import SYSTEM, added_messages, code_spec, program_of
from butterfly.code.extract import extract
from butterfly.code.judge import broken, figures, figures_line, judged
from butterfly.core.metrics import score_scenario
from butterfly.core.prompts import Message
from butterfly.core.results import CodeScore
from butterfly.kaggle.runner import (
    Answer,
    AnswerRow,
    Verdict,
    call_with_retries,
    play,
    truncated,
    verdict_of,
)
from oracle import Scenario, replay

TRACKS: Final = ("spec", "code")
Observe = Callable[[str, Mapping[str, str]], dict[str, str]]
"""(program, expected code spec) -> observed code spec: ``code.extract.extract``."""


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


def system_text() -> str:
    """The code track's system message, exactly as ``butterfly run --track code`` sends it."""
    return SYSTEM


def user_text(scenario: Scenario, turn: int) -> str:
    """The user's message of ``turn`` (1-based): the initial program and the first edit, then
    the spec track's words; exactly as the CLI sends it."""
    return added_messages(scenario, turn, None if turn == 1 else "")[-1]["content"]


def messages_for(scenario: Scenario, turn: int, answers: Sequence[str]) -> list[Message]:
    """Every message the CLI sends for ``turn`` after these earlier answers (chat mode)."""
    out: list[Message] = []
    for t in range(1, turn + 1):
        out += added_messages(scenario, t, answers[t - 2] if t > 1 else None)
    return out


def play_code(
    scenario: Scenario,
    say: Callable[[str], object],
    respond: Callable[[], Answer],
    *,
    retries: Callable[[Callable[[], Answer]], Answer] = call_with_retries,
) -> list[Answer]:
    """One code conversation (the system message already in the chat): the runner's loop,
    with the code track's user messages."""
    return play(scenario, say, respond, retries=retries, text_of=user_text)


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


def _row(turn: int, answer: Answer, max_tokens: int, want: dict[str, str],
         observe: Observe) -> tuple[AnswerRow, int | None]:
    got = program_of(answer.text, truncated(answer, max_tokens))
    spec = None
    if got.program is not None:
        spec = judged(observe(got.program, code_spec(want)), want)
    row = AnswerRow(turn=turn, raw=answer.text, output_tokens=answer.output_tokens, spec=spec,
                    abstention=got.reason)
    return row, None if spec is None else broken(spec)


def code_verdict(scenario: Scenario, answers: Sequence[Answer], max_tokens: int,
                 observe: Observe = extract) -> CodeVerdict:
    """Observe, judge and score one complete code conversation with the CLI's functions."""
    oracle = replay(scenario)
    rows = [_row(t, a, max_tokens, oracle[t], observe) for t, a in enumerate(answers, 1)]
    score = score_scenario(scenario, [r["spec"] for r, _ in rows], oracle)
    return CodeVerdict(**verdict_of(score, [r for r, _ in rows]), broken=[b for _, b in rows],
                       sandbox=sandbox.sandbox_kind())


def code_figures(verdicts: Sequence[CodeVerdict]) -> CodeScore:
    """The code track's own figures over the notebook's conversations, as ``butterfly score``
    counts them (broken settings per observed turn)."""
    return figures([b for v in verdicts for b in v["broken"] if b is not None],
                   (v["sandbox"] for v in verdicts))


def code_text(verdicts: Sequence[CodeVerdict]) -> str:
    """The code track's line the notebook prints under its headline, worded as ``score``'s."""
    return figures_line(code_figures(verdicts))
