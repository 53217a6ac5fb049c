"""What a run plays: its scenarios (``--per-category``, then ``--limit``), conversations
(of a shard, ``--shard I/N``, its slice: :mod:`butterfly.runs.shards`) and the turns it asks
(``--ask-at``: :func:`asked`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from butterfly.core.asking import asked_turns
from butterfly.core.turns import ConversationKey
from butterfly.errors import UserError
from butterfly.runs.records import RunParams
from butterfly.runs.shards import shard_slice
from oracle import Scenario


class Conversation(NamedTuple):
    """One conversation a run plays: a scenario, in one layout, one repeat."""

    scenario: Scenario
    layout: str
    repeat: int


def select(scenarios: Sequence[Scenario], params: RunParams) -> list[Scenario]:
    """The scenarios a run plays: the first ``per_category`` of each category, then ``limit``."""
    chosen = list(scenarios)
    if params.per_category is not None:
        seen: dict[str, int] = {}
        kept = []
        for s in chosen:
            seen[s.category] = seen.get(s.category, 0) + 1
            if seen[s.category] <= params.per_category:
                kept.append(s)
        chosen = kept
    if params.limit is not None:
        chosen = chosen[: params.limit]
    return chosen


def check_ask_at(given: object, scenarios: Sequence[Scenario], params: RunParams) -> None:
    """Refuse, in one line, ask points the user gave (``given``: ``--ask-at`` as given, None
    for the suite's default) when every one is beyond every chain the run plays: the flag would
    ask nothing but each chain's last turn (``--ask-at 999999`` was taken in silence). A point
    beyond some chains, or beyond every chain beside points that are not, is ignored where it
    is beyond (docs/contract.md, "Asking at chosen turns"): a suite's usual points (5, 10, 20,
    40, 80) stay usable on a selection of its shorter chains."""
    if given is None or not params.ask_at or not scenarios:
        return
    longest = max(len(s.turns) for s in scenarios)
    if min(params.ask_at) > longest:
        points = ", ".join(str(t) for t in params.ask_at)
        them = "this ask point asks" if len(params.ask_at) == 1 else "these ask points ask"
        raise UserError(f"--ask-at {points}: {them} nothing, beyond every chain this run plays "
                        f"(the longest has {longest:,} turns): give ask points up to "
                        f"{longest:,} ('last' asks each chain's last turn)")


def asked(scenario: Scenario, params: RunParams) -> Sequence[int]:
    """The turns of ``scenario`` a run asks (every turn, unless it asks at chosen turns):
    :func:`butterfly.core.asking.asked_turns` with the run's ask points."""
    return asked_turns(len(scenario.turns), params.ask_at)


def conversations(scenarios: Sequence[Scenario], params: RunParams) -> list[Conversation]:
    """Every conversation a run plays, scenario by scenario (a shard's slice)."""
    every = [Conversation(s, layout, r) for s in scenarios for layout in params.layouts
             for r in range(params.repeats)]
    if params.shard is None:
        return every
    return shard_slice(every, params.shard, params.samples, params.ask_at)


def played(scenarios: Sequence[Scenario], params: RunParams) -> list[Scenario]:
    """The scenarios with a conversation in the run: all of them, or a shard's."""
    if params.shard is None:
        return list(scenarios)
    ids = {s.id for s, _, _ in conversations(scenarios, params)}
    return [s for s in scenarios if s.id in ids]


def conversation_keys(scenarios: Sequence[Scenario], params: RunParams) -> list[ConversationKey]:
    return [ConversationKey(s.id, layout, r) for s, layout, r in conversations(scenarios, params)]
