"""The drift agent on butterfly-horizon (issue 24, "Done when"): ``script/drift:p=0.002`` in
restate mode, asked at the suite's default points (10 to 5,000 edits), has a horizon of
hundreds of edits, and the run's interval covers the horizon of the exact expectation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import butterfly
from butterfly.core.agents import drift_expected_final_match
from butterfly.core.horizon_metric import crossing
from butterfly.core.logistic import fit_logistic
from butterfly.suite.load import HORIZON_ASK_AT, load_suite, resolve_suite
from oracle import replay

P = 0.002


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("horizon") / "drift"
    butterfly.run(model=f"script/drift:p={P}", suite="butterfly-horizon", mode="restate",
                  out=out, cache=None)
    return out


def expected() -> dict[int, list[float]]:
    """The exact expected final match of each chain asked at each of the suite's points."""
    out: dict[int, list[float]] = {}
    for s in load_suite(resolve_suite("butterfly-horizon")):
        o = replay(s)
        for t in HORIZON_ASK_AT:
            out.setdefault(t, []).append(drift_expected_final_match(s, P, o[:t + 1]))
    return out


def test_the_drift_agents_horizon_of_hundreds_of_edits_is_recovered(run: Path) -> None:
    score = butterfly.score_run(run)
    h = score.horizon
    assert h is not None and h.censored is None and h.turns is not None
    assert score.usage.calls == 12 * len(HORIZON_ASK_AT)  # 9 stateless calls a chain, not 5,000
    exact = expected()
    fit = fit_logistic(list(HORIZON_ASK_AT), [sum(exact[t]) for t in HORIZON_ASK_AT],
                       [len(exact[t]) for t in HORIZON_ASK_AT])
    assert fit is not None
    true = crossing(fit, HORIZON_ASK_AT[0], HORIZON_ASK_AT[-1])
    assert math.isfinite(true) and 100 < true < 1000, true  # hundreds of edits
    lo, hi = h.ci
    assert lo is not None and hi is not None and lo <= true <= hi, (lo, true, hi)
