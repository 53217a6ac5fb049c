"""The text of ``butterfly run --dry-run``: what the run would send, a row per slice and the
total, with how each figure was made (the tokenizer, the completion estimate, the price)."""

from __future__ import annotations

from collections.abc import Sequence

from butterfly.core.printable import printable
from butterfly.engine.tracks import track
from butterfly.runs.dryrun import Bill, DryRun

HEAD = ("slice", "calls", "prompt tokens", "completion tokens", "cached prefix", "cost USD")


def usd(x: float | None) -> str:
    """A cost as the table shows it: "no price" when none is known (never 0)."""
    if x is None:
        return "no price"
    return f"{x:,.4f}" if x < 100 else f"{x:,.2f}"


def bill_row(b: Bill, label: str | None = None) -> tuple[str, ...]:
    """A bill's row: its slice (or ``label``), calls, tokens and cost."""
    cached = "-" if b.cached_tokens is None else f"{b.cached_tokens:,}"
    return (b.slice if label is None else label, f"{b.calls:,}", f"{b.prompt_tokens:,}",
            f"{b.completion_tokens:,}", cached, usd(b.cost_usd))


def table(rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """Rows as aligned text: the first ``left`` columns aligned left, the others right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i < left else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in rows]


def price_line(d: DryRun) -> str:
    if d.rates_usd_per_mtok is None and not d.billed:
        return f"price: none to pay ({d.model} runs on this machine)"
    if d.rates_usd_per_mtok is None:
        return (f"price: no price known for {d.model}, so no cost is shown (not zero: "
                "unknown)")
    prompt, completion, cached = d.rates_usd_per_mtok
    return (f"price: USD {prompt:g} a million prompt tokens, {completion:g} completion, "
            f"{cached:g} cached prompt")


def notes(d: DryRun) -> list[str]:
    """How the figures were made, one line each."""
    return [
        f"prompt tokens: counted with {d.tokenizer}, plus {d.template_tokens_per_message} "
        f"template tokens a message and {d.template_tokens_per_call} a call",
        f"completion tokens: {d.completion} (at most {d.completion_tokens_max:,} if every "
        "answer reached it)",
        ("cached prefix: " + d.caching) if d.caching is not None else
        "cached prefix: none counted (the provider caches no prompt prefix by itself)",
        price_line(d),
    ]


def bill_text(d: DryRun) -> str:
    """``run --dry-run``'s report: a header, the table, how it was made."""
    head = (f"dry run: {d.model} on {d.suite} ({d.mode} mode, {d.track} track); nothing was "
            "sent and nothing written")
    lines = [printable(head)]
    if d.recorded:
        lines.append(f"{d.recorded:,} calls already recorded in the run directory are not sent "
                     "again; the rows count what a resume would send")
    lines += ["", *table([HEAD, *(bill_row(b) for b in d.slices), bill_row(d.total)]), ""]
    lines += [printable(n) for n in notes(d)]
    lines += [window_line(d)]
    if d.max_cost is not None:
        lines.append(budget_line(d.max_cost, d.total.cost_usd))
    return "\n".join(lines)


def window_line(d: DryRun) -> str:
    """Whether the prompts fit the model's context window (litellm's ``max_input_tokens``)."""
    largest = f"the largest prompt is {d.largest_prompt_tokens:,} tokens"
    if d.context_window is None:
        return (f"context window: not known for {d.model} (litellm's map has no "
                f"max_input_tokens for it); {largest}")
    if not d.calls_over_window:
        return f"context window: {d.context_window:,} tokens; every prompt fits ({largest})"
    over = (f"context window: {d.calls_over_window:,} of {d.total.calls:,} calls have prompts "
            f"over the model's {d.context_window:,} tokens ({largest}): the provider would "
            "refuse them")
    if track(d.track).context_abstains(d):
        return (f"{over}; the run records each as an abstention (reason context) and pays "
                "nothing for it, so the table counts those calls too high")
    return (f"{over}, and the run would stop at the first: the table counts calls it cannot "
            "make (try a shorter suite, or --mode restate with --ask-at, which records an ask "
            "over the window as an abstention)")


def budget_line(limit: float, cost: float | None) -> str:
    """What ``--max-cost`` would do to the run, as far as the estimate tells."""
    if cost is None:
        return (f"--max-cost {limit:g}: no price is known, so the run would refuse to start "
                "(a budget needs a price: give one with --price FILE or --price-per-mtok IN,OUT)")
    if cost > limit:
        return (f"--max-cost {limit:g}: the estimate (USD {cost:,.4f}) is above it; the run "
                "would stop before a call could take it past the budget (status budget)")
    return f"--max-cost {limit:g}: the estimate (USD {cost:,.4f}) is within it"
