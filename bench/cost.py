"""What butterfly-long costs in prompt tokens by mode, and how close ``run --dry-run`` comes.

The run is played for real, over the fast path, against a loopback OpenAI-compatible server
(``tests/fakeserver.py``) that counts the prompt tokens it receives the way a provider does:
each message rendered through a chat template (``<|im_start|>ROLE<|im_sep|>CONTENT<|im_end|>``,
the markers special tokens) and the reply primed (``<|im_start|>assistant<|im_sep|>``), encoded
with o200k_base, the tokenizer of the model named (``openai/gpt-4o-mini``). It answers as the
last-edit agent would (sets and drops applied, undo and redo ignored), not as the oracle the dry
run assumes, so chat mode's history differs from the estimate's as a real model's would.

Printed in one run: prompt tokens per chain by chain length in chat and restate mode and their
ratio; the dry run's estimate of calls and prompt tokens against what was sent and counted, per
mode and per length (target: within 10%); and restate mode asked at the suite's lengths only
(``--ask-at 5,10,20,40,80``, butterfly-long's default ask points): its prompt tokens per chain
against chat mode's (target: at most 1/10 on the 80-turn chains).

    .venv/bin/python bench/cost.py [--per-length 2 | --all]

The default plays 2 chains of each length (10 of the 60; about a minute); ``--all`` plays all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]
HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "tests"))

from fakeserver import FakeServer  # noqa: E402

from butterfly import api  # noqa: E402
from butterfly.core.agents import agent_specs  # noqa: E402
from butterfly.core.prompts import messages  # noqa: E402
from butterfly.models.tokens import TOKENIZER_DIR  # noqa: E402
from butterfly.suite.load import dumps_suite, load_suite, resolve_suite  # noqa: E402
from oracle import Scenario  # noqa: E402

MODEL = "openai/gpt-4o-mini"
MODES = ("chat", "restate", "asked")
PLAYS: dict[str, dict[str, Any]] = {
    "chat": {"mode": "chat"}, "restate": {"mode": "restate", "ask_at": "all"},
    "asked": {"mode": "restate", "ask_at": "5,10,20,40,80"}}
"""How each column is played: chat mode, restate mode asked at every turn, and restate mode
asked at butterfly-long's lengths (its default ask points; the subset's file has no manifest,
so they are named)."""


def encoding() -> Any:
    """o200k_base with ChatML's markers as special tokens (from litellm's copy of the file)."""
    import tiktoken

    os.environ["TIKTOKEN_CACHE_DIR"] = str(TOKENIZER_DIR)
    base = tiktoken.get_encoding("o200k_base")
    top = base.n_vocab
    return tiktoken.Encoding("o200k_chatml", pat_str=base._pat_str,
                             mergeable_ranks=base._mergeable_ranks,
                             special_tokens={**base._special_tokens, "<|im_start|>": top,
                                             "<|im_end|>": top + 1, "<|im_sep|>": top + 2})


def templated(msgs: list[dict[str, Any]], sep: str = "<|im_sep|>", end: str = "") -> str:
    """The prompt as a provider's template renders it (OpenAI's by default; with ``sep="\\n"``
    and ``end="\\n"``, the ChatML of open models such as Qwen's and SmolLM2's)."""
    body = "".join(f"<|im_start|>{m['role']}{sep}{m['content']}<|im_end|>{end}" for m in msgs)
    return body + f"<|im_start|>assistant{sep}"


STYLES = {"spaced": {}, "compact": {"separators": (",", ":")}, "indented": {"indent": 2}}
"""How the server writes its answers' JSON: as ``json.dumps`` does (what the dry run assumes),
without spaces, or indented (a model that pretty-prints: more tokens sent back in chat mode)."""


class Counting:
    """The server's responder: counts each request's templated prompt (returned as the call's
    usage, which the run records per call) and answers as the last-edit agent."""

    def __init__(self, scenarios: list[Scenario], style: str) -> None:
        self.enc = encoding()
        self.answers: dict[tuple[str, ...], str] = {}
        """The answer to a conversation, by its user messages (two scenarios whose first turns
        read the same have the same last-edit answer to them)."""
        for s in scenarios:
            said = [json.dumps(x, **STYLES[style]) for x in agent_specs("last-edit", s)[1:]]
            for t in range(1, len(s.turns) + 1):
                for mode in ("chat", "restate"):
                    users = tuple(m["content"] for m in messages(s, t, said[: t - 1], mode=mode)
                                  if m["role"] == "user")
                    self.answers[users] = said[t - 1]
        self.mode = MODES[0]
        """The mode being played (set by :func:`main` before each run)."""
        self.prompt: dict[str, int] = defaultdict(int)
        self.newlines: dict[str, int] = defaultdict(int)
        """Per mode: the same prompts under the ChatML of open models (5 tokens a message)."""
        self.calls: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        users = tuple(str(m["content"]) for m in body["messages"] if m["role"] == "user")
        answer, mode = self.answers[users], self.mode
        n = len(self.enc.encode(templated(body["messages"]), allowed_special="all"))
        alt = len(self.enc.encode(templated(body["messages"], "\n", "\n"), allowed_special="all"))
        with self.lock:  # the server answers in threads
            self.prompt[mode] += n
            self.newlines[mode] += alt
            self.calls[mode] += 1
        return {"content": answer, "usage": {"prompt_tokens": n, "completion_tokens":
                                             len(self.enc.encode(answer))}}


def subset(per_length: int | None) -> list[Scenario]:
    """The first ``per_length`` chains of each length (all of them when None)."""
    kept: list[Scenario] = []
    seen: dict[int, int] = defaultdict(int)
    for s in load_suite(resolve_suite("butterfly-long")):
        seen[len(s.turns)] += 1
        if per_length is None or seen[len(s.turns)] <= per_length:
            kept.append(s)
    return kept


def pct(est: float, got: float) -> str:
    return f"{(est - got) / got:+.1%}" if got else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-length", type=int, default=2, help="chains of each length")
    ap.add_argument("--all", action="store_true", help="every chain of butterfly-long")
    ap.add_argument("--answers", choices=tuple(STYLES), default="spaced",
                    help="how the server writes its answers' JSON")
    a = ap.parse_args()
    chains = subset(None if a.all else a.per_length)
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback")
    counting = Counting(chains, a.answers)
    lengths = sorted({len(s.turns) for s in chains})
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, FakeServer(counting) as srv:
        suite = Path(tmp) / "long-subset.jsonl"
        suite.write_text(dumps_suite(chains), encoding="utf-8")
        flags = {"model": MODEL, "suite": str(suite), "api_base": srv.api_base, "cache": None,
                 "concurrency": 8}
        dry = {m: api.dry_run(slice_by="length", **PLAYS[m], **flags) for m in MODES}
        sent: dict[str, dict[str, int]] = {}
        for m in MODES:
            counting.mode = m
            run = api.run(out=Path(tmp) / m, **PLAYS[m], **flags)
            sent[m] = defaultdict(int)
            for rec in run.records.values():  # the server's count, as the call's usage recorded it
                sent[m][rec.scenario] += rec.tokens.prompt or 0
            assert sum(sent[m].values()) == counting.prompt[m]
    secs = time.perf_counter() - t0
    report(chains, lengths, counting, sent, dry, secs,
           "all" if a.all else f"the first {a.per_length} of each length")
    alt = ", ".join(f"{m} {counting.newlines[m]:,} "
                    f"({pct(dry[m].total.prompt_tokens, counting.newlines[m])})" for m in MODES)
    print(f"answers written {a.answers} (--answers); under the ChatML of open models (5 "
          f"template tokens a message, not 4) the server would have counted: {alt}")


def per_length(sent: dict[str, int], chains: list[Scenario], length: int) -> list[int]:
    return [sent[s.id] for s in chains if len(s.turns) == length]


def report(chains: list[Scenario], lengths: list[int], counting: Counting,
           sent: dict[str, dict[str, int]], dry: dict[str, Any], secs: float,
           which: str) -> None:
    n = len(chains)
    print(f"butterfly-long: {n} of 60 chains ({which})"
          f", {MODEL} ({dry['chat'].tokenizer}) against a loopback server counting the templated"
          f" prompts it receives; it answers as script/last-edit; {secs:.0f} s in all")
    print("\nprompt tokens per chain (counted by the server)")
    print(f"{'length':>6} {'chat':>10} {'restate':>10} {'asked':>10} {'restate/chat':>13} "
          f"{'asked/chat':>11}")
    ratio = {}
    for L in lengths:
        chat, rest, asked = (statistics.mean(per_length(sent[m], chains, L)) for m in MODES)
        ratio[L] = asked / chat
        print(f"{L:>6} {chat:>10,.0f} {rest:>10,.0f} {asked:>10,.0f} {rest / chat:>13.3f} "
              f"{asked / chat:>11.3f}")
    print("\nthe dry run's estimate against what was sent (prompt tokens)")
    print(f"{'mode':>8} {'slice':>9} {'calls est/sent':>15} {'estimate':>11} {'counted':>11} "
          f"{'error':>7}")
    worst = 0.0
    for m in MODES:
        for b in dry[m].slices:
            L = int(b.slice.split()[0])
            got = sum(per_length(sent[m], chains, L))
            print(f"{m:>8} {b.slice:>9} {b.calls:>15} {b.prompt_tokens:>11,} {got:>11,} "
                  f"{pct(b.prompt_tokens, got):>7}")
        total = counting.prompt[m]
        t = dry[m].total
        worst = max(worst, abs(t.prompt_tokens - total) / total)
        print(f"{m:>8} {'total':>9} {f'{t.calls}/{counting.calls[m]}':>15} "
              f"{t.prompt_tokens:>11,} {total:>11,} {pct(t.prompt_tokens, total):>7}")
    print(f"\nlargest error of a mode's total: {worst:.1%} (target: within 10%: "
          f"{'met' if worst <= 0.10 else 'NOT met'})")
    top = max(lengths)
    print(f"asked at the suite's lengths, {top}-turn chains: {ratio[top]:.3f} of chat mode's "
          f"prompt tokens (target: at most 0.1: {'met' if ratio[top] <= 0.1 else 'NOT met'})")


if __name__ == "__main__":
    main()
