"""score_run beyond the metrics: the horizon over chain lengths, and the suite's name and version
(committed runs on butterfly-40 v1 stay readable and are labelled v1)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

import butterfly
from butterfly.core.agents import drift_expected_final_match
from butterfly.suite.load import load_suite


@pytest.fixture(scope="module")
def ladder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small ladder: 6 chains at each of 3, 6, 12 and 24 turns."""
    path = tmp_path_factory.mktemp("ladder") / "ladder.jsonl"
    r = run_cli("generate", "--lengths", "3,6,12,24", "--per-length", "6", "--seed", "7",
                "--out", str(path))
    assert r.returncode == 0, r.stderr
    return path


def test_score_reports_the_horizon_of_the_drift_agent(ladder: Path, tmp_path: Path) -> None:
    p = 0.08
    run = butterfly.run(model=f"script/drift:p={p}", suite=str(ladder), repeats=4,
                        out=tmp_path / "drift", cache=None)
    cli = run_cli("score", str(tmp_path / "drift"), "--json")
    h = json.loads(cli.stdout)["horizon"]
    assert set(h) >= {"turns", "ci", "by_length"}
    assert list(h["by_length"]) == ["3", "6", "12", "24"]
    assert all(v["n"] == 24 for v in h["by_length"].values())  # 6 scenarios x 4 repeats
    scenarios = load_suite(ladder)
    expected = {n: sum(drift_expected_final_match(s, p) for s in scenarios
                       if len(s.turns) == n) / 6 for n in (3, 6, 12, 24)}
    for n, v in h["by_length"].items():  # 24 draws each: within 0.3 of the exact expectation
        assert abs(v["final_match"] - expected[int(n)]) < 0.3, (n, v, expected)
    assert h["censored"] is None and h["bound"] is None and h["note"] is None
    assert h["turns"] is not None and 3 < h["turns"] < 24
    lo, hi = h["ci"]
    assert lo is None or 3 <= lo <= h["turns"]
    assert hi is None or h["turns"] <= hi <= 24
    assert butterfly.score_run(run).horizon is not None
    text = run_cli("score", str(tmp_path / "drift")).stdout
    assert "horizon:" in text and "final match by chain length: 3:" in text


def test_one_length_is_above_it_when_all_matched_and_not_enough_data_when_mixed(
        tmp_path: Path) -> None:
    """The first 12 chains of butterfly-long all have 5 turns: the oracle matches them all
    (the contract's step 1, before step 3), lifo 9 of 12 (step 3)."""
    butterfly.run(model="script/oracle", suite="butterfly-long", limit=4, out=tmp_path / "o",
                  cache=None)
    h = butterfly.score_run(tmp_path / "o").horizon
    assert h is not None and (h.turns, h.censored, h.bound, h.ci) == (None, "above", 5, [5, None])
    assert list(h.by_length) == ["5"]
    butterfly.run(model="script/lifo", suite="butterfly-long", limit=12, out=tmp_path / "l",
                  cache=None)
    h = butterfly.score_run(tmp_path / "l").horizon
    assert h is not None and h.by_length["5"].final_match == 0.75
    assert (h.turns, h.censored, h.bound, h.ci, h.note) == (
        None, None, None, [None, None], "not enough data")


def test_the_survival_curve_of_lifo_on_butterfly_40_never_climbs() -> None:
    """Seen: the curve of the committed script/lifo run climbed from 33% at turn 9 to 100% at
    turn 10, where one conversation is left. Kaplan-Meier: that conversation is at risk at turn
    10 and matches, so the curve stays where it was."""
    h = butterfly.score_run(ROOT / "runs" / "script-lifo__butterfly-40__v1").horizon
    assert h is not None
    shares = [p.still_matched for p in h.survival]
    assert all(a >= b for a, b in itertools.pairwise(shares)), shares
    last = h.survival[-1]
    assert (last.turn, last.n) == (10, 1) and last.still_matched == shares[-2] < 0.5
    assert h.turns is not None and 1 <= h.turns <= 10  # a crossing inside the tested lengths
    assert h.ci[0] is not None and h.ci[1] is None  # 21% of resamples stay above 50% at 10


def test_the_suite_and_its_version_are_named() -> None:
    v1 = butterfly.score_run(ROOT / "runs" / "script-oracle__butterfly-40__v1")
    assert (v1.suite.name, v1.suite.version) == ("butterfly-40", 1)
    text = run_cli("score", "runs/script-oracle__butterfly-40__v1").stdout
    assert "of butterfly-40 v1, prompt v2)" in text  # the suite's and the prompt's versions


def test_a_new_run_is_on_butterfly_40_v4(tmp_path: Path) -> None:
    butterfly.run(model="script/oracle", limit=2, out=tmp_path / "v4", cache=None)
    s = butterfly.score_run(tmp_path / "v4")
    assert (s.suite.name, s.suite.version) == ("butterfly-40", 4)


def test_a_suite_of_ones_own_is_named_by_its_file(ladder: Path, tmp_path: Path) -> None:
    butterfly.run(model="script/oracle", suite=str(ladder), limit=2, out=tmp_path / "own",
                  cache=None)
    s = butterfly.score_run(tmp_path / "own")
    assert (s.suite.name, s.suite.version) == ("ladder", None)
