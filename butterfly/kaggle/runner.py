"""The Kaggle notebook's door to the conversation engine: kaggle-benchmarks' chat, retries,
verdicts.

``butterfly notebook build`` inlines this module into ``notebooks/butterflybench.ipynb``
together with the oracle, the core, the engine and the scorer, so the notebook plays the CLI's
conversation and scores it with the same code. The turns are the engine's
(``butterfly.engine.conversation.Conversation``: what to ask, how an answer is read, the
answer-size cap, when an ask over the context window is an abstention, the turn's answer in
the next turn's history); :func:`converse` only does the notebook's I/O through a :class:`Chat`
that the notebook's cells build on kaggle-benchmarks. Nothing here imports kaggle_benchmarks,
so this module is tested without it.

This is the harness's second seam to models, beside ``butterfly.models``: kaggle-benchmarks owns
the client (its SDK gives no way to share ours), so the notebook has its own retry loop here.
It shares the CLI's error classes (:func:`butterfly.core.wire.exception_kind`, the HTTP
statuses as the fast path classifies them; :func:`butterfly.core.wire.over_context`, the
refusals of a request over the context window) and :class:`RetryPolicy`
(``butterfly.core.vocab``); it may import only ``core``, ``engine``, the notebook's settings
(:mod:`butterfly.kaggle.settings`) and ``oracle``, since the notebook inlines it.

Why protocol ``json`` and not ``schema``: kaggle-benchmarks sends a schema as
``response_format`` only for the models its model proxy declares able to take one, and for the
others it adds a different system message instead; the prompt would then depend on the model
(:data:`butterfly.kaggle.settings.REFUSALS`). The notebook sends no schema, and every model sees
the same messages.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypedDict, TypeVar

from butterfly.core.agents import baseline_label
from butterfly.core.asking import ASKED_NOTE, asked_line
from butterfly.core.efficiency import Spent, efficiency
from butterfly.core.efficiency_text import latency_line, per_correct_line
from butterfly.core.horizon_text import horizon_line
from butterfly.core.metrics import (
    aggregate,
    baselines_of,
    effective_final_match,
    horizon_over,
    recency_ks,
    score_scenario,
)
from butterfly.core.prompts import Message
from butterfly.core.scores import Aggregate, Efficiency, HorizonResult
from butterfly.core.turns import ConversationKey
from butterfly.core.vocab import KAGGLE_RETRY
from butterfly.core.wire import exception_kind, over_context, redact
from butterfly.engine.conversation import Answered, Conversation, answered
from butterfly.engine.tracks import track as track_named
from butterfly.kaggle.settings import Settings
from oracle import Scenario

T = TypeVar("T")

TEMPERATURE: Final = 0
SEED: Final = 0
"""The CLI's defaults (``butterfly run --protocol json``); the prompt's are the notebook's
settings' (``LAYOUT``, ``MODE``, ``STRATEGY``, ``PROTOCOL``, ``PARSE``:
:mod:`butterfly.kaggle.settings`)."""
MAX_TOKENS: Final = 8000
"""The output bound sent with every call. A spec needs a few hundred tokens, but a reasoning
model spends its thinking from the same budget on some providers, and the proxy estimates a
call's cost from this bound (the write-up ended a costly model's 403s by bounding its output,
and ran Sonnet 5 with an 8,000-token cap). The CLI counterpart is ``--max-tokens 8000``."""

HARNESS_ARGS: Final = frozenset({"max_tokens", "temperature", "seed", "schema", "system",
                                 "response_format", "model", "messages", "stream", "n"})
"""Arguments the notebook sets itself: a model argument may not replace them."""


def model_args(text: str | None) -> dict[str, object]:
    """The model arguments of a notebook run from ``BUTTERFLY_MODEL_ARGS``: one JSON object,
    the same names and values as ``butterfly run -M KEY=VALUE`` (``reasoning_effort``,
    ``top_p``, ``extra_body``, ...). Empty or unset: none."""
    if not text or not text.strip():
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("BUTTERFLY_MODEL_ARGS must be one JSON object of argument names")
    return value


def api_params(max_tokens: int, env: Mapping[str, str]) -> dict[str, object]:
    """What every call passes to ``llm.respond`` besides the conversation (kaggle-benchmarks
    hands it on to the provider as extra API parameters): the output bound, then the model
    arguments of ``BUTTERFLY_MODEL_ARGS``."""
    args = model_args(env.get("BUTTERFLY_MODEL_ARGS"))
    bad = sorted(set(args) & HARNESS_ARGS)
    if bad:
        raise ValueError(f"model arguments {', '.join(bad)} are set by the notebook itself")
    return {"max_tokens": max_tokens, **args}


def seed_args(env: Mapping[str, str]) -> dict[str, int]:
    """The seed sent with every call, or none with ``BUTTERFLY_NO_SEED=1`` (providers that
    reject it; ``butterfly run --no-seed``)."""
    return {} if env.get("BUTTERFLY_NO_SEED", "") == "1" else {"seed": SEED}


class ProviderFailure(RuntimeError):
    """A call that still got no answer after every attempt: a provider error, never a model
    failure. The notebook's per-scenario task fails with it, and the scenario gets no verdict."""


