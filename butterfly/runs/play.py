"""Play conversations against one model and record every call; resume what is missing.

Re-running the same command with the same ``--out`` resumes: the answers already recorded are
reused (never sent again) and only the missing turns are called. A scenario whose call still
fails after its retries is marked incomplete (a provider error, never a model failure) and the
next run completes it. :func:`play_conversation` is the one loop that plays a conversation;
``butterfly run`` (:func:`run_suite`) and ``butterfly sequential`` both drive it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from butterfly.core.turns import CallKey, Turn
from butterfly.core.vocab import ErrorClass, RunStatus
from butterfly.core.wire import Request
from butterfly.engine.conversation import (
    Ask,
)
from butterfly.engine.conversation import Conversation as Engine
from butterfly.engine.tracks import Parsed
from butterfly.errors import RunFailed, UserError
from butterfly.models.client import ModelClient
from butterfly.models.provider import ContextOverflow
from butterfly.runs.budget import Budget
from butterfly.runs.calls import CallView
from butterfly.runs.digest import START, LinkedLog
from butterfly.runs.integrity import key_of
from butterfly.runs.records import (
    CallError,
    CallRecord,
    InvalidUsage,
    Message,
    RunParams,
    Tokens,
)
from butterfly.runs.scope import Conversation, asked, conversations
from butterfly.runs.store import CALLS, RunState, close_run, now
from oracle import Scenario

T = TypeVar("T")
KEPT = ("raw_chars", "reasoning_content", "finish_reason", "cost_usd", "saved_usd")
"""What a call record keeps of an answer under the answer's own names (its tokens are the
answer's ``NAME_tokens``, field by field)."""


def wait_note(seconds: float, kind: ErrorClass) -> str:
    """What a wait before a retry is called on the progress line."""
    why = "rate-limited" if kind == "rate_limit" else f"retrying after a {kind} error"
    return f"{why}, waiting {seconds:.0f} s"


@dataclass
class Progress:
    """What a progress display is told; the CLI renders it (rich bar or plain lines)."""

    total: int
    done: int = 0
    errors: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.perf_counter)
    on_update: Callable[[Progress], None] | None = None
    note: str = ""
    """What the calls are waiting for now ("rate-limited, waiting 60 s"); cleared by an answer."""

    def waiting(self, seconds: float, kind: ErrorClass) -> None:
        """A call waits ``seconds`` before its retry (the client's ``on_wait``): say so."""
        self.note = wait_note(seconds, kind)
        if self.on_update is not None:
            self.on_update(self)

    def add(self, rec: CallRecord) -> None:
        self.done += 1
        self.note = ""
        if rec.error is not None:
            self.errors += 1
        if not rec.cached:  # tokens served from the cache were not generated now
            self.completion_tokens += rec.tokens.completion or 0
        if self.on_update is not None:
            self.on_update(self)


@dataclass(frozen=True)
class Player:
    """Everything a conversation is played with: the model, the run's state and its log."""

    client: ModelClient
    state: RunState
    log: LinkedLog | None
    """None: nothing is written (the dry run)."""
    progress: Progress
    budget: Budget = field(default_factory=lambda: Budget(None))

    @property
    def params(self) -> RunParams:
        return self.state.manifest.params


def _recorded(player: Player, conv: Conversation, t: int) -> tuple[list[CallView], list[int]]:
    """The samples of turn ``t`` already answered, and the sample numbers still to call."""
    have: list[CallView] = []
    todo: list[int] = []
    for k in range(player.params.samples):
        prior = player.state.done.get(CallKey(conv.scenario.id, t, conv.layout, conv.repeat, k))
        if prior is not None and prior.raw is not None:
            have.append(prior)
        else:
            todo.append(k)
    return have, todo


async def play_conversation(conv: Conversation, player: Player) -> Turn | None:
    """Play one conversation to its end by the engine (``engine.Conversation``): its last
    turn, or None if a call failed after its retries (or the budget stopped it). A sample
    already recorded is not asked again (a resume)."""
    engine = Engine(conv.scenario, player.params, conv.layout, conv.repeat)
    turn: Turn | None = None
    while (ask := engine.next_ask()) is not None:
        have, todo = _recorded(player, conv, ask.turn)
        if todo:  # the samples of a turn share one prompt: hashed and copied once
            fresh = await _ask(engine, ask, todo, player)
            if fresh is None:
                engine.fail()
                return None
            have += fresh
        turn = engine.close(have)
    return turn


async def _ask(engine: Engine, ask: Ask, todo: list[int], player: Player
               ) -> list[CallView] | None:
    """Call the samples ``todo`` of the asked turn and record them: their views, or None when
    one failed or the budget refused one."""
    msgs = tuple(ask.messages)
    added = tuple(Message.model_validate(m) for m in ask.added)
    allowed = [k for k in todo if player.budget.reserve()]
    calls = [_call(engine, ask, k, msgs, added, player) for k in allowed]
    fresh = [] if not calls else [await calls[0]] if len(calls) == 1 else list(
        await asyncio.gather(*calls))
    state = player.state
    for rec in fresh:
        player.budget.settle(rec)
        if player.log is not None:
            player.log.append(rec)
        state.add(state.lines + 1, rec)
        player.progress.add(rec)
    if len(allowed) < len(todo) or any(rec.error is not None for rec in fresh):
        return None
    return [state.done[key_of(rec)] for rec in fresh]


