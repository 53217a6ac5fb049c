"""``butterfly sequential``: draw answers of two models pair by pair per scenario and stop each
scenario once it is decided, looks fine (``--stop-fine``) or reaches the cap.

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
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from butterfly.analysis import regress
from butterfly.analysis.results import SequentialResult
from butterfly.core.printable import printable
from butterfly.core.turns import CallKey
from butterfly.core.vocab import SEQUENTIAL_METHODS, ErrorClass, RunStatus
from butterfly.errors import BudgetStopped, RunFailed, UserError
from butterfly.models.client import ModelClient, OnWait
from butterfly.models.provider import redact
from butterfly.models.registry import (
    check_cache,
    check_priced,
    open_client,
    router_config,
    transport,
)
from butterfly.models.router import RouterConfig
from butterfly.runs.lock import writer_lock
from butterfly.runs.options import check_model, check_routed
from butterfly.runs.play import (
    Budget,
    Conversation,
    Player,
    Progress,
    in_workers,
    play_conversation,
    wait_note,
)
from butterfly.runs.records import RunParams
from butterfly.runs.scope import select
from butterfly.runs.store import CALLS, CallLog, close_run, note_transport, open_run
from butterfly.runs.sweep import router_ref
from butterfly.suite.load import load_suite, resolve_suite
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


def _check_options(method: str, cap: int, q: float, out_a: Path, out_b: Path) -> None:
    if method not in SEQUENTIAL_METHODS:
        raise UserError("sequential --method: ebh or gs")
    if cap < 1:
        raise UserError("--cap must be at least 1")
    if not 0 < q < 1:
        raise UserError("--q must be between 0 and 1")
    if out_a.resolve() == out_b.resolve():
        raise UserError("--out-a and --out-b must differ")


def _design(method: str, m: int, q: float, cap: int,
            stop_fine: bool) -> regress.Sequential | regress.GroupSequential:
    if method == "ebh":
        return regress.Sequential((m,), q, cap, stop_fine=stop_fine)
    return regress.GroupSequential((m,), q, cap)


def _open_sides(pairs: Sequence[tuple[str, Path]], providers: dict[str, ModelClient],
                suite_path: Path, scenarios: Sequence[Scenario], params: RunParams,
                configs: dict[str, RouterConfig], api_base: str | None
                ) -> tuple[list[Side], Budget]:
    """Both run directories opened (created or resumed), and one budget for both models: what
    the comparison spends."""
    states = [open_run(out, model, suite_path, scenarios, _side_params(params, configs, model))
              for model, out in pairs]
    budget = Budget.of(params.max_cost, [v for st in states for v in st.done.values()],
                       cautious=True)
    finals = {s.id: replay(s)[-1] for s in scenarios}
    progress = Progress(total=0)
    sides = []
    for (model, out), state in zip(pairs, states, strict=True):
        note_transport(out, state, transport(model, api_base, params.via,
                                             routed=model in configs))
        player = Player(providers[model], state, CallLog(out / CALLS, state.chain), progress,
                        budget)
        sides.append(Side(model, out, player, finals))
    return sides, budget


def _routers(router: str | Path | None, models: Sequence[str],
             api_base: str | None) -> dict[str, RouterConfig]:
    """Each model's group of the router file, checked before anything is created."""
    if router is None:
        return {}
    check_routed(api_base)
    return {m: router_config(router, m) for m in models}


def _side_params(params: RunParams, configs: dict[str, RouterConfig], model: str
                 ) -> RunParams:
    """One side's parameters: the run's, with the router group it is served by."""
    if model not in configs:
        return params
    return params.model_copy(update={"router": router_ref(configs[model])})


def _announce(model: str) -> OnWait:
    """Say on stderr that ``model``'s calls wait before a retry ("rate-limited, waiting N s")."""
    def say(seconds: float, kind: ErrorClass) -> None:
        print(f"{printable(model)}: {wait_note(seconds, kind)}", file=sys.stderr, flush=True)
    return say


def _budget_line(budget: Budget) -> str:
    why = ("a call came back without a price (no token counts), so --max-cost cannot be "
           "enforced: run without --max-cost" if budget.unpriced else
           f"spent ${budget.spent:.4f} of --max-cost ${budget.limit:g}; the next call could "
           "exceed it")
    return (f"sequential: stopped by the budget ({why}); the answers so far are kept: re-run the "
            "same command with a larger --max-cost to continue")


def _close(side: Side, rounds: int, status: RunStatus, failure: str | None) -> None:
    side.player.log.close()
    state = side.player.state
    close_run(side.out, state, status, failure=failure,
              params=state.manifest.params.model_copy(update={"repeats": max(1, rounds)}))