def describe(exc: BaseException) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"[:300]


def call_with_retries(call: Callable[[], T], *, sleep: Callable[[float], None] = time.sleep,
                      log: Callable[[str], None] | None = print) -> T:
    """``call()``, retried on transient provider errors by the CLI's retry mechanism
    (:data:`butterfly.core.vocab.KAGGLE_RETRY`: up to 6 attempts, waits of exactly 2, 4, 8, 16,
    32 s, about a minute in all before a scenario is given up; the error classes
    ``butterfly.core.wire``'s, shared with the CLI's client). Raises :class:`ProviderFailure`
    when every attempt failed, and re-raises a non-transient error at once."""
    failed = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if exception_kind(exc) is None:  # refused (400, 401, 403 "estimated cost exceeds
                raise  # your quota", 404): it would be refused again
            failed += 1
            wait = KAGGLE_RETRY.wait(failed)
            if wait is None:
                raise ProviderFailure(
                    f"no answer after {failed} attempts: {describe(exc)}") from exc
            if log is not None:
                log(f"attempt {failed}/{KAGGLE_RETRY.retries + 1} failed ({describe(exc)}); "
                    f"retrying in {wait:g} s")
            sleep(wait)


def load_scenarios(text: str) -> list[Scenario]:
    """The suite from its JSON Lines text (the notebook's inlined copy of the frozen suite)."""
    return [Scenario.model_validate_json(line) for line in text.splitlines() if line.strip()]


def long_slice(scenarios: Sequence[Scenario], per_length: int) -> list[Scenario]:
    """The first ``per_length`` scenarios of each chain length, in suite order (a slice of
    butterfly-long sized to a daily quota: calls = the sum of their lengths)."""
    seen: dict[int, int] = {}
    out = []
    for s in scenarios:
        n = len(s.turns)
        seen[n] = seen.get(n, 0) + 1
        if seen[n] <= per_length:
            out.append(s)
    return out


def messages_for(scenario: Scenario, turn: int, answers: Sequence[str],
                 settings: Settings | None = None) -> list[Message]:
    """Every message the CLI (``butterfly run`` with these settings; None: the notebook's
    defaults) sends for ``turn`` after these earlier answers (restate mode: none, each call is
    stateless): what each turn up to it adds, the track's messages (``Track.added``)."""
    p = settings or Settings()
    turns = [turn] if p.mode == "restate" else range(1, turn + 1)
    return [m for t in turns for m in track_named(p.track).added(
        scenario, t, answers[t - 2] if t > 1 and p.mode == "chat" else None, p.layout, p)]


