"""Speed on large input (issue 34), as ratios measured in one run: ``validate`` of one scenario
whose turn is long, and the dry run of one long chain asked at every turn.

- **validate**: seconds per MB of a scenario line at two sizes (default 20 and 80 MB): linear
  work keeps the ratio near 1 (difflib on the whole turn took 3 s/MB: over 300 s for 200 MB).
- **dry run**: ``run --mode restate --ask-at all --dry-run`` of one butterfly-horizon chain cut to
  two lengths (default 1,250 and 5,000 turns), seconds per call at each. The token counting is
  constant work per call (each prompt counted from the one before it); what grows with the
  chain is building, hashing and comparing each prompt, which the real player does, in C
  (memcpy speed). The whole 5,000-turn chain took 1 min 46 s before.

Each figure is this process's CPU time (no interpreter start-up; wall time drifts with the
machine's load), best of ``--repeat`` runs.

    .venv/bin/python bench/inputs.py [--small] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

from butterfly import api  # noqa: E402
from butterfly.suite.load import load_suite, resolve_suite  # noqa: E402


def best(fn: Callable[[], object], repeat: int) -> float:
    """CPU seconds of this process for the fastest of ``repeat`` calls (CPU, not wall time:
    other sessions load the machine)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def long_turn(where: Path, mb: float) -> Path:
    """A one-scenario suite whose second turn is ``mb`` MB of words (no few-shot clash)."""
    first = (resolve_suite("butterfly-40")).read_text(encoding="utf-8").splitlines()[0]
    scenario = json.loads(first)
    filler = " And please keep everything else exactly as it was before."
    scenario["turns"][1]["text"] += filler * int(mb * 1_000_000 / len(filler))
    path = where / f"long-{mb:g}MB.jsonl"
    path.write_text(json.dumps(scenario) + "\n", encoding="utf-8")
    return path


def one_chain(where: Path, turns: int) -> Path:
    """butterfly-horizon's first chain cut to ``turns`` turns, with a manifest that allows it."""
    horizon = resolve_suite("butterfly-horizon")
    chain = load_suite(horizon)[0]
    cut = chain.model_copy(update={"turns": chain.turns[:turns]})
    path = where / f"chain{turns}.jsonl"
    path.write_text(cut.to_json() + "\n", encoding="utf-8")
    manifest = json.loads(horizon.with_name("butterfly-horizon.manifest.json").read_text())
    manifest.update(name=path.stem, file=str(path), n_scenarios=1, lengths={str(turns): 1},
                    ask_at=[turns])
    path.with_name(f"{path.stem}.manifest.json").write_text(json.dumps(manifest))
    return path


def validate(where: Path, sizes: tuple[float, float], repeat: int) -> None:
    per_mb = []
    for mb in sizes:
        path = long_turn(where, mb)
        real_mb = path.stat().st_size / 1e6
        seconds = best(lambda p=path: api.validate([str(p)]), repeat)
        per_mb.append(seconds / real_mb)
        print(f"validate  {real_mb:7.1f} MB line  {seconds:7.2f} s CPU  {per_mb[-1]:.3f} s/MB")
    print(f"validate  s/MB at {sizes[1]:g} MB / at {sizes[0]:g} MB: {per_mb[1] / per_mb[0]:.2f} "
          "(1: linear)")


def dry_run(where: Path, lengths: tuple[int, int], repeat: int) -> None:
    warm = one_chain(where, 20)  # the tokenizer's files read once, before any timing
    api.dry_run(model="openai/gpt-4o-mini", suite=str(warm), mode="restate", ask_at="all",
                out=where / "never")
    per_call = []
    for n in lengths:
        suite = one_chain(where, n)
        seconds = best(lambda s=suite: api.dry_run(
            model="openai/gpt-4o-mini", suite=str(s), mode="restate", ask_at="all",
            out=where / "never"), repeat)
        per_call.append(seconds / n)
        print(f"dry run   {n:5,} turns asked at every turn  {seconds:7.2f} s CPU  "
              f"{1e3 * per_call[-1]:.2f} ms a call")
    print(f"dry run   ms a call at {lengths[1]:,} turns / at {lengths[0]:,}: "
          f"{per_call[1] / per_call[0]:.2f} (prompts {lengths[1] / lengths[0]:g}x as long)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="1 and 4 MB, 100 and 400 turns")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        validate(where, (1, 4) if a.small else (20, 80), a.repeat)
        dry_run(where, (100, 400) if a.small else (1250, 5000), a.repeat)


if __name__ == "__main__":
    main()
