"""``butterfly compare RUN_A RUN_B``: which scenarios regressed (and improved) between two runs of
one suite, by one of the methods of :mod:`butterfly.analysis.regress`, plus the paired difference in
final match with its interval (docs/statistics.md) and B's cost over A's, paired by scenario,
with its interval (``cost_ratio``; docs/metrics.md, "Efficiency").

Runs asked at chosen turns (``--ask-at``, contract v3 section 4) compare like any other: final
match is the answer at each chain's last turn, which every run asks, so two runs with different
ask points are compared on the calls both made (their last turns) and on nothing else; the
result names each run's ask points (``ask_at_a``, ``ask_at_b``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from butterfly.analysis import regress
from butterfly.analysis.results import Bootstrap, CompareResult, CostRatio, PairedDifference
from butterfly.core.efficiency import Sum, paired_means, per_conversation
from butterfly.core.stats import cluster_bootstrap, mean_interval, ratio_bootstrap, sign_test
from butterfly.core.turns import ConversationKey, TurnKey
from butterfly.errors import UserError
from butterfly.runs.reader import Run, load_run
from butterfly.runs.scope import asked
from butterfly.runs.usage import spent_of
from oracle import replay


@dataclass(frozen=True)
class RunAnswers:
    """Final-match verdicts of one run: per scenario, one bool per complete conversation of the
    chosen layout, in repeat order."""

    run: str
    model: str
    suite_sha256: str
    layout: str
    ids: tuple[str, ...]
    """Scenario ids in suite order (those the run plays)."""
    contents: dict[str, str]
    """Each scenario's content (its JSON line): runs are matched by content, not by suite."""
    passes: dict[str, tuple[bool, ...]]
    temperature: float
    seed: int
    repeats: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """The repeat of each verdict in :attr:`passes` (incomplete repeats are left out)."""
    ask_at: tuple[int, ...] | None = None
    """The run's ask points (None: every turn asked)."""
    costs: dict[str, tuple[float | None, ...]] = field(default_factory=dict)
    """What each verdict's conversation cost (None: a call of it has no price), in the order of
    :attr:`passes`."""


def load_answers(run: Path | Run, layout: str | None = None) -> RunAnswers:
    """A run's final-match verdicts (an abstention at the last turn is a fail, as in
    ``butterfly score``); incomplete conversations are left out. ``run``: its directory, or
    the run already loaded (a report holds it: not read again)."""
    loaded = run if isinstance(run, Run) else load_run(run)
    run = loaded.path
    manifest, params = loaded.manifest, loaded.params
    lay = loaded.layout(layout)
    done = loaded.turns()
    in_run = loaded.scenarios
    sums = per_conversation(x for x in map(spent_of, loaded.records.values()) if x is not None)[0]
    costs: dict[str, tuple[float | None, ...]] = {}
    passes: dict[str, tuple[bool, ...]] = {}
    repeats: dict[str, tuple[int, ...]] = {}
    for s in in_run:
        final = replay(s)[-1]
        verdicts = {r: done[TurnKey(s.id, len(s.turns), lay, r)].spec == final
                    for r in range(params.repeats)  # a complete one: its last turn is asked
                    if all(TurnKey(s.id, t, lay, r) in done for t in asked(s, params))}
        passes[s.id], repeats[s.id] = tuple(verdicts.values()), tuple(verdicts)
        costs[s.id] = tuple(sums.get(ConversationKey(s.id, lay, r), Sum()).cost_usd
                            for r in verdicts)
    return RunAnswers(str(run), manifest.model, manifest.suite.sha256, lay,
                      tuple(s.id for s in in_run), {s.id: s.to_json() for s in in_run}, passes,
                      params.temperature, params.seed, repeats, params.ask_at, costs)