def _request(ask: Ask, sample: int, msgs: tuple[dict[str, str], ...], model: str,
             params: RunParams) -> Request:
    return Request(
        model=model,
        messages=msgs,
        temperature=params.temperature,
        max_tokens=params.max_tokens,
        seed=ask.seed(sample),
        response_format=ask.response_format,
        extra=params.model_args,
        send_seed=params.send_seed,
        meta=ask.meta(sample),
        cache_marks=ask.cache_marks,
    )


async def _call(engine: Engine, ask: Ask, sample: int, msgs: tuple[dict[str, str], ...],
                added: tuple[Message, ...], player: Player) -> CallRecord:
    """One call and its record (``error`` set when it failed after its retries)."""
    request = _request(ask, sample, msgs, player.state.manifest.model, player.params)
    try:
        outcome = await player.client.call(request)
    except ContextOverflow as e:
        parsed = engine.over_context(str(e))
        if parsed is None:  # a provider fault: the run stops
            raise
        # a code-track turn or an ask (--ask-at) over the model's context window: an
        # abstention (reason context) of its own sample, answered with nothing; the
        # conversation goes on (contract v3, s. 4)
        return _record(ask, sample, added, parsed, raw="", latency_s=0.0, attempts=1)
    resp, error = outcome.response, outcome.error
    done: dict[str, Any] = {
        "latency_s": round(outcome.latency_s, 6), "attempts": outcome.attempts,
        "cached": outcome.cached,
        "error": None if error is None else CallError(kind=error.kind, message=error.message)}
    if resp is None:
        return _record(ask, sample, added, Parsed(None, None, ""), raw=None, **done)
    kept = {name: getattr(resp, name) for name in KEPT}
    counts = {name: getattr(resp, f"{name}_tokens") for name in Tokens.model_fields}
    return _record(
        ask, sample, added, engine.read(resp.text, resp.finish_reason, resp.raw_chars),
        raw=resp.text, tokens=Tokens(**counts), **kept, **done,
        invalid_usage=None if resp.usage_invalid is None else InvalidUsage(
            reason=resp.usage_invalid, raw=resp.raw_usage or "{}"))


def _record(ask: Ask, sample: int, added: tuple[Message, ...], read: Parsed,
            **answer: Any) -> CallRecord:
    """The record of one sample of the asked turn: its key, what was sent, the reading of
    its answer, and ``answer`` (what came back, how long it took)."""
    return CallRecord(
        chain_sha256=START,  # linked into the file's digest when it is appended (LinkedLog)
        scenario=ask.scenario, turn=ask.turn, layout=ask.layout, repeat=ask.repeat,
        sample=sample, messages_sha256=ask.messages_sha256, messages_added=added,
        spec=read.spec, abstention=read.reason, abstention_detail=read.detail, at=now(),
        **answer)


async def in_workers(items: Iterable[T], concurrency: int,
                     play: Callable[[T], Awaitable[None]]) -> None:
    """``play`` every item, ``concurrency`` at a time, in order: the workers take the items from
    one iterator, so only the items in play exist as tasks (not one task per conversation of
    the suite, waiting on a semaphore)."""
    queue = iter(items)

    async def worker() -> None:
        for item in queue:
            await play(item)

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))


async def run_suite(
    scenarios: Sequence[Scenario],
    client: ModelClient,
    state: RunState,
    out: Path,
    progress: Progress,
) -> None:
    """Play every scenario (at most ``concurrency`` conversations at once) and close the run;
    with ``max_cost``, stop (status ``budget``) before a call could exceed it."""
    params = state.manifest.params
    budget = Budget.of(params.max_cost, state.done.values())
    log = LinkedLog(out / CALLS, state.chain)
    player = Player(client, state, log, progress, budget)
    incomplete: dict[str, None] = {}  # the scenario ids, each once
    interrupted = False
    failure: str | None = None

    async def one(conv: Conversation) -> None:
        if await play_conversation(conv, player) is None:
            incomplete[conv.scenario.id] = None

    try:
        await in_workers(conversations(scenarios, params), params.concurrency, one)
    except (asyncio.CancelledError, KeyboardInterrupt):
        interrupted = True
        raise
    except UserError as e:  # the provider refused a call: every other would be refused too
        failure = str(e)
        raise RunFailed(f"the run failed: {failure}; its manifest says status failed. Fix the "
                        "cause and re-run the same command to resume") from None
    finally:
        log.close()
        order = {s.id: i for i, s in enumerate(scenarios)}
        done_ids = tuple(sorted(incomplete, key=order.__getitem__))
        status: RunStatus = ("interrupted" if interrupted else "failed" if failure else
                             "budget" if budget.stopped else
                             "incomplete" if done_ids else "complete")
        close_run(out, state, status, done_ids, failure=failure)


def pending_calls(scenarios: Sequence[Scenario], state: RunState) -> int:
    """The calls a run still has to make: every asked turn's samples not answered yet."""
    params = state.manifest.params
    return sum(
        1 for s, layout, r in conversations(scenarios, params)
        for t in asked(s, params)
        for k in range(params.samples)
        if CallKey(s.id, t, layout, r, k) not in state.done
    )
