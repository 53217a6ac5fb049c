"""The report's headline in words: two or three sentences from its figures
(:class:`~butterfly.analysis.report.data.Headline`, docs/report.md, "Headline"): who leads, who
is within the leader's interval, who sits at the no-op baseline or at a recency baseline.

The frontier's sentences (:func:`frontier_sentences`) say a cheaper run matches as often as a
dearer one, or more often, only where ``analysis/report/frontier.py`` found a claim: the two
not separated in final match (or the cheaper above) and the paired cost ratio's interval below 1.

They claim a difference only where ``analysis/report/figures.py`` found the statistics'
support (``Headline.above``); otherwise the runs are "within each other's intervals". The chart
beside them is ``present/charts.py``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from butterfly.analysis.report.data import CostClaim, Frontier, Headline, HeadRow
from butterfly.core.agents import window_k
from butterfly.present.text import pct


def _names(labels: Sequence[str]) -> str:
    if len(labels) <= 2:
        return " and ".join(labels)
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def sentences(h: Headline) -> list[str]:
    """Two or three sentences a careful reader would say: who leads (only over the runs it is
    separated from), who is within the leader's interval, who sits at the no-op baseline."""
    rows, above, baselines = h.rows, h.above, h.baselines
    scored = sorted((i for i, r in enumerate(rows) if r.final_match is not None),
                    key=lambda i: -(rows[i].final_match or 0.0))
    if not scored:
        return ["No run has a complete conversation: there is no final match to show."]
    out: list[str] = []
    top = scored[0]
    lead = rows[top].label
    beaten = [rows[j].label for j in scored[1:] if (top, j) in above]
    tied = [rows[j].label for j in scored[1:] if (top, j) not in above]
    if len(scored) == 1:
        r = rows[top]
        out.append(f"{lead} has a final match of {pct(r.final_match)} "
                   f"(95% interval {pct(r.lo, '–')} to {pct(r.hi, '–')}).")
    elif beaten:
        out.append(f"{lead} leads {_names(beaten)} in final match "
                   "(the 95% interval of each difference excludes zero).")
    if tied:
        out.append(f"{_names([lead, *tied])} are within each other's intervals: "
                   "the data do not separate them.")
    noop = baselines.get("noop")
    if noop is not None:
        at = [rows[i].label for i in scored if h.on_baseline_scenarios[i]
              and _holds(rows[i], noop)]
        if at:
            verb = "is" if len(at) == 1 else "are"
            whose = "its" if len(at) == 1 else "each one's"
            out.append(f"{_names(at)} {verb} at the no-op baseline: {whose} 95% interval "
                       f"includes the no-op's {pct(noop)} (answering the initial spec every "
                       "turn).")
    return out + _recency(rows, scored, baselines, h.on_baseline_scenarios, noop)


def _holds(r: HeadRow, v: float) -> bool:
    """Whether the run's 95% interval includes ``v``."""
    return (r.lo or 0.0) <= v <= (r.hi or 0.0)


def _recency(rows: Sequence[HeadRow], scored: Sequence[int], baselines: Mapping[str, float],
             on_baseline_scenarios: Sequence[bool], noop: float | None) -> list[str]:
    """Runs above the no-op baseline whose interval includes a recency baseline's figure: the
    data do not show them remembering more than the last K messages."""
    out = []
    for name, v in baselines.items():
        k = window_k(name) if name.startswith("window:") else None
        if k is None:
            continue
        at = [rows[i].label for i in scored if on_baseline_scenarios[i]
              and (noop is None or (rows[i].lo or 0.0) > noop) and _holds(rows[i], v)]
        if at:
            whose = "its" if len(at) == 1 else "each one's"
            out.append(f"{_names(at)}: {whose} 95% interval includes the {pct(v)} of reading "
                       f"only the last {k} messages (the recency baseline window:k={k}).")
    return out


FRACTIONS = {2: "half", 3: "a third of", 4: "a quarter of", 5: "a fifth of", 6: "a sixth of",
             7: "a seventh of", 8: "an eighth of", 9: "a ninth of", 10: "a tenth of"}
"""How a ratio of 1/k reads."""


def claim_sentence(c: CostClaim, labels: Sequence[str], what: str) -> str:
    """One claim in words: who, how often, at what share of the cost, and on what it rests."""
    share = FRACTIONS[c.fraction] if c.fraction else f"{100 * c.ratio:.0f}% of"
    how = "more often than" if c.better else "as often as"
    why = ("its final match is above" if c.better
           else "the data do not separate their final match")
    return (f"{labels[c.cheaper]} matches {how} {labels[c.dearer]} at {share} the {what} "
            f"({why}; {what} ratio {c.ratio:.2f}, 95% interval {c.lo:.2f} to {c.hi:.2f}, "
            f"paired over {c.scenarios} scenarios).")


def frontier_sentences(f: Frontier | None, labels: Sequence[str]) -> list[str]:
    """The frontier's claims in words (none without the statistics' support)."""
    if f is None:
        return []
    what = "cost" if f.x_metric == "cost" else "tokens"
    return [claim_sentence(c, labels, what) for c in f.claims]
