"""``butterfly run --dry-run``: what a run would send, counted before paying for it.

The dry run plays the run with the real player (:func:`butterfly.runs.play.play_conversation`,
over the same conversations, layouts, repeats, samples, shard and recorded calls of ``--out``
as ``butterfly run``), answered in memory by the run's track's answer model
(:meth:`butterfly.engine.tracks.Track.expected_answer`: the oracle's spec as the model would
write it): whatever the player sends, the dry run counts, and it writes nothing. Each call's
messages are counted with the model's tokenizer (:mod:`butterfly.models.tokens`) plus the chat
template's tokens per message; its answer is the expected answer (what chat mode's history
will roughly hold), counted as the completion, at most ``--max-tokens``. Cached-prefix tokens
are the part of a prompt that repeats the conversation's previous call (its prompt and
answer), as the provider caches it. The cost is :func:`cost_of` at the model's rates.
docs/cost.md says how close it comes.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from butterfly.core.pooling import Result
from butterfly.core.wire import Request, Response
from butterfly.engine.tracks import Track, track
from butterfly.models.client import ModelClient
from butterfly.models.price_map import Rates
from butterfly.models.tokens import PER_CALL, Counter, LongCounts, PromptCaching
from butterfly.runs.play import Player, Progress, play_conversation
from butterfly.runs.records import RunParams
from butterfly.runs.scope import conversations
from butterfly.runs.store import RunState
from oracle import Scenario, replay

SliceBy = Literal["length", "category", "scenario"]


class Bill(Result):
    """What the calls of one slice of a run (or of all of it) would send and cost."""

    slice: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    """None: the provider caches no prompt prefix we know of."""
    cost_usd: float | None
    """None: no price is known for the model."""


class DryRun(Result):
    """``butterfly run --dry-run --json``: what the run would send, per slice and in total."""

    schema_version: int = 1
    model: str
    suite: str
    track: str
    mode: str
    tokenizer: str
    tokenizer_exact: bool
    template_tokens_per_message: int
    template_tokens_per_call: int
    completion: str
    max_tokens: int
    completion_tokens_max: int
    caching: str | None
    rates_usd_per_mtok: list[float] | None
    billed: bool
    """False: the model runs on this machine (a scripted agent, a ``local/`` model)."""
    sliced_by: SliceBy
    recorded: int
    max_cost: float | None
    slices: list[Bill]
    total: Bill
    ask_at: list[int] | None = None
    """The run's ask points (restate mode; None: every turn)."""
    context_window: int | None = None
    """The most prompt tokens the model takes (litellm's map, ``max_input_tokens``); None when
    the map does not know the model."""
    calls_over_window: int = 0
    """Calls whose prompt would exceed ``context_window`` (the provider would refuse them)."""
    largest_prompt_tokens: int = 0


def cost_of(rates: Rates | None, prompt: int, completion: int, cached: int | None) -> float | None:
    """The price in USD of these tokens at ``rates`` (cached tokens at the cache-read rate), or
    None when no price is known: the one place the dry run prices anything."""
    return None if rates is None else rates.usd(prompt, completion, cached)


@dataclass
class Sums:
    calls: int = 0
    prompt: int = 0
    completion: int = 0
    cached: int = 0

    def add(self, prompt: int, completion: int, cached: int, calls: int = 1) -> None:
        self.calls += calls
        self.prompt += prompt
        self.completion += completion
        self.cached += cached


SHORT = 4096
"""Messages up to this many characters keep their token count for the whole dry run (the system
message, chat mode's turns and answers); a longer one (a restatement) is counted from the few
token lists kept."""


@dataclass(frozen=True)
class Last:
    """A conversation's previous call: its messages, their tokens (the call's own 3 apart), and
    its answer as the next call's history would hold it."""

    messages: Sequence[Mapping[str, str]]
    tokens: int
    answer: Mapping[str, str]


def _extends(now: Sequence[Mapping[str, str]], before: Sequence[Mapping[str, str]]) -> bool:
    """Whether ``now`` is ``before`` with messages added (chat mode: the same message objects,
    so checking the ends is enough)."""
    n = len(before)
    return 0 < n < len(now) and now[n - 1] is before[n - 1] and now[0] is before[0]


