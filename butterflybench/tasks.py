"""The tasks: ``inspect eval butterflybench/butterfly_40`` (``butterfly_hard``,
``butterfly_long``, ``butterfly_code``, and ``butterfly_suite`` for any suite file or name).

Each sample is one conversation: a scenario posed under one layout (id ``SCENARIO/LAYOUT``);
inspect's epochs are our repeats (epoch r + 1 is repeat r, seeded ``seed + r``). The parameters
are ``butterfly run``'s flags of the same names, checked by butterfly's own code: ``layouts``
(E, Q, H: one or several, ``-T layouts=E,Q``), ``mode`` (chat, restate), ``ask_at`` (restate
only), ``strategy``, ``protocol``, ``parse``, ``per_category``, ``limit``, ``seed``,
``temperature``, ``max_tokens``; the code track takes the last five only (as ``butterfly run
--track code``). Strategy self-consistency is refused (docs/inspect.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig

from butterfly.core.vocab import DEFAULTS
from butterflybench import provider
from butterflybench.scorer import butterfly_scorer
from butterflybench.solver import play
from butterflybench.suites import Played, prepare

PROVIDER = provider.ScriptedAPI
"""Registered by importing its module: ``butterfly/script/NAME`` wherever the tasks are
loaded (a task file run by path too)."""
Layouts = str | Sequence[str]
AskAt = str | int | Sequence[int] | None


def samples(played: Played) -> list[Sample]:
    """One sample per scenario and layout, in suite order (scenario by scenario)."""
    return [Sample(id=f"{s.id}/{layout}", input=s.turns[0].text,
                   metadata={"scenario": s.id, "layout": layout, "category": s.category})
            for s in played.scenarios for layout in played.params.layouts]


def butterfly_task(suite: str, **task_args: Any) -> Task:
    """The task of ``suite`` with ``butterfly run``'s options ``task_args``."""
    played = prepare(suite, **task_args)
    p, path = played.params, str(played.suite_path)
    dumped = p.model_dump(mode="json")
    return Task(
        dataset=samples(played), solver=play(path, dumped),
        scorer=butterfly_scorer(path, dumped),
        config=GenerateConfig(temperature=p.temperature, max_tokens=p.max_tokens),
        metadata=played.metadata())


def _args(layouts: Layouts, mode: str, ask_at: AskAt, strategy: str, protocol: str | None,
          parse: str, per_category: int | None, limit: int | None, seed: int,
          temperature: float, max_tokens: int | None) -> dict[str, Any]:
    return {"layouts": layouts, "mode": mode, "ask_at": ask_at, "strategy": strategy,
            "protocol": protocol, "parse": parse, "per_category": per_category,
            "limit": limit, "seed": seed, "temperature": temperature, "max_tokens": max_tokens}


@task
def butterfly_40(layouts: Layouts = "E", mode: str = "chat", ask_at: AskAt = None,
                 strategy: str = "zero-shot", protocol: str | None = None,
                 parse: str = DEFAULTS.parse, per_category: int | None = None,
                 limit: int | None = None, seed: int = DEFAULTS.seed,
                 temperature: float = DEFAULTS.temperature,
                 max_tokens: int | None = None) -> Task:
    """butterfly-40: the default suite, 40 scenarios of 1 to 10 turns."""
    return butterfly_task("butterfly-40", **_args(layouts, mode, ask_at, strategy, protocol,
                                                  parse, per_category, limit, seed,
                                                  temperature, max_tokens))


@task
def butterfly_hard(layouts: Layouts = "E", mode: str = "chat", ask_at: AskAt = None,
                   strategy: str = "zero-shot", protocol: str | None = None,
                   parse: str = DEFAULTS.parse, per_category: int | None = None,
                   limit: int | None = None, seed: int = DEFAULTS.seed,
                   temperature: float = DEFAULTS.temperature,
                   max_tokens: int | None = None) -> Task:
    """butterfly-hard: 40 scenarios built from the hardest constructions."""
    return butterfly_task("butterfly-hard", **_args(layouts, mode, ask_at, strategy, protocol,
                                                    parse, per_category, limit, seed,
                                                    temperature, max_tokens))


@task
def butterfly_long(layouts: Layouts = "E", mode: str = "chat", ask_at: AskAt = None,
                   strategy: str = "zero-shot", protocol: str | None = None,
                   parse: str = DEFAULTS.parse, per_category: int | None = None,
                   limit: int | None = None, seed: int = DEFAULTS.seed,
                   temperature: float = DEFAULTS.temperature,
                   max_tokens: int | None = None) -> Task:
    """butterfly-long: chains of 5, 10, 20, 40 and 80 turns."""
    return butterfly_task("butterfly-long", **_args(layouts, mode, ask_at, strategy, protocol,
                                                    parse, per_category, limit, seed,
                                                    temperature, max_tokens))


@task
def butterfly_code(per_category: int | None = None, limit: int | None = None,
                   seed: int = DEFAULTS.seed, temperature: float = DEFAULTS.temperature,
                   max_tokens: int | None = None) -> Task:
    """butterfly-code: the code track (chat mode, layout E, zero-shot): the model keeps a
    program up to date; each answer's program is run in the sandbox and observed when it is
    scored (docs/code-track.md)."""
    return butterfly_task("butterfly-code", per_category=per_category, limit=limit, seed=seed,
                          temperature=temperature, max_tokens=max_tokens)


@task
def butterfly_suite(suite: str, layouts: Layouts = "E", mode: str = "chat",
                    ask_at: AskAt = None, strategy: str = "zero-shot",
                    protocol: str | None = None, parse: str = DEFAULTS.parse,
                    per_category: int | None = None, limit: int | None = None,
                    seed: int = DEFAULTS.seed, temperature: float = DEFAULTS.temperature,
                    max_tokens: int | None = None) -> Task:
    """Any suite: a file, or the name of one under scenarios/ (``-T suite=butterfly-horizon``
    asks at the suite's default ask points in restate mode)."""
    return butterfly_task(suite, **_args(layouts, mode, ask_at, strategy, protocol, parse,
                                         per_category, limit, seed, temperature, max_tokens))