def cost_ratio(a: RunAnswers, b: RunAnswers, ids: Sequence[str], *, seed: int = 0,
               reps: int = 2000) -> CostRatio:
    """B's cost over A's over the scenarios ``ids`` both answered: per scenario, each run's mean
    cost per complete conversation (every one it has, as final match's difference reads every
    answer), so runs with different repeats pair fairly; the ratio of their sums with a
    bootstrap interval over scenarios (``core.stats.ratio_bootstrap``)."""
    boot = Bootstrap(reps=reps, seed=seed)
    pairs = paired_means(a.costs, b.costs, ids)
    unpriced = [name for name, side in (("A", 0), ("B", 1))
                if any(p[side] is None for p in pairs)]
    if unpriced:
        return CostRatio(ratio=None, ci=None, a_usd=None, b_usd=None, n_scenarios=len(ids),
                         bootstrap=boot, note=("runs A and B have" if len(unpriced) == 2
                                               else f"run {unpriced[0]} has")
                         + " a call with no price: no cost to compare (give one with run --price)")
    known = [(float(x or 0.0), float(y or 0.0)) for x, y in pairs]
    a_usd, b_usd = round(sum(p[0] for p in known), 8), round(sum(p[1] for p in known), 8)
    got = ratio_bootstrap(known, reps=reps, seed=seed)
    if got is None:
        return CostRatio(ratio=None, ci=None, a_usd=a_usd, b_usd=b_usd, n_scenarios=len(ids),
                         bootstrap=boot, note="run A spent nothing: no ratio exists")
    ratio, lo, hi = got
    return CostRatio(ratio=round(ratio, 6), ci=[round(lo, 6), round(hi, 6)], a_usd=a_usd,
                     b_usd=b_usd, n_scenarios=len(ids), bootstrap=boot)


