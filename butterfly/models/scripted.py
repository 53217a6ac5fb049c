"""The scripted agents as a provider: the same seam as a model, answered without a network."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from butterfly.code.agents import CODE_AGENTS, code_answers
from butterfly.core.agents import (
    AGENTS,
    BUDGET_AGENT,
    AgentError,
    agent_specs,
    budget_drift_p,
    budget_spec,
    drift_p,
    drift_spec,
    noisy_p,
    noisy_spec,
    window_k,
)
from butterfly.core.wire import Request, Response
from butterfly.errors import UserError
from oracle import Scenario, replay
from oracle.depth import window_spec

HELD: Final = 1024
"""Scenarios whose oracle replay (or fixed answers) the provider keeps, the most recently asked:
conversations are played in suite order, so a run's memory does not grow with its suite."""


@dataclass(frozen=True)
class Agents:
    """The scripted agents of one track: the names it plays, and each one's answers."""

    refusal: Callable[[str], str | None]
    """Why agent NAME does not play this track (one line), or None."""
    answers: Callable[[str, Scenario], list[str]]
    """Agent NAME's answer after every turn of a scenario (index 0: the initial spec's)."""
    per_request: bool = False
    """The recency agent answers each request as it comes (a long chain asked at chosen turns
    replays K turns an ask, never the whole chain)."""


def _spec_refusal(name: str) -> str | None:
    if name in CODE_AGENTS and name not in AGENTS:
        return (f"script/{name} answers programs: it plays the code track (--track code, or a "
                "suite whose manifest says track code)")
    if (name not in AGENTS and noisy_p(name) is None and drift_p(name) is None
            and window_k(name) is None and name != BUDGET_AGENT):
        return (f"unknown scripted agent script/{name} (known: "
                f"{', '.join('script/' + a for a in AGENTS)}, script/noisy:p=P, "
                "script/drift:p=P, script/window:k=K, script/budget)")
    return None


def _code_refusal(name: str) -> str | None:
    if name not in CODE_AGENTS and window_k(name) is None:
        return (f"unknown scripted agent script/{name} for the code track (known: "
                f"{', '.join('script/' + a for a in CODE_AGENTS)}, script/window:k=K)")
    return None


def _spec_answers(name: str, scenario: Scenario) -> list[str]:
    return [json.dumps(s) for s in agent_specs(name, scenario)]


SCRIPTED: Final[dict[str, Agents]] = {
    "spec": Agents(_spec_refusal, _spec_answers, per_request=True),
    "code": Agents(_code_refusal, code_answers),
}
"""The scripted agents of each track, by the track's name (``butterfly.engine.tracks``)."""


def agents_of(track: str) -> Agents:
    """The scripted agents of ``track``; a track without any is one clear line."""
    if track not in SCRIPTED:
        raise UserError(f"the {track} track has no scripted agents (script/NAME plays "
                        f"{', '.join(SCRIPTED)})")
    return SCRIPTED[track]


def check_agent(name: str, track: str = "spec") -> None:
    """Refuse an unknown agent name or a malformed ``:p=P`` (one clear line)."""
    try:
        window_k(name)
        refused = agents_of(track).refusal(name)
    except AgentError as e:
        raise UserError(str(e)) from None
    if refused is not None:
        raise UserError(refused)


class ScriptedProvider:
    """Answers as agent ``name`` for the scenario named in the request's metadata."""

    def __init__(self, name: str, scenarios: Mapping[str, Scenario],
                 track: str = "spec") -> None:
        check_agent(name, track)
        self.noisy = noisy_p(name)
        self.drift = drift_p(name)
        self.window = window_k(name)
        self.agents = agents_of(track)
        self.name = name
        self._scenarios = scenarios
        self._oracle = lru_cache(maxsize=HELD)(lambda sid: replay(scenarios[sid]))
        answers = self.agents.answers
        self._answers = lru_cache(maxsize=HELD)(lambda sid: answers(name, scenarios[sid]))

    async def __call__(self, request: Request, timeout: float) -> Response:
        return Response(text=self._text(request), finish_reason="stop")  # no tokens generated

    def _text(self, request: Request) -> str:
        """The agent's answer to ``request`` (the scenario and turn its metadata names)."""
        sid = str(request.meta["scenario"])
        turn = int(request.meta["turn"])
        s = self._scenarios[sid]
        if self.noisy is not None:
            return json.dumps(noisy_spec(s, turn, request.seed, self.noisy, self._oracle(sid)))
        if self.drift is not None:
            return json.dumps(drift_spec(s, turn, request.seed, self.drift, self._oracle(sid)))
        if self.name == BUDGET_AGENT and self.agents.per_request:  # accuracy by the budget
            return json.dumps(budget_spec(s, turn, request.seed, _budget_p(request),
                                          self._oracle(sid)))
        if self.window is not None and self.agents.per_request:  # an ask replays K turns
            return json.dumps(window_spec(s, turn, self.window) if turn else s.initial)
        return self._answers(sid)[turn]

    async def aclose(self) -> None:
        return None


def _budget_p(request: Request) -> float:
    """``script/budget``'s drift probability for this request (the budget it carries)."""
    extra = request.extra
    thinking = extra.get("thinking")
    nested = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    tokens = next((v for v in (extra.get("thinking_budget"), extra.get("budget_tokens"), nested)
                   if v is not None), None)
    try:
        return budget_drift_p(extra.get("reasoning_effort"), tokens, request.max_tokens)
    except AgentError as e:
        raise UserError(str(e)) from None
