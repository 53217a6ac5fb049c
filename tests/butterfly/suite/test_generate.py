"""The generator: frozen suite reproduced byte for byte, determinism, coverage, validity."""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
from collections import Counter

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly.suite.builder import scenario_seed
from butterfly.suite.generate import (
    DEFAULT_COUNTS,
    generate,
    generate_one,
    proportional_counts,
)
from butterfly.suite.load import build_builtin, dumps_suite, load_manifest, load_suite
from butterfly.suite.templates import FAMILIES
from oracle import BY_KEY, CATEGORIES, OPS, check, replay, turn_limit

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"


BUILTINS = ("butterfly-40", "butterfly-long", "butterfly-hard")


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_rebuild_is_byte_identical_to_committed_file(name: str) -> None:
    path = ROOT / "scenarios" / f"{name}.jsonl"
    scenarios, manifest = build_builtin(name)
    text = dumps_suite(scenarios)
    assert text.encode() == path.read_bytes()
    committed = load_manifest(path)
    assert committed is not None
    assert committed == manifest
    assert hashlib.sha256(path.read_bytes()).hexdigest() == committed.sha256
    assert committed.max_turns == turn_limit(name)
    assert max(len(s.turns) for s in scenarios) <= committed.max_turns


def test_butterfly40_is_v4_and_keeps_1_to_10_turns() -> None:
    m = load_manifest(SUITE)
    assert m is not None and m.version == 4 and m.max_turns == 10
    assert turn_limit("butterfly-40") == 10 and turn_limit("butterfly-long") == 200


