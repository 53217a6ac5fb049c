"""The scripted agents of the code track (contract section 7): each answers a program (pure).

- ``script/oracle``: the reference program for the oracle's spec;
- ``script/noop``: the initial program, unchanged (the no-op baseline);
- ``script/last-edit``: the program for the last-edit agent's spec (undo and redo ignored);
- ``script/refactor``: the oracle's program rewritten without changing behaviour
  (``rewrite.refactor``): it must score 100%;
- ``script/collateral``: the oracle's program with one setting no turn targets also changed:
  its change radius is exactly that setting.

The spec-track agents that answer by the request's seed (``noisy``, ``drift``), the recency
agent (``window:k=K``) and those that misread the rules (``lifo``, ``no-coupling``) answer their
spec's reference program too.
"""

from __future__ import annotations

from typing import Final

from butterfly.code.conversation import answer_text, code_spec
from butterfly.code.program import render
from butterfly.code.rewrite import refactor
from butterfly.core.agents import agent_specs
from butterfly.core.code_catalogue import DOMAINS, KEYS, apply_couplings, is_valid
from oracle import Scenario, replay, targeted

CODE_AGENTS: Final = ("oracle", "noop", "last-edit", "lifo", "no-coupling", "refactor",
                      "collateral")

COLLATERAL_KEYS: Final = ("date_format", "line_endings", "compression", "deduplicate",
                          "on_error", "sort_order", "max_rows")
"""Settings ``script/collateral`` may change: observable whatever the others hold, in no
coupling. The first one no turn of the scenario targets is changed, to the next value of its
domain; a scenario that targets all seven gets the oracle's answers."""


def collateral_change(scenario: Scenario) -> tuple[str, str] | None:
    """The setting ``script/collateral`` changes in ``scenario`` and its value, or None."""
    hit = targeted(scenario)
    for key in COLLATERAL_KEYS:
        if key not in hit:
            domain = DOMAINS[key]
            now = scenario.initial[key]
            return key, domain[(domain.index(now) + 1) % len(domain)]
    return None


def code_answers(name: str, scenario: Scenario) -> list[str]:
    """Agent ``name``'s answer after every turn (index 0: the initial program's)."""
    if name == "refactor":
        specs = [code_spec(s) for s in replay(scenario)]
        return [answer_text(refactor(render(s), s)) for s in specs]
    if name == "collateral":
        specs = [code_spec(s) for s in replay(scenario)]
        change = collateral_change(scenario)
        if change is not None:
            specs = [specs[0]] + [_changed(s, *change) for s in specs[1:]]
        return [answer_text(render(s)) for s in specs]
    return [answer_text(render(code_spec(s))) for s in agent_specs(name, scenario)]


def _changed(spec: dict[str, str], key: str, value: str) -> dict[str, str]:
    out = apply_couplings({**spec, key: value})
    if not is_valid(out) or set(out) != set(KEYS):
        raise ValueError(f"collateral: {key}={value} breaks a coupling")
    return out
