"""The scripted agents as a provider: the same seam as a model, answered without a network."""

from __future__ import annotations

import json
from collections.abc import Mapping

from butterfly.core.agents import (
    AGENTS,
    AgentError,
    agent_specs,
    drift_p,
    drift_spec,
    noisy_p,
    noisy_spec,
)
from butterfly.errors import UserError
from butterfly.models.provider import Request, Response
from oracle import Scenario, replay

__all__ = ["AGENTS", "ScriptedProvider"]


class ScriptedProvider:
    """Answers as agent ``name`` for the scenario named in the request's metadata."""

    cacheable = False

    def __init__(self, name: str, scenarios: Mapping[str, Scenario]) -> None:
        try:
            self.noisy = noisy_p(name)
            self.drift = drift_p(name)
            if name not in AGENTS and self.noisy is None and self.drift is None:
                agent_specs(name, next(iter(scenarios.values())))  # raises the clear error
        except AgentError as e:
            raise UserError(str(e)) from None
        self.name = name
        self._scenarios = scenarios
        self._answers: dict[str, list[str]] = {}
        self._oracles: dict[str, list[dict[str, str]]] = {}

    async def __call__(self, request: Request, timeout: float) -> Response:
        sid = str(request.meta["scenario"])
        turn = int(request.meta["turn"])
        if self.noisy is not None or self.drift is not None:
            s = self._scenarios[sid]
            oracle = self._oracles.get(sid)
            if oracle is None:
                oracle = self._oracles[sid] = replay(s)
            if self.noisy is not None:
                spec = noisy_spec(s, turn, request.seed, self.noisy, oracle)
            else:
                spec = drift_spec(s, turn, request.seed, self.drift or 0.0, oracle)
            text = json.dumps(spec)
            return Response(text=text, finish_reason="stop", prompt_tokens=0,
                            completion_tokens=len(text) // 4)
        answers = self._answers.get(sid)
        if answers is None:
            specs = agent_specs(self.name, self._scenarios[sid])
            answers = [json.dumps(s) for s in specs]
            self._answers[sid] = answers
        text = answers[turn]
        return Response(text=text, finish_reason="stop", prompt_tokens=0,
                        completion_tokens=len(text) // 4)

    async def aclose(self) -> None:
        return None
