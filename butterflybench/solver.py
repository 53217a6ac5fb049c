"""The solver: one sample is one conversation, played by butterfly's engine
(``butterfly.engine.conversation.Conversation``) with inspect's model. The solver keeps no turn
loop of its own: the engine says what each asked turn sends (the messages ``butterfly run``
sends and what the turn added to them, each sample's seed, the response format), reads each
answer (the response-size cap, then the track's reader: ``Conversation.read``), says whether a
call over the context window is an abstention (``over_context``) and makes the turn's answer
from its samples (``close``: the one answer, or the self-consistency vote), which the next
turn's history holds. The solver turns the messages into inspect's, calls the model (a turn's
samples at once, each with its own seed) and stores what the engine read.

Each user message carries, in its metadata under ``"butterfly"``, the scenario, turn, layout,
repeat, suite, track and seed of its call (and under self-consistency the sample): the scripted
agents (``butterfly/script/NAME``) answer from it, and a reader of the log sees which call it
was. Every call is appended to the sample store under ``"butterfly_turns"`` (docs/inspect.md,
"The log"); a call that fails after inspect's retries ends the conversation (recorded with its
error), which the scorer counts as incomplete, as ``butterfly score`` does.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

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
from inspect_ai.util import JSONSchema, LimitExceededError, collect

from butterfly.core.prompts import Message
from butterfly.core.wire import says_over_context
from butterfly.engine.conversation import Answered, Ask, Conversation
from butterfly.engine.tracks import Parsed
from butterfly.errors import UserError
from butterfly.runs.inspect_log import OVER_CONTEXT, OVER_CONTEXT_DETAIL, TurnUsage
from butterfly.runs.records import RunParams
from butterflybench.suites import META, TURNS, by_id

FINISH: Final[dict[str, str]] = {"max_tokens": "length"}
"""inspect's stop reasons named as our call records name them (the parser reads "length" as a
truncated answer); the others are kept as inspect says them ("stop", "content_filter",
"model_length": over the context window, ...)."""


def over_window(e: Exception) -> bool:
    """Whether a call's exception says the request is over the model's context window, as a
    provider says it (``core.wire.says_over_context``; a rate limit never is)."""
    return getattr(e, "status_code", None) != 429 and says_over_context(str(e))


def call_config(ask: Ask) -> GenerateConfig:
    """What every call of a conversation sets: the engine's response format (protocol schema:
    the spec's JSON Schema) as inspect's ``ResponseSchema``; temperature and max tokens are the
    task's defaults, each call's seed its own (``Ask.seed``)."""
    fmt = ask.response_format
    if fmt is None:
        return GenerateConfig()
    schema: Mapping[str, Any] = fmt["json_schema"]  # type: ignore[assignment]
    return GenerateConfig(response_schema=ResponseSchema(
        name=schema["name"], json_schema=JSONSchema.model_validate(schema["schema"]),
        strict=schema["strict"]))


def chat_message(m: Message, tag: dict[str, Any]) -> ChatMessage:
    """One of our messages as inspect's (a user message carries ``tag``)."""
    if m["role"] == "system":
        return ChatMessageSystem(content=m["content"])
    if m["role"] == "assistant":
        return ChatMessageAssistant(content=m["content"])
    return ChatMessageUser(content=m["content"], metadata={META: tag})


def usage_of(usage: ModelUsage | None) -> dict[str, int | None]:
    """A call's tokens as our call records count them: the prompt's whole (inspect's
    ``input_tokens`` leaves out the tokens read from or written to a prompt cache), the
    completion's with its reasoning, the reasoning's, the cached prompt tokens, and those
    written to the cache (Anthropic charges them at its cache-write rate)."""
    if usage is None:
        return dict.fromkeys(TurnUsage.model_fields)  # the import reads these (the log's contract)
    cached = usage.input_tokens_cache_read
    prompt = usage.input_tokens + (cached or 0) + (usage.input_tokens_cache_write or 0)
    return {"prompt_tokens": prompt, "completion_tokens": usage.output_tokens,
            "reasoning_tokens": usage.reasoning_tokens, "cached_tokens": cached,
            "cache_write_tokens": usage.input_tokens_cache_write}


@dataclass(frozen=True)
class Called:
    """One call: its store entry, the engine's record of its answer (None: the call failed,
    and the conversation ends), and inspect's output (None: the call raised)."""

    entry: dict[str, Any]
    answer: Answered | None
    output: ModelOutput | None


def entry(ask: Ask, sample: int, sent: int, raw: str, read: Parsed,
          output: ModelOutput | None = None, latency: float | None = None,
          finish: str | None = None, raw_chars: int | None = None,
          error: str | None = None) -> dict[str, Any]:
    """A call as the store keeps it (the log's contract, docs/inspect.md)."""
    return {"turn": ask.turn, "sample": sample, "raw": raw, "raw_chars": raw_chars,
            "messages_sent": sent, "usage": usage_of(None if output is None else output.usage),
            "cost_usd": None if output is None or output.usage is None
            else output.usage.total_cost,
            "latency_s": None if latency is None else round(latency, 6),
            "finish_reason": finish, "error": error, "spec": read.spec,
            "abstention": read.reason, "abstention_detail": read.detail}


NO_READ: Final = Parsed(None, None, "")
"""What a failed call's entry holds of a reading: nothing."""