def run_sequential(*, model_a: str, model_b: str, suite: str, out_a: Path, out_b: Path,
                   method: str, cap: int, q: float, stop_fine: bool, params: Any,
                   api_base: str | None = None, cache_path: str | None = None,
                   router: str | Path | None = None, quiet: bool = False) -> SequentialResult:
    """Run the sequential comparison and return its result object. ``router``: a litellm
    Router file in which each model names a group of deployments (docs/scale.md)."""
    _check_options(method, cap, q, out_a, out_b)
    configs = _routers(router, (model_a, model_b), api_base)
    if not configs:
        check_model(model_a)
        check_model(model_b)
    for model in (model_a, model_b):
        if params.max_cost is not None:
            check_priced(model, api_base, params.via, configs.get(model))
    suite_path = resolve_suite(suite)
    scenarios = select(load_suite(suite_path), params)
    for model in (model_a, model_b):  # last: it may create the cache
        check_cache(model, cache_path, routed=model in configs)
    m = len(scenarios)
    design = _design(method, m, q, cap, stop_fine)
    run_params = params.model_copy(update={"repeats": cap, "layouts": ("E",)})
    pairs = ((model_a, out_a), (model_b, out_b))
    with contextlib.ExitStack() as stack:
        for out in (out_a, out_b):  # one writer per run directory: both locked, or neither
            stack.enter_context(writer_lock(out))
        providers: dict[str, ModelClient] = {}
        for model in (model_a, model_b):
            if model not in providers:  # one embedded server when both sides are one model
                providers[model] = open_client(
                    stack, model, scenarios, concurrency=run_params.concurrency,
                    retries=run_params.retries, timeout=run_params.timeout, api_base=api_base,
                    cache_path=cache_path, via=run_params.via, router=configs.get(model),
                    max_answer_chars=run_params.max_answer_chars,
                    max_retry_wait=run_params.max_retry_wait)
                if not quiet:
                    providers[model].on_wait = _announce(model)
        sides, budget = _open_sides(pairs, providers, suite_path, scenarios, run_params,
                                    configs, api_base)
        rounds = 0
        status: RunStatus = "complete"
        failure: str | None = None

        async def drive() -> None:
            nonlocal rounds, status
            try:
                for r in range(cap):
                    active = [s for i, s in enumerate(scenarios) if design.active[i]]
                    if not active:
                        break
                    failed = await _round(sides, active, r, run_params.concurrency)
                    rounds = r + 1
                    if budget.stopped:
                        status = "budget"
                        raise BudgetStopped(_budget_line(budget))
                    if failed:
                        status = "incomplete"
                        raise UserError(
                            f"sequential: {len(failed)} conversation(s) of repeat {r} failed "
                            f"after retries (first: {_failure(*failed[0], r)}); answers so far "
                            "are kept: re-run the same command to resume")
                    a = np.array([design.active[i] and _final_pass(sides[0], s, r)
                                  for i, s in enumerate(scenarios)])
                    b = np.array([design.active[i] and _final_pass(sides[1], s, r)
                                  for i, s in enumerate(scenarios)])
                    design.update(a, b)
                    if not quiet:
                        print(f"round {r + 1}: {len(active)} scenario(s) sampled, "
                              f"{int(design.decided.sum())} decided, "
                              f"{int(design.fine.sum())} fine, "
                              f"{int(2 * design.pairs.sum())} answers", file=sys.stderr,
                              flush=True)
            finally:
                for c in providers.values():
                    await c.aclose()

        try:
            asyncio.run(drive())
        except UserError as e:
            if status != "complete":  # our own "repeat r failed" line
                raise
            status, failure = "failed", str(e)  # the provider refused a call
            raise RunFailed(f"sequential failed: {failure}; fix the cause and re-run the same "
                            "command to resume") from None
        finally:
            for side in sides:
                _close(side, rounds, status, failure)
    return _result(design, scenarios, rounds, method=method, q=q, cap=cap,
                   stop_fine=stop_fine, model_a=model_a, model_b=model_b, out_a=out_a,
                   out_b=out_b)


def _result(design: regress.Sequential | regress.GroupSequential,
            scenarios: Sequence[Scenario], rounds: int, *, method: str, q: float, cap: int,
            stop_fine: bool, model_a: str, model_b: str, out_a: Path, out_b: Path
            ) -> SequentialResult:
    """The comparison's result: the design's decision per scenario, and the answers spent."""
    m = len(scenarios)
    d = design.decision()
    stat = "e_value" if method == "ebh" else "p_value"
    return SequentialResult.model_validate({
        "method": method, "q": q, "cap": cap, "stop_fine": stop_fine if method == "ebh" else None,
        "model_a": model_a, "model_b": model_b, "run_a": str(out_a), "run_b": str(out_b),
        "n_scenarios": m,
        "regressed": [s.id for i, s in enumerate(scenarios) if d.regressed[i]],
        "answers_used": int(d.answers.sum()),
        "answers_cap": 2 * cap * m,
        "rounds": rounds,
        "scenarios": [
            {"id": s.id, "pairs": int(d.pairs[i]), "a_pass": int(design.a_pass[i]),
             "b_pass": int(design.b_pass[i]), stat: float(d.stat[i]),
             "stopped": ("decided" if design.decided[i] else "fine" if design.fine[i]
                         else "cap" if d.pairs[i] >= cap else "open"),
             "verdict": "REGRESSED" if d.regressed[i] else "-"}
            for i, s in enumerate(scenarios)
        ],
    })


def render(result: SequentialResult) -> str:
    r = result.model_dump()
    stat = "e_value" if r["method"] == "ebh" else "p_value"
    lines = [f"A: {r['model_a']} ({r['run_a']})", f"B: {r['model_b']} ({r['run_b']})",
             f"{r['n_scenarios']} scenarios, method {r['method']}, cap {r['cap']} pairs, "
             f"q = {r['q']}" + (", stop-fine" if r["stop_fine"] else ""),
             f"REGRESSED ({len(r['regressed'])}):"]
    for row in r["scenarios"]:
        if row["verdict"] == "REGRESSED":
            lines.append(f"  {row['id']:32s} A {row['a_pass']}/{row['pairs']}  "
                         f"B {row['b_pass']}/{row['pairs']}  {stat[0]} = {row[stat]:.3g}")
    stops: dict[str, int] = {}
    for row in r["scenarios"]:
        stops[row["stopped"]] = stops.get(row["stopped"], 0) + 1
    lines.append("stopped: " + ", ".join(f"{k} {v}" for k, v in sorted(stops.items())))
    lines.append(f"answers used: {r['answers_used']} (a fixed design at the cap: "
                 f"{r['answers_cap']})")
    return "\n".join(lines)
