"""A run's tokens and cost, summed from its call records (``score``, the manifest, ``runs``).

A call's price is recorded when it is made (the user's price when the run has one, else
litellm's offline price map), so summing never imports litellm. A model neither prices gives
``cost_usd: null`` with a note, never a failed run. What cached prompt tokens saved is summed
the same way (``saved_usd``, docs/cost.md). A call whose provider reported token counts that
cannot be right (``invalid_usage``; or, in a record made before they were checked, a count
negative or above ``core.usage.USAGE_CEILING``) is counted apart (``invalid_usage_calls``):
never summed or priced (issue 34).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from butterfly.core.efficiency import Spent
from butterfly.core.scores import Usage
from butterfly.core.turns import ConversationKey
from butterfly.core.usage import count_problem
from butterfly.core.user_price import UserPrice
from butterfly.models.registry import prefix_of

if TYPE_CHECKING:  # the calls module sums usage with this one: read for types only
    from butterfly.runs.calls import Record

UNPRICED_NOTE = ("litellm's offline price map has no price for this model (a local or "
                 "self-hosted model, or a name it does not know): cost not counted (give "
                 "one with --price)")
LOCAL_NOTE = "nothing to pay: the model runs on this machine (a scripted agent or a local/ model)"
"""The note of a run of a model that is never priced (``script/``, ``local/``): its cost is
unknown for no want of a price, so the note does not ask for one (as the dry run says)."""


def answered_nothing(rec: Record) -> bool:
    """Whether the record stands for no answer at all: a failed call, or an ask over the model's
    context window recorded as an abstention (reason ``context``, answered with nothing: the
    provider refused it, nothing was made or paid)."""
    return rec.raw is None or (rec.raw == "" and rec.abstention == "context")


def usage_invalid(rec: Record) -> bool:
    """Whether a call's token counts cannot be right: marked so when it was made, or, in a
    record made before usage was checked, a count negative or absurd (never summed)."""
    t = rec.tokens
    return rec.invalid_usage is not None or any(
        count_problem(name, n) for name, n in (("prompt", t.prompt), ("completion", t.completion),
                                               ("cached", t.cached), ("reasoning", t.reasoning)))


@dataclass
class Tally:
    """Running counts of a run's call records, as they are read or written (closing a run
    never re-reads its file): answered, failed, and the totals over every call that got an
    answer (cost_usd) and over those this run sent itself, not served by the answer cache
    (spent_usd)."""

    answered: int = 0
    errors: int = 0
    calls: int = 0
    prompt: int = 0
    completion: int = 0
    cached: int = 0
    reasoning: int = 0
    priced: int = 0
    cost: float = 0.0
    spent: float = 0.0
    saved: float = 0.0
    saved_calls: int = 0
    unpriced: bool = False
    unpriced_sent: bool = False
    invalid: int = 0

    def add(self, rec: Record) -> None:
        if rec.error is None:
            self.answered += 1
        else:
            self.errors += 1
        if answered_nothing(rec):
            return
        self.calls += 1
        if usage_invalid(rec):  # counted apart: its tokens and cost are unknown
            self.invalid += 1
            return
        t = rec.tokens
        self.prompt += t.prompt or 0
        self.completion += t.completion or 0
        self.cached += t.cached or 0
        self.reasoning += t.reasoning or 0
        if rec.cost_usd is None:
            self.unpriced = True
            self.unpriced_sent = self.unpriced_sent or not rec.cached
            return
        self.priced += 1
        self.cost += rec.cost_usd
        if rec.saved_usd is not None:
            self.saved += rec.saved_usd
            self.saved_calls += 1
        if not rec.cached:
            self.spent += rec.cost_usd

    def usage(self, price: UserPrice | None = None, model: str | None = None) -> Usage:
        """The totals; ``price``: the user's price the run's calls were priced by; ``model``:
        the run's, whose note says there is nothing to pay (:data:`LOCAL_NOTE`) when it runs
        on this machine (``script/``, ``local/``)."""
        local = model is not None and not prefix_of(model).priced
        return Usage(
            calls=self.calls, prompt_tokens=self.prompt, completion_tokens=self.completion,
            cached_tokens=self.cached, reasoning_tokens=self.reasoning,
            cost_usd=None if self.unpriced else round(self.cost, 8),
            spent_usd=None if self.unpriced_sent else round(self.spent, 8),
            priced_calls=self.priced,
            note=(LOCAL_NOTE if local else UNPRICED_NOTE) if self.unpriced else "",
            saved_usd=round(self.saved, 8) if self.saved_calls else None, price=price,
            invalid_usage_calls=self.invalid,
        )


def total_usage(records: Iterable[Record], price: UserPrice | None = None,
                model: str | None = None) -> Usage:
    """The usage of ``records`` (see :class:`Tally`), priced by ``price`` when the user
    gave one, of the run of ``model``."""
    tally = Tally()
    for rec in records:
        tally.add(rec)
    return tally.usage(price, model)


def spent_of(rec: Record) -> Spent | None:
    """What an answered call spent, as efficiency reads it (``core.efficiency``); None for a
    record of no answer (:func:`answered_nothing`). A call whose token counts cannot be right
    counts as usage counts it: apart (``invalid_usage_calls``), its tokens and cost in no
    total."""
    if answered_nothing(rec):
        return None
    key = ConversationKey(rec.scenario, rec.layout, rec.repeat)
    latency = None if rec.cached else rec.latency_s
    if usage_invalid(rec):
        return Spent(key, rec.turn, 0.0, None, None, latency)
    t = rec.tokens
    tokens = None if t.prompt is None and t.completion is None else (
        (t.prompt or 0) + (t.completion or 0))
    return Spent(key, rec.turn, rec.cost_usd, tokens, t.reasoning, latency)
