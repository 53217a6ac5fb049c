"""Built-in scripted agents: what each answers (pure). ``butterfly.models.scripted`` plugs them
into the same seam as models.

Each replays the scenario its own way with the oracle's engine (:class:`oracle.Rules`) and
answers the spec as JSON. They double as checks of the metrics: each has a known score profile.

| name | behaviour |
|---|---|
| ``script/oracle`` | the exact answer every turn |
| ``script/noop`` | always restates the initial spec (trivial baseline) |
| ``script/last-edit`` | every set and drop stays in effect; undo and redo are ignored (baseline) |
| ``script/lifo`` | treats undo-earliest as undo-last |
| ``script/no-coupling`` | ignores the coupling rules |
| ``script/noisy:p=P`` | the oracle's answer, wrong with a per-scenario probability (below) |
| ``script/drift:p=P`` | the oracle's answer until it stops tracking for good (below) |
| ``script/window:k=K`` | reads only the last K user messages (the recency baseline, below) |
| ``script/budget`` | drifts the less, the larger the request's reasoning budget (below) |

``script/noisy:p=P`` (default P = 0.2) gives each scenario its own error rate q, drawn once from
Beta(2P, 2(1-P)) (mean P; most scenarios rarely wrong, a few often) with a generator seeded by
the scenario id and P. Each answer is then, independently with probability q, the oracle's spec
with one setting moved to another value of its domain; the draw is seeded by the scenario, the
turn and the request's seed, so repeats and self-consistency samples (other seeds) differ and
every answer is reproducible. It is the raw material of the statistics calibration and the
self-consistency tests.

``script/drift:p=P`` (default P = 0.05; contract section 4) validates the horizon metric: before
each turn t >= 1, with probability P, it stops tracking for good and from then on repeats its
previous answer unchanged (so it answers o_(s-1) from its stopping turn s on). The draw for turn
t is seeded by the request's seed, the scenario and t, so a conversation stops at the same turn
whenever it is replayed with the same seed, and repeats (other seeds) stop elsewhere. Its exact
expected final match on a scenario of n turns is (1-P)^n + sum over t of (1-P)^(t-1) P
[o_(t-1) == o_n] (:func:`drift_expected_final_match`).

``script/window:k=K`` (contract section 8, the recency baseline) answers turn t from the initial
spec and the user messages t-K+1..t only, by the oracle's rules; an undo or a redo that finds
nothing in its window changes nothing (``oracle.depth.window_spec``). It matches every turn up to
K, and later ones only while nothing older than K messages shows in the spec: on a suite that
passes the depth guard, its horizon tracks K (docs/ladder.md, "Depth").

``script/budget`` is the test double of a budget sweep (``butterfly sweep``, docs/running.md):
its accuracy depends on the reasoning budget the request carries. It drifts as ``script/drift``
does, with P by :func:`budget_drift_p`: the request's ``reasoning_effort`` (-M; none 0.4, minimal
0.3, low 0.2, medium 0.05, high 0), else its ``thinking_budget`` or ``budget_tokens`` (-M, also
nested in ``thinking``), else its ``max_tokens``: P = 16 / (16 + B) for a budget of B tokens.
Its stopping turn is drawn against one uniform per (scenario, turn, seed) whatever P, so a larger
budget never stops earlier: final match rises with the budget in every conversation, not only
on average.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Final

from oracle import SETTINGS, Rules, Scenario, replay
from oracle.depth import window_spec, window_specs


class AgentError(ValueError):
    """An unknown agent name or a malformed argument (the CLI shows it as a user error)."""

_RULES: Final[dict[str, Rules | None]] = {
    "oracle": Rules(),
    "noop": None,
    "last-edit": Rules(undo=False, guards=False),
    "lifo": Rules(earliest_as_last=True, guards=False),
    "no-coupling": Rules(couplings=False, guards=False),
}
AGENTS: Final = tuple(_RULES)
"""The deterministic agents; ``noisy:p=P`` and ``drift:p=P`` answer by the request's seed."""


_DEFAULT_P: Final = {"noisy": 0.2, "drift": 0.05}


def _agent_p(name: str, agent: str) -> float | None:
    """P of ``agent`` / ``agent:p=P``, None when ``name`` is another agent."""
    base, _, arg = name.partition(":")
    if base != agent:
        return None
    if not arg:
        return _DEFAULT_P[agent]
    key, _, value = arg.partition("=")
    try:
        p = float(value)
    except ValueError:
        p = -1.0
    if key != "p" or not 0 <= p <= 1:
        raise AgentError(f"script/{name}: write script/{agent}:p=P with P between 0 and 1")
    return p


def noisy_p(name: str) -> float | None:
    """P of ``noisy`` / ``noisy:p=P``, None for any other agent name."""
    return _agent_p(name, "noisy")


def drift_p(name: str) -> float | None:
    """P of ``drift`` / ``drift:p=P``, None for any other agent name."""
    return _agent_p(name, "drift")


def window_k(name: str) -> int | None:
    """K of ``window:k=K``, None when ``name`` is another agent."""
    base, _, arg = name.partition(":")
    if base != "window":
        return None
    key, _, value = arg.partition("=")
    if key != "k" or not value.isdigit() or int(value) < 1:
        raise AgentError(f"script/{name}: write script/window:k=K with K a whole number >= 1 "
                         "(it reads only the last K user messages)")
    return int(value)