@dataclass(frozen=True)
class Answer:
    """One answer as the model gave it."""

    text: str
    output_tokens: int | None = None
    input_tokens: int | None = None
    cost_usd: float | None = None
    """What kaggle-benchmarks reports the call cost (its model proxy's price); None: not
    reported."""
    latency_s: float | None = None


class Chat(Protocol):
    """A chat of kaggle-benchmarks as the door drives it (the notebook's cells build it on
    ``kbench``; tests on scripted answers and fake servers)."""

    def send(self, messages: Sequence[Message], fresh: bool) -> None:
        """Put these messages in the chat, in order (a system, user or assistant message
        each); ``fresh``: in a chat of their own, started now (restate mode)."""

    def respond(self) -> Answer:
        """Ask the model once, for an answer to the chat so far; kaggle-benchmarks keeps the
        answer in the chat."""

    def amend(self, text: str) -> None:
        """Make the chat's last answer ``text``: the answer cut at the response-size cap, as
        the CLI's history holds it."""


Retries = Callable[[Callable[[], Answer]], Answer]
Judge = Callable[[int, Answered], Answered]
"""(turn, an answer as the engine read it) -> the answer as its track judges it (the code
track: its program observed, then judged; ``butterfly.kaggle.code_track``)."""


class AnswerRow(TypedDict):
    turn: int
    raw: str
    """The answer as the CLI records it: cut at the response-size cap; "" for an ask over the
    context window."""
    output_tokens: int | None
    spec: dict[str, str] | None
    abstention: str | None
    abstention_detail: str
    input_tokens: int | None
    cost_usd: float | None
    """None: kaggle-benchmarks reported no cost (and for an ask over the context window, which
    got no answer)."""
    latency_s: float | None


def _unsent(added: Sequence[Message], held: str | None, chat: Chat) -> list[Message]:
    """What of a turn's added messages the chat does not hold yet. kaggle-benchmarks keeps each
    answer in the chat, so the previous answer (the first message a later turn adds) is sent
    only when the chat has none (an ask over the context window got no answer), and the one it
    holds is amended when the engine's history holds it cut (the response-size cap)."""
    if not added or added[0]["role"] != "assistant" or held is None:
        return list(added)
    if added[0]["content"] != held:
        chat.amend(added[0]["content"])
    return list(added[1:])


def _answer(conv: Conversation, chat: Chat, max_tokens: int, retries: Retries
            ) -> tuple[Answered, Answer | None]:
    """The asked turn's one answer as the engine reads it, and the model's answer (None for an
    ask over the context window, an abstention where the engine says so). Any other failure
    ends the conversation (``Conversation.fail``) and is raised: a provider error."""
    try:
        answer = retries(chat.respond)
    except Exception as exc:
        why = redact(f"the provider refused the request: {describe(exc)}")  # its detail
        parsed = conv.over_context(why) if over_context(exc) else None
        if parsed is None:
            conv.fail()
            raise
        return Answered(0, "", None, parsed.reason, parsed.detail), None
    cap = conv.settings.max_answer_chars
    cut = len(answer.text) if len(answer.text) > cap else None
    # kaggle-benchmarks passes no finish reason on, where the CLI reads "length": an answer
    # that used the whole output budget counts as cut off
    used = answer.output_tokens
    finish = "length" if used is not None and used >= max_tokens else None
    return answered(conv, 0, answer.text[:cap], finish, cut), answer