@dataclass
class Caller:
    """What the calls of one conversation share: the engine, the model, the call's config,
    the run's parameters and the tag its user messages carry."""

    conv: Conversation
    model: Model
    params: RunParams
    tag: dict[str, Any]
    config: GenerateConfig | None = None
    """The conversation's call config (:func:`call_config`), made at its first call."""

    def tag_of(self, ask: Ask, sample: int) -> dict[str, Any]:
        """The tag of a call: whose turn and sample it is, and its seed (``Ask.seed``)."""
        return {**self.tag, **ask.meta(sample), "seed": ask.seed(sample)}

    async def turn(self, ask: Ask, sent: list[ChatMessage]) -> list[Called]:
        """Every sample of the asked turn, called at once, in sample order."""
        if ask.samples == 1:
            return [await self.call(ask, 0, sent)]
        return await collect(*(self.call(ask, k, sent) for k in range(ask.samples)))

    async def call(self, ask: Ask, sample: int, sent: list[ChatMessage]) -> Called:
        """Sample ``sample`` of the asked turn. An inspect limit, or a model that cannot play
        the task, is raised; any other failure after inspect's retries is the call's error."""
        messages = list(sent)
        if sample > 0:  # the last user message names this call's sample and seed
            messages[-1] = messages[-1].model_copy(
                update={"metadata": {META: self.tag_of(ask, sample)}})
        if self.config is None:
            self.config = call_config(ask)
        config = (self.config.merge(GenerateConfig(seed=ask.seed(sample)))
                  if self.params.send_seed else self.config)
        start = time.perf_counter()
        try:
            output = await self.model.generate(messages, config=config)
        except (LimitExceededError, UserError):
            raise
        except Exception as e:
            why = f"{type(e).__name__}: {e}"
            if over_window(e):
                return self.over(ask, sample, len(sent), why, None, None)
            return Called(entry(ask, sample, len(sent), "", NO_READ, error=why), None, None)
        latency = output.time if output.time is not None else time.perf_counter() - start
        if output.stop_reason == OVER_CONTEXT:
            return self.over(ask, sample, len(sent), OVER_CONTEXT_DETAIL, output, latency)
        return self.answered(ask, sample, len(sent), output, latency)

    def answered(self, ask: Ask, sample: int, sent: int, output: ModelOutput,
                 latency: float) -> Called:
        """An answer, cut at the response-size cap as ``butterfly run``'s transport cuts it
        (its first ``max_answer_chars`` characters kept, its length in ``raw_chars``), then read
        by the engine."""
        text, cap = output.completion, self.params.max_answer_chars
        raw_chars = len(text) if len(text) > cap else None
        text = text[:cap]
        stop = str(output.stop_reason)
        finish = FINISH.get(stop, stop)
        read = self.conv.read(text, finish, raw_chars)
        return Called(entry(ask, sample, sent, text, read, output, latency, finish, raw_chars),
                      Answered(sample, text, read.spec, read.reason, read.detail, finish),
                      output)

    def over(self, ask: Ask, sample: int, sent: int, why: str, output: ModelOutput | None,
             latency: float | None) -> Called:
        """A call over the context window: an abstention (reason ``context``, answered with
        nothing, as ``butterfly run`` records it) where the engine says so, the conversation
        going on; else the call's error, ending the conversation (our runner stops the run)."""
        read = self.conv.over_context(why)
        if read is None:
            raw = "" if output is None else output.completion
            return Called(entry(ask, sample, sent, raw, NO_READ, output, latency,
                                OVER_CONTEXT, error=why), None, output)
        return Called(entry(ask, sample, sent, "", read, output, latency, OVER_CONTEXT),
                      Answered(sample, "", read.spec, read.reason, read.detail), output)


@solver
def play(suite_path: str, params: dict[str, Any]) -> Solver:
    """Play the sample's conversation (``suite_path``: the suite file; ``params``: the run's
    parameters, a :class:`RunParams` dump)."""
    p = RunParams.model_validate(params)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        scenario = by_id(suite_path)[state.metadata["scenario"]]
        conv = Conversation(scenario, p, state.metadata["layout"], state.epoch - 1)
        tag = {"suite_path": suite_path, "track": p.track}
        return await converse(state, Caller(conv, get_model(), p, tag))

    return solve


async def converse(state: TaskState, caller: Caller) -> TaskState:
    """Every asked turn of one conversation, as the engine asks it; each call recorded in the
    store as it is answered."""
    conv = caller.conv
    sent: list[ChatMessage] = []
    stored: list[dict[str, Any]] = []
    shown: str | None = None
    while (ask := conv.next_ask()) is not None:
        tag = caller.tag_of(ask, 0)
        del sent[len(ask.messages) - len(ask.added):]  # restate mode: each list whole again
        sent += [chat_message(m, tag) for m in ask.added]
        called = await caller.turn(ask, sent)
        stored += [c.entry for c in called]
        state.store.set(TURNS, list(stored))
        if called[0].output is not None:
            state.output = called[0].output
        answers = [c.answer for c in called if c.answer is not None]
        if len(answers) < len(called):  # the conversation ends here: incomplete
            conv.fail()
            shown = None
            break
        shown = conv.close(answers).shown
    answered = [] if shown is None else [ChatMessageAssistant(content=shown)]
    state.messages = [*sent, *answered]  # the last call's messages and the turn's answer
    return state