def window_name(k: int) -> str:
    """The agent's (and the baseline's) name for window ``k``."""
    return f"window:k={k}"


def baseline_label(name: str) -> str:
    """A baseline's name as tables print it: the recency agent says what it is."""
    k = window_k(name) if name.startswith("window:") else None
    return name if k is None else f"{name} (reads only the last {k} messages)"


def _seeded(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def noisy_rate(scenario_id: str, p: float) -> float:
    """The scenario's own error rate q ~ Beta(2p, 2(1-p)), seeded by its id and p."""
    if p in (0.0, 1.0):
        return p
    return _seeded("noisy-rate", p, scenario_id).betavariate(2 * p, 2 * (1 - p))


def noisy_spec(scenario: Scenario, turn: int, seed: int | None, p: float,
               oracle: list[dict[str, str]] | None = None) -> dict[str, str]:
    """The noisy agent's answer to ``turn`` when asked with ``seed``."""
    o = (oracle or replay(scenario))[turn]
    rng = _seeded("noisy-answer", p, scenario.id, turn, seed)
    if rng.random() >= noisy_rate(scenario.id, p):
        return dict(o)
    setting = rng.choice(SETTINGS)
    wrong = dict(o)
    wrong[setting.key] = rng.choice([v for v in setting.domain if v != o[setting.key]])
    return wrong


def drift_stop(scenario_id: str, n_turns: int, seed: int | None, p: float) -> int | None:
    """The turn before which the drift agent stops tracking (1..n), or None if it never does."""
    for t in range(1, n_turns + 1):
        if _seeded("drift-stop", p, scenario_id, t, seed).random() < p:
            return t
    return None


def drift_spec(scenario: Scenario, turn: int, seed: int | None, p: float,
               oracle: list[dict[str, str]] | None = None) -> dict[str, str]:
    """The drift agent's answer to ``turn`` when asked with ``seed``: the oracle's spec, or,
    from the turn it stopped tracking on, the answer it gave just before."""
    o = oracle or replay(scenario)
    stop = drift_stop(scenario.id, turn, seed, p)
    return dict(o[turn if stop is None else stop - 1])


BUDGET_EFFORT: Final = {"none": 0.4, "minimal": 0.3, "low": 0.2, "medium": 0.05, "high": 0.0}
"""``script/budget``'s drift probability at each reasoning effort."""
BUDGET_AGENT: Final = "budget"


def budget_drift_p(effort: object, tokens: object, max_tokens: int) -> float:
    """``script/budget``'s P: by the reasoning effort when given, else by the thinking budget
    (tokens) when given, else by ``max_tokens``; an effort it does not know is one clear
    line."""
    if effort is not None:
        if not isinstance(effort, str) or effort not in BUDGET_EFFORT:
            raise AgentError(f"script/budget: reasoning_effort {effort!r} is none of "
                             f"{', '.join(BUDGET_EFFORT)}")
        return BUDGET_EFFORT[effort]
    budget = tokens if tokens is not None else max_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise AgentError(f"script/budget: a thinking budget is a whole number of tokens, "
                         f"got {budget!r}")
    return 16 / (16 + budget)


def budget_spec(scenario: Scenario, turn: int, seed: int | None, p: float,
                oracle: list[dict[str, str]] | None = None) -> dict[str, str]:
    """``script/budget``'s answer: the oracle's spec until the first turn t whose uniform
    draw (by scenario, t and seed; the same for every P) falls below ``p``, then the answer
    before it."""
    o = oracle or replay(scenario)
    for t in range(1, turn + 1):
        if _seeded("budget-stop", scenario.id, t, seed).random() < p:
            return dict(o[t - 1])
    return dict(o[turn])


def drift_expected_final_match(scenario: Scenario, p: float,
                               oracle: list[dict[str, str]] | None = None) -> float:
    """Exact expected final match: (1-p)^n + sum_t (1-p)^(t-1) p [o_(t-1) == o_n]."""
    o = oracle or replay(scenario)
    n = len(o) - 1
    return (1 - p) ** n + sum(
        (1 - p) ** (t - 1) * p for t in range(1, n + 1) if o[t - 1] == o[n]
    )


def agent_specs_at(name: str, scenario: Scenario, turns: Sequence[int]) -> list[dict[str, str]]:
    """What agent ``name`` answers at ``turns`` (a seed-free agent): for the recency agent only
    those turns are replayed (each costs K turns), for the others one replay of the chain."""
    k = window_k(name)
    if k is not None:
        return [window_spec(scenario, t, k) if t else dict(scenario.initial) for t in turns]
    specs = agent_specs(name, scenario)
    return [specs[t] for t in turns]


def agent_specs(name: str, scenario: Scenario) -> list[dict[str, str]]:
    """The specs agent ``name`` answers after every turn (index 0 = initial)."""
    if noisy_p(name) is not None or drift_p(name) is not None:
        raise ValueError("this agent's answers depend on the seed: use noisy_spec / drift_spec")
    k = window_k(name)
    if k is not None:
        return window_specs(scenario, k)
    if name not in _RULES:
        raise AgentError(f"unknown scripted agent script/{name} (known: "
                        f"{', '.join('script/' + a for a in AGENTS)}, script/noisy:p=P, "
                        "script/drift:p=P, script/window:k=K)")
    rules = _RULES[name]
    if rules is None:
        return [dict(scenario.initial) for _ in range(len(scenario.turns) + 1)]
    return replay(scenario, rules)
