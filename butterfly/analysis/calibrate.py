"""``butterfly calibrate``: seed 003's study of the regression methods on answers we have.

- **null**: one model against itself, A and B from two disjoint halves of its repeats of each
  scenario, over seeded reshuffles of which repeats go to which half. Nothing changed, so every
  REGRESSED is a false alarm.
- **0.3**, **0.6**: the null pair with B's answers of every third scenario turned into fails, each
  with that probability. The true drop of such a scenario is rate x its pass rate (over all its
  repeats); one whose drop is under 10 points does not count as a miss.
- **simulated** (``--simulate``): the same from synthetic independent answers whose per-scenario
  pass rates are drawn from the run's (or, without a run, from the realistic mixture of
  :data:`butterfly.analysis.simulate.MIXTURE`), to reach sizes real answers cannot afford.

Per method and configuration: false alarms (mean per suite), FDR, power, answers used (mean per
suite). Pure apart from :func:`run_rates`, which reads a run directory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypedDict

import numpy as np

from butterfly.analysis import regress, simulate
from butterfly.analysis.compare import load_answers
from butterfly.analysis.results import Calibration, Rates
from butterfly.errors import UserError
from butterfly.runs.reader import Run

CONFIGS: tuple[tuple[str, float], ...] = (("null", 0.0), ("0.3", 0.3), ("0.6", 0.6))

MethodFn = Callable[[np.ndarray, np.ndarray], regress.Decision]


StudyRow = TypedDict("StudyRow", {"label": str, "null": Rates, "0.3": Rates, "0.6": Rates},
                     total=False)
"""One method: its label and its rates on the null pair and the two injected drops."""
StudyMeta = dict[str, float | int | str]
"""How a study was made: kind (real or simulated), m, pairs, reps, q, seed, ..."""


class Study(NamedTuple):
    rows: dict[str, StudyRow]
    """Method name -> its row."""
    meta: StudyMeta


@dataclass(frozen=True)
class MethodSpec:
    name: str
    label: str
    fn: MethodFn


def methods(n: int, q: float, *, fixed_k: int = 10, big_cap: int | None = None) -> list[MethodSpec]:
    """Seed 003's methods on n pairs per scenario (plus ours): single-run diff; fixed k = 10 at
    level q with no suite control; fixed k = n + BH; sequential e-BH with a cap of n, without and
    with stopping of scenarios that look fine; the group-sequential exact design (cap n).
    ``big_cap`` adds sequential e-BH + stop-fine with that larger cap (simulation only)."""
    k10 = min(fixed_k, n)
    cap = min(n, 50)
    out = [
        MethodSpec("diff", "single-run diff", regress.method_diff),
        MethodSpec("fixed", f"fixed k = {k10}, no suite control",
                   lambda a, b: regress.method_fixed(a, b, k10, q)),
        MethodSpec("bh", f"fixed k = {cap} + BH", lambda a, b: regress.method_bh(a, b, cap, q)),
        MethodSpec("ebh", f"sequential e-BH, cap {cap}",
                   lambda a, b: regress.method_ebh(a, b, q, cap)),
        MethodSpec("ebh-fine", f"sequential e-BH + stop-fine, cap {cap}",
                   lambda a, b: regress.method_ebh(a, b, q, cap, stop_fine=True)),
    ]
    if big_cap is not None and big_cap > cap:
        out.append(MethodSpec(f"ebh-fine-{big_cap}", f"sequential e-BH + stop-fine, cap {big_cap}",
                              lambda a, b: regress.method_ebh(a, b, q, big_cap, stop_fine=True)))
    gs_cap = min(n, regress.GS_LOOKS[-1])
    out.append(MethodSpec("gs", f"group-sequential exact + BH, cap {gs_cap}",
                          lambda a, b: regress.method_gs(a[..., :gs_cap], b[..., :gs_cap], q)))
    return out


def study(pairs: Callable[[str, float], tuple[np.ndarray, np.ndarray, np.ndarray]],
          specs: Sequence[MethodSpec],
          keep: dict[tuple[str, str], tuple[regress.Decision, np.ndarray]] | None = None,
          ) -> dict[str, StudyRow]:
    """Run every method on every configuration. ``pairs(config, rate)`` returns A's and B's
    answers (reps, m, n) and the true drops (reps, m). ``keep`` receives each decision and the
    true drops by (method, configuration)."""
    result: dict[str, StudyRow] = {s.name: {"label": s.label} for s in specs}
    for config, rate in CONFIGS:
        a, b, drop = pairs(config, rate)
        for s in specs:
            decision = s.fn(a, b)
            if keep is not None:
                keep[(s.name, config)] = (decision, drop)
            o = simulate.outcome(decision, drop)
            result[s.name][config] = Rates(  # type: ignore[literal-required]
                fdr=o.fdr, power=o.power, false_alarms=o.false_alarms, answers=o.answers,
                reps=o.reps, m=int(a.shape[-2]))
    return result


def split_halves(answers: Sequence[Sequence[bool]], reshuffles: int, seed: int,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A and B (reshuffles, m, h): for each reshuffle, each scenario's answers are permuted
    (seeded) and split into two disjoint halves of h = the fewest answers of any scenario // 2.
    Also the pass rate of each scenario over all its answers (m,)."""
    if not answers:
        raise UserError("calibrate: the run has no complete conversations")
    r = min(len(x) for x in answers)
    h = r // 2
    if h < 1:
        raise UserError("calibrate: needs a run with at least 2 repeats of every scenario "
                        "(butterfly run --repeats K)")
    rng = np.random.default_rng(seed)
    arr = np.array([list(x)[:r] for x in answers], dtype=bool)
    m = arr.shape[0]
    a = np.empty((reshuffles, m, h), dtype=bool)
    b = np.empty((reshuffles, m, h), dtype=bool)
    for s in range(reshuffles):
        perm = rng.permuted(np.tile(np.arange(r), (m, 1)), axis=1)
        shuffled = np.take_along_axis(arr, perm, axis=1)
        a[s], b[s] = shuffled[:, :h], shuffled[:, h:2 * h]
    rates = np.array([np.mean(x) for x in answers], dtype=float)
    return a, b, rates