@pytest.mark.parametrize("name", BUILTINS)
def test_cli_generate_suite_reproduces_file(tmp_path, name: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "suite.jsonl"
    man = tmp_path / "suite.manifest.json"
    r = run_cli("generate", "--suite", name, "--out", str(out), "--manifest", str(man))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == (ROOT / "scenarios" / f"{name}.jsonl").read_bytes()
    assert man.read_bytes() == (ROOT / "scenarios" / f"{name}.manifest.json").read_bytes()


def test_butterfly40_v2_rewrites_only_what_the_v2_guards_reject() -> None:
    """The three scenarios of the changelog changed; their ops are those of v1."""
    by_id = {s.id: s for s in load_suite(SUITE)}
    v1_ops = {
        "hw-indirect-same-format": ["set", "set", "set"],
        "hw-undo-earliest-after-undo": ["set", "set", "set", "undo_ref", "undo_earliest"],
        "gen-long-chain-03": ["set", "set", "undo_earliest", "undo_ref", "set", "set", "set",
                              "set", "set"],
    }
    for sid, ops in v1_ops.items():
        assert [t.op for t in by_id[sid].turns] == ops, sid
    for sid in v1_ops:
        assert sid in (ROOT / "docs" / "suite-changelog.md").read_text()


def test_butterfly40_has_the_contract_counts() -> None:
    scenarios = load_suite(SUITE)
    assert Counter(s.category for s in scenarios) == Counter(DEFAULT_COUNTS)
    assert Counter(s.source for s in scenarios) == {"handwritten": 6, "generated": 34}
    long_chains = [s for s in scenarios if s.category == "long_chain"]
    assert all(8 <= len(s.turns) <= 10 for s in long_chains)


def test_same_seed_same_bytes_across_hash_seeds() -> None:
    outs = set()
    for hash_seed in ("0", "1", "12345"):
        r = run_cli("generate", "--count", "60", "--seed", "7",
                    env={"PYTHONHASHSEED": hash_seed})
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1
    other = run_cli("generate", "--count", "60", "--seed", "8")
    assert other.stdout not in outs


def test_mixed_suite_covers_all_categories_in_proportion() -> None:
    counts = proportional_counts(400)
    assert sum(counts.values()) == 400
    assert counts == {c: k * 10 for c, k in DEFAULT_COUNTS.items()}
    small = proportional_counts(13)
    assert sum(small.values()) == 13 and all(v >= 1 for v in small.values())
    scenarios = generate(proportional_counts(40), seed=5)
    assert {s.category for s in scenarios} == set(CATEGORIES)


def test_thousands_of_generated_scenarios_are_valid_and_discriminative() -> None:
    scenarios = generate(proportional_counts(1500), seed=11)
    assert len({s.id for s in scenarios}) == len(scenarios)
    for s in scenarios:
        assert check(s) is None, s.id
        specs = replay(s)
        for t, turn in enumerate(s.turns, 1):
            if turn.op != "distractor":
                assert specs[t] != specs[t - 1], (s.id, t)
            else:
                assert specs[t] == specs[t - 1]
        if s.category == "long_chain":
            assert 8 <= len(s.turns) <= 10


def test_paraphrase_families_are_large_enough() -> None:
    for op in ("set", "drop", "undo_last", "undo_ref", "redo", "distractor"):
        assert len(FAMILIES[op]) >= 3, op
    assert len(FAMILIES["undo_earliest"]) >= 5
    for family, templates in FAMILIES.items():
        if family.startswith("indirect."):
            assert len(templates) >= 3


def _matches(template: str, text: str) -> bool:
    """Whether ``text`` is ``template`` with each placeholder filled by some non-empty text."""
    pattern = "".join(
        re.escape(lit) + ("(.+?)" if field is not None else "")
        for lit, field, _, _ in string.Formatter().parse(template)
    )
    return re.fullmatch(pattern, text, flags=re.DOTALL) is not None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_generated_turn_records_its_paraphrase(seed: int) -> None:
    for s in generate(proportional_counts(50), seed=seed):
        for turn in s.turns:
            assert turn.paraphrase is not None
            family, _, idx = turn.paraphrase.rpartition(".")
            template = FAMILIES[family][int(idx)]
            assert _matches(template, turn.text), (turn.paraphrase, turn.text)
            if turn.op == "set" and not family.startswith("indirect."):
                assert BY_KEY[turn.setting].phrase(turn.value) in turn.text


def test_generate_one_is_deterministic() -> None:
    seed = scenario_seed(40, "long_chain", 1)
    a = generate_one("long_chain", seed, "x")
    b = generate_one("long_chain", seed, "x")
    assert a == b and a.to_json() == b.to_json()


def test_handwritten_scenarios_are_handwritten_and_valid() -> None:
    hw = load_suite(ROOT / "scenarios" / "handwritten.jsonl")
    assert len(hw) == 6
    for s in hw:
        assert s.source == "handwritten" and s.seed is None
        assert all(t.paraphrase is None for t in s.turns)
    docs = (ROOT / "docs" / "handwritten.md").read_text()
    for s in hw:
        assert s.id in docs, f"docs/handwritten.md does not explain {s.id}"


def test_suite_lines_are_canonical_json() -> None:
    for line in SUITE.read_text().splitlines():
        obj = json.loads(line)
        assert list(obj)[:5] == ["schema_version", "id", "category", "source", "seed"] or (
            obj["source"] == "handwritten" and "seed" not in obj
        )


# ---------------------------------------------------------------------------- v2: the ladder

LONG = ROOT / "scenarios" / "butterfly-long.jsonl"
HARD = ROOT / "scenarios" / "butterfly-hard.jsonl"


def test_butterfly_long_has_12_chains_at_each_exact_length() -> None:
    scenarios = load_suite(LONG)
    assert Counter(len(s.turns) for s in scenarios) == {5: 12, 10: 12, 20: 12, 40: 12, 80: 12}
    for s in scenarios:
        ops = {t.op for t in s.turns}
        assert ops & {"undo_last", "undo_ref", "undo_earliest", "redo"}, s.id
        if len(s.turns) >= 20:
            assert ops == set(OPS), s.id  # every op mixed
    for length in (20, 40, 80):
        chains = [s for s in scenarios if len(s.turns) == length]
        assert all(_rule_switched_on_and_off(s) for s in chains), length
        # references reaching far back: an undo_ref of a change made at least length/4 turns ago
        assert max(_farthest_reference(s) for s in chains) >= length // 4, length


def _rule_switched_on_and_off(s) -> bool:  # type: ignore[no-untyped-def]
    from oracle import COUPLINGS

    specs = replay(s)
    for c in COUPLINGS:
        on = [sp[c.trigger] == c.when for sp in specs]
        if True in on and False in on[on.index(True):]:
            return True
    return False


def _farthest_reference(s) -> int:  # type: ignore[no-untyped-def]
    """How many turns back the oldest change an undo_ref undoes was made."""
    far = 0
    for t, turn in enumerate(s.turns):
        if turn.op == "undo_ref":
            made = max(i for i in range(t) if s.turns[i].op in ("set", "drop")
                       and s.turns[i].setting == turn.setting)
            far = max(far, t - made)
    return far


def test_cli_generate_by_length_and_op_mix(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "chains.jsonl"
    r = run_cli("generate", "--lengths", "6,30", "--per-length", "3", "--seed", "5",
                "--ops", "set=3,undo_last=1,redo=1,undo_earliest=1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    scenarios = load_suite(out)
    assert Counter(len(s.turns) for s in scenarios) == {6: 3, 30: 3}
    assert {t.op for s in scenarios for t in s.turns} <= {"set", "undo_last", "redo",
                                                          "undo_earliest"}
    again = run_cli("generate", "--lengths", "6,30", "--per-length", "3", "--seed", "5",
                    "--ops", "set=3,undo_last=1,redo=1,undo_earliest=1")
    assert again.stdout == out.read_text()
    for args, needle in (
        (("--lengths", "201"), "1 to 200"),
        (("--lengths", "5", "--ops", "jump=1"), "unknown op 'jump'"),
        (("--lengths", "5", "--ops", "drop=1"), "needs set turns"),
        (("--lengths", "5", "--count", "3"), "--per-length"),
        (("--count", "3", "--ops", "set=1"), "go with --lengths"),
        (("--suite", "butterfly-long", "--lengths", "5"), "takes no"),
    ):
        r = run_cli("generate", *args)
        assert r.returncode == 1 and needle in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


def test_butterfly_hard_has_8_of_each_construction() -> None:
    from butterfly.suite.hard import HARD_CONSTRUCTIONS

    scenarios = load_suite(HARD)
    assert len(scenarios) == 40
    assert Counter(s.id.rsplit("-", 1)[0].removeprefix("hard-") for s in scenarios) == {
        c: 8 for c in HARD_CONSTRUCTIONS}


V2_SIZE = int(os.environ.get("BUTTERFLY_V2_SIZE", "1"))
"""Multiplier of the v2 Done-when check (1: 2,000 scenarios and 3,000 x 3 variants)."""


def test_v2_done_when_generated_scenarios_and_variants_pass_every_guard() -> None:
    """Issue 13's Done-when: 2,000 generated scenarios and 3,000 x 3 paraphrase variants."""
    from butterfly.suite.chains import generate_chains
    from butterfly.suite.generate import paraphrase_variants

    scenarios = generate(proportional_counts(2000 * V2_SIZE), seed=13)
    assert len(scenarios) == 2000 * V2_SIZE
    assert all(check(s) is None for s in scenarios)
    base = generate(proportional_counts(3000 * V2_SIZE), seed=1313)
    variants = [v for s in base for v in paraphrase_variants(s, 3)]
    assert len(variants) == 9000 * V2_SIZE
    assert all(check(v) is None for v in variants)
    chains = generate_chains((5, 20, 60), 20, seed=99)
    assert all(check(v) is None for s in chains for v in paraphrase_variants(s, 3))
