"""Restate mode in the Kaggle notebook, asked at chosen turns (contract v3, section 4;
docs/kaggle.md, "Asking at chosen turns").

``BUTTERFLY_MODE=restate`` plays ``butterfly run --mode restate --protocol json``: each asked
turn is one stateless call (a fresh chat holding the system message and one user message with the
initial spec and every edit up to that turn), and ``BUTTERFLY_ASK_AT`` chooses the turns as
``--ask-at`` does (the suite's default ask points when unset). A turn not asked is no call and
is not scored; the verdicts are :func:`butterfly.kaggle.runner.verdict`'s with the ask points.
Inlined into the notebook after the runner, so it imports only ``core``, the runner and
``oracle``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Final, TypedDict

from butterfly.core.asking import EVERY, LAST
from butterfly.core.prompts import Message
from butterfly.kaggle.runner import MODE, Answer, asked_of, call_with_retries, messages_for
from oracle import Scenario

MODES: Final = ("chat", "restate")
"""The modes the notebook plays (``BUTTERFLY_MODE``; chat by default)."""


def mode_of(text: str) -> str:
    """The notebook's ``MODE`` (``BUTTERFLY_MODE``, ``butterfly run --mode``): chat (the
    default, also when empty) or restate (each asked turn one stateless call)."""
    mode = text.strip() or MODE
    if mode not in MODES:
        raise ValueError(f"BUTTERFLY_MODE={mode!r}: the notebook plays {' or '.join(MODES)}")
    return mode


def ask_at_of(text: str, mode: str, default: Sequence[int] | None) -> tuple[int, ...] | None:
    """The ask points from the notebook's ``ASK_AT`` (``BUTTERFLY_ASK_AT``), read as ``butterfly
    run --ask-at`` reads its value ("5,10,20" -> those turns; "last" -> (), the last turn only;
    "all" -> None, every turn). Empty in restate mode: the suite's ``default`` (its manifest's
    ``ask_at``), as in the CLI; chat mode asks every turn and takes none."""
    text = text.strip()
    if mode != "restate":
        if text:
            raise ValueError(f"BUTTERFLY_ASK_AT is for BUTTERFLY_MODE=restate (each ask a "
                             f"stateless call); mode {mode} asks every turn")
        return None
    if not text:
        return None if default is None else tuple(sorted(set(default)))
    if text in (EVERY, LAST):
        return None if text == EVERY else ()
    try:
        turns = [int(x.strip()) for x in text.split(",")]
    except ValueError:
        turns = []
    if not turns or min(turns) < 1:
        raise ValueError(f"BUTTERFLY_ASK_AT takes turns from 1, comma-separated (e.g. "
                         f"5,10,20,40,80), '{LAST}' or '{EVERY}'; got {text!r}")
    return tuple(sorted(set(turns)))


def ask_messages(scenario: Scenario, turn: int) -> list[Message]:
    """The one stateless call of the ask at ``turn``: the system message and the initial spec
    with every edit up to ``turn``, exactly as ``butterfly run --mode restate`` sends it."""
    return messages_for(scenario, turn, [], "restate")


def play_asked(
    scenario: Scenario,
    ask_at: Sequence[int] | None,
    respond_to: Callable[[list[Message]], Answer],
    *,
    retries: Callable[[Callable[[], Answer]], Answer] = call_with_retries,
) -> list[Answer]:
    """Restate mode: for each asked turn (:func:`asked_of`), one stateless call,
    ``respond_to(ask_messages(scenario, t))`` in a fresh chat (retried on transient errors).
    A turn not asked is no call."""
    return [retries(functools.partial(respond_to, ask_messages(scenario, t)))
            for t in asked_of(scenario, ask_at)]


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