def real_study(answers: Sequence[Sequence[bool]], *, q: float = 0.1, reshuffles: int = 20,
               seed: int = 0) -> Study:
    """Seed 003's study on real answers: null pair from disjoint halves (``reshuffles`` seeded
    reshuffles), injected fails at 0.3 and 0.6 in every third scenario."""
    a, b, rates = split_halves(answers, reshuffles, seed)
    m = a.shape[1]
    which = np.broadcast_to(simulate.regressed_mask(m), a.shape[:2])

    def pairs(config: str, rate: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if rate == 0:
            return a, b, np.zeros(a.shape[:2])
        rng = np.random.default_rng([seed, int(rate * 1000)])
        return a, simulate.inject(b, rng, which, rate), np.where(which, rates * rate, 0.0)

    rows = study(pairs, methods(a.shape[2], q))
    counted = {f"counted_{r}": int((which[0] & (rates * r >= simulate.MIN_DROP)).sum())
               for r in (0.3, 0.6)}
    return Study(rows, {"kind": "real", "m": m, "pairs": int(a.shape[2]), "reps": reshuffles,
                        "q": q, "seed": seed, "mean_pass_rate": float(rates.mean()), **counted})


def simulated_study(*, m: int = 60, reps: int = 200, pairs_n: int = 150, q: float = 0.1,
                    seed: int = 0, rates: Sequence[float] | None = None,
                    big_cap: int | None = 150,
                    keep: dict[tuple[str, str], tuple[regress.Decision, np.ndarray]] | None = None,
                    ) -> Study:
    """The same study on synthetic independent answers: per-scenario pass rates resampled from
    ``rates`` (a real run's) or drawn from :data:`simulate.MIXTURE`; a fresh suite per
    replication; every third scenario regressed by rate x its pass rate."""
    rng = np.random.default_rng(seed)
    shape = (reps, m)
    if rates is None:
        p = simulate.mixture_rates(rng, shape)
    else:
        pool = np.asarray(rates, dtype=float)
        p = pool[rng.integers(0, len(pool), size=shape)]
    n = max(pairs_n, 50)
    which = np.broadcast_to(simulate.regressed_mask(m), shape)
    a = rng.random((*shape, n)) < p[..., None]
    b0 = rng.random((*shape, n)) < p[..., None]

    def pairs(config: str, rate: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if rate == 0:
            return a, b0, np.zeros(shape)
        r2 = np.random.default_rng([seed, int(rate * 1000)])
        return a, simulate.inject(b0, r2, which, rate), np.where(which, p * rate, 0.0)

    rows = study(pairs, methods(n, q, big_cap=big_cap if big_cap and big_cap <= n else None),
                 keep)
    return Study(rows, {"kind": "simulated", "m": m, "pairs": n, "reps": reps, "q": q,
                        "seed": seed, "rates": "mixture" if rates is None else "run"})


def run_rates(run: Path | Run) -> tuple[list[str], list[tuple[bool, ...]], str]:
    """Scenario ids, their final-match verdicts by repeat (first layout) and the model. Only
    scenarios with every repeat complete are kept (a run still in progress, or with provider
    errors, is studied on its finished scenarios)."""
    ans = load_answers(run)
    most = max((len(v) for v in ans.passes.values()), default=0)
    ids = [i for i in ans.ids if most and len(ans.passes.get(i, ())) == most]
    return ids, [ans.passes[i] for i in ids], ans.model


def calibrate(run: Path | Run | None, *, simulate: bool, q: float = 0.1, reshuffles: int = 20,
              m: int = 60, reps: int = 200, seed: int = 0) -> tuple[Calibration, str]:
    """``butterfly calibrate``: the study on a run's real answers (its directory, or the run
    already read), or simulated (from the run's pass rates when a run is given), and its
    title."""
    if not 0 < q < 1:
        raise UserError("--q must be between 0 and 1")
    if run is None and not simulate:
        raise UserError("calibrate: give a run directory (made with --repeats K), --simulate, "
                        "or both")
    title = "simulated (realistic mixture of pass rates)"
    where = run.path if isinstance(run, Run) else run
    rates = None
    if run is not None:
        _, answers, model = run_rates(run)
        rates = [sum(x) / len(x) for x in answers]
    if simulate:
        if reps < 1 or m < 1:
            raise UserError("--reps and --m must be at least 1")
        result = simulated_study(m=m, reps=reps, q=q, seed=seed, rates=rates)
        if run is not None:
            title = f"simulated from the pass rates of {model} ({where})"
    else:
        result = real_study(answers, q=q, reshuffles=reshuffles, seed=seed)
        title = f"{model} ({where}), real answers"
    return Calibration.of(result.rows, result.meta), title
