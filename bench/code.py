"""The code track's observation cost, the runner's overhead and the extraction law, measured in
one run (docs/code-track.md, "Observation"; docs/performance.md).

- **observation per turn**: ``extract(render(spec), spec)`` over a sample of specs (the
  canonical one, those one edit away, random seeded ones): CPU (the harness's own, building
  inputs and reading outputs, plus its children's, the program runs, via
  ``resource.getrusage``) and wall-clock per observed program, median and max, with the runs per
  spec, against the target of 0.5 s of CPU per turn (issue 23). The renderer is not timed (a
  model's answer is not rendered). Probe inputs are cached per configuration, as in a run; the
  cold build of the row-limit input is printed on its own.
- **runner overhead**: ``run_program`` (whatever it is today: a bare child, later the sandbox)
  against ``subprocess.run([sys.executable, "-I", "tool.py", ...])`` in a temporary directory,
  for a trivial program and for the reference program on the small probe.
- **laws**: ``extract(render(s), s) == visible(s)`` on the canonical spec, the 31 one edit
  away and ``--laws N`` seeded random specs (``--laws 0`` skips the check); a failure is printed
  with the settings it got wrong, and the exit status is 1.

    .venv/bin/python bench/code.py [--quick] [--random 10] [--reps 20] [--laws 20] [--seed 2026]
    .venv/bin/python bench/code.py --laws 1000 --no-observe --no-runner   # the law, 1,000 specs
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# bench/oracle.py is named like the `oracle` package; keep this folder off the import path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly.code import probes  # noqa: E402
from butterfly.code import spec_of_program as extract_module  # noqa: E402
from butterfly.code.program import render  # noqa: E402
from butterfly.code.runner import run_program  # noqa: E402
from butterfly.code.spec_of_program import ARGS, extract  # noqa: E402
from butterfly.core.code_catalogue import (  # noqa: E402
    DOMAINS,
    INPUT_SIDE,
    KEYS,
    apply_couplings,
    canonical,
    one_away,
    visible,
)

TARGET_CPU = 0.5
"""Seconds of CPU per observed program (issue 23: the model stays the bottleneck)."""


PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Make this process the subreaper of its descendants: the sandbox's bubblewrap leaves the
    program's processes (in their own pid namespace) to be reparented when it exits; adopted
    here and reaped by :func:`cpu`, their CPU is counted, where the system's init would reap it
    unseen (a bubblewrap run then looked almost free)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("warning: cannot become a subreaper: sandboxed CPU is undercounted")


def reap() -> None:
    """Wait for every child that has ended (called between observations, never during)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def cpu() -> float:
    """CPU seconds of this process and its waited-for children (orphans adopted and reaped
    first), user and system."""
    reap()
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def random_specs(count: int, seed: int) -> list[dict[str, str]]:
    """``count`` valid specs, each setting drawn uniformly, the couplings applied."""
    rng = random.Random(seed)
    return [apply_couplings({k: rng.choice(DOMAINS[k]) for k in KEYS}) for _ in range(count)]


def sample(quick: bool, extra: int, seed: int) -> list[dict[str, str]]:
    """The canonical spec, those one edit away (every third with ``quick``), random ones."""
    away = one_away()
    return [canonical(), *(away[::3] if quick else away), *random_specs(extra, seed)]


class Counter:
    """Counts the runs ``extract`` makes (wraps its ``run_program``)."""

    def __init__(self) -> None:
        self.runs = 0
        self.inner: Callable[..., Any] = vars(extract_module)["run_program"]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.inner(*args, **kwargs)


def observe(specs: list[dict[str, str]]) -> list[tuple[float, float, int, bool]]:
    """(CPU s, wall s, runs, law holds) per spec."""
    counter = Counter()
    vars(extract_module)["run_program"] = counter
    out = []
    try:
        for spec in specs:
            source = render(spec)
            before, c0, w0 = counter.runs, cpu(), time.perf_counter()
            got = extract(source, spec)
            out.append((cpu() - c0, time.perf_counter() - w0, counter.runs - before,
                        got == visible(spec)))
    finally:
        vars(extract_module)["run_program"] = counter.inner
    return out


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} s, max {max(values):.3f} s"


