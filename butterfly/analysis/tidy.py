"""Tidy rows of runs, one per turn or one per conversation: ``butterfly export`` writes them as
CSV, ``butterfly.load_runs`` returns them as a pandas DataFrame (like inspect's ``evals_df``).

Every row names its run, model, suite (its name, its version when it is a frozen suite, and
its sha256: never a path of the machine that made the run), scenario, category, layout and
repeat.
Turn rows add the turn, its op, ``match`` (0/1), the abstention reason, the collateral settings
(changed from the model's previous answer while the oracle's did not, ``;``-joined) and the
call's tokens, cost and latency. Conversation rows add ``complete`` (0/1), ``final_match``
(0/1, empty when incomplete), the first divergent turn, the change radius, ``wobble``,
abstentions, and the sums of their turns' tokens, cost and latency.
Only the conversations a run played (attempted) are listed.

A run asked at chosen turns (``--ask-at``) has a turn row for each asked turn only (a turn not
asked has no answer and is not scored); every row says ``asked_turns_only`` (1 for such a run,
0 otherwise), and then the collateral, first divergent turn and wobble are over the asked turns
(a turn's previous answer is the one at the asked turn before it). Conversation rows count the
answers they hold in ``n_answers`` (the asked turns, or every turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

from butterfly.analysis.scoring import suite_label
from butterfly.core.metrics import collateral_keys, score_scenario
from butterfly.core.scores import SuiteLabel
from butterfly.core.turns import ConversationKey, Turn, TurnKey
from butterfly.errors import UserError
from butterfly.runs.reader import Run, load_run
from butterfly.runs.scope import asked
from oracle import Scenario, replay

Level = Literal["turn", "conversation"]
Cell = str | int | float | None
Row = dict[str, Cell]
"""One tidy row: column -> a scalar (None: null, an empty CSV cell)."""
LEVELS: Final[tuple[Level, ...]] = ("turn", "conversation")

BASE: Final = ("run", "model", "suite", "suite_version", "suite_sha256", "scenario", "category",
               "layout", "repeat")
USAGE: Final = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens",
                "cost_usd", "saved_usd")
"""Tokens and cost, summed over a turn's samples (a conversation's turns): completion tokens
include the reasoning tokens (counted once); ``saved_usd`` is what the cached prompt tokens
saved (docs/cost.md). ``price`` says where the costs came from: ``user`` (``run --price``),
``litellm`` (the offline price map), or nothing when no call of the run was priced (a scripted
agent, an unpriced model: its costs are empty too)."""
TURN_COLUMNS: Final = (*BASE, "turn", "op", "match", "abstention", "collateral",
                       "n_collateral", *USAGE, "price", "asked_turns_only", "latency_s")
CONVERSATION_COLUMNS: Final = (*BASE, "n_turns", "complete", "final_match",
                               "first_divergent_turn", "change_radius", "wobble", "abstentions",
                               *USAGE, "price", "n_answers", "asked_turns_only", "latency_s")
"""``latency_s`` (last, so that existing columns keep their places): the seconds the turn's
calls took (a conversation's: its answered turns'), summed over its samples; empty when one was
served by the answer cache (no call was sent, docs/metrics.md, "Efficiency")."""


def _base(run: Run, suite: SuiteLabel, s: Scenario, key: ConversationKey) -> Row:
    return {"run": str(run.path), "model": run.manifest.model, "suite": suite.name,
            "suite_version": suite.version, "suite_sha256": suite.sha256, "scenario": s.id,
            "category": s.category, "layout": key.layout, "repeat": key.repeat}


def price_source(run: Run) -> str | None:
    """Where a run's costs came from: ``user`` (``run --price``), ``litellm`` (the offline price
    map priced a call), or None (no call priced: a scripted agent, an unpriced model)."""
    if run.params.price is not None:
        return "user"
    priced = any(v.cost_usd is not None for v in run.records.values())
    return "litellm" if priced else None


def _sum(values: list[Any]) -> Any:
    """The sum, or None when one value is unreported."""
    return None if None in values else sum(values)


def _cost(turn: Turn) -> list[Any]:
    """The :data:`USAGE` of a turn, summed over its samples (None when one is unreported)."""
    tokens = [getattr(x, "tokens", None) for x in turn.samples]
    sums = [_sum([getattr(t, k, None) for t in tokens])
            for k in ("prompt", "completion", "cached", "reasoning")]
    money = [_sum([getattr(x, k, None) for x in turn.samples]) for k in ("cost_usd", "saved_usd")]
    return sums + [None if v is None else round(v, 10) for v in money]


def _latency(turn: Turn) -> float | None:
    """The seconds a turn's calls took; None when the cache served one (none was sent)."""
    got = [None if getattr(x, "cached", False) else getattr(x, "latency_s", None)
           for x in turn.samples]
    total = _sum(got)
    return None if total is None else round(total, 6)