def converse(conv: Conversation, chat: Chat, max_tokens: int, *,
             retries: Retries | None = None, judge: Judge | None = None) -> list[AnswerRow]:
    """Play ``conv`` to its end through ``chat``: each ask's messages sent (restate mode: a
    fresh chat each; chat mode: what the turn adds that the chat does not hold yet), one answer
    (retried on transient errors; a retry re-sends the same history, never a message twice),
    read and closed by the engine (``judge``: then judged by the track). The asked turns'
    answer rows, in order; a provider error is raised, the conversation incomplete."""
    rows: list[AnswerRow] = []
    held: str | None = None
    fresh = conv.settings.mode == "restate"
    while (ask := conv.next_ask()) is not None:
        chat.send(list(ask.messages) if fresh else _unsent(ask.added, held, chat), fresh)
        sample, answer = _answer(conv, chat, max_tokens, retries or call_with_retries)
        held = None if answer is None else answer.text
        if judge is not None:
            sample = judge(ask.turn, sample)
        conv.close([sample])
        got = answer or Answer("")  # an ask over the context window: no tokens, cost, latency
        rows.append(AnswerRow(turn=ask.turn, raw=sample.raw or "", output_tokens=got.output_tokens,
                              spec=sample.spec, abstention=sample.abstention,
                              abstention_detail=sample.abstention_detail,
                              input_tokens=got.input_tokens, cost_usd=got.cost_usd,
                              latency_s=got.latency_s))
    return rows


class Verdict(TypedDict):
    """One scenario's verdict, as the notebook's per-scenario task records it."""

    id: str
    category: str
    final_match: bool
    turn_match: list[bool]
    first_divergent_turn: int | None
    wobble: bool
    change_radius: int | None
    abstentions: int
    asked: list[int] | None
    """The turns asked (restate mode asked at chosen turns), None: every turn. ``turn_match``,
    ``answers`` and ``first_divergent_turn`` are then over these turns only."""
    answers: list[AnswerRow]


def play_verdict(scenario: Scenario, settings: Settings, chat: Chat, max_tokens: int, *,
                 retries: Retries | None = None, judge: Judge | None = None) -> Verdict:
    """One scenario played through ``chat`` (:func:`converse`) and scored by ``butterfly
    score``'s scorer (its asked turns' specs): its verdict (both tracks record it alike)."""
    conv = Conversation(scenario, settings, settings.layout)
    rows = converse(conv, chat, max_tokens, retries=retries, judge=judge)
    score = score_scenario(scenario, conv.specs(),
                           asked=None if settings.ask_at is None else conv.asked)
    return Verdict(
        id=score.id,
        category=score.category,
        final_match=score.final_match,
        turn_match=list(score.turn_match),
        first_divergent_turn=score.first_divergent,
        wobble=score.wobble,
        change_radius=score.change_radius,
        abstentions=score.abstentions,
        asked=None if score.asked is None else list(score.asked),
        answers=rows,
    )


class Recorded:
    """A :class:`Chat` over ``respond_to``, which answers the messages the chat holds (the
    CLI's messages for the ask: in chat mode its history, the answers in it as the engine
    holds them); it records the answers (the answers a test or a file gives, a server)."""

    def __init__(self, respond_to: Callable[[list[Message]], Answer]) -> None:
        self.respond_to, self.sent, self.answers = respond_to, list[Message](), list[Answer]()

    def send(self, messages: Sequence[Message], fresh: bool) -> None:
        self.sent = [*([] if fresh else self.sent), *messages]

    def respond(self) -> Answer:
        answer = self.respond_to(list(self.sent))
        self.answers.append(answer)
        self.sent.append({"role": "assistant", "content": answer.text})
        return answer

    def amend(self, text: str) -> None:
        self.sent[-1] = {"role": "assistant", "content": text}


def play(scenario: Scenario, respond_to: Callable[[list[Message]], Answer], *,
         retries: Retries | None = None, settings: Settings | None = None,
         max_tokens: int = MAX_TOKENS) -> list[Answer]:
    """One conversation played through :class:`Recorded` (``respond_to`` each ask's messages,
    retried on transient errors: a retry sends the same messages again). The answers, in
    order; in restate mode a turn not asked is no call."""
    chat = Recorded(respond_to)
    converse(Conversation(scenario, settings or Settings()), chat, max_tokens, retries=retries)
    return chat.answers


