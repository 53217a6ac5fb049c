"""The code track's suites: butterfly-code rebuilt byte for byte, its counts, guards and code rules,
the generator's flags (--track code with --count, --lengths), seeds, and malformed code scenarios
refused in one line (butterfly.suite.code, butterfly.suite.code_rules)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, cli_in_process
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly import api
from butterfly.core.code_catalogue import DOMAINS as CODE_DOMAINS
from butterfly.core.code_catalogue import KEYS as CODE_KEYS
from butterfly.errors import UserError
from butterfly.suite.code import (
    CODE_COUNTS,
    CODE_MAX_TURNS,
    LONG_TURNS,
    SHORT_TURNS,
    generate_code_chains,
    generate_code_mixed,
)
from butterfly.suite.code_rules import NON_CODE, code_violation
from butterfly.suite.generate import DEFAULT_COUNTS
from butterfly.suite.load import (
    SuiteError,
    build_builtin,
    dumps_suite,
    load_manifest,
    load_suite,
    track_of,
)
from oracle import BY_KEY, SuiteManifest, replay
from oracle.readings import audit

SUITE = ROOT / "scenarios" / "butterfly-code.jsonl"
MANIFEST = ROOT / "scenarios" / "butterfly-code.manifest.json"


def test_butterfly_code_rebuilds_byte_for_byte() -> None:
    scenarios, manifest = build_builtin("butterfly-code")
    assert dumps_suite(scenarios).encode() == SUITE.read_bytes()
    assert load_manifest(SUITE) == manifest
    assert manifest.track == "code" and manifest.max_turns == CODE_MAX_TURNS
    assert manifest.n_scenarios == 40


def test_cli_generate_suite_butterfly_code(tmp_path: Path) -> None:
    out, man = tmp_path / "code.jsonl", tmp_path / "code.manifest.json"
    r = run_cli("generate", "--suite", "butterfly-code", "--out", str(out), "--manifest", str(man))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == SUITE.read_bytes()
    assert man.read_bytes() == MANIFEST.read_bytes()


def test_counts_are_butterfly_40s_with_the_drop_categories_moved() -> None:
    expected = {c: n for c, n in DEFAULT_COUNTS.items() if c not in ("drop", "drop_undo")}
    expected["undo_ref"] += 2
    expected["undo_earliest"] += 2
    expected["coupling"] += 1
    assert expected == CODE_COUNTS and sum(expected.values()) == 40
    scenarios = load_suite(SUITE)
    assert dict(Counter(s.category for s in scenarios)) == expected
    assert load_manifest(SUITE).counts == expected  # type: ignore[union-attr]


def test_every_guard_holds_and_no_second_reading_is_triggered() -> None:
    scenarios = load_suite(SUITE)  # every guard, second readings included
    tallies = audit((s, replay(s)) for s in scenarios)
    assert len(tallies) >= 5
    assert all(t.triggered == t.turns == t.scenarios == 0 for t in tallies)


def test_every_scenario_keeps_the_code_rules_and_sits_high_in_its_lengths() -> None:
    for s in load_suite(SUITE):
        assert code_violation(s) is None, s.id
        assert all(t.op != "drop" for t in s.turns), s.id
        assert all(getattr(t, "setting", None) not in NON_CODE for t in s.turns), s.id
        low, high = LONG_TURNS if s.category == "long_chain" else SHORT_TURNS
        assert low <= len(s.turns) <= high, s.id
        for spec in replay(s):
            assert all(spec[k] == BY_KEY[k].initial for k in NON_CODE), s.id
            assert all(spec[k] in CODE_DOMAINS[k] for k in CODE_KEYS), s.id


def test_track_of() -> None:
    assert track_of("butterfly-code") == "code"
    assert track_of("butterfly-40") == "spec"
    assert track_of(ROOT / "scenarios" / "handwritten.jsonl") == "spec"  # no manifest


def test_an_old_manifest_without_track_loads_as_spec() -> None:
    raw = json.loads((ROOT / "scenarios" / "butterfly-40.manifest.json").read_text())
    raw.pop("track")
    assert SuiteManifest.model_validate(raw).track == "spec"


def test_seeds_are_reproducible_and_code_only() -> None:
    a, b = generate_code_mixed(16, 5), generate_code_mixed(16, 5)
    assert dumps_suite(a) == dumps_suite(b)
    assert dumps_suite(a) != dumps_suite(generate_code_mixed(16, 6))
    assert all(code_violation(s) is None for s in a)
    chains = generate_code_chains([20, 40], 2, 3, prefix="s3")
    assert [len(s.turns) for s in chains] == [20, 20, 40, 40]
    assert dumps_suite(chains) == dumps_suite(generate_code_chains([20, 40], 2, 3, prefix="s3"))
    assert all(code_violation(s) is None for s in chains)


def test_cli_track_code_count_and_lengths(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    mixed, chains = tmp_path / "mixed.jsonl", tmp_path / "chains.jsonl"
    code, _, err = cli_in_process(capsys, "generate", "--track", "code", "--count", "12",
                                  "--seed", "4", "--out", str(mixed))
    assert code == 0, err
    assert mixed.read_text() == dumps_suite(generate_code_mixed(12, 4))
    code, _, err = cli_in_process(capsys, "generate", "--track", "code", "--lengths", "20,40",
                                  "--per-length", "1", "--seed", "4", "--out", str(chains))
    assert code == 0, err
    assert api.validate([str(mixed), str(chains)], track="code")[1].turns == 60


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"count": 4, "track": "code", "paraphrase_variants": 2}, "not built for the code track"),
    ({"suite": "butterfly-40", "track": "code"}, "spec track"),
    ({"lengths": "20", "ops": "set=3,drop=1", "track": "code"}, "no drop turns"),
    ({"count": 4, "track": "diff"}, "--track takes"),
])
def test_generate_refuses_in_one_line(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(UserError, match=words) as e:
        api.generate(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


def _line(turn: dict[str, str] | None = None, **initial: str) -> str:
    s = json.loads(SUITE.read_text().splitlines()[0])
    s["initial"].update(initial)
    if turn is not None:
        s["turns"].append(turn)
    return json.dumps(s)


MALFORMED = {
    "drop": (_line({"op": "drop", "setting": "deduplicate",
                    "text": "Remove the requirement on deduplication; leave it unspecified."}),
             "a drop turn"),
    "zstd": (_line({"op": "set", "setting": "compression", "value": "zstd",
                    "text": "Switch to zstd-compressed output."}), "compression=zstd"),
    "parquet": (_line(output_format="parquet"), "output_format=parquet"),
    "log_level": (_line({"op": "set", "setting": "log_level", "value": "debug",
                         "text": "Switch to debug-level logging."}), "targets log_level"),
    "words": (_line({"op": "distractor", "text": "Does the progress bar slow it down? "
                     "No change needed."}), "its words name progress_bar"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_code_scenario_is_one_line(tmp_path: Path, case: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    line, words = MALFORMED[case]
    suite = tmp_path / "mine.jsonl"
    suite.write_text(line + "\n")
    assert api.validate([str(suite)])  # a spec-track suite: valid
    with pytest.raises(SuiteError, match=words) as e:
        api.validate([str(suite)], track="code")
    assert "\n" not in str(e.value)
    (tmp_path / "mine.manifest.json").write_text(MANIFEST.read_text())  # the manifest says code
    code, _, err = cli_in_process(capsys, "validate", str(suite))
    assert code == 1 and words in err and err.count("\n") == 1, err
