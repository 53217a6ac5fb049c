"""What the Kaggle notebook runs around kaggle-benchmarks: the conversation, retries, verdicts.

``butterfly notebook build`` inlines this module into ``notebooks/butterflybench.ipynb``
together with the oracle, the prompts, the parser, the scorer and the statistics, so the
notebook plays exactly the CLI's conversation (``butterfly run --protocol json``) and scores it
with the same code. Nothing here imports kaggle_benchmarks: the notebook hands in two
callables (``say`` puts the user's message in the chat, ``respond`` asks the model once), so
this module is tested without it.

This is the harness's second seam to models, beside ``butterfly.models``: kaggle-benchmarks owns
the client (its SDK gives no way to share ours), so the notebook has its own retry loop here.
It shares the CLI's error classes (:func:`butterfly.core.wire.exception_kind`, the HTTP
statuses as the fast path classifies them) and :class:`RetryPolicy` (``butterfly.core.vocab``);
it may import only ``butterfly.core`` and
``oracle``, since the notebook inlines it.

Why protocol ``json`` and not ``schema``: kaggle-benchmarks sends a schema as
``response_format`` only for the models its model proxy declares able to take one, and for the
others it adds a different system message instead; the prompt would then depend on the model.
The notebook sends no schema, and every model sees the same messages.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypedDict, TypeVar

from butterfly.core.agents import baseline_label
from butterfly.core.asking import ASKED_NOTE, asked_line, asked_turns
from butterfly.core.horizon_text import horizon_line
from butterfly.core.metrics import (
    ScenarioScore,
    aggregate,
    baselines_of,
    horizon_over,
    recency_ks,
    score_scenario,
)
from butterfly.core.parse import parse_answer
from butterfly.core.prompts import Message, messages
from butterfly.core.results import Aggregate, HorizonResult
from butterfly.core.stats import proportion_interval
from butterfly.core.vocab import KAGGLE_RETRY, RetryPolicy
from butterfly.core.wire import exception_kind
from oracle import Scenario, replay

T = TypeVar("T")

LAYOUT: Final = "E"
MODE: Final = "chat"
"""The default mode (``BUTTERFLY_MODE``, ``butterfly.kaggle.restate``): a conversation, the
model's answers in its history."""
STRATEGY: Final = "zero-shot"
PROTOCOL: Final = "json"
PARSE: Final = "structured"
TEMPERATURE: Final = 0
SEED: Final = 0
"""The CLI's prompt and defaults (``butterfly run --protocol json``), one conversation per
scenario."""
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


ATTEMPTS: Final = KAGGLE_RETRY.retries + 1
BASE_DELAY: Final = KAGGLE_RETRY.base
MAX_DELAY: Final = KAGGLE_RETRY.cap
"""A call is tried up to ATTEMPTS times; the waits double from BASE_DELAY, capped at MAX_DELAY
(2, 4, 8, 16, 32 s: about a minute in all before a scenario is given up). The policy is
``butterfly.core.vocab``'s and the error classes ``butterfly.core.wire``'s, shared with the
CLI's client."""
class ProviderFailure(RuntimeError):
    """A call that still got no answer after every attempt: a provider error, never a model
    failure. The notebook's per-scenario task fails with it, and the scenario gets no verdict."""


def is_transient(exc: BaseException) -> bool:
    """True when retrying may help: rate limits, timeouts, 5xx, dropped connections (the CLI's
    error classes, :func:`butterfly.core.wire.exception_kind`). A request the provider refused
    (400, 401, 403 such as "estimated cost exceeds your quota", 404) is not retried: it would
    be refused again."""
    return exception_kind(exc) is not None


def describe(exc: BaseException) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"[:300]


