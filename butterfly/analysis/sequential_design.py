"""``butterfly sequential``, the statistics: the design that decides, pair by pair, whether each
scenario regressed from model A to model B (:class:`butterfly.analysis.regress.Sequential` for
``ebh``, :class:`butterfly.analysis.regress.GroupSequential` for ``gs``), and the typed result.

The answers are drawn by :mod:`butterfly.runs.sequential_draws` (round r plays repeat r,
seed + r, of
every still-active scenario for A and B into two ordinary run directories; re-running replays
the recorded answers). The design sees one pass/fail pair per active scenario per round;
e-values are those at each scenario's stopping time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from butterfly.analysis import regress
from butterfly.analysis.results import SequentialResult
from butterfly.core.vocab import SEQUENTIAL_METHODS
from butterfly.errors import UserError
from oracle import Scenario

SequentialDesign = regress.Sequential | regress.GroupSequential


def check_options(method: str, cap: int, q: float, out_a: Path, out_b: Path) -> None:
    """The comparison's own options, each refused in one line."""
    if method not in SEQUENTIAL_METHODS:
        raise UserError("sequential --method: ebh or gs")
    if cap < 1:
        raise UserError("--cap must be at least 1")
    if not 0 < q < 1:
        raise UserError("--q must be between 0 and 1")
    if out_a.resolve() == out_b.resolve():
        raise UserError("--out-a and --out-b must differ")


def make_design(method: str, m: int, q: float, cap: int, stop_fine: bool) -> SequentialDesign:
    """The design for ``m`` scenarios: e-processes and e-BH, or group-sequential exact + BH."""
    if method == "ebh":
        return regress.Sequential((m,), q, cap, stop_fine=stop_fine)
    return regress.GroupSequential((m,), q, cap)


def round_counts(d: SequentialDesign) -> tuple[int, int, int]:
    """(decided, fine, answers) after a round: what the progress line says."""
    return int(d.decided.sum()), int(d.fine.sum()), int(2 * d.pairs.sum())


def result(design: SequentialDesign,
            scenarios: Sequence[Scenario], rounds: int, *, method: str, q: float, cap: int,
            stop_fine: bool, model_a: str, model_b: str, out_a: Path, out_b: Path
            ) -> SequentialResult:
    """The comparison's result: the design's decision per scenario, and the answers spent."""
    m = len(scenarios)
    d = design.decision()
    stat = "e_value" if method == "ebh" else "p_value"
    return SequentialResult.model_validate({
        "method": method, "q": q, "cap": cap, "stop_fine": stop_fine if method == "ebh" else None,
        "model_a": model_a, "model_b": model_b, "run_a": str(out_a), "run_b": str(out_b),
        "n_scenarios": m,
        "regressed": [s.id for i, s in enumerate(scenarios) if d.regressed[i]],
        "answers_used": int(d.answers.sum()),
        "answers_cap": 2 * cap * m,
        "rounds": rounds,
        "scenarios": [
            {"id": s.id, "pairs": int(d.pairs[i]), "a_pass": int(design.a_pass[i]),
             "b_pass": int(design.b_pass[i]), stat: float(d.stat[i]),
             "stopped": ("decided" if design.decided[i] else "fine" if design.fine[i]
                         else "cap" if d.pairs[i] >= cap else "open"),
             "verdict": "REGRESSED" if d.regressed[i] else "-"}
            for i, s in enumerate(scenarios)
        ],
    })
