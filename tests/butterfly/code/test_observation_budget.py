"""Observation within a budget (issue 34, item 1; docs/code-track.md "Observation within a
budget"): a program that never ends, floods, or leaves files by the gigabyte costs one run and
no memory, and the observation says why its settings are broken.

Limits are lowered through the extractor's documented constants (``RUN_SECONDS``,
``BUDGET_SECONDS``, ``BUDGET_CPU``), so each test takes seconds.
"""

from __future__ import annotations

import gzip
import io
import os
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from butterfly.code import probes, runner, spec_of_program
from butterfly.code.program import render
from butterfly.core.code_catalogue import BROKEN, KEYS, UNOBSERVED, canonical, visible

ENDLESS = "while True:\n    pass\n"
FLOOD = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
FILES = ("for i in range(8):\n"
         "    with open(f'big{i}.dat', 'wb') as f:\n"
         "        f.write(b'x' * (8 << 20))\n")
"""Eight files of 8 MiB: each under the old per-file cap, 64 MiB in all."""


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temporary directory the sandbox's private directories go to, checked empty after."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    yield tmp
    assert not list(tmp.glob("bfcode-*"))


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The runs the extractor starts (one entry each)."""
    runs: list[int] = []
    real = spec_of_program.run_program

    def counting(*args: object, **kwargs: object) -> runner.Outcome:
        runs.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(spec_of_program, "run_program", counting)
    return runs


def _slowed(line: str) -> str:
    """The reference program of the canonical spec, running ``line`` first."""
    future = "from __future__ import annotations\n"
    return render(canonical()).replace(future, future + line + "\n", 1)


def _all_broken(observed: dict[str, str]) -> bool:
    return all(v in (BROKEN, UNOBSERVED) for v in observed.values()) and BROKEN in observed.values()


def test_a_program_that_never_ends_is_broken_at_once(monkeypatch: pytest.MonkeyPatch,
                                                     counted: list[int]) -> None:
    monkeypatch.setattr(spec_of_program, "RUN_SECONDS", 1.0)
    start = time.monotonic()
    got = spec_of_program.observe(ENDLESS, canonical())
    assert _all_broken(got.observed) and len(counted) == 1  # not 36 runs to the wall limit
    assert got.reason is not None and "small probe (the expected input)" in got.reason
    assert "wall-clock limit (1 s)" in got.reason and "every setting broken" in got.reason
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(("program", "words"), [
    (FLOOD, "wrote more than 32 MiB"),
    (FILES, "wrote more than 32 MiB"),
    ("import os\nfor i in range(200):\n    open(f'f{i}', 'w').close()\n", "more than 64 files"),
], ids=["stdout", "eight-files", "many-files"])
def test_a_flood_ends_the_search_at_its_first_run(program: str, words: str,
                                                  counted: list[int]) -> None:
    got = spec_of_program.observe(program, canonical())
    assert _all_broken(got.observed) and len(counted) == 1
    assert got.reason is not None and words in got.reason


def test_files_over_the_total_cap_are_stopped_and_never_held() -> None:
    """Eight files of 8 MiB: 64 MiB in all, over the total cap though each is under the
    old per-file one; the harness holds none of them (only their sizes)."""
    tracemalloc.start()
    try:
        outcome = runner.run_program(FILES, [], timeout=20.0, keep={"output.dat"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not outcome.ok and outcome.flooded and outcome.limit == "output"
    assert outcome.files == {} and peak < 4 * runner.KEEP
    assert sum(outcome.sizes.values()) <= runner.CAP + (64 << 20)  # stopped within a poll or so


def test_what_a_probe_reads_is_bounded() -> None:
    bomb = gzip.compress(b"\0" * (64 << 20))  # 64 KiB on disk, 64 MiB inside
    tracemalloc.start()
    try:
        assert probes.read(bomb) is None
        assert probes.count_file(io.BytesIO(bomb)) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < probes.COUNT_CAP + 4 * probes.CHUNK  # not the 64 MiB inside


def test_the_budget_stops_a_slow_program_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run sleeps 0.7 s: the small probe fits the budget of 1.2 s, the later runs do not;
    what the small probe showed is kept, the rest is broken with the budget named."""
    monkeypatch.setattr(spec_of_program, "BUDGET_SECONDS", 1.2)
    spec = canonical()
    start = time.monotonic()
    got = spec_of_program.observe(_slowed("import time; time.sleep(0.7)"), spec)
    assert time.monotonic() - start < 4
    assert got.observed["output_format"] == visible(spec)["output_format"]
    assert got.observed["max_rows"] == BROKEN and got.observed["on_error"] == BROKEN
    assert got.reason is not None and "the observation's budget ran out (1.2 s" in got.reason


def test_the_cpu_budget_counts_what_the_runs_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_of_program, "BUDGET_CPU", 0.3)
    spec = canonical()
    got = spec_of_program.observe(_slowed("x = sum(range(25_000_000))"), spec)
    assert got.observed["input_format"] == spec["input_format"]  # the small probe ran
    assert got.reason is not None and "budget ran out" in got.reason
    assert BROKEN in got.observed.values()


def test_a_stop_request_ends_a_running_program_at_once(private_tmp: Path) -> None:
    spend = runner.Budget(60.0, 60.0)
    threading.Timer(0.5, spend.stop.set).start()
    start = time.monotonic()
    with pytest.raises(runner.Stopped):
        runner.run_program("import time\ntime.sleep(30)\n", [], timeout=30.0, budget=spend)
    assert time.monotonic() - start < 3
    with pytest.raises(runner.Stopped):  # and nothing more starts
        runner.run_program("print(1)\n", [], budget=spend)


def test_the_reference_program_is_unchanged_by_the_budget() -> None:
    spec = canonical()
    got = spec_of_program.observe(render(spec), spec)
    assert got == (visible(spec), None) and set(got.observed) == set(KEYS)


def test_directories_of_dead_harnesses_are_swept(private_tmp: Path) -> None:
    dead = private_tmp / f"bfcode-{2 ** 22 + 7}-x"  # above pid_max: no such process
    live = private_tmp / f"bfcode-{os.getpid()}-y"
    for d in (dead, live):
        (d / "work").mkdir(parents=True)
    assert runner.sweep_stale() == 1
    assert not dead.exists() and live.exists()
    live.joinpath("work").rmdir()
    live.rmdir()
