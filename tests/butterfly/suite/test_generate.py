"""The generator: frozen suite reproduced byte for byte, determinism, coverage, validity."""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections import Counter

import pytest
from conftest import ROOT, run_cli

from butterfly.suite.generate import (
    DEFAULT_COUNTS,
    generate,
    generate_one,
    proportional_counts,
    scenario_seed,
)
from butterfly.suite.load import build_builtin, dumps_suite, load_manifest, load_suite
from butterfly.suite.templates import FAMILIES
from oracle import BY_KEY, CATEGORIES, check, replay

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"


def test_builtin_rebuild_is_byte_identical_to_committed_file() -> None:
    scenarios, manifest = build_builtin("butterfly-40")
    text = dumps_suite(scenarios)
    assert text.encode() == SUITE.read_bytes()
    committed = load_manifest(SUITE)
    assert committed is not None
    assert committed == manifest
    assert hashlib.sha256(SUITE.read_bytes()).hexdigest() == committed.sha256


def test_cli_generate_suite_reproduces_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "b40.jsonl"
    r = run_cli("generate", "--suite", "butterfly-40", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == SUITE.read_bytes()


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
