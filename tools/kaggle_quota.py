"""Size each frozen suite and mode against Kaggle's daily AI quota, with ``run --dry-run``'s
estimator, as the notebook plays them (``--protocol json``, layout E, ``max_tokens`` 8000).

    python tools/kaggle_quota.py [--write]

Prints the Markdown tables of docs/kaggle.md ("Sized to the daily quota"); ``--write`` puts
them there (between the ``quota-table`` markers) and writes ``notebooks/estimate.json``, the
per-scenario estimate the notebook's estimate cell sums over the scenarios it will play, for
each model below and each mode the notebook plays: chat (``suites``), restate asking every turn
(``restate``) and restate asked at a suite's default ask points (``asked``: the suites whose
manifest names them). Then rebuild the notebook (``butterfly notebook build``).
Costs are at the models' list prices in litellm's offline map, without any cached-token
discount (the quota is charged on an estimate made before the call).
"""

from __future__ import annotations

import functools
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from butterfly import api
from butterfly.kaggle.runner import MAX_TOKENS, long_slice
from butterfly.models.price_map import rates
from butterfly.suite.load import ask_at_of, load_suite, resolve_suite

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "kaggle.md"
ESTIMATE = ROOT / "notebooks" / "estimate.json"
MODELS = ("openai/gpt-5", "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-flash",
          "deepseek/deepseek-chat")
"""Models of the kind Kaggle's benchmarks offer, one per tokenizer family (Gemini's tokenizer
is not shipped: counted with cl100k_base as a proxy)."""
SUITES = ("butterfly-40", "butterfly-long", "butterfly-code")
MODES = ("chat", "restate", "asked")
"""Chat mode; restate mode asking every turn (``--ask-at all``); restate mode asked at the
suite's default ask points (``--mode restate`` alone, for a suite whose manifest names them)."""
HEADINGS = {"chat": "chat mode", "restate": "restate mode, every turn asked",
            "asked": "restate mode asked at the suite's default ask points"}
ASK_AT = {"chat": None, "restate": "all", "asked": None}
LONG_SLICE = 2
"""The notebook's default slice of butterfly-long (``LONG_PER_LENGTH``)."""
BEGIN, END = "<!-- quota-table: begin -->", "<!-- quota-table: end -->"

Per = dict[str, tuple[int, int, int]]
"""scenario id -> (calls, prompt tokens, completion tokens)."""


def modes(suite: str) -> tuple[str, ...]:
    """The modes a suite is estimated in: the code track plays chat mode only; "asked" for a
    suite with default ask points."""
    if suite == "butterfly-code":
        return ("chat",)
    return MODES if ask_at_of(resolve_suite(suite)) else MODES[:2]


def per_scenario(model: str, suite: str, mode: str, tmp: Path) -> tuple[str, Per]:
    """The dry run's tokenizer label and its bill per scenario."""
    code = suite == "butterfly-code"  # programs, not JSON: no protocol to choose
    d = api.dry_run(model=model, suite=suite, mode="chat" if mode == "chat" else "restate",
                    ask_at=ASK_AT[mode], protocol=None if code else "json",
                    max_tokens=MAX_TOKENS, slice_by="scenario", out=tmp / "never-written")
    return d.tokenizer, {b.slice: (b.calls, b.prompt_tokens, b.completion_tokens)
                         for b in d.slices}


def usd(model: str, prompt: int, completion: int) -> str:
    r = rates(model)
    return "no price" if r is None else f"{r.usd(prompt, completion):,.2f}"


def rows(model: str, name: str, ids: Sequence[str], per: Per) -> list[str]:
    calls = sum(per[i][0] for i in ids)
    prompt, completion = sum(per[i][1] for i in ids), sum(per[i][2] for i in ids)
    return [name, model, f"{calls:,}", f"{prompt / 1e6:,.2f} M", f"{completion / 1e3:,.0f} k",
            usd(model, prompt, completion), usd(model, prompt, calls * MAX_TOKENS)]


@functools.cache
def variants(suite: str) -> list[tuple[str, list[str]]]:
    """The scenario sets a table row prices: the whole suite (and the notebook's slice)."""
    scenarios = load_suite(resolve_suite(suite))
    out = [(suite, [s.id for s in scenarios])]
    if suite == "butterfly-long":
        out.insert(0, (f"butterfly-long, {LONG_SLICE} of each length",
                       [s.id for s in long_slice(scenarios, LONG_SLICE)]))
    return out


HEAD = ["suite", "model", "calls", "prompt tokens", "completion tokens", "USD",
        "USD if every answer took max_tokens"]


def table(lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    return "\n".join([*out, *("| " + " | ".join(r) + " |" for r in lines)])


def main(write: bool) -> None:
    tables: dict[str, list[list[str]]] = {m: [] for m in MODES}
    estimate: dict[str, Any] = {"models": {}, "suites": {}, "restate": {}, "asked": {},
                                "max_tokens": MAX_TOKENS}
    with tempfile.TemporaryDirectory() as tmp:
        for suite in SUITES:
            for mode in modes(suite):
                for model in MODELS:
                    label, per = per_scenario(model, suite, mode, Path(tmp))
                    tables[mode] += [rows(model, n, ids, per) for n, ids in variants(suite)]
                    r = rates(model)
                    estimate["models"][model] = {"tokenizer": label, "usd_per_token": None
                                                 if r is None else [r.prompt, r.completion]}
                    _keep(estimate, suite, mode, model, per)
    text = "\n\n".join(f"**{HEADINGS[mode]}**\n\n{table(sorted(tables[mode], key=_order))}"
                       for mode in MODES)
    print(text)
    if write:
        doc = DOC.read_text(encoding="utf-8")
        doc = re.sub(f"{re.escape(BEGIN)}.*?{re.escape(END)}",
                     lambda _: f"{BEGIN}\n{text}\n{END}", doc, flags=re.DOTALL)
        DOC.write_text(doc, encoding="utf-8")
        ESTIMATE.write_text(json.dumps(estimate, sort_keys=True) + "\n", encoding="utf-8")


def _keep(estimate: dict[str, Any], suite: str, mode: str, model: str, per: Per) -> None:
    """Put one model's bill per scenario into the estimate's part for ``mode``."""
    if mode == "asked":
        part = estimate["asked"].setdefault(suite, {"ask_at": ask_at_of(resolve_suite(suite)),
                                                    "scenarios": {}})
        into = part["scenarios"]
    else:
        into = estimate["suites" if mode == "chat" else "restate"].setdefault(suite, {})
    for sid, (calls, p, c) in per.items():
        into.setdefault(sid, {"calls": calls, "prompt": {}, "completion": {}})
        into[sid]["prompt"][model], into[sid]["completion"][model] = p, c


def _order(row: list[str]) -> tuple[int, int]:
    names = [n for s in SUITES for n, _ in variants(s)]
    return names.index(row[0]), MODELS.index(row[1])


if __name__ == "__main__":
    main("--write" in sys.argv[1:])
