"""The solver: one sample is one conversation, played turn by turn with the messages our runner
sends (the track's ``added``: ``butterfly.engine.tracks``, from ``core.prompts``), asked at
the turns our runner asks (``runs.scope.asked``).

Chat mode extends one message list (the model's answers stay in it, whatever they were);
restate mode sends each asked turn's stateless list. Each user message carries, in its
metadata under ``"butterfly"``, the scenario, turn, suite and seed of its call: the scripted
agents (``butterfly/script/NAME``) answer from it, and a reader of the log sees which turn a
call was. Every turn asked is appended to the sample store under ``"butterfly_turns"``
(docs/inspect.md, "The log"); a call that fails after inspect's retries ends the conversation
(recorded with its error), which the scorer counts as incomplete, as ``butterfly score`` does.
"""

from __future__ import annotations

import time
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    ModelUsage,
    ResponseSchema,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import JSONSchema, LimitExceededError

from butterfly.engine.tracks import track
from butterfly.errors import UserError
from butterfly.runs.records import RunParams
from butterfly.runs.scope import asked
from butterflybench.suites import META, TURNS, by_id
from oracle import Scenario, spec_json_schema

FINISH: dict[str, str] = {"max_tokens": "length"}
"""inspect's stop reasons named as our call records name them (the parser reads "length" as a
truncated answer); the others are kept as inspect says them ("stop", "content_filter",
"model_length": over the context window, ...)."""
OVER_CONTEXT = "the conversation no longer fits the model's context window"


def seed_of(params: RunParams, epoch: int) -> int:
    """The seed of repeat ``epoch - 1``: ``seed + repeat``, as our runner sends it."""
    return params.seed + epoch - 1


def call_config(params: RunParams, epoch: int) -> GenerateConfig:
    """What each call sets: the repeat's seed and, for protocol schema, the spec's JSON Schema
    as the response format (temperature and max tokens are the task's defaults)."""
    schema = (ResponseSchema(name="spec", json_schema=JSONSchema.model_validate(
        spec_json_schema()), strict=True) if params.schema_output else None)
    return GenerateConfig(seed=seed_of(params, epoch) if params.send_seed else None,
                          response_schema=schema)


def chat_message(m: dict[str, str], tag: dict[str, Any]) -> ChatMessage:
    """One of our messages as inspect's (a user message carries ``tag``)."""
    if m["role"] == "system":
        return ChatMessageSystem(content=m["content"])
    if m["role"] == "assistant":
        return ChatMessageAssistant(content=m["content"])
    return ChatMessageUser(content=m["content"], metadata={META: tag})


def turn_record(t: int, raw: str, sent: int, output: ModelOutput | None, latency: float | None,
                error: str | None = None) -> dict[str, Any]:
    """A turn as the store keeps it (the log's contract, docs/inspect.md)."""
    stop = None if output is None else str(output.stop_reason)
    return {"turn": t, "raw": raw, "messages_sent": sent,
            "usage": usage_of(None if output is None else output.usage),
            "latency_s": None if latency is None else round(latency, 6),
            "finish_reason": None if stop is None else FINISH.get(stop, stop), "error": error}


def usage_of(usage: ModelUsage | None) -> dict[str, int | None]:
    """A call's tokens as our call records count them: the prompt's whole (inspect's
    ``input_tokens`` leaves out the tokens read from or written to a prompt cache), the
    completion's with its reasoning, the reasoning's, the cached prompt tokens, and those
    written to the cache (Anthropic charges them at its cache-write rate)."""
    if usage is None:
        return dict.fromkeys(("prompt_tokens", "completion_tokens", "reasoning_tokens",
                              "cached_tokens", "cache_write_tokens"))
    cached = usage.input_tokens_cache_read
    prompt = usage.input_tokens + (cached or 0) + (usage.input_tokens_cache_write or 0)
    return {"prompt_tokens": prompt, "completion_tokens": usage.output_tokens,
            "reasoning_tokens": usage.reasoning_tokens, "cached_tokens": cached,
            "cache_write_tokens": usage.input_tokens_cache_write}


@solver
def play(suite_path: str, params: dict[str, Any]) -> Solver:
    """Play the sample's conversation (``suite_path``: the suite file; ``params``: the run's
    parameters, a :class:`RunParams` dump)."""
    p = RunParams.model_validate(params)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        scenario = by_id(suite_path)[state.metadata["scenario"]]
        return await converse(state, scenario, state.metadata["layout"], p, suite_path)

    return solve


async def converse(state: TaskState, scenario: Scenario, layout: str, p: RunParams,
                   suite_path: str) -> TaskState:
    """Every asked turn of one conversation, recorded in the store as it is answered."""
    model, config = get_model(), call_config(p, state.epoch)
    sent: list[ChatMessage] = []
    turns: list[dict[str, Any]] = []
    previous: str | None = None
    output: ModelOutput | None = None
    for t in asked(scenario, p):
        tag = {"scenario": scenario.id, "turn": t, "layout": layout, "repeat": state.epoch - 1,
               "seed": seed_of(p, state.epoch), "suite_path": suite_path, "track": p.track}
        sent = [] if p.mode == "restate" else sent
        added = track(p.track).added(scenario, t, previous, layout, p)
        sent += [chat_message(m, tag) for m in added]
        rec, output = await call(model, sent, config, t, p)
        turns.append(rec)
        state.store.set(TURNS, list(turns))
        if output is not None:
            state.output, previous = output, output.completion
        if rec["error"] is not None:  # the conversation ends here: incomplete
            break
    answered = [] if output is None else [ChatMessageAssistant(content=output.completion)]
    state.messages = [*sent, *answered]  # the last call's messages and its answer
    return state


async def call(model: Model, sent: list[ChatMessage], config: GenerateConfig, t: int,
               p: RunParams) -> tuple[dict[str, Any], ModelOutput | None]:
    """Turn ``t``'s call: its record, and the model's output (None: the call failed after
    inspect's retries). An inspect limit, or a model that cannot play the task, is raised."""
    start = time.perf_counter()
    try:
        output = await model.generate(list(sent), config=config)
    except (LimitExceededError, UserError):
        raise
    except Exception as e:
        return turn_record(t, "", len(sent), None, None, f"{type(e).__name__}: {e}"), None
    latency = output.time if output.time is not None else time.perf_counter() - start
    # over the context window: our runner stops, but for an ask (--ask-at) or a code turn,
    # which are abstentions (reason context)
    over = output.stop_reason == "model_length" and p.ask_at is None and p.track != "code"
    return turn_record(t, output.completion, len(sent), output, latency,
                       OVER_CONTEXT if over else None), output
