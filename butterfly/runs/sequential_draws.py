"""Playing ``butterfly sequential``: draw answers of two models pair by pair per scenario,
round by round, until a design (``analysis.sequential_design``) says each scenario is decided, looks
fine (``--stop-fine``) or reached the cap.

Round r plays repeat r (seed + r) of every still-active scenario for model A and for model B,
through the same runner as ``butterfly run``, into two ordinary run directories: every answer is
kept, and re-running the same command replays the recorded answers without calling the models
again (so a stopped session resumes). The design (:class:`butterfly.analysis.regress.Sequential` for
``ebh``, :class:`butterfly.analysis.regress.GroupSequential` for ``gs``) sees one pass/fail pair per
active scenario per round. e-values are those at each scenario's stopping time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from butterfly.core.printable import printable
from butterfly.core.turns import CallKey
from butterfly.core.user_price import UserPrice
from butterfly.core.vocab import RunStatus
from butterfly.core.wire import redact
from butterfly.errors import BudgetStopped, RunFailed, UserError
from butterfly.models.client import ModelClient, OnWait
from butterfly.models.registry import (
    ModelRequest,
    open_client,
    router_config,
    transport,
)
from butterfly.models.router import RouterConfig
from butterfly.runs.budget import Budget
from butterfly.runs.digest import LinkedLog
from butterfly.runs.lock import writer_lock
from butterfly.runs.play import (
    Player,
    Progress,
    in_workers,
    play_conversation,
)
from butterfly.runs.records import RunParams
from butterfly.runs.run_flags import check_routed
from butterfly.runs.scope import Conversation
from butterfly.runs.shards import router_ref
from butterfly.runs.store import CALLS, close_run, note_transport, open_run
from oracle import Scenario, replay


@dataclass
class Side:
    """One model's run directory and player during a sequential comparison."""

    model: str
    out: Path
    player: Player
    finals: dict[str, dict[str, str]]


def _final_pass(side: Side, s: Scenario, repeat: int) -> bool:
    rec = side.player.state.done.get(CallKey(s.id, len(s.turns), "E", repeat, 0))
    return rec is not None and rec.spec == side.finals[s.id]


async def _round(sides: Sequence[Side], scenarios: Sequence[Scenario], repeat: int,
                 concurrency: int) -> list[tuple[Side, str]]:
    """Play repeat ``repeat`` of ``scenarios`` for every side; (side, scenario id) of the
    conversations left incomplete."""
    failed: list[tuple[Side, str]] = []

    async def one(pair: tuple[Side, Scenario]) -> None:
        side, s = pair
        if await play_conversation(Conversation(s, "E", repeat), side.player) is None:
            failed.append((side, s.id))

    await in_workers(((side, s) for side in sides for s in scenarios), concurrency, one)
    return failed


def _failure(side: Side, scenario: str, repeat: int) -> str:
    """A failed conversation, its call and why it failed (secrets redacted, one line)."""
    for view in side.player.state.failed.values():
        if view.scenario == scenario and view.repeat == repeat and view.error is not None:
            why = printable(redact(view.error.message), newlines=False)[:300]
            return f"{side.model}:{scenario} turn {view.turn}: {view.error.kind}: {why}"
    return f"{side.model}:{scenario}"  # no failed call on record: name the conversation


def _open_sides(plan: Plan, providers: dict[str, ModelClient]) -> tuple[list[Side], Budget]:
    """Both run directories opened (created or resumed), and one budget for both models: what
    the comparison spends."""
    pairs = tuple(zip(plan.models, plan.outs, strict=True))
    params, scenarios = plan.params, plan.scenarios
    states = [open_run(out, model, plan.suite_path, scenarios, plan.side_params(model))
              for model, out in pairs]
    budget = Budget.of(params.max_cost, [v for st in states for v in st.done.values()],
                       cautious=True)
    finals = {s.id: replay(s)[-1] for s in scenarios}
    progress = Progress(total=0)
    sides = []
    for (model, out), state in zip(pairs, states, strict=True):
        note_transport(out, state, transport(model, plan.api_base, params.via,
                                             routed=model in plan.configs))
        player = Player(providers[model], state, LinkedLog(out / CALLS, state.chain), progress,
                        budget)
        sides.append(Side(model, out, player, finals))
    return sides, budget


def routers(router: str | Path | None, models: Sequence[str],
             api_base: str | None) -> dict[str, RouterConfig]:
    """Each model's group of the router file, checked before anything is created."""
    if router is None:
        return {}
    check_routed(api_base)
    return {m: router_config(router, m) for m in models}


def _budget_line(budget: Budget) -> str:
    why = (f"the provider's usage of a call cannot be right ({budget.invalid}), so its cost "
           "is unknown and --max-cost cannot be enforced: run without --max-cost"
           if budget.invalid is not None else
           "a call came back without a price (no token counts), so --max-cost cannot be "
           "enforced: run without --max-cost" if budget.unpriced else
           f"spent ${budget.spent:.4f} of --max-cost ${budget.limit:g}; the next call could "
           "exceed it")
    return (f"sequential: stopped by the budget ({why}); the answers so far are kept: re-run the "
            "same command with a larger --max-cost to continue")


