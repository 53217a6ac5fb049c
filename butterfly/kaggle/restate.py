"""Restate mode in the Kaggle notebook, asked at chosen turns (contract v3, section 4;
docs/kaggle.md, "Asking at chosen turns").

``BUTTERFLY_MODE=restate`` plays ``butterfly run --mode restate --protocol json``: each asked
turn is one stateless call (a fresh chat holding the system message and one user message with the
initial spec and every edit up to that turn), and ``BUTTERFLY_ASK_AT`` chooses the turns as
``--ask-at`` does (the suite's default ask points when unset). A turn not asked is no call and
is not scored; the verdicts are :func:`butterfly.kaggle.runner.verdict`'s with the ask points.
The asks are the engine's (:func:`butterfly.kaggle.runner.converse`); the settings are read by
:mod:`butterfly.kaggle.settings` (``mode_of`` and ``ask_at_of``). Inlined
into the notebook after the runner, so it imports only ``core``, ``engine``, the notebook's
modules before it and ``oracle``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, TypedDict

from butterfly.core.prompts import Message
from butterfly.engine.conversation import Conversation
from butterfly.kaggle.runner import MAX_TOKENS, Answer, Retries, converse, messages_for
from butterfly.kaggle.settings import PROTOCOL, STRATEGY, Settings
from oracle import Scenario


def ask_messages(scenario: Scenario, turn: int) -> list[Message]:
    """The one stateless call of the ask at ``turn``: the system message and the initial spec
    with every edit up to ``turn``, exactly as ``butterfly run --mode restate`` sends it."""
    return messages_for(scenario, turn, [], "restate")


class Asked:
    """A :class:`butterfly.kaggle.runner.Chat` of stateless calls: each ask's messages handed
    to ``respond_to`` (one call in a fresh chat). It records the answers."""

    def __init__(self, respond_to: Callable[[list[Message]], Answer]) -> None:
        self.respond_to, self.sent, self.answers = respond_to, list[Message](), list[Answer]()

    def send(self, messages: Sequence[Message], fresh: bool) -> None:
        self.sent = list(messages) if fresh else [*self.sent, *messages]

    def respond(self) -> Answer:
        answer = self.respond_to(list(self.sent))
        self.answers.append(answer)
        return answer

    def amend(self, text: str) -> None:
        pass  # each ask is a chat of its own: no answer is in a later one's history


def play_asked(
    scenario: Scenario,
    ask_at: Sequence[int] | None,
    respond_to: Callable[[list[Message]], Answer],
    *,
    retries: Retries | None = None,
) -> list[Answer]:
    """Restate mode: the engine's asks (:func:`butterfly.kaggle.runner.converse`), each one
    stateless call, ``respond_to(messages)`` in a fresh chat (retried on transient errors). A
    turn not asked is no call."""
    settings = Settings(mode="restate", ask_at=None if ask_at is None else tuple(ask_at))
    chat = Asked(respond_to)
    converse(Conversation(scenario, settings), chat, MAX_TOKENS, retries=retries)
    return chat.answers


class SuiteEntry(TypedDict):
    """A frozen suite the notebook carries (its ``SUITES``): sha256, track, default ask points,
    the second K of its recency baseline."""

    sha256: str
    track: str
    ask_at: list[int] | None
    window_k: int | None


class EstimateRow(TypedDict):
    """One scenario's estimate: its calls, and its prompt and completion tokens per model."""

    calls: int
    prompt: dict[str, int]
    completion: dict[str, int]


Rows = dict[str, EstimateRow]
"""scenario id -> its estimate."""


class AskedEstimate(TypedDict):
    ask_at: list[int]
    scenarios: Rows


class Estimate(TypedDict):
    """What :func:`estimate_rows` reads of ``notebooks/estimate.json`` (suite -> rows): chat
    mode (``suites``), restate mode asking every turn, and asked at the default points."""

    suites: dict[str, Rows]
    restate: dict[str, Rows]
    asked: dict[str, AskedEstimate]


def estimate_rows(estimate: Estimate, suite: str, mode: str,
                  ask_at: Sequence[int] | None) -> tuple[str, Rows]:
    """The estimate (``notebooks/estimate.json``, tools/kaggle_quota.py) of each scenario of
    ``suite`` played in ``mode`` with these ask points, and what it is of; no rows when the
    notebook carries none for them (it carries chat mode, restate mode asking every turn, and
    restate mode asked at the suite's default ask points)."""
    if mode == "chat":
        return "chat mode", estimate["suites"].get(suite, {})
    if ask_at is None:
        return "restate mode, every turn asked", estimate["restate"].get(suite, {})
    asked = estimate["asked"].get(suite)
    if asked is None or list(ask_at) != asked["ask_at"]:
        return f"restate mode asked at {list(ask_at)}", {}
    return (f"restate mode asked at turns {', '.join(map(str, ask_at))} and the last",
            asked["scenarios"])


ESTIMATED: Final = (STRATEGY, PROTOCOL, ("E",))
"""The prompt the carried estimate counts (strategy, protocol, layouts): the notebook's
defaults."""


def estimate_for(estimate: Estimate, suite: str, settings: Settings) -> tuple[str, Rows]:
    """:func:`estimate_rows` for the notebook's settings; no rows for a prompt other than the
    one the estimate counts (another strategy, protocol or layout: the cell says so)."""
    if (settings.strategy, settings.protocol, settings.layouts) != ESTIMATED:
        return (f"{settings.mode} mode, strategy {settings.strategy}, protocol "
                f"{settings.protocol}, layout {settings.layout}", {})
    return estimate_rows(estimate, suite, settings.mode, settings.ask_at)