def verdict(scenario: Scenario, answers: Sequence[Answer], max_tokens: int,
            ask_at: Sequence[int] | None = None, *, settings: Settings | None = None,
            judge: Judge | None = None) -> Verdict:
    """The verdict of these answers to the asked turns (``ask_at``: restate mode asked at
    chosen turns; ``settings``: other than the notebook's defaults), read and scored as
    :func:`play_verdict` reads and scores them."""
    chosen = settings or Settings(mode="chat" if ask_at is None else "restate",
                                  ask_at=None if ask_at is None else tuple(ask_at))
    given = iter(answers)
    return play_verdict(scenario, chosen, Recorded(lambda _: next(given)), max_tokens,
                        retries=lambda call: call(), judge=judge)


class Headline(TypedDict):
    final_match: float
    final_matches: int
    n_scenarios: int
    interval: list[float]
    ci: float
    effective_final_match: float | None


def headline(agg: Aggregate) -> Headline:
    """The leaderboard number, from ``butterfly score``'s aggregate (the metric registry): the
    share of scenarios whose final spec matches, its count and its 95% interval (Wilson,
    clustered by scenario), and the effective final match (``core.metrics``). Kaggle stores
    one number beside the value (value ± ci), so ``ci`` is the larger distance from the share
    to an end of the interval: the symmetric band then contains the whole (asymmetric)
    interval. ``n_scenarios``: the conversations (one per scenario played)."""
    if agg.final_match is None or agg.final_match_ci is None:
        raise ValueError("no scenario was scored")
    share = agg.final_match
    lo, hi = agg.final_match_ci
    return Headline(final_match=share, final_matches=agg.final_matches,
                    n_scenarios=agg.n_conversations, interval=[lo, hi],
                    ci=max(share - lo, hi - share),
                    effective_final_match=effective_final_match(agg))


def horizon_of(verdicts: Sequence[Verdict]) -> HorizonResult:
    """The horizon of the notebook's conversations, computed by ``butterfly score``'s function
    (``core.metrics.horizon_over``): a chain's length is its number of turns, and asked at
    chosen turns, each ask at turn t is a chain of length t."""
    result = horizon_over([(v["id"], v["asked"][-1] if v["asked"] else len(v["turn_match"]),
                            v["turn_match"], v["asked"]) for v in verdicts])
    if result is None:
        raise ValueError("no scenario was scored")
    return result


def figures(verdicts: Sequence[Verdict], scenarios: Mapping[str, Scenario]) -> Aggregate:
    """The figures ``butterfly score`` reports for the same answers (``core.metrics.
    aggregate``, every metric of the registry): final and turn match, wobble, first divergent
    turn, abstention, ...), each verdict scored again from its answers' specs."""
    return aggregate([score_scenario(scenarios[v["id"]], [a["spec"] for a in v["answers"]],
                                     asked=v["asked"]) for v in verdicts])


def figures_line(agg: Aggregate, ask_at: Sequence[int] | None) -> str:
    """Turn match, wobble and first divergent turn in one line, the last two labelled "over
    asked turns only" for a run asked at chosen turns (as ``butterfly score`` labels them)."""
    note = "" if ask_at is None else f" ({ASKED_NOTE})"
    first = ", ".join(f"{k if k == 'none' else f'turn {k}'}: {n}"
                      for k, n in agg.first_divergent_turn.items())
    turn = "n/a" if agg.turn_match is None else f"{agg.turn_match:.1%}"
    return (f"turn match {turn} of {agg.n_answers} answers; wobble {agg.wobbles} of "
            f"{agg.n_conversations} conversations{note}; conversations by first divergent "
            f"turn{note}: {first}")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def abstentions_line(verdicts: Sequence[Verdict]) -> str | None:
    """The abstentions by reason, as ``butterfly score`` prints them (None when none)."""
    reasons = Counter(a["abstention"] for v in verdicts for a in v["answers"]
                      if a["spec"] is None and a["abstention"] is not None)
    if not reasons:
        return None
    return "abstentions by reason: " + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items()))


