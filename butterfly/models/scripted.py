"""The scripted agents as a provider: the same seam as a model, answered without a network."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Final

from butterfly.code.agents import CODE_AGENTS, code_answers
from butterfly.core.agents import (
    AGENTS,
    AgentError,
    agent_specs,
    drift_p,
    drift_spec,
    noisy_p,
    noisy_spec,
    window_k,
)
from butterfly.core.vocab import Track
from butterfly.errors import UserError
from butterfly.models.provider import Request, Response
from oracle import Scenario, replay
from oracle.depth import window_spec

__all__ = ["AGENTS", "ScriptedProvider", "check_agent"]

HELD: Final = 1024
"""Scenarios whose oracle replay (or fixed answers) the provider keeps, the most recently asked:
conversations are played in suite order, so a run's memory does not grow with its suite."""


def check_agent(name: str, track: Track = "spec") -> None:
    """Refuse an unknown agent name or a malformed ``:p=P`` (one clear line)."""
    try:
        window = window_k(name)
    except AgentError as e:
        raise UserError(str(e)) from None
    if track == "code":
        if name not in CODE_AGENTS and window is None:
            raise UserError(f"unknown scripted agent script/{name} for the code track (known: "
                            f"{', '.join('script/' + a for a in CODE_AGENTS)}, "
                            "script/window:k=K)")
        return
    if name in CODE_AGENTS and name not in AGENTS:
        raise UserError(f"script/{name} answers programs: it plays the code track "
                        "(--track code, or a suite whose manifest says track code)")
    try:
        if (name not in AGENTS and noisy_p(name) is None and drift_p(name) is None
                and window is None):
            raise AgentError(f"unknown scripted agent script/{name} (known: "
                             f"{', '.join('script/' + a for a in AGENTS)}, script/noisy:p=P, "
                             "script/drift:p=P, script/window:k=K)")
    except AgentError as e:
        raise UserError(str(e)) from None


class ScriptedProvider:
    """Answers as agent ``name`` for the scenario named in the request's metadata."""

    cacheable = False

    def __init__(self, name: str, scenarios: Mapping[str, Scenario],
                 track: Track = "spec") -> None:
        check_agent(name, track)
        self.noisy = noisy_p(name)
        self.drift = drift_p(name)
        self.window = window_k(name)
        self.track = track
        self.name = name
        self._scenarios = scenarios
        self._oracle = lru_cache(maxsize=HELD)(lambda sid: replay(scenarios[sid]))
        self._answers = lru_cache(maxsize=HELD)(
            (lambda sid: code_answers(name, scenarios[sid])) if track == "code" else
            (lambda sid: [json.dumps(s) for s in agent_specs(name, scenarios[sid])]))

    async def __call__(self, request: Request, timeout: float) -> Response:
        sid = str(request.meta["scenario"])
        turn = int(request.meta["turn"])
        if self.noisy is not None or self.drift is not None:
            s = self._scenarios[sid]
            oracle = self._oracle(sid)
            if self.noisy is not None:
                spec = noisy_spec(s, turn, request.seed, self.noisy, oracle)
            else:
                spec = drift_spec(s, turn, request.seed, self.drift or 0.0, oracle)
            text = json.dumps(spec)
            return Response(text=text, finish_reason="stop")
        if self.window is not None and self.track == "spec":  # each asked turn replays K turns
            s = self._scenarios[sid]
            text = json.dumps(window_spec(s, turn, self.window) if turn else s.initial)
            return Response(text=text, finish_reason="stop")
        text = self._answers(sid)[turn]
        return Response(text=text, finish_reason="stop")  # no tokens: nothing is generated

    async def aclose(self) -> None:
        return None