def _add(total: Any, value: Any) -> Any:
    return None if total is None or value is None else total + value


def run_rows(run: Run, level: Level = "conversation") -> list[Row]:
    """The tidy rows of one run at ``level``."""
    if level not in LEVELS:
        raise UserError(f"--level takes turn or conversation, got {level!r}")
    done = run.turns()
    attempted = run.attempted
    by_id = {s.id: s for s in run.scenarios}
    rows: list[Row] = []
    price = price_source(run)
    suite = suite_label(run)
    only = int(run.params.ask_at is not None)
    for key in run.conversations():
        if key not in attempted:
            continue
        s = by_id[key.scenario]
        oracle = replay(s)
        n = len(s.turns)
        ts = asked(s, run.params)
        turns = [done.get(TurnKey(s.id, t, key.layout, key.repeat)) for t in ts]
        answered = [t for t in turns if t is not None]
        complete = len(answered) == len(ts)
        base = {**_base(run, suite, s, key), "asked_turns_only": only}
        if level == "turn":
            rows += _turn_rows(base, s, oracle, ts, turns, price)
            continue
        totals: list[Any] = [0, 0, 0, 0, 0.0, 0.0]
        latency: float | None = 0.0
        for turn in answered:
            totals = [_add(a, b) for a, b in zip(totals, _cost(turn), strict=True)]
            latency = _add(latency, _latency(turn))
        score = (score_scenario(s, [t.spec for t in answered], oracle,
                                None if run.params.ask_at is None else ts)
                 if complete else None)
        rows.append({
            **base, "n_turns": n, "complete": int(complete),
            "final_match": None if score is None else int(score.final_match),
            "first_divergent_turn": None if score is None else score.first_divergent,
            "change_radius": None if score is None else score.change_radius,
            "wobble": None if score is None else int(score.wobble),
            "abstentions": sum(t.spec is None for t in answered),
            **dict(zip(USAGE, totals[:4], strict=False)),
            **{k: None if v is None else round(v, 10)
               for k, v in zip(USAGE[4:], totals[4:], strict=True)},
            "price": price, "n_answers": len(answered),
            "latency_s": None if latency is None or not answered else round(latency, 6),
        })
    return rows


def _turn_rows(base: Row, s: Scenario, oracle: list[dict[str, str]], ts: Sequence[int],
               turns: Sequence[Turn | None], price: str | None) -> list[Row]:
    """A conversation's turn rows: its asked turns up to the first without an answer."""
    rows: list[Row] = []
    prev: dict[str, str] | None = oracle[0]
    prev_t = 0
    for t, turn in zip(ts, turns, strict=True):
        if turn is None:
            break
        spec = turn.spec
        moved = (collateral_keys(spec, prev, oracle[t], oracle[prev_t])
                 if spec is not None and prev is not None else None)
        rows.append({**base, "turn": t, "op": s.turns[t - 1].op,
                     "match": int(spec == oracle[t]), "abstention": turn.abstention,
                     "collateral": None if moved is None else ";".join(moved),
                     "n_collateral": None if moved is None else len(moved),
                     **dict(zip(USAGE, _cost(turn), strict=True)), "price": price,
                     "latency_s": _latency(turn)})
        prev, prev_t = spec, t
    return rows


def tidy_rows(runs: Sequence[str | Path | Run], level: Level = "conversation"
              ) -> list[Row]:
    """The tidy rows of every run, run after run."""
    if not runs:
        raise UserError("export: give at least one run directory")
    out: list[Row] = []
    for r in runs:
        out += run_rows(r if isinstance(r, Run) else load_run(r), level)
    return out


def columns(level: Level) -> tuple[str, ...]:
    return TURN_COLUMNS if level == "turn" else CONVERSATION_COLUMNS


def load_runs(runs: Sequence[str | Path | Run], level: Level = "conversation") -> Any:
    """The tidy rows of ``runs`` as a pandas DataFrame (``pip install butterflybench[pandas]``)."""
    try:
        import pandas as pd  # type: ignore[import-untyped]
    except ImportError:
        raise UserError("load_runs needs pandas: pip install 'butterflybench[pandas]' "
                        "(or use butterfly.tidy_rows for plain dicts)") from None
    return pd.DataFrame(tidy_rows(runs, level), columns=list(columns(level)))