def report_observation(specs: list[dict[str, str]]) -> bool:
    rows = observe(specs)
    cpus, walls = [r[0] for r in rows], [r[1] for r in rows]
    runs = [r[2] for r in rows]
    print(f"observation per turn, {len(specs)} specs (canonical, one away, random):")
    print(f"  CPU (self + children): {spread(cpus)}; target {TARGET_CPU} s: median at "
          f"{statistics.median(cpus) / TARGET_CPU:.2f}x, max at {max(cpus) / TARGET_CPU:.2f}x "
          f"of the target; {sum(c <= TARGET_CPU for c in cpus)}/{len(cpus)} specs under it")
    print(f"  wall: {spread(walls)}")
    print(f"  runs per spec: median {statistics.median(runs):g}, max {max(runs)}, "
          f"mean {statistics.mean(runs):.2f}")
    by_limit: dict[str, list[float]] = {}
    for spec, row in zip(specs, rows, strict=True):
        by_limit.setdefault(spec["max_rows"], []).append(row[0])
    for limit, values in sorted(by_limit.items()):
        print(f"  max_rows={limit}: CPU median {statistics.median(values):.3f} s "
              f"({len(values)} specs)")
    failed = [s for s, r in zip(specs, rows, strict=True) if not r[3]]
    for spec in failed:
        print(f"  LAW FAILS: {spec}")
    config = probes.key({k: canonical()[k] for k in INPUT_SIDE})
    probes.limit_input.cache_clear()
    c0 = cpu()
    big = {ARGS[0]: probes.limit_input(config, probes.BIG)}
    print(f"  cold build of one row-limit input ({probes.BIG:,} records, cached afterwards): "
          f"{cpu() - c0:.3f} s CPU")
    alone = timed(functools.partial(run_program, render(canonical()), ARGS, b"", 30.0, big), 3)
    print(f"  the canonical program's row-limit run alone: {alone[0]:.3f} s CPU, "
          f"{alone[1]:.3f} s wall (median of 3)")
    return not failed


def timed(run: Callable[[], object], reps: int) -> tuple[float, float]:
    """Median (CPU s, wall s) of ``reps`` calls."""
    cpus, walls = [], []
    for _ in range(reps):
        c0, w0 = cpu(), time.perf_counter()
        run()
        cpus.append(cpu() - c0)
        walls.append(time.perf_counter() - w0)
    return statistics.median(cpus), statistics.median(walls)


def bare(root: Path, source: str, inputs: Mapping[str, bytes], args: list[str]
         ) -> Callable[[], object]:
    """A bare child in ``root``, written once (the floor)."""
    (root / "tool.py").write_text(source, encoding="utf-8")
    for name, data in inputs.items():
        (root / name).write_bytes(data)
    return lambda: subprocess.run([sys.executable, "-I", "tool.py", *args], cwd=root,
                                  capture_output=True, timeout=30, check=True)


def report_runner(reps: int) -> None:
    spec = canonical()
    data = {ARGS[0]: probes.small_input(probes.key({k: spec[k] for k in INPUT_SIDE}))}
    cases: list[tuple[str, str, dict[str, bytes], list[str]]] = [
        ("trivial program", "pass\n", {}, []),
        ("reference program, small probe", render(spec), data, ARGS)]
    print(f"runner overhead, median of {reps} runs (run_program vs a bare subprocess.run):")
    for name, source, inputs, args in cases:
        ours = timed(functools.partial(run_program, source, args, b"", 30.0, inputs), reps)
        with tempfile.TemporaryDirectory(prefix="bfbench-") as tmp:
            floor = timed(bare(Path(tmp), source, inputs, args), reps)
        print(f"  {name}: CPU {ours[0] * 1000:.1f} ms vs {floor[0] * 1000:.1f} ms "
              f"({ours[0] / floor[0]:.2f}x), wall {ours[1] * 1000:.1f} ms vs "
              f"{floor[1] * 1000:.1f} ms ({ours[1] / floor[1]:.2f}x)")


def check_laws(count: int, seed: int) -> bool:
    """The extraction law on the canonical spec, every spec one edit away and ``count`` seeded
    random specs, with a progress line."""
    specs = [canonical(), *one_away(), *random_specs(count, seed)]
    failed, t0, count = [], time.perf_counter(), len(specs)
    for n, spec in enumerate(specs, start=1):
        got, want = extract(render(spec), spec), visible(spec)
        if got != want:
            failed.append(spec)
            wrong = {k: got[k] for k in KEYS if got[k] != want[k]}
            print(f"\nLAW FAILS: {spec}\n  got {wrong}", flush=True)
        if n % 10 == 0 or n == count:
            print(f"\rlaws: {n}/{count} specs (32 + random, seed {seed}), {len(failed)} failed, "
                  f"{time.perf_counter() - t0:.0f} s", end="", flush=True)
    print()
    return not failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="every third spec one edit away")
    ap.add_argument("--random", type=int, default=10, help="random specs in the sample")
    ap.add_argument("--reps", type=int, default=20, help="runs per runner case")
    ap.add_argument("--laws", type=int, default=20, help="random specs for the law check")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--no-observe", action="store_true")
    ap.add_argument("--no-runner", action="store_true")
    a = ap.parse_args()
    adopt_orphans()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    ok = True
    if not a.no_observe:
        ok &= report_observation(sample(a.quick, a.random, a.seed))
    if not a.no_runner:
        report_runner(5 if a.quick else a.reps)
    if a.laws:
        ok &= check_laws(a.laws, a.seed + 1)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
