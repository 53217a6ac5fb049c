"""The tasks: ``inspect eval butterflybench/butterfly_40`` (``butterfly_hard``,
``butterfly_long``, ``butterfly_code``, and ``butterfly_suite`` for any suite file or name).

Each sample is one conversation: a scenario posed under one layout (id ``SCENARIO/LAYOUT``);
inspect's epochs are our repeats (epoch r + 1 is repeat r, seeded ``seed + r``). The parameters
are ``butterfly run``'s flags of the same names, checked by butterfly's own code: ``layouts``
(E, Q, H: one or several, ``-T layouts=E,Q``), ``mode`` (chat, restate), ``ask_at`` (restate
only), ``strategy``, ``samples`` and ``sc_base`` (self-consistency), ``protocol``, ``parse``,
``per_category``, ``limit``, ``seed``, ``temperature``, ``max_tokens``, ``max_answer_chars``;
the code track takes the last six only (as ``butterfly run --track code``). A parameter a task
does not take is refused in one line (inspect would only log a warning and play the
defaults: docs/inspect.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig

from butterfly.core.vocab import DEFAULTS
from butterfly.errors import UserError
from butterflybench import provider
from butterflybench.scorer import butterfly_scorer
from butterflybench.solver import play
from butterflybench.suites import Played, prepare

PROVIDER = provider.ScriptedAPI
"""Registered by importing its module: ``butterfly/script/NAME`` wherever the tasks are
loaded (a task file run by path too)."""
Layouts = str | Sequence[str]
AskAt = str | int | Sequence[int] | None

PARAMS = ("layouts", "mode", "ask_at", "strategy", "samples", "sc_base", "protocol", "parse",
          "per_category", "limit", "seed", "temperature", "max_tokens", "max_answer_chars")
"""The parameters of the spec track's tasks (``butterfly_suite`` takes ``suite`` too)."""
CODE_PARAMS = ("per_category", "limit", "seed", "temperature", "max_tokens", "max_answer_chars")
"""The parameters of ``butterfly_code`` (as ``butterfly run --track code`` takes)."""


class Refused(UserError, PrerequisiteError):
    """A task's refusal of its parameters (one it does not take, or options ``butterfly run``
    refuses): a ``UserError``, and inspect's ``PrerequisiteError``, which inspect's command line
    prints as its message alone, where any other exception prints a traceback."""

    def __init__(self, message: str) -> None:
        UserError.__init__(self, message)
        PrerequisiteError.__init__(self, message)


def refuse_unknown(name: str, unknown: dict[str, Any], known: Sequence[str] = PARAMS) -> None:
    """Refuse the parameters ``unknown`` that task ``name`` does not take, in one line naming
    them, the nearest known name of each, and every known one. inspect itself only logs a
    warning for a parameter no task declares and plays the defaults: a typo (``-T layout=Q``
    for ``layouts``) would play layout E without a word, so each task takes ``**unknown`` and
    refuses here."""
    if not unknown:
        return
    named = []
    for key in sorted(unknown):
        near = difflib.get_close_matches(key, known, n=1)
        named.append(f"{key} (did you mean {near[0]}?)" if near else key)
    plural = "s" if len(unknown) > 1 else ""
    raise Refused(f"{name}: unknown parameter{plural} {', '.join(named)}; it takes "
                  f"{', '.join(known)}")


def samples(played: Played) -> list[Sample]:
    """One sample per scenario and layout, in suite order (scenario by scenario)."""
    return [Sample(id=f"{s.id}/{layout}", input=s.turns[0].text,
                   metadata={"scenario": s.id, "layout": layout, "category": s.category})
            for s in played.scenarios for layout in played.params.layouts]


def butterfly_task(suite: str, **task_args: Any) -> Task:
    """The task of ``suite`` with ``butterfly run``'s options ``task_args``."""
    try:
        played = prepare(suite, **task_args)
    except UserError as e:
        raise Refused(str(e)) from None
    p, path = played.params, str(played.suite_path)
    dumped = p.model_dump(mode="json")
    return Task(
        dataset=samples(played), solver=play(path, dumped),
        scorer=butterfly_scorer(path, dumped),
        config=GenerateConfig(temperature=p.temperature, max_tokens=p.max_tokens),
        metadata=played.metadata())