def call_with_retries(
    call: Callable[[], T],
    *,
    attempts: int = ATTEMPTS,
    base_delay: float = BASE_DELAY,
    max_delay: float = MAX_DELAY,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] | None = print,
) -> T:
    """``call()``, retried on transient provider errors by the CLI's retry mechanism
    (:meth:`RetryPolicy.wait`, without jitter: 2, 4, 8, 16, 32 s). Raises
    :class:`ProviderFailure` when every attempt failed, and re-raises a non-transient error at
    once."""
    policy = RetryPolicy(attempts - 1, base_delay, max_delay, jitter=False)
    failed = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                raise
            failed += 1
            wait = policy.wait(failed)
            if wait is None:
                raise ProviderFailure(
                    f"no answer after {failed} attempts: {describe(exc)}") from exc
            if log is not None:
                log(f"attempt {failed}/{attempts} failed ({describe(exc)}); "
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


def system_text(scenario: Scenario) -> str:
    """The system message, exactly as the CLI sends it (the same for every scenario)."""
    return messages_for(scenario, 1, [])[0]["content"]


def user_text(scenario: Scenario, turn: int) -> str:
    """The user's message of ``turn`` (1-based), exactly as the CLI sends it."""
    return messages_for(scenario, turn, [""] * (turn - 1))[-1]["content"]


def messages_for(scenario: Scenario, turn: int, answers: Sequence[str],
                 mode: str = MODE) -> list[Message]:
    """Every message the CLI (``butterfly run --protocol json --mode MODE``) sends for
    ``turn`` after these earlier answers (restate mode: none, each call is stateless)."""
    return messages(scenario, turn, answers, LAYOUT, mode, STRATEGY, PROTOCOL)


def asked_of(scenario: Scenario, ask_at: Sequence[int] | None) -> Sequence[int]:
    """The turns of ``scenario`` asked (:func:`butterfly.core.asking.asked_turns`)."""
    return asked_turns(len(scenario.turns), ask_at)


@dataclass(frozen=True)
class Answer:
    """One answer as the model gave it."""

    text: str
    output_tokens: int | None = None


def play(
    scenario: Scenario,
    say: Callable[[str], object],
    respond: Callable[[], Answer],
    *,
    retries: Callable[[Callable[[], Answer]], Answer] = call_with_retries,
    text_of: Callable[[Scenario, int], str] | None = None,
) -> list[Answer]:
    """One conversation (the system message is already in the chat): for each turn, ``say``
    the user's message once (``text_of(scenario, turn)``, :func:`user_text` by default; the
    code track passes its own), then ``respond``
    (retried on transient errors: a retry re-sends the same history, never the user's
    message twice). The model's answers stay in the chat, whatever they are."""
    text_of = text_of or user_text
    answers: list[Answer] = []
    for t in range(1, len(scenario.turns) + 1):
        say(text_of(scenario, t))
        answers.append(retries(respond))
    return answers


def truncated(answer: Answer, max_tokens: int) -> bool:
    """The CLI reads ``finish_reason == "length"``; kaggle-benchmarks does not pass the finish
    reason on, so an answer that used the whole output budget counts as cut off."""
    return answer.output_tokens is not None and answer.output_tokens >= max_tokens


class AnswerRow(TypedDict):
    turn: int
    raw: str
    output_tokens: int | None
    spec: dict[str, str] | None
    abstention: str | None


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


class Headline(TypedDict):
    final_match: float
    final_matches: int
    n_scenarios: int
    interval: list[float]
    ci: float


def verdict(scenario: Scenario, answers: Sequence[Answer], max_tokens: int,
            ask_at: Sequence[int] | None = None) -> Verdict:
    """Parse and score one complete conversation with the CLI's parser and scorer;
    ``answers`` are to the asked turns when the run asks at chosen turns (``ask_at``)."""
    parsed = [parse_answer(a.text, PARSE, truncated=truncated(a, max_tokens)) for a in answers]
    asked = None if ask_at is None else asked_of(scenario, ask_at)
    score = score_scenario(scenario, [p.spec for p in parsed], replay(scenario), asked)
    return verdict_of(score, [
        AnswerRow(turn=t, raw=a.text, output_tokens=a.output_tokens, spec=p.spec,
                  abstention=p.reason)
        for t, a, p in zip(score.turn_numbers(), answers, parsed, strict=True)
    ])


def verdict_of(score: ScenarioScore, answers: list[AnswerRow]) -> Verdict:
    """The verdict fields of one scored scenario (both tracks record them alike)."""
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
        answers=answers,
    )


def headline(final_matches: Sequence[bool]) -> Headline:
    """The leaderboard number: the share of scenarios whose final spec matches, with its 95%
    interval (Wilson, as ``butterfly score``). Kaggle stores one number beside the value
    (value ± ci), so ``ci`` is the larger distance from the share to an end of the interval:
    the symmetric band then contains the whole (asymmetric) interval."""
    n = len(final_matches)
    if n == 0:
        raise ValueError("no scenario was scored")
    k = sum(bool(m) for m in final_matches)
    share = k / n
    interval = proportion_interval([[bool(m)] for m in final_matches])
    assert interval is not None
    lo, hi = interval
    return Headline(final_match=share, final_matches=k, n_scenarios=n, interval=[lo, hi],
                    ci=max(share - lo, hi - share))


def horizon_of(verdicts: Sequence[Verdict]) -> HorizonResult:
    """The horizon of the notebook's conversations, computed by ``butterfly score``'s function
    (``core.metrics.horizon_over``): a chain's length is its number of turns, and asked at
    chosen turns, each ask at turn t is a chain of length t."""
    result = horizon_over([(v["id"], v["asked"][-1] if v["asked"] else len(v["turn_match"]),
                            v["turn_match"], v["asked"]) for v in verdicts])
    if result is None:
        raise ValueError("no scenario was scored")
    return result


def scores_of(verdicts: Sequence[Verdict], scenarios: Mapping[str, Scenario]
              ) -> list[ScenarioScore]:
    """Each verdict scored again by ``butterfly score``'s scorer, from its answers' specs."""
    return [score_scenario(scenarios[v["id"]], [a["spec"] for a in v["answers"]],
                           asked=v["asked"]) for v in verdicts]


def figures(verdicts: Sequence[Verdict], scenarios: Mapping[str, Scenario]) -> Aggregate:
    """The figures ``butterfly score`` reports for the same answers (``core.metrics.
    aggregate``): final and turn match, wobble, first divergent turn, abstention, ..."""
    return aggregate(scores_of(verdicts, scenarios))


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


def headline_text(model: str, verdicts: Sequence[Verdict], *,
                  scenarios: Mapping[str, Scenario] | None = None,
                  ask_at: Sequence[int] | None = None, window_k: int | None = None) -> str:
    """What the notebook prints under its run: how it asked (a run asked at chosen turns, in
    the words of ``butterfly score``), the leaderboard number (the task's value and ci), with
    ``scenarios`` the line of :func:`figures_line` and the baselines' (:func:`baselines_line`;
    ``window_k``: the suite manifest's second K), and the horizon in the words ``butterfly
    score`` prints."""
    head = headline([v["final_match"] for v in verdicts])
    lo, hi = head["interval"]
    asked = asked_line(ask_at)
    lines = [] if asked is None else [asked]
    lines.append(f"{model}: final match {head['final_match']:.1%} ({head['final_matches']}/"
                 f"{head['n_scenarios']}), 95% interval [{lo:.1%}, {hi:.1%}] "
                 f"(± {head['ci']:.1%})")
    if scenarios is not None:
        lines.append(figures_line(figures(verdicts, scenarios), ask_at))
        lines.append(baselines_line([scenarios[v["id"]] for v in verdicts], ask_at, window_k))
    return "\n".join([*lines, horizon_line(horizon_of(verdicts))])


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False)