def _close(side: Side, rounds: int, status: RunStatus, failure: str | None) -> None:
    if side.player.log is not None:
        side.player.log.close()
    state = side.player.state
    close_run(side.out, state, status, failure=failure,
              params=state.manifest.params.model_copy(update={"repeats": max(1, rounds)}))


class Design(Protocol):
    """What decides a sequential comparison (``analysis.regress.Sequential`` or
    ``GroupSequential``): which scenarios are still drawn, updated with each round's passes."""

    @property
    def active(self) -> np.ndarray: ...

    def update(self, a: np.ndarray, b: np.ndarray) -> None: ...


@dataclass(frozen=True)
class Plan:
    """A sequential comparison to play: the two models and their run directories, the suite,
    the scope, the parameters both runs record (``repeats`` the cap, layout E), where the
    models are served and each model's price (``--price-a``, ``--price-b``; None: litellm's
    offline price map)."""

    models: tuple[str, str]
    outs: tuple[Path, Path]
    suite_path: Path
    scenarios: list[Scenario]
    params: RunParams
    api_base: str | None
    cache_path: str | None
    configs: dict[str, RouterConfig]
    prices: tuple[UserPrice | None, UserPrice | None] = (None, None)

    def request(self, model: str) -> ModelRequest:
        """How one side's model is reached: the server, or the router group serving it."""
        return ModelRequest(model, self.api_base, self.params.via, self.configs.get(model),
                            self.cache_path)

    def side_params(self, model: str) -> RunParams:
        """One side's parameters: the run's, with its price and the router group serving it."""
        price = self.prices[self.models.index(model)]  # one model on both sides: one price
        update: dict[str, object] = {"price": price}
        if model in self.configs:
            update["router"] = router_ref(self.configs[model])
        return self.params.model_copy(update=update)


def _clients(stack: contextlib.ExitStack[bool | None], plan: Plan,
             on_wait: Callable[[str], OnWait] | None) -> dict[str, ModelClient]:
    """One client per model (one embedded server when both sides are one model)."""
    clients: dict[str, ModelClient] = {}
    for model in plan.models:
        if model not in clients:
            clients[model] = open_client(stack, plan.request(model), plan.scenarios,
                                         plan.side_params(model))
            if on_wait is not None:
                clients[model].on_wait = on_wait(model)
    return clients


@dataclass
class Played:
    """How far a sequential comparison got: rounds played and the status reached."""

    rounds: int = 0
    status: RunStatus = "complete"


async def _rounds(plan: Plan, sides: list[Side], budget: Budget, design: Design,
                  played: Played, on_round: Callable[[int, int], None] | None) -> None:
    """Play round after round until no scenario is active or the cap (``played`` kept up to
    date). Raises :class:`BudgetStopped` or (a repeat that failed) :class:`UserError`."""
    scenarios = plan.scenarios
    for r in range(plan.params.repeats):
        active = [s for i, s in enumerate(scenarios) if design.active[i]]
        if not active:
            break
        failed = await _round(sides, active, r, plan.params.concurrency)
        played.rounds = r + 1
        if budget.stopped:
            played.status = "budget"
            raise BudgetStopped(_budget_line(budget))
        if failed:
            played.status = "incomplete"
            raise UserError(
                f"sequential: {len(failed)} conversation(s) of repeat {r} failed after retries "
                f"(first: {_failure(*failed[0], r)}); answers so far are kept: re-run the same "
                "command to resume")
        design.update(*(np.array([design.active[i] and _final_pass(side, s, r)
                                  for i, s in enumerate(scenarios)]) for side in sides))
        if on_round is not None:
            on_round(r, len(active))


def play_sequential(plan: Plan, design: Design, *,
                    on_wait: Callable[[str], OnWait] | None = None,
                    on_round: Callable[[int, int], None] | None = None) -> int:
    """Play ``plan`` into its two run directories (both locked, created or resumed, and closed
    with the status reached) until ``design`` decides; the rounds played. ``on_wait(model)``
    gives each client its "waiting before a retry" callback; ``on_round(r, active)`` is called
    after each round."""
    with contextlib.ExitStack() as stack:
        for out in plan.outs:  # one writer per run directory: both locked, or neither
            stack.enter_context(writer_lock(out))
        clients = _clients(stack, plan, on_wait)
        sides, budget = _open_sides(plan, clients)
        return _drive(plan, sides, budget, design, clients, on_round)


def _drive(plan: Plan, sides: list[Side], budget: Budget, design: Design,
           clients: dict[str, ModelClient], on_round: Callable[[int, int], None] | None) -> int:
    """Run the rounds, close both runs with the status reached, and say why it stopped."""
    played, failure = Played(), None

    async def go() -> None:
        try:
            await _rounds(plan, sides, budget, design, played, on_round)
        finally:
            for c in clients.values():
                await c.aclose()

    try:
        asyncio.run(go())
    except UserError as e:
        if played.status != "complete":  # our own "repeat r failed" line
            raise
        played.status, failure = "failed", str(e)  # the provider refused a call
        raise RunFailed(f"sequential failed: {failure}; fix the cause and re-run the same "
                        "command to resume") from None
    finally:
        for side in sides:
            _close(side, played.rounds, played.status, failure)
    return played.rounds
