"""butterfly compare and butterfly calibrate on stored runs of the scripted noisy agent, and the
seeded reproducibility of every interval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from butterfly.analysis import calibrate, compare
from butterfly.analysis.compare import RunAnswers, cost_ratio
from butterfly.cli import main
from butterfly.core.stats import cluster_bootstrap, mean_interval, proportion_interval


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for name, model, repeats in (("a", "script/noisy:p=0.2", 12), ("b", "script/noisy:p=0.5", 12),
                                 ("o", "script/oracle", 1)):
        out[name] = base / name
        r = run_cli("run", "--model", model, "--per-category", "1", "--repeats", str(repeats),
                    "--temperature", "0.7", "--no-cache", "--out", str(out[name]))
        assert r.returncode == 0, r.stderr
    return out


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    """Run the CLI in this process (fast) and parse its JSON output."""
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_compare_json_every_method(runs: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                   ) -> None:
    r = run_cli("compare", str(runs["a"]), str(runs["b"]), "--method", "bh", "--json")
    assert r.returncode == 0, r.stderr  # once as a user would, then in process
    assert json.loads(r.stdout)["method"] == "bh"
    for method in ("diff", "fixed", "bh", "ebh", "gs"):
        d = cli_json(capsys, "compare", str(runs["a"]), str(runs["b"]), "--method", method,
                     "--q", "0.1", "--json")
        assert d["method"] == method and d["q"] == 0.1
        assert isinstance(d["regressed"], list) and isinstance(d["improved"], list)
        assert not set(d["regressed"]) & set(d["improved"])
        assert 0 < d["answers_used"] <= d["answers_available"] == 2 * 12 * 10
        assert d["n_scenarios"] == 10 and d["pairs_available"] == 12
        fm = d["final_match"]
        assert fm["ci"][0] <= fm["diff"] <= fm["ci"][1]
        assert fm["ci_bootstrap"][0] <= fm["diff"] <= fm["ci_bootstrap"][1]
    diff = cli_json(capsys, "compare", str(runs["a"]), str(runs["b"]), "--method", "diff",
                    "--json")
    assert diff["answers_used"] == 20


def test_compare_finds_the_obvious_regression(runs: dict[str, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The oracle always passes; the noisy agent at p = 0.5 fails often: from oracle to noisy,
    scenarios regress; from noisy to oracle, they improve. Uses the oracle's single repeat as
    one pair, so only the diff method has anything to say."""
    d = cli_json(capsys, "compare", str(runs["o"]), str(runs["b"]), "--method", "diff", "--json")
    assert d["regressed"] and not d["improved"]
    back = cli_json(capsys, "compare", str(runs["b"]), str(runs["o"]), "--method", "diff",
                    "--json")
    assert back["improved"] == d["regressed"] and not back["regressed"]


