"""The efficiency figures in words: one text for ``butterfly score``, ``runs`` and the Kaggle
notebook.

Rendering only, from the typed result (``core.scores.Efficiency``, ``score --json``'s
``efficiency``); the computation is ``core/efficiency.py``. Inlined into the notebook so that
both say the same thing. Every figure names its denominator; a figure with nothing to divide
(no conversation matched, a call with no price, no call reporting tokens) reads "none" with
why, never 0 (docs/metrics.md, "Efficiency"). Incomplete conversations are said apart.
"""

from __future__ import annotations

from butterfly.core.scores import Efficiency, EfficiencySlice

_TURNS_SHOWN = 8
"""At most this many asked turns are listed on the line (a chat run asks every turn)."""


def money(usd: float) -> str:
    """Dollars with four significant figures below a cent (small runs cost fractions of one)."""
    return f"${usd:.4f}" if usd >= 0.01 else f"${usd:.4g}"


def _number(x: float) -> str:
    return f"{x:,.1f}" if x != int(x) else f"{int(x):,}"


def per_correct_cell(e: EfficiencySlice) -> str:
    """One short cell (``runs``, the notebook's headline): cost per correct conversation, or
    tokens per correct conversation when a call has no price; "-" when none."""
    if e.cost_per_correct_usd is not None:
        return money(e.cost_per_correct_usd)
    if e.tokens_per_correct is not None:
        return f"{_number(e.tokens_per_correct)} tokens"
    return "-"


def _why_none(e: EfficiencySlice) -> str:
    if e.conversations == 0:
        return "no complete conversation"
    if e.correct == 0:
        return "no conversation matched"
    return "a call has no price"


def per_correct_line(e: EfficiencySlice) -> str:
    """Cost (else tokens) per correct conversation, with its numerator and denominator."""
    matched = f"{e.correct} of {e.conversations} complete conversations matched"
    if e.cost_per_correct_usd is not None and e.cost_usd is not None:
        return (f"cost per correct conversation: {money(e.cost_per_correct_usd)} "
                f"({money(e.cost_usd)} / {matched})")
    line = f"cost per correct conversation: none ({_why_none(e)})"
    if e.tokens_per_correct is not None and e.tokens is not None:
        line += (f"; tokens per correct conversation: {_number(e.tokens_per_correct)} "
                 f"({e.tokens:,} prompt + completion tokens / {matched})")
    elif e.correct and e.tokens is None:
        line += "; no call reported tokens"
    return line


def reasoning_line(e: Efficiency) -> str:
    """Reasoning tokens per edit, pooled and at each asked turn."""
    if e.reasoning_per_edit is None:
        return "reasoning tokens per edit: none (no call reported reasoning tokens)"
    head = (f"reasoning tokens per edit: {_number(e.reasoning_per_edit)} over every ask "
            "(an ask at turn t restates t edits)")
    known = {t: v for t, v in e.reasoning_per_edit_by_turn.items() if v is not None}
    if len(known) > _TURNS_SHOWN:  # a chat run asks every turn: score --json has each
        return head + f"; at each of {len(known)} asked turns in score --json"
    return head + "; by asked turn: " + ", ".join(f"turn {t} {_number(v)}"
                                                  for t, v in known.items())


def latency_line(e: Efficiency) -> str:
    """Median and 95th percentile of the calls the run sent (cache hits sent none)."""
    if e.latency_median_s is None or e.latency_p95_s is None:
        return "latency per call: none (no call was sent: every answer came from the cache)"
    return (f"latency per call: median {seconds(e.latency_median_s)}, 95th percentile "
            f"{seconds(e.latency_p95_s)} ({e.latency_calls} calls sent; answers from the cache "
            "apart)")


def seconds(x: float) -> str:
    """A latency with three significant figures, in milliseconds below a second."""
    return f"{x:.3g} s" if x >= 1 else f"{1000 * x:.3g} ms"


def incomplete_line(e: Efficiency) -> str | None:
    """The incomplete conversations, apart from every figure; None when there are none."""
    if not e.incomplete:
        return None
    cost = ("" if e.incomplete_cost_usd is None
            else f", their answered calls cost {money(e.incomplete_cost_usd)}")
    return (f"incomplete conversations, in no figure above: {e.incomplete}{cost}")


def efficiency_lines(e: Efficiency) -> list[str]:
    """The block under ``butterfly score``'s table."""
    lines = [per_correct_line(e), reasoning_line(e), latency_line(e)]
    late = incomplete_line(e)
    return lines + ([] if late is None else [late])