def _args(given: dict[str, Any], names: Sequence[str] = PARAMS) -> dict[str, Any]:
    """The task's parameters among ``given`` (a task function's arguments)."""
    return {k: given[k] for k in names}


@task
def butterfly_40(layouts: Layouts = "E", mode: str = "chat", ask_at: AskAt = None,
                 strategy: str = "zero-shot", samples: int | None = None,
                 sc_base: str | None = None, protocol: str | None = None,
                 parse: str = DEFAULTS.parse, per_category: int | None = None,
                 limit: int | None = None, seed: int = DEFAULTS.seed,
                 temperature: float = DEFAULTS.temperature, max_tokens: int | None = None,
                 max_answer_chars: int = DEFAULTS.max_answer_chars, **unknown: Any) -> Task:
    """butterfly-40: the default suite, 40 scenarios of 1 to 10 turns."""
    refuse_unknown("butterfly_40", unknown)
    return butterfly_task("butterfly-40", **_args(locals()))


@task
def butterfly_hard(layouts: Layouts = "E", mode: str = "chat", ask_at: AskAt = None,
                   strategy: str = "zero-shot", samples: int | None = None,
                   sc_base: str | None = None, protocol: str | None = None,
                   parse: str = DEFAULTS.parse, per_category: int | None = None,
                   limit: int | None = None, seed: int = DEFAULTS.seed,
                   temperature: float = DEFAULTS.temperature, max_tokens: int | None = None,
                   max_answer_chars: int = DEFAULTS.max_answer_chars, **unknown: Any) -> Task:
    """butterfly-hard: 40 scenarios built from the hardest constructions."""
    refuse_unknown("butterfly_hard", unknown)
    return butterfly_task("butterfly-hard", **_args(locals()))


@task
def butterfly_long(layouts: Layouts = "E", mode: str = "chat", ask_at: AskAt = None,
                   strategy: str = "zero-shot", samples: int | None = None,
                   sc_base: str | None = None, protocol: str | None = None,
                   parse: str = DEFAULTS.parse, per_category: int | None = None,
                   limit: int | None = None, seed: int = DEFAULTS.seed,
                   temperature: float = DEFAULTS.temperature, max_tokens: int | None = None,
                   max_answer_chars: int = DEFAULTS.max_answer_chars, **unknown: Any) -> Task:
    """butterfly-long: chains of 5, 10, 20, 40 and 80 turns."""
    refuse_unknown("butterfly_long", unknown)
    return butterfly_task("butterfly-long", **_args(locals()))


@task
def butterfly_code(per_category: int | None = None, limit: int | None = None,
                   seed: int = DEFAULTS.seed, temperature: float = DEFAULTS.temperature,
                   max_tokens: int | None = None,
                   max_answer_chars: int = DEFAULTS.max_answer_chars, **unknown: Any) -> Task:
    """butterfly-code: the code track (chat mode, layout E, zero-shot): the model keeps a
    program up to date; each answer's program is run in the sandbox and observed when it is
    scored (docs/code-track.md)."""
    refuse_unknown("butterfly_code", unknown, CODE_PARAMS)
    return butterfly_task("butterfly-code", **_args(locals(), CODE_PARAMS))


@task
def butterfly_suite(suite: str, layouts: Layouts = "E", mode: str = "chat",
                    ask_at: AskAt = None, strategy: str = "zero-shot",
                    samples: int | None = None, sc_base: str | None = None,
                    protocol: str | None = None, parse: str = DEFAULTS.parse,
                    per_category: int | None = None, limit: int | None = None,
                    seed: int = DEFAULTS.seed, temperature: float = DEFAULTS.temperature,
                    max_tokens: int | None = None,
                    max_answer_chars: int = DEFAULTS.max_answer_chars, **unknown: Any) -> Task:
    """Any suite: a file, or the name of one under scenarios/ (``-T suite=butterfly-horizon``
    asks at the suite's default ask points in restate mode)."""
    refuse_unknown("butterfly_suite", unknown, ("suite", *PARAMS))
    return butterfly_task(suite, **_args(locals()))
