"""bench/mutants.py's own logic, without a mutation run: its arguments, the seeded sample, the
targets of mutmut's names, the fingerprints that match mutants across commits, the shares and
the settings mutmut reads (docs/performance.md, "Mutation score (issue 36)")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("bench_mutants", ROOT / "bench/mutants.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mutants = _load()


def test_arguments_and_their_defaults() -> None:
    args = mutants.parse_args(["--commit", "e30ca8a", "--against", "HEAD", "--sample", "9"])
    assert (args.commit, args.against, args.sample, args.seed) == ("e30ca8a", "HEAD", 9, 36)
    assert mutants.parse_args([]).sample == 140
    with pytest.raises(SystemExit):
        mutants.parse_args(["--sample", "0"])


def test_the_sample_is_seeded_sorted_and_independent_of_the_order_given() -> None:
    names = [f"oracle.ops.x_f__mutmut_{i}" for i in range(50)]
    first = mutants.draw(names, 10, 36)
    assert first == mutants.draw(list(reversed(names)), 10, 36) == sorted(first)
    assert len(set(first)) == 10 and set(first) <= set(names)
    assert first != mutants.draw(names, 10, 37)
    assert mutants.draw(names[:3], 10, 36) == sorted(names[:3])


def test_each_mutant_names_its_target() -> None:
    assert mutants.target_of("oracle.engine.x_apply__mutmut_3") == "oracle"
    assert mutants.target_of("oracle.records.xǁSpecǁcheck__mutmut_1") == "oracle"
    assert mutants.target_of("butterfly.core.parse.x_parse_answer__mutmut_2") == "parser"
    assert mutants.target_of("butterfly.core.metrics.x_score__mutmut_2") == "scorer"
    assert mutants.target_of("butterfly.analysis.scoring.x_score_run__mutmut_1") == "scorer"
    assert mutants.target_of("butterfly.core.stats.x_wilson__mutmut_38") == "statistics"
    with pytest.raises(ValueError, match="in no target"):
        mutants.target_of("butterfly.cli.x_main__mutmut_1")


MUTATED = '''
def x_f__mutmut_orig(a):
    return a + {orig}

def x_f__mutmut_1(a):
    return a - 1

def x_f__mutmut_2(a):
    return a + 2
'''


def _prints(tmp_path: Path, orig: str) -> dict[str, str]:
    folder = tmp_path / orig / "oracle"
    folder.mkdir(parents=True)
    (folder / "ops.py").write_text(MUTATED.format(orig=orig), encoding="utf-8")
    return mutants.fingerprints(tmp_path / orig)


def test_a_mutant_matches_only_when_its_function_reads_the_same(tmp_path: Path) -> None:
    one, same, changed = _prints(tmp_path, "1"), _prints(tmp_path / "b", "1"), _prints(
        tmp_path / "c", "3")
    assert sorted(one) == ["oracle.ops.x_f__mutmut_1", "oracle.ops.x_f__mutmut_2"]
    assert one == same
    assert not set(one.values()) & set(changed.values())
    assert one["oracle.ops.x_f__mutmut_1"] != one["oracle.ops.x_f__mutmut_2"]


def test_shares_per_target_with_none_where_nothing_was_drawn() -> None:
    table = mutants.shares({"oracle.ops.x_f__mutmut_1": "killed",
                            "oracle.ops.x_f__mutmut_2": "survived",
                            "butterfly.core.stats.x_g__mutmut_1": "timeout"})
    assert table["oracle"] == {"killed": 1, "total": 2, "share": 0.5}
    assert table["statistics"] == {"killed": 1, "total": 1, "share": 1.0}
    assert table["parser"] == {"killed": 0, "total": 0, "share": None}
    assert table["all"] == {"killed": 2, "total": 3, "share": 0.6667}


def test_mutmut_reads_the_settings_written(tmp_path: Path, monkeypatch) -> None:
    from mutmut import configuration

    mutants.configure(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(configuration, "_config", None)
    config = configuration.config()
    assert [str(p) for p in config.source_paths] == list(mutants.SOURCES)
    assert config.only_mutate == [g for gs in mutants.TARGETS.values() for g in gs]
    assert config.pytest_add_cli_args_test_selection == list(mutants.TESTS)
    assert {Path(a) for a in mutants.ALSO_COPY} <= set(config.also_copy)
