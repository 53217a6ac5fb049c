"""A run's tokens and cost, summed from its call records (``score``, the manifest, ``runs``).

A call's price is recorded when it is made (litellm's offline price map, in the one module that
talks to litellm), so summing never imports litellm. A model litellm does not price gives
``cost_usd: null`` with a note, never a failed run.
"""

from __future__ import annotations

from collections.abc import Iterable

from butterfly.core.results import Usage
from butterfly.runs.records import CallRecord

UNPRICED_NOTE = ("litellm's offline price map has no price for this model (a local or "
                 "self-hosted model, or a name it does not know): cost not counted")


def total_usage(records: Iterable[CallRecord]) -> Usage:
    """Totals over every call that got an answer (cost_usd), and over those this run sent
    itself, not served by the answer cache (spent_usd)."""
    calls = prompt = completion = cached = reasoning = priced = 0
    cost = spent = 0.0
    unpriced = unpriced_sent = False
    for rec in records:
        if rec.raw is None:
            continue
        calls += 1
        t = rec.tokens
        prompt += t.prompt or 0
        completion += t.completion or 0
        cached += t.cached or 0
        reasoning += t.reasoning or 0
        if rec.cost_usd is None:
            unpriced = True
            unpriced_sent = unpriced_sent or not rec.cached
            continue
        priced += 1
        cost += rec.cost_usd
        if not rec.cached:
            spent += rec.cost_usd
    return Usage(
        calls=calls, prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
        reasoning_tokens=reasoning, cost_usd=None if unpriced else round(cost, 8),
        spent_usd=None if unpriced_sent else round(spent, 8), priced_calls=priced,
        note=UNPRICED_NOTE if unpriced else "",
    )