@dataclass
class Meter:
    """Counts each call the player makes: its prompt, its answer, the prefix it repeats. A chat
    call adds to its previous call's count only the messages it adds, so a conversation costs
    time in proportion to what it sends once, not to the sum of its prompts."""

    counter: Counter
    caching: PromptCaching | None
    max_tokens: int
    slice_of: Callable[[str], str]
    sums: dict[str, Sums] = field(default_factory=dict)
    last: dict[tuple[str, str, int], Last] = field(default_factory=dict)
    window: int | None = None
    """The model's most prompt tokens, when known: calls over it are counted (``over``)."""
    over: int = 0
    largest: int = 0

    def __post_init__(self) -> None:
        # Token lists are kept only for the last few short messages; the counts of short
        # messages are kept for the whole run. A long message (a restatement of 5,000 edits
        # is tens of thousands of tokens) is counted from the recent one it extends.
        self.tokens = functools.lru_cache(maxsize=8)(
            lambda text: tuple(self.counter.encode(text)))
        self._short = functools.lru_cache(maxsize=None)(lambda text: len(self.tokens(text)))
        self.long = LongCounts(self.counter)

    def size(self, text: str) -> int:
        return self._short(text) if len(text) <= SHORT else self.long.count(text)

    def _shared(self, a: str, b: str) -> int:
        if len(a) <= SHORT and len(b) <= SHORT:
            pairs = zip(self.tokens(a), self.tokens(b), strict=False)
            return sum(1 for _ in itertools.takewhile(lambda p: p[0] == p[1], pairs))
        return self.long.shared(a, b)

    def body(self, messages: Sequence[Mapping[str, str]]) -> int:
        return sum(self.counter.per_message + self.size(m["content"]) for m in messages)

    def repeated(self, before: Sequence[Mapping[str, str]],
                 now: Sequence[Mapping[str, str]]) -> int:
        """Tokens at the start of ``now`` that ``before`` (the previous call's prompt and
        answer) began with: whole messages, then the shared start of the first that differs."""
        common = 0
        for a, b in zip(before, now, strict=False):
            if a == b:
                common += self.counter.per_message + self.size(b["content"])
                continue
            if a["role"] == b["role"]:
                common += self.counter.per_message + self._shared(a["content"], b["content"])
            break
        return common

    def count(self, request: Request, answer: str) -> None:
        meta = request.meta
        conv = (str(meta["scenario"]), str(meta["layout"]), int(meta["repeat"]))
        now, prev = request.messages, self.last.get(conv)
        if prev is not None and _extends(now, prev.messages):
            added = now[len(prev.messages):]
            body = prev.tokens + self.body(added)
            common = prev.tokens + self.repeated([prev.answer], added)
        else:
            body = self.body(now)
            common = 0 if prev is None else self.repeated([*prev.messages, prev.answer], now)
        prompt = body + PER_CALL
        self.largest = max(self.largest, prompt)
        self.over += self.window is not None and prompt > self.window
        cached = 0
        if self.caching is not None and prev is not None:
            cached = min(self.caching.cached(common), prompt)
        self.last[conv] = Last(now, body, {"role": "assistant", "content": answer})
        completion = min(self.size(answer), self.max_tokens)
        self.sums.setdefault(self.slice_of(conv[0]), Sums()).add(prompt, completion, cached)


class Expected:
    """The track's answer model as a provider: each request answered with the oracle's spec
    of its turn as the track's model would write it (``Track.expected_answer``), and counted
    by a :class:`Meter`."""

    HELD = 1024
    """Scenarios whose oracle replay is kept, the most recently asked (suite order)."""

    def __init__(self, track: Track, scenarios: Sequence[Scenario], meter: Meter) -> None:
        by_id = {s.id: s for s in scenarios}
        self.track, self.meter = track, meter
        self._oracle = functools.lru_cache(maxsize=self.HELD)(lambda sid: replay(by_id[sid]))

    async def __call__(self, request: Request, timeout: float) -> Response:
        spec = self._oracle(str(request.meta["scenario"]))[int(request.meta["turn"])]
        text = self.track.expected_answer(spec)
        self.meter.count(request, text)
        return Response(text=text, finish_reason="stop")  # no tokens: nothing is generated

    async def aclose(self) -> None:
        return None


