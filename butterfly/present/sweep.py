"""The text of ``butterfly sweep``: the whole sweep's bill (a row per budget, then the total)
and its result (a row per budget: final match or horizon with its interval, cost, cost per
correct conversation, reasoning tokens per edit). Figures come computed
(``analysis/sweep_records.py``); this only lays them out."""

from __future__ import annotations

from butterfly.analysis.sweep_records import SweepBill, SweepBudget, SweepResult
from butterfly.core.printable import printable
from butterfly.present.bill import HEAD, bill_row, budget_line, notes, table, usd
from butterfly.present.text import pct


def sweep_bill_text(b: SweepBill) -> str:
    """The sweep's dry-run bill: a row per budget and the total, how it was made (the first
    budget's notes: the tokenizer and price are the same for every budget)."""
    first = b.budgets[0]
    lines = [printable(f"dry run of the sweep {b.name}: {first.model} on {first.suite} at "
                       f"{b.key}={','.join(b.values)}; nothing was sent and nothing written"),
             ""]
    rows = [("budget", *HEAD[1:]), *(bill_row(d.total, f"{b.key}={value}")
                                     for value, d in zip(b.values, b.budgets, strict=True)),
            bill_row(b.total, "total")]
    lines += [printable(x) for x in table(rows)]
    lines += ["", *(printable(n) for n in notes(first))]
    lines.append("reasoning tokens: not in the bill (a provider reports them only once spent)")
    if b.max_cost is not None:
        lines.append(budget_line(b.max_cost, b.total.cost_usd) + " (over the whole sweep)")
    return "\n".join(lines)


def _ci(ci: list[float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.1%}, {ci[1]:.1%}]"


def _horizon(b: SweepBudget) -> tuple[str, str]:
    ci = "-" if b.horizon_ci is None else "[" + ", ".join(
        "open" if x is None else f"{x:g}" for x in b.horizon_ci) + "]"
    if b.horizon is not None:
        return f"{b.horizon:.1f}", ci
    return (f"censored {b.horizon_censored}" if b.horizon_censored else "-"), ci


def _num(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def sweep_text(r: SweepResult) -> str:
    """The sweep's result: a row per budget, in the order given."""
    head = ["budget", "status", "conversations"]
    head += ["horizon", "95% interval"] if r.by_length else ["final match", "95% interval"]
    head += ["cost USD", "USD per correct", "tokens per correct", "reasoning per edit"]
    rows = [tuple(head)]
    for b in r.budgets:
        figure = _horizon(b) if r.by_length else (pct(b.final_match), _ci(b.final_match_ci))
        cost = "-" if b.status is None else usd(b.cost_usd)
        per = "-" if b.cost_per_correct_usd is None else usd(b.cost_per_correct_usd)
        rows.append((f"{r.key}={b.value}", b.status or "not played", f"{b.conversations:,}",
                     *figure, cost, per, _num(b.tokens_per_correct),
                     _num(b.reasoning_per_edit, 2)))
    lines = [printable(f"sweep {r.name}: {r.model} on {r.suite}, {len(r.budgets)} budgets of "
                       f"{r.key}"), "", *(printable(x) for x in table(rows)), ""]
    lines.append(f"spent: ${r.spent_usd:,.4f}" + (
        "" if r.max_cost is None else f" of --max-cost ${r.max_cost:g}"))
    lines += [printable(f"run: {b.run}") for b in r.budgets]
    if r.stopped is not None:
        lines.append(printable(f"stopped: {r.stopped}"))
    return "\n".join(lines)
