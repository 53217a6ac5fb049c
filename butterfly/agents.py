"""Built-in scripted agents: deterministic answerers that plug into the same seam as models.

Each replays the scenario its own way with the oracle's engine (:class:`oracle.Rules`) and
answers the spec as JSON. They double as checks of the metrics: each has a known score profile.

| name | behaviour |
|---|---|
| ``script/oracle`` | the exact answer every turn |
| ``script/noop`` | always restates the initial spec (trivial baseline) |
| ``script/last-edit`` | every set and drop stays in effect; undo and redo are ignored (baseline) |
| ``script/lifo`` | treats undo-earliest as undo-last |
| ``script/no-coupling`` | ignores the coupling rules |
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Final

from butterfly.errors import UserError
from butterfly.provider import Request, Response
from oracle import Rules, Scenario, replay

SpecFn = Callable[[Scenario], list[dict[str, str]]]

_RULES: Final[dict[str, Rules | None]] = {
    "oracle": Rules(),
    "noop": None,
    "last-edit": Rules(undo=False, guards=False),
    "lifo": Rules(earliest_as_last=True, guards=False),
    "no-coupling": Rules(couplings=False, guards=False),
}
AGENTS: Final = tuple(_RULES)


def agent_specs(name: str, scenario: Scenario) -> list[dict[str, str]]:
    """The specs agent ``name`` answers after every turn (index 0 = initial)."""
    if name not in _RULES:
        raise UserError(f"unknown scripted agent script/{name} (known: "
                        f"{', '.join('script/' + a for a in AGENTS)})")
    rules = _RULES[name]
    if rules is None:
        return [dict(scenario.initial) for _ in range(len(scenario.turns) + 1)]
    return replay(scenario, rules)


class ScriptedProvider:
    """Answers as agent ``name`` for the scenario named in the request's metadata."""

    cacheable = False

    def __init__(self, name: str, scenarios: Mapping[str, Scenario]) -> None:
        if name not in _RULES:
            agent_specs(name, next(iter(scenarios.values())))  # raises the clear error
        self.name = name
        self._scenarios = scenarios
        self._answers: dict[str, list[str]] = {}

    async def __call__(self, request: Request, timeout: float) -> Response:
        sid = str(request.meta["scenario"])
        turn = int(request.meta["turn"])
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