def baselines_line(played: Sequence[Scenario], ask_at: Sequence[int] | None,
                   window_k: int | None = None) -> str:
    """The baselines' final match on the played scenarios, asked as the run asked: no-op and
    last-edit, and on a suite with chains of 40 turns or more the recency baseline (half the
    shortest asked length of 40 or more, and the suite manifest's ``window_k``), as ``butterfly
    score`` shows them (``core.metrics``)."""
    windows = recency_ks(played, ask_at, window_k)
    base = baselines_of(played, ask_at, windows)
    parts = [f"{baseline_label(name)} {_share(b.final_match)}" for name, b in base.items()]
    return f"baselines on the same {len(played)} scenarios: final match " + ", ".join(parts)


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def headline_text(model: str, verdicts: Sequence[Verdict], *, scenarios: Mapping[str, Scenario],
                  ask_at: Sequence[int] | None = None, window_k: int | None = None) -> str:
    """What the notebook prints under its run, every figure from ``butterfly score``'s
    aggregate of the same answers: how it asked (a run asked at chosen turns, in the words of
    ``butterfly score``), the leaderboard number (the task's value and ci), the line of
    :func:`figures_line`, the effective final match and the abstentions by reason as ``score``
    prints them, the baselines' (:func:`baselines_line`; ``window_k``: the suite manifest's
    second K), the cost per correct conversation and latency (:func:`efficiency_text`), and the
    horizon in the words ``butterfly score`` prints."""
    agg = figures(verdicts, scenarios)
    head = headline(agg)
    lo, hi = head["interval"]
    asked = asked_line(ask_at)
    lines = [] if asked is None else [asked]
    lines.append(f"{model}: final match {head['final_match']:.1%} ({head['final_matches']}/"
                 f"{head['n_scenarios']}), 95% interval [{lo:.1%}, {hi:.1%}] "
                 f"(± {head['ci']:.1%})")
    lines.append(figures_line(agg, ask_at))
    lines.append(f"effective final match (final match x coverage): "
                 f"{_pct(head['effective_final_match'])}")
    reasons = abstentions_line(verdicts)
    lines += [] if reasons is None else [reasons]
    lines.append(baselines_line([scenarios[v["id"]] for v in verdicts], ask_at, window_k))
    lines.append(efficiency_text(verdicts))
    return "\n".join([*lines, horizon_line(horizon_of(verdicts))])


def efficiency_of(verdicts: Sequence[Verdict]) -> Efficiency:
    """``butterfly score``'s efficiency figures (``core.efficiency``) of the notebook's answers,
    from what kaggle-benchmarks reports of each call: its tokens, cost and latency (it reports
    no reasoning tokens). An ask over the context window got no answer: it spent nothing."""
    calls = [Spent(ConversationKey(v["id"], "", 0), a["turn"], a["cost_usd"],
                   None if a["input_tokens"] is None and a["output_tokens"] is None
                   else (a["input_tokens"] or 0) + (a["output_tokens"] or 0),
                   None, a["latency_s"])
             for v in verdicts for a in v["answers"] if not _answered_nothing(a)]
    return efficiency(calls, {ConversationKey(v["id"], "", 0): (v["category"], v["final_match"])
                              for v in verdicts}, ())


def _answered_nothing(a: AnswerRow) -> bool:
    return a["raw"] == "" and a["abstention"] == "context"


def efficiency_text(verdicts: Sequence[Verdict]) -> str:
    """Cost per correct conversation (tokens per correct conversation when kaggle-benchmarks
    reports no cost) and the latency per call, in the words of ``butterfly score``."""
    e = efficiency_of(verdicts)
    line = per_correct_line(e)
    if e.cost_usd is None and e.correct:
        line += " (kaggle-benchmarks reported no cost for some of this model's calls)"
    return "\n".join([line, latency_line(e)])


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False)

