"""Reading a run asked at chosen turns (contract v3, section 4): a turn not asked has no answer
and is not scored; final match is the ask at the last turn; the horizon counts the ask at turn t
as a chain of length t; the figures that need every turn are over the asked turns and labelled
so in score, show, report, export and compare; the drift agent's horizon is recovered."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import run_inproc

import butterfly
from butterfly.analysis.transcripts import load
from butterfly.core.agents import drift_expected_final_match
from butterfly.core.asking import ASKED_NOTE
from butterfly.core.horizon_metric import crossing
from butterfly.core.logistic import fit_logistic
from butterfly.core.metrics import score_scenario
from butterfly.suite.load import load_suite, resolve_suite
from oracle import replay

LONG = load_suite(resolve_suite("butterfly-long"))
ASKS = (5, 10, 20, 40, 80)


@pytest.fixture(scope="module")
def drift(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """script/drift:p=0.05 on butterfly-long in restate mode, asked at its default points."""
    out = tmp_path_factory.mktemp("asked") / "drift"
    butterfly.run(model="script/drift:p=0.05", suite="butterfly-long", mode="restate",
                  repeats=3, out=out, cache=None)
    return out


def test_a_score_over_asked_turns_compares_each_answer_with_the_asked_one_before_it() -> None:
    s = next(x for x in LONG if len(x.turns) == 20)
    o = replay(s)
    wrong = {**o[10], "log_level": "debug" if o[10]["log_level"] != "debug" else "info"}
    sc = score_scenario(s, [o[5], wrong, o[20]], o, asked=(5, 10, 20))
    assert sc.turn_match == (True, False, True) and sc.asked == (5, 10, 20)
    assert sc.first_divergent == 10 and sc.wobble and sc.final_match
    assert sc.collateral[1] == (1 if o[10]["log_level"] == o[5]["log_level"] else 0)
    assert sc.abstained == (False, False, False)
    with pytest.raises(ValueError, match="asked turns"):
        score_scenario(s, [o[5], o[10]], o, asked=(5, 10))  # the last turn is always asked


def test_score_counts_asks_labels_them_and_gives_one_horizon_point_per_ask(drift: Path) -> None:
    r = run_inproc("score", str(drift), "--json")
    assert r.returncode == 0, r.stderr
    score = json.loads(r.stdout)
    assert score["asked_turns_only"] is True and score["ask_at"] == list(ASKS)
    assert score["incomplete"] == 0 and score["n_conversations"] == 60 * 3
    assert score["n_answers"] == 3 * 12 * (1 + 2 + 3 + 4 + 5)  # the asks, not the turns
    by_length = {int(n): v["n"] for n, v in score["horizon"]["by_length"].items()}
    assert by_length == {5: 3 * 60, 10: 3 * 48, 20: 3 * 36, 40: 3 * 24, 80: 3 * 12}
    assert {p["turn"] for p in score["horizon"]["survival"]} <= set(ASKS)
    text = run_inproc("score", str(drift)).stdout
    assert "asked at turns 5, 10, 20, 40, 80 and the last" in text
    assert f"undo recovery by op ({ASKED_NOTE})" in text


def test_drift_horizon_is_recovered_from_asks_at_the_suites_lengths(drift: Path) -> None:
    """Each ask at turn t is the drift agent's answer after tracking turns 1..t, so its
    expectation is that of a chain of t turns: every rate within three standard errors, and the
    interval covers the horizon of the exact curve."""
    p = 0.05
    h = butterfly.score_run(drift).horizon
    assert h is not None
    expected: dict[int, list[float]] = {}
    for s in LONG:
        o = replay(s)
        for t in ASKS:
            if t <= len(s.turns):
                expected.setdefault(t, []).append(drift_expected_final_match(s, p, o[:t + 1]))
    for n, rate in h.by_length.items():
        e = sum(expected[int(n)]) / len(expected[int(n)])
        se = math.sqrt(max(e * (1 - e), 0.01) / rate.n)
        assert abs(rate.final_match - e) <= 3 * se, (n, rate, e)
    fit = fit_logistic(list(ASKS), [sum(expected[n]) for n in ASKS],
                       [len(expected[n]) for n in ASKS])
    assert fit is not None
    true = crossing(fit, 5, 80)
    assert math.isfinite(true) and h.censored is None
    lo, hi = h.ci
    assert lo is not None and hi is not None and lo <= true <= hi, (lo, true, hi)


def test_show_marks_unasked_turns_not_asked_never_as_failures(drift: Path) -> None:
    s = next(x for x in LONG if len(x.turns) == 40)
    r = run_inproc("show", str(drift), "--scenario", s.id)
    assert r.returncode == 0, r.stderr
    assert "turns 1-4: not asked" in r.stdout and "turns 21-39: not asked" in r.stdout
    assert "): no answer" not in r.stdout  # the status of a turn still to be asked
    headed = [line for line in r.stdout.splitlines() if line.lstrip("> ").startswith("turn ")]
    assert [line.split("(")[0].split()[-1] for line in headed] == ["5", "10", "20", "40"]
    assert "first divergent turn (of the asked turns)" in r.stdout
    shown = load(drift, s.id, None, 0)[1][0]
    statuses = [row["status"] for row in shown["turns"]]
    assert [t for t, st in enumerate(statuses, 1) if st != "not_asked"] == [5, 10, 20, 40]
    assert shown["complete"] and shown.get("asked_turns_only") is True


def test_export_lists_the_asked_turns_and_says_so(drift: Path, tmp_path: Path) -> None:
    for level in ("turn", "conversation"):
        out = tmp_path / f"{level}.csv"
        assert run_inproc("export", str(drift), "--level", level, "--csv",
                          str(out)).returncode == 0
        rows = list(csv.DictReader(io.StringIO(out.read_text())))
        assert {row["asked_turns_only"] for row in rows} == {"1"}
        if level == "turn":
            assert {int(row["turn"]) for row in rows} == set(ASKS)
            assert len(rows) == 3 * 12 * 15
        else:
            assert {row["complete"] for row in rows} == {"1"}
            assert {int(row["n_answers"]) for row in rows} == {1, 2, 3, 4, 5}


def test_compare_of_runs_asked_differently_compares_their_last_turns(drift: Path,
                                                                       tmp_path: Path) -> None:
    every = tmp_path / "every"
    butterfly.run(model="script/drift:p=0.05", suite="butterfly-long", mode="restate",
                  ask_at="last", limit=24, out=every, cache=None)
    r = run_inproc("compare", str(drift), str(every), "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["ask_at_a"] == list(ASKS) and result["ask_at_b"] == []
    assert result["n_scenarios"] == 24
    text = run_inproc("compare", str(drift), str(every)).stdout
    assert "final match is the answer at each chain's last turn, asked in both runs" in text


def test_the_report_says_how_the_run_asked(drift: Path, tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    assert run_inproc("report", str(drift), "--html", str(html)).returncode == 0
    page = html.read_text()
    assert "asked at turns 5, 10, 20, 40, 80 and the last" in page
    assert ASKED_NOTE in page
    head = page.split('id="headline-table"')[1].split("</thead>")[0]  # the recency baselines
    assert "last 20 msgs" in head and 'data-baseline="window:k=40"' in head


def _score_of(out: Path) -> dict[str, Any]:
    return butterfly.score_run(out).to_json()


def test_a_run_that_asks_every_turn_is_scored_as_before(tmp_path: Path) -> None:
    """--ask-at all asks every turn: no label, and the same figures as a plain restate run."""
    kw: dict[str, Any] = {"model": "script/lifo", "suite": "butterfly-long", "mode": "restate",
                          "limit": 12, "cache": None}
    a = _score_of(butterfly.run(**kw, ask_at="all", out=tmp_path / "a").path)
    assert a["asked_turns_only"] is False and a["ask_at"] is None
    assert a["n_answers"] == 12 * 5


def test_a_suite_of_long_chains_is_scored_beside_its_recency_baselines(drift: Path) -> None:
    """Contract v4, section 8: half the shortest asked length of 40 or more (20) and the
    manifest's second K (40), each scored on the run's own asks, labelled as what it is; the
    Kaggle headline prints the same figures."""
    from butterfly.core.agents import agent_specs_at
    from butterfly.kaggle import runner as bb

    score = butterfly.score_run(drift)
    assert list(score.baselines) == ["noop", "last-edit", "window:k=20", "window:k=40"]
    for k in (20, 40):
        want = sum(agent_specs_at(f"window:k={k}", s, [len(s.turns)])[0] == replay(s)[-1]
                   for s in LONG) / len(LONG)
        assert score.baselines[f"window:k={k}"].final_match == pytest.approx(want)
    assert score.baselines["window:k=20"].final_match == pytest.approx(36 / 60)  # <= 20 turns
    r = run_inproc("score", str(drift))
    assert "baseline: window:k=20 (reads only the last 20 messages)" in " ".join(r.stdout.split())
    line = bb.baselines_line(LONG, ASKS, 40)
    for name, b in score.baselines.items():
        label = name if name in ("noop", "last-edit") else \
            f"{name} (reads only the last {name.split('=')[1]} messages)"
        assert f"{label} {b.final_match:.1%}" in line