def test_compare_text_and_errors(runs: dict[str, Path], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(runs["a"]), str(runs["b"]), "--method", "ebh",
                 "--stop-fine"]) == 0
    out = capsys.readouterr().out
    assert "REGRESSED (" in out and "answers used:" in out and "95% CI" in out
    other = tmp_path / "other"
    assert main(["run", "--model", "script/oracle", "--suite", "butterfly-40", "--limit", "2",
                 "--seed", "5", "--out", str(other), "--no-cache"]) == 0
    capsys.readouterr()
    # same suite file, fewer scenarios: compared on the common ones
    assert cli_json(capsys, "compare", str(runs["a"]), str(other), "--json")["n_scenarios"] <= 2
    for args, text in (((str(runs["a"]), str(tmp_path)), "not a run directory"),
                       ((str(runs["a"]), str(runs["b"]), "--k", "99"), "--k 99"),
                       ((str(runs["a"]), str(runs["b"]), "--q", "2"), "--q")):
        assert main(["compare", *args]) == 1
        err = capsys.readouterr().err
        assert text in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_calibrate_real_and_simulated_json(runs: dict[str, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli("calibrate", str(runs["a"]), "--reshuffles", "4", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"diff", "fixed", "bh", "ebh", "ebh-fine", "gs"} <= set(d)
    for row in d.values():
        for config in ("null", "0.3", "0.6"):
            assert {"fdr", "power", "false_alarms", "answers"} <= set(row[config])
        assert row["null"]["power"] is None  # nothing to find on the null pair
    sim = cli_json(capsys, "calibrate", "--simulate", "--m", "12", "--reps", "10", "--json")
    assert sim["bh"]["0.6"]["m"] == 12 and sim["bh"]["0.6"]["reps"] == 10
    assert main(["calibrate", str(runs["a"]), "--simulate", "--m", "9", "--reps", "5"]) == 0
    assert "| method |" in capsys.readouterr().out
    assert main(["calibrate"]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_calibration_is_reproducible_from_its_seed(runs: dict[str, Path]) -> None:
    _ids, answers, _ = calibrate.run_rates(runs["a"])
    one = calibrate.real_study(answers, reshuffles=3, seed=5)
    two = calibrate.real_study(answers, reshuffles=3, seed=5)
    assert one == two
    a1, b1, _ = calibrate.split_halves(answers, 3, 5)
    # 12 repeats: two disjoint halves of 6, together a permutation of each scenario's answers
    assert a1.shape[2] == 6
    for s in range(3):
        for i, x in enumerate(answers):
            assert sorted([*a1[s, i], *b1[s, i]]) == sorted(x)


def test_intervals_are_reproducible() -> None:
    clusters = [[1.0, 0.0, 1.0], [0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0], [1.0, 0.0]]
    assert cluster_bootstrap(clusters, seed=3) == cluster_bootstrap(clusters, seed=3)
    assert cluster_bootstrap(clusters, seed=3) != cluster_bootstrap(clusters, seed=4)
    lo, hi = cluster_bootstrap(clusters, seed=3) or (0.0, 0.0)
    assert 0.0 <= lo <= 9 / 12 <= hi <= 1.0 or 0.0 <= lo <= 7 / 12 <= hi
    assert cluster_bootstrap([]) is None
    bools = [[True, False], [True], [False, False, True]]
    assert proportion_interval(bools) == proportion_interval(bools)
    assert mean_interval(clusters) == mean_interval(clusters)
    a = [[True, True, False], [False, True]]
    b = [[False, False, False], [True, True]]
    one = compare.paired_difference(a, b, seed=9)
    assert one == compare.paired_difference(a, b, seed=9)
    assert one.diff == pytest.approx(np.mean([0 - 2 / 3, 1 - 0.5]))


def test_compare_reproducible_through_cli(runs: dict[str, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    args = ("compare", str(runs["a"]), str(runs["b"]), "--method", "gs", "--json", "--seed", "7")
    assert cli_json(capsys, *args) == cli_json(capsys, *args)


def test_calibrate_says_when_a_run_has_too_few_repeats() -> None:
    from butterfly.analysis.results import Calibration
    from butterfly.present.text import calibration_text as render

    rates = {"fdr": 0.0, "power": 0.5, "false_alarms": 0.0, "answers": 80.0, "reps": 20, "m": 40}
    row = {"label": "bh", "null": rates, "0.3": rates, "0.6": rates}

    def study(pairs: int) -> Calibration:
        return Calibration.of({"bh": row}, {"m": 40, "pairs": pairs, "reps": 20, "q": 0.1,
                                            "seed": 0})

    text = render(study(1), "x")
    assert "only 1 pair(s) per scenario" in text
    assert text.splitlines()[-1] == ("| bh | 0.00 | 0.000 | 0.000 | 0.500 | 80 | 0.000 | 0.500 "
                                     "| 80 | 80 |")
    assert "note:" not in render(study(50), "x")


def test_compare_says_when_its_method_cannot_flag_a_scenario(
        runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """With one pair per scenario (the oracle's one repeat against the noisy agent) bh cannot
    flag a scenario whatever the answers: compare says so, in the terminal and in --json, says
    how many pairs it needs and names the method that can; with 12 pairs it says nothing."""
    one = [str(runs["o"]), str(runs["b"])]
    d = cli_json(capsys, "compare", *one, "--json")
    assert d["method"] == "bh" and d["pairs_available"] == 1
    assert d["can_flag"] is False and d["pairs_needed"] == 3
    assert d["methods_that_can"] == ["diff"]
    assert main(["compare", *one]) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if line.startswith("note:"))
    assert "bh cannot flag any scenario with 1 pair per scenario at q = 0.1" in note
    assert "--repeats 3" in note and "--method diff" in note
    assert cli_json(capsys, "compare", *one, "--method", "diff", "--json")["can_flag"] is True
    assert cli_json(capsys, "compare", *one, "--method", "ebh", "--json")["pairs_needed"] == 5
    many = [str(runs["a"]), str(runs["b"])]
    d = cli_json(capsys, "compare", *many, "--json")
    assert d["can_flag"] is True and "bh" in d["methods_that_can"]
    assert main(["compare", *many]) == 0
    assert "note:" not in capsys.readouterr().out
    assert main(["compare", *many, "--k", "2"]) == 0  # two of twelve pairs read: raise --k
    assert "with --k 2 of 12 pairs per scenario" in capsys.readouterr().out


def test_can_flag_is_the_methods_verdict_on_the_most_extreme_answers() -> None:
    """Every method's smallest flaggable count at q = 0.1, and monotone from there: no answers
    flag a scenario below it (checked on every answer matrix of up to 4 pairs)."""
    from itertools import product

    from butterfly.analysis import regress

    assert {m: compare.pairs_needed(m, 0.1) for m in regress.METHODS} == {
        "diff": 1, "fixed": 3, "bh": 3, "ebh": 5, "gs": 3}
    for method in regress.METHODS:
        for n in range(1, 5):
            if compare.can_flag(method, n, 0.1):
                continue
            cells = np.array(list(product([False, True], repeat=2 * n)), dtype=bool)
            a, b = cells[:, None, :n], cells[:, None, n:]  # every answer pattern, one each
            assert not regress.run_method(method, a, b, 0.1).regressed.any()


def _costs(run: str, costs: dict[str, tuple[float | None, ...]]) -> RunAnswers:
    return RunAnswers(run, "m", "sha", "E", tuple(costs), {}, {i: (True,) * len(c)
                      for i, c in costs.items()}, 0.0, 0, costs=costs)


def test_the_cost_ratio_pairs_mean_costs_per_scenario_and_says_why_none() -> None:
    a = _costs("a", {"s1": (0.01, 0.03), "s2": (0.02,)})
    b = _costs("b", {"s1": (0.04,), "s2": (0.06, 0.06, 0.06)})
    got = cost_ratio(a, b, ["s1", "s2"])
    assert got.ratio == pytest.approx((0.04 + 0.06) / (0.02 + 0.02))  # repeats: means
    assert got.ci is not None and got.ci[0] <= got.ratio <= got.ci[1]
    assert cost_ratio(a, b, ["s1", "s2"]) == got  # seeded
    nothing = _costs("z", {"s1": (0.0,), "s2": (0.0,)})
    assert cost_ratio(nothing, b, ["s1", "s2"]).note == "run A spent nothing: no ratio exists"
    unpriced = _costs("u", {"s1": (None,), "s2": (0.01,)})
    none = cost_ratio(unpriced, unpriced, ["s1", "s2"])
    assert none.ratio is None and none.note is not None
    assert none.note.startswith("runs A and B have a call with no price")