def paired_matrix(a: RunAnswers, b: RunAnswers) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The scenarios both runs answered and their first n answers each (n = the fewest complete
    conversations of any such scenario in either run), as two (m, n) bool arrays."""
    clash = next((i for i in a.ids if i in b.contents and a.contents[i] != b.contents[i]), None)
    if clash is not None:
        raise UserError(f"scenario {clash} means two different scenarios in {a.run} and {b.run} "
                        f"(suites sha256 {a.suite_sha256[:12]} and {b.suite_sha256[:12]} share "
                        "the id, not the content): compare runs of one suite")
    ids = [i for i in a.ids if i in b.passes and a.passes.get(i) and b.passes.get(i)]
    if not ids:
        raise UserError(f"{a.run} and {b.run} have no scenario with answers in both")
    n = min(min(len(a.passes[i]), len(b.passes[i])) for i in ids)
    aa = np.array([a.passes[i][:n] for i in ids], dtype=bool)
    bb = np.array([b.passes[i][:n] for i in ids], dtype=bool)
    return ids, aa, bb


def paired_difference(a: Sequence[Sequence[bool]], b: Sequence[Sequence[bool]], *,
                      seed: int = 0, reps: int = 2000) -> PairedDifference:
    """B's final match minus A's, scenario by scenario: d_i = pass rate of B - pass rate of A on
    scenario i (every answer each run has), averaged over scenarios, with a 95% interval from
    the clustered standard error (one cluster per scenario) and a seeded cluster bootstrap."""
    d = [float(np.mean(y)) - float(np.mean(x)) for x, y in zip(a, b, strict=True)]
    ci = mean_interval([[v] for v in d], low=-1.0, high=1.0)
    boot = cluster_bootstrap([[v] for v in d], reps=reps, seed=seed)
    return PairedDifference(
        a=float(np.mean([np.mean(x) for x in a])),
        b=float(np.mean([np.mean(y) for y in b])),
        diff=float(np.mean(d)),
        ci=None if ci is None else [round(ci[0], 6), round(ci[1], 6)],
        ci_bootstrap=None if boot is None else [round(boot[0], 6), round(boot[1], 6)],
        bootstrap=Bootstrap(reps=reps, seed=seed),
        n_scenarios=len(d),
        sign_p=sign_test(d),
    )


PAIRS_SEARCHED = 1000
"""How far :func:`pairs_needed` looks (a method that needs more is told as needing more)."""


def can_flag(method: str, pairs: int, q: float, *, k: int | None = None, cap: int | None = None,
             stop_fine: bool = False) -> bool:
    """Whether ``method`` can flag any scenario at ``q`` with ``pairs`` pairs per scenario (``k``
    or ``cap`` read of them): its verdict on the most extreme answers, A passing and B failing
    every pair. No answers give a smaller p-value or a larger e-value, and BH and e-BH reject a
    suite whose statistics are all equal exactly when they would reject one scenario alone, so
    when this scenario is not flagged, no scenario of any suite can be."""
    a = np.ones((1, 1, pairs), dtype=bool)
    decision = regress.run_method(method, a, ~a, q, k=k, cap=cap, stop_fine=stop_fine)
    return bool(decision.regressed.any())


def pairs_needed(method: str, q: float) -> int | None:
    """The fewest pairs per scenario with which ``method`` (reading every pair) can flag a
    scenario at ``q``; None beyond :data:`PAIRS_SEARCHED`."""
    return next((n for n in range(1, PAIRS_SEARCHED + 1) if can_flag(method, n, q)), None)


def compare(a: RunAnswers, b: RunAnswers, method: str, q: float, *, k: int | None = None,
            cap: int | None = None, stop_fine: bool = False, seed: int = 0) -> CompareResult:
    """The comparison printed by ``butterfly compare`` (``--json``: its dump)."""
    if method not in regress.METHODS:
        raise UserError(f"--method {method}: choose one of {', '.join(regress.METHODS)}")
    if not 0 < q < 1:
        raise UserError("--q must be between 0 and 1")
    ids, aa, bb = paired_matrix(a, b)
    n = aa.shape[1]
    if k is not None and not 1 <= k <= n:
        raise UserError(f"--k {k}: between 1 and {n} (the pairs every scenario has)")
    if cap is not None and cap < 1:
        raise UserError("--cap must be at least 1")
    down = regress.run_method(method, aa, bb, q, k=k, cap=cap, stop_fine=stop_fine)
    up = regress.run_method(method, bb, aa, q, k=k, cap=cap, stop_fine=stop_fine)
    pairs = np.maximum(down.pairs, up.pairs)
    stat_name = "e_value" if method == "ebh" else "p_value"
    rows = []
    for j, sid in enumerate(ids):
        rows.append({
            "id": sid,
            "a_pass": int(aa[j].sum()), "b_pass": int(bb[j].sum()), "pairs_available": n,
            "pairs_used": int(pairs[j]),
            f"{stat_name}_regressed": float(down.stat[j]),
            f"{stat_name}_improved": float(up.stat[j]),
            "verdict": "REGRESSED" if down.regressed[j] else
                       ("improved" if up.regressed[j] else "-"),
        })
    full_a = [a.passes[i] for i in ids]
    full_b = [b.passes[i] for i in ids]
    return CompareResult.model_validate({
        "method": method,
        "q": q,
        "run_a": a.run, "run_b": b.run, "model_a": a.model, "model_b": b.model,
        "layout": a.layout if a.layout == b.layout else f"{a.layout}/{b.layout}",
        "n_scenarios": len(ids),
        "pairs_available": n,
        "k": (n if k is None else k) if method in ("fixed", "bh") else None,
        "cap": (n if cap is None else min(cap, n)) if method in ("ebh", "gs") else None,
        "stop_fine": stop_fine if method == "ebh" else None,
        "regressed": [sid for j, sid in enumerate(ids) if down.regressed[j]],
        "improved": [sid for j, sid in enumerate(ids) if up.regressed[j]],
        "answers_used": int(2 * pairs.sum()),
        "answers_available": int(2 * n * len(ids)),
        "final_match": paired_difference(full_a, full_b, seed=seed),
        "scenarios": rows,
        "ask_at_a": a.ask_at, "ask_at_b": b.ask_at,
        "can_flag": can_flag(method, n, q, k=k, cap=cap, stop_fine=stop_fine),
        "pairs_needed": pairs_needed(method, q),
        "methods_that_can": [m for m in regress.METHODS if can_flag(m, n, q)],
        "cost_ratio": cost_ratio(a, b, ids, seed=seed),
    })