def slicer(scenarios: Sequence[Scenario], by: SliceBy) -> Callable[[str], str]:
    """The slice of a scenario id: its chain length (``N turns``), its category, or itself."""
    names = {s.id: (f"{len(s.turns)} turns" if by == "length" else
                    s.category if by == "category" else s.id) for s in scenarios}
    return names.__getitem__


async def _play(scenarios: Sequence[Scenario], player: Player) -> None:
    try:
        for conv in conversations(scenarios, player.params):
            await play_conversation(conv, player)
    finally:
        await player.client.aclose()


def meter_run(scenarios: Sequence[Scenario], state: RunState, meter: Meter) -> Meter:
    """Play the run ``state`` starts from, answered by its track's answer model (one
    conversation at a time, so that each call follows its conversation's previous one)."""
    params: RunParams = state.manifest.params
    answers = Expected(track(params.track), scenarios, meter)
    client = ModelClient(answers, concurrency=1, retries=0, adaptive=False)
    player = Player(client, state, None, Progress(total=0))
    asyncio.run(_play(scenarios, player))
    return meter


def order(scenarios: Sequence[Scenario], by: SliceBy) -> list[str]:
    """The slices in the suite's order (lengths ascending)."""
    keys = {slicer(scenarios, by)(s.id): len(s.turns) for s in scenarios}
    return sorted(keys, key=lambda k: keys[k]) if by == "length" else list(keys)


def bill(name: str, sums: Sums, rates: Rates | None, caching: bool) -> Bill:
    cached = sums.cached if caching else None
    return Bill(slice=name, calls=sums.calls, prompt_tokens=sums.prompt,
                completion_tokens=sums.completion, cached_tokens=cached,
                cost_usd=cost_of(rates, sums.prompt, sums.completion, cached))


def bills(meter: Meter, names: list[str], rates: Rates | None) -> tuple[list[Bill], Bill]:
    """A bill per slice (only those with calls) and the total."""
    caching = meter.caching is not None
    total = Sums()
    for s in meter.sums.values():
        total.add(s.prompt, s.completion, s.cached, s.calls)
    slices = [bill(n, meter.sums[n], rates, caching) for n in names if n in meter.sums]
    return slices, bill("total", total, rates, caching)


def per_mtok(rates: Rates | None) -> list[float] | None:
    """The rates as USD per million tokens: prompt, completion, cached prompt."""
    if rates is None:
        return None
    return [round(r * 1e6, 6) for r in (rates.prompt, rates.completion, rates.cached)]


def caching_text(caching: PromptCaching | None) -> str | None:
    if caching is None:
        return None
    return (f"{caching.provider}: prompt prefixes of {caching.least} tokens or more, in steps "
            f"of {caching.step}")


def dry_run(model: str, suite_path: Path, scenarios: Sequence[Scenario], state: RunState,
            by: SliceBy, counter: Counter, caching: PromptCaching | None,
            rates: Rates | None, billed: bool = True, window: int | None = None) -> DryRun:
    """The bill of the run that ``state`` starts (or resumes) on ``scenarios``; ``window``: the
    model's most prompt tokens, when known (calls over it are counted)."""
    params = state.manifest.params
    recorded = sum(1 for _ in state.done)
    meter = meter_run(scenarios, state, Meter(counter, caching, params.max_tokens,
                                              slicer(scenarios, by), window=window))
    slices, total = bills(meter, order(scenarios, by), rates)
    return DryRun(
        model=model, suite=str(suite_path), track=params.track, mode=params.mode,
        tokenizer=counter.label, tokenizer_exact=counter.exact,
        template_tokens_per_message=counter.per_message, template_tokens_per_call=PER_CALL,
        completion=(f"the expected answers' tokens, each at most --max-tokens "
                    f"{params.max_tokens}"),
        max_tokens=params.max_tokens, completion_tokens_max=total.calls * params.max_tokens,
        caching=caching_text(caching), rates_usd_per_mtok=per_mtok(rates), billed=billed,
        sliced_by=by,
        recorded=recorded, max_cost=params.max_cost, slices=slices, total=total,
        ask_at=None if params.ask_at is None else list(params.ask_at),
        context_window=window, calls_over_window=meter.over,
        largest_prompt_tokens=meter.largest)
