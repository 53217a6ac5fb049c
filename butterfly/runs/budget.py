"""``--max-cost``: how much a run may still spend, decided call by call.

:class:`Budget` reserves a call before it is made and settles it when its record comes back;
the player (``runs/play.py``) and ``butterfly sequential`` share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from butterfly.runs.calls import CallView
from butterfly.runs.records import CallRecord


@dataclass
class Budget:
    """``--max-cost``: a call is made only while the spending so far plus the estimated cost
    of it and of every call in flight (the mean cost per priced call so far) stays within the
    limit. The first call has no estimate. An answer without a price (no token counts, or
    counts that cannot be right: ``invalid_usage``; an unpriced model is refused before the
    first call) stops the run: the budget cannot hold. An absurd count is never priced (a
    $5e9 call), nor passed over in silence."""

    limit: float | None
    spent: float = 0.0
    priced: int = 0
    in_flight: int = 0
    stopped: bool = False
    unpriced: bool = False
    invalid: str | None = None
    """Why the provider's usage of the call that stopped the budget cannot be right, if so."""
    cautious: bool = False
    """Estimate each call at the dearest priced call so far, not the mean (``sequential``: two
    models priced differently share one budget)."""
    largest: float = 0.0

    @classmethod
    def of(cls, limit: float | None, records: Iterable[CallView],
           cautious: bool = False) -> Budget:
        """The budget of a run given what its directory has spent already."""
        budget = cls(limit, cautious=cautious)
        for rec in records:
            if rec.raw is not None and not rec.cached and rec.cost_usd is not None:
                budget.add(rec.cost_usd)
        return budget

    def add(self, cost: float) -> None:
        self.spent += cost
        self.priced += 1
        self.largest = max(self.largest, cost)

    def estimate(self) -> float:
        if self.cautious:
            return self.largest
        return self.spent / self.priced if self.priced else 0.0

    def reserve(self) -> bool:
        if self.limit is None:
            return True
        if self.stopped or self.spent + (self.in_flight + 1) * self.estimate() > self.limit:
            self.stopped = True
            return False
        self.in_flight += 1
        return True

    def settle(self, rec: CallRecord) -> None:
        if self.limit is None:
            return
        self.in_flight -= 1
        if rec.raw is None or rec.cached:
            return
        if rec.cost_usd is None:  # no counts, or counts that cannot be right: unknown cost
            self.unpriced = self.stopped = True
            self.invalid = None if rec.invalid_usage is None else rec.invalid_usage.reason
            return
        self.add(rec.cost_usd)
