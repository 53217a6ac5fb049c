"""Paraphrase variants: same ops and oracle answers, other wordings; pass rate by paraphrase id."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly.suite.generate import generate, paraphrase_variants, proportional_counts
from butterfly.suite.templates import DRAWN, FAMILIES, ONE_READING
from oracle import check, replay
from oracle.readings import contexts, triggered


def test_variants_keep_ops_and_answers_and_change_wording() -> None:
    for s in generate(proportional_counts(30), seed=4):
        variants = paraphrase_variants(s, 3)
        assert [v.id for v in variants] == [f"{s.id}.p{i}" for i in range(3)]
        assert [t.text for t in variants[0].turns] == [t.text for t in s.turns]
        for v in variants:
            assert check(v) is None
            assert replay(v) == replay(s)
            for a, b in zip(v.turns, s.turns, strict=True):
                assert a.op == b.op and getattr(a, "setting", None) == getattr(b, "setting", None)
                assert a.paraphrase is not None and b.paraphrase is not None
                assert a.paraphrase.rpartition(".")[0] == b.paraphrase.rpartition(".")[0]
            assert not any(triggered(c) for _, c in contexts(v.initial, v.turns)), v.id
        for t in range(len(s.turns)):
            ids = {v.turns[t].paraphrase for v in variants}
            family = s.turns[t].paraphrase.rpartition(".")[0]  # type: ignore[union-attr]
            all_stand_ins = {p for alts in ONE_READING.values() for p in alts}
            stand_ins = {p for p in ids if int(p.rpartition(".")[2]) >= DRAWN[family]}
            assert stand_ins <= all_stand_ins
            if not ids & all_stand_ins:  # v3: where a reading is triggered, variants may share
                # a stand-in
                assert len(ids) == min(3, DRAWN[family])


def test_pass_rate_by_paraphrase_separates_history_from_wording(tmp_path: Path) -> None:
    suite = tmp_path / "pv.jsonl"
    r = run_cli("generate", "--count", "20", "--seed", "9", "--paraphrase-variants", "3",
                "--out", str(suite))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "run"
    assert run_cli("run", "--model", "script/lifo", "--suite", str(suite), "--out", str(out),
                   "--no-cache").returncode == 0
    by = json.loads(run_cli("score", str(out), "--json").stdout)["by_paraphrase"]
    earliest = {p: v for p, v in by.items() if v["op"] == "undo_earliest"}
    last = {p: v for p, v in by.items() if v["op"] == "undo_last"}
    assert len(earliest) >= 3 and all(v["share"] == 0.0 for v in earliest.values())
    assert len(last) >= 3 and all(v["share"] == 1.0 for v in last.values())


def test_variant_count_is_bounded() -> None:
    r = run_cli("generate", "--count", "5", "--paraphrase-variants", "4")
    assert r.returncode == 1 and "1 to 3" in r.stderr


def test_history_wording_is_never_used_after_a_redo_of_its_target() -> None:
    """v2: "hasn't been undone yet" after its target was undone and redone reads two ways. Since
    second reading 6 (v3), every wording of such a turn but "the one I made first" reads two
    ways (the target, made earliest, has not been in effect longest), so all variants use that
    one; elsewhere three variants give three distinct paraphrases."""
    from butterfly.suite.load import load_suite
    from butterfly.suite.templates import HISTORY_PARAPHRASES
    from oracle.replay import history_wording

    hard = load_suite(Path(__file__).parents[3] / "scenarios" / "butterfly-hard.jsonl")
    refused = 0
    for s in hard:
        for v in paraphrase_variants(s, 3):
            assert check(v) is None, v.id
        for t, turn in enumerate(s.turns):
            if turn.op != "undo_earliest":
                continue
            ids = {v.turns[t].paraphrase for v in paraphrase_variants(s, 3)}
            probe = s.model_copy(update={"turns": (*s.turns[:t], turn.model_copy(
                update={"text": "Undo my oldest change that hasn't been undone yet."}),
                *s.turns[t + 1:])})
            if check(probe, readings=False) is not None:
                refused += 1
                assert ids == {"undo_earliest.1"}
            else:
                assert len(ids) == 3
    assert refused >= 5  # the hard suite does exercise the guard
    assert all(history_wording(FAMILIES[p.rpartition(".")[0]][int(p.rpartition(".")[2])])
               for p in HISTORY_PARAPHRASES)
    flagged = {f"undo_earliest.{i}" for i, t in enumerate(FAMILIES["undo_earliest"])
               if history_wording(t)}
    assert flagged == HISTORY_PARAPHRASES  # the templates' flags and the oracle's pattern agree
