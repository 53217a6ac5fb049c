"""butterfly-horizon (contract v3, section 2): frozen, seeded, asked at chosen turns, every guard
holding at 5,000 edits, and an op mix that stays hard at every length."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from conftest import run_inproc as run_cli

from butterfly.suite.builder import scenario_seed
from butterfly.suite.horizon_chains import HARD_OPS, generate_horizon_chain
from butterfly.suite.load import (
    BUILTINS,
    HORIZON_ASK_AT,
    HORIZON_CHAINS,
    HORIZON_LENGTH,
    load_manifest,
    load_suite,
)
from butterfly.suite.mix import BANDS, mix_table, op_mix, overall, reaches
from oracle import ASKED_MAX_TURNS, MAX_TURNS, Scenario, SuiteManifest, replay
from oracle.readings import contexts, triggered
from oracle.replay import Replayer

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "scenarios" / "butterfly-horizon.jsonl"
sys.path.append(str(ROOT / "tests" / "oracle"))
from naive import naive  # type: ignore[import-not-found]  # noqa: E402


@pytest.fixture(scope="module")
def frozen() -> tuple[list[Scenario], SuiteManifest]:
    """The committed suite, parsed (validated by its own test), and its manifest."""
    lines = SUITE.read_text(encoding="utf-8").splitlines()
    manifest = load_manifest(SUITE)
    assert manifest is not None
    return [Scenario.model_validate_json(line) for line in lines], manifest


SAMPLE = (1, 6, 12)
"""The chains regenerated here (each chain is drawn from its own seed, so a sample of them is
rebuilt exactly as the whole suite is; all twelve take about 6 s:
``butterfly generate --suite butterfly-horizon`` rebuilds them, and ``build_builtin`` is the
same code)."""


def test_the_suite_regenerates_byte_for_byte_from_its_seed(
        frozen: tuple[list[Scenario], SuiteManifest]) -> None:
    scenarios, manifest = frozen
    seed = BUILTINS["butterfly-horizon"].seed
    assert manifest.seed == seed and manifest.n_scenarios == len(scenarios) == HORIZON_CHAINS
    lines = SUITE.read_text(encoding="utf-8").splitlines()
    for i in SAMPLE:
        chain = generate_horizon_chain(HORIZON_LENGTH, scenario_seed(seed, "horizon-5000", i),
                                       f"horizon-05000-{i:02d}", HORIZON_ASK_AT)
        assert chain.to_json() == lines[i - 1]
    assert [s.seed for s in scenarios] == [scenario_seed(seed, "horizon-5000", i)
                                           for i in range(1, HORIZON_CHAINS + 1)]
    assert hashlib.sha256(SUITE.read_bytes()).hexdigest() == manifest.sha256
    assert manifest.to_json() == (ROOT / "scenarios" / "butterfly-horizon.manifest.json"
                                  ).read_text(encoding="utf-8")


def test_twelve_chains_of_5000_edits_asked_at_the_contract_points(
        frozen: tuple[list[Scenario], SuiteManifest]) -> None:
    scenarios, manifest = frozen
    assert len(scenarios) >= 12 and {len(s.turns) for s in scenarios} == {5000}
    assert manifest.ask_at == list(HORIZON_ASK_AT) == [10, 20, 50, 100, 200, 500, 1000, 2000,
                                                       5000]
    assert manifest.max_turns == ASKED_MAX_TURNS and manifest.lengths == {"5000": 12}


def test_the_suite_validates_every_guard_and_reading() -> None:
    """load_suite checks every guard, second readings included, on every turn."""
    assert len(load_suite(SUITE)) == 12


def test_the_op_mix_stays_hard_at_every_length(
        frozen: tuple[list[Scenario], SuiteManifest]) -> None:
    mix = op_mix(frozen[0])
    for band in mix:
        assert band.turns > 0
        assert band.share(HARD_OPS) >= 0.30, (band.first, band.last, band.share(HARD_OPS))
    whole = overall(mix)
    assert whole.median_reach() >= 50  # undo by description and undo earliest together
    assert whole.median_reach(["undo_ref"]) >= 50
    for op in HARD_OPS:  # each hard op stays present at length, not only their sum
        assert mix[-1].share([op]) >= 0.03, op


def test_the_mix_table_in_the_docs_is_the_suite_s(
        frozen: tuple[list[Scenario], SuiteManifest]) -> None:
    """docs/ladder.md shows the table tools/ladder_mix.py computes from the frozen suite."""
    assert mix_table(op_mix(frozen[0], BANDS)) in (ROOT / "docs" / "ladder.md").read_text()


def test_reach_is_measured_from_the_turn_that_made_the_change() -> None:
    s = Scenario.model_validate_json(json.dumps({
        "id": "r", "category": "long_chain", "source": "handwritten",
        "initial": replay(_first_chain_prefix(1))[0],
        "turns": [
            {"op": "set", "setting": "log_level", "value": "debug", "text": "Switch to debug."},
            {"op": "distractor", "text": "Nothing to change."},
            {"op": "undo_ref", "setting": "log_level", "text": "Undo the change I made to "
             "how much the tool logs."},
            {"op": "redo", "text": "Redo the change I just undid."},
            {"op": "undo_earliest", "text": "Of the changes still in effect, revert the one "
             "I made first."},
        ],
    }))
    assert reaches(s) == [(3, "undo_ref", 2), (5, "undo_earliest", 4)]


def _first_chain_prefix(n: int) -> Scenario:
    line = SUITE.open(encoding="utf-8").readline()
    s = Scenario.model_validate_json(line)
    return s.model_copy(update={"turns": s.turns[:n]})


def test_the_oracle_agrees_with_the_naive_twin_on_a_long_prefix() -> None:
    """The naive twin recomputes everything from the whole history at every turn (quadratic):
    a 400-turn prefix of the first chain."""
    s = _first_chain_prefix(400)
    assert replay(s) == naive(s)


def test_the_planner_is_deterministic_and_reaches_10000_turns() -> None:
    a = generate_horizon_chain(300, 11, "x")
    assert a.to_json() == generate_horizon_chain(300, 11, "x").to_json()
    with pytest.raises(Exception, match="1 to 10,000"):
        generate_horizon_chain(ASKED_MAX_TURNS + 1, 11, "x")


# ------------------------------------------------------------------------- turn limits


def _chain_lines(n: int) -> str:
    return generate_horizon_chain(n, 5, "long-one").to_json() + "\n"


def test_turn_limits_200_without_ask_points_10000_with(tmp_path: Path) -> None:
    line = _chain_lines(MAX_TURNS + 1)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(line)
    with pytest.raises(Exception, match="turn limit is 200"):
        load_suite(plain)
    asked = tmp_path / "asked.jsonl"
    asked.write_text(line)
    manifest = SuiteManifest(
        name="asked", version=1, file=str(asked), generator_version="3", seed=5,
        handwritten=None, n_scenarios=1, max_turns=ASKED_MAX_TURNS, counts={"long_chain": 1},
        ask_at=[10, 100], sha256="0" * 64)
    (tmp_path / "asked.manifest.json").write_text(manifest.to_json())
    assert len(load_suite(asked)[0].turns) == MAX_TURNS + 1
    with pytest.raises(ValueError, match="only for a suite with default ask points"):
        SuiteManifest.model_validate({**json.loads(manifest.to_json()), "ask_at": None})
    too_long = json.loads(line)
    too_long["turns"] = too_long["turns"] * 50  # 10,050 turns: refused by the record itself
    with pytest.raises(ValueError, match="at most 10000"):
        Scenario.model_validate_json(json.dumps(too_long))


def test_butterfly_40_keeps_10_and_butterfly_long_200() -> None:
    """butterfly-long names ask points (its lengths) and keeps its limit of 200."""
    for name, limit, ask_at in (("butterfly-40", 10, None),
                                ("butterfly-long", 200, [5, 10, 20, 40, 80])):
        m = load_manifest(ROOT / "scenarios" / f"{name}.jsonl")
        assert m is not None and m.max_turns == limit and m.ask_at == ask_at


def test_cli_generate_lengths_above_200_only_with_ask_points(tmp_path: Path) -> None:
    out = tmp_path / "mine.jsonl"
    r = run_cli("generate", "--lengths", "250,20", "--per-length", "1", "--seed", "3",
                "--ask-at", "10,100", "--out", str(out))
    assert r.returncode == 0, r.stderr
    manifest = load_manifest(out)  # written beside --out, named by it
    assert manifest is not None and manifest.ask_at == [10, 100] and manifest.name == "mine"
    assert manifest.sha256 == hashlib.sha256(out.read_bytes()).hexdigest()
    assert [len(s.turns) for s in load_suite(out)] == [250, 20]
    for args, needle in (
        (("--lengths", "250"), "up to 10,000 with --ask-at"),
        (("--lengths", "10001", "--ask-at", "10", "--out", str(out)), "1 to 10000"),
        (("--lengths", "300", "--ask-at", "10"), "give --out FILE"),
        (("--lengths", "300", "--ask-at", "10", "--ops", "set=1", "--out", str(out)),
         "takes no --ops"),
        (("--count", "3", "--ask-at", "10", "--out", str(out)), "goes with --lengths"),
        (("--lengths", "30", "--ask-at", "ten", "--out", str(out)), "--ask-at takes"),
    ):
        r = run_cli("generate", *args)
        assert r.returncode == 1 and needle in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


def test_no_second_reading_is_triggered_anywhere(
        frozen: tuple[list[Scenario], SuiteManifest]) -> None:
    """Stricter than the guard (which rejects a reading only where it changes a spec): no turn's
    words and structure trigger any reading of the registry."""
    for s in frozen[0]:
        hits = [t for t, ctx in contexts(s.initial, s.turns) if triggered(ctx)]
        assert not hits, (s.id, hits[:5])


def test_at_most_one_change_in_effect_per_setting_throughout(
        frozen: tuple[list[Scenario], SuiteManifest]) -> None:
    """The planner's invariant, which keeps undo by description and undo earliest valid at any
    length (docs/ladder.md)."""
    s = frozen[0][0]
    replayer = Replayer(s.initial)
    for turn in s.turns:
        assert replayer.push(turn) is not None
        assert max(len(hits) for hits in replayer.engine.live.values()) <= 1


def test_no_undo_last_is_worded_as_if_it_could_be_the_undo_before_it(
        frozen: tuple[list[Scenario], SuiteManifest]) -> None:
    """Careful readers read "Scratch the change I just made." (v1) and "Actually, revert my
    most recent change." (v2) right after an undo as undoing that undo (second reading 8): there
    (distractors between them ignored) an undo-last says the change is still in effect."""
    seen = after = 0
    for s in frozen[0]:
        last = None
        for t in s.turns:
            if t.op == "undo_last":
                seen += 1
                if last in ("undo_last", "undo_ref", "undo_earliest"):
                    after += 1
                    assert t.paraphrase == "undo_last.4", (s.id, t.text)
                    assert "still in effect" in t.text
            last = t.op if t.op != "distractor" else last
    assert seen > 500 and after > 50  # the case is common, and every one is worded so
