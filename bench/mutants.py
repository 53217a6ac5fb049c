"""Mutation score of the oracle, the parser, the scorer and the statistics (issue 36, item 5).

Why: trimming the tests must not make them less sensitive. A mutant is a small change to the
code (mutmut's: a flipped comparison, a changed constant, a dropped argument); the tests kill it
when one of them fails. The share killed, measured on the same mutants before and after the
trimming, says whether the tests still notice what they used to (docs/performance.md, "Mutation
score (issue 36)").

    python bench/mutants.py --commit e30ca8a --against HEAD --out docs/mutants-before.json
    python bench/mutants.py --commit HEAD --against e30ca8a --out docs/mutants-after.json

Each commit is checked out in a temporary git worktree, mutmut (the `bench` extra) generates
its mutants of the target files, and the run tests a seeded sample of them against the selected
tests, with one worker. The same mutants at both commits: a mutant is named by mutmut
(module, function, number) and fingerprinted by the text of its function unmutated and mutated;
only mutants whose name and fingerprint are the same at `--commit` and `--against` are sampled,
so the two runs sample the same mutants (a function changed between the commits has none).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What is mutated: each target's files (mutmut's only_mutate globs, relative to the repo).
TARGETS: dict[str, tuple[str, ...]] = {
    "oracle": ("oracle/*.py",),
    "parser": ("butterfly/core/parse.py", "butterfly/core/find_json.py"),
    "scorer": ("butterfly/analysis/scoring.py", "butterfly/core/metrics.py"),
    "statistics": ("butterfly/core/stats.py",),
}
# The tests run against each mutant (mutmut runs, of these, the ones that call its function).
TESTS: tuple[str, ...] = (
    "tests/oracle",
    "tests/butterfly/core/test_parse.py",
    "tests/butterfly/core/test_parse_protocol.py",
    "tests/butterfly/core/test_stats.py",
    "tests/butterfly/analysis/test_scoring.py",
    "tests/butterfly/analysis/test_ask_scoring.py",
)
# The packages mutmut copies into its mutants/ folder (the targets live in them).
SOURCES: tuple[str, ...] = ("oracle", "butterfly")
# Copied beside them: what the tests read from the repo (suites, runs, docs).
ALSO_COPY: tuple[str, ...] = ("scenarios", "runs", "docs", "butterflybench")
KILLED = frozenset({"killed", "timeout", "segfault"})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: which commit, matched against which, how many mutants, where to."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commit", default="HEAD", help="the commit whose tests are measured")
    p.add_argument("--against", default=None,
                   help="the commit to match mutants with (same name and text at both)")
    p.add_argument("--sample", type=int, default=140, help="mutants drawn (all if fewer)")
    p.add_argument("--seed", type=int, default=36)
    p.add_argument("--out", type=Path, default=None, help="JSON of per-mutant verdicts")
    p.add_argument("--list", action="store_true", help="print the sample and run nothing")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter that runs mutmut and the tests: a venv of --commit's "
                   "own lock with mutmut added, when its dependencies differ from this one's")
    args = p.parse_args(argv)
    if args.sample < 1:
        p.error("--sample must be at least 1")
    return args


def draw(names: list[str], n: int, seed: int) -> list[str]:
    """A seeded sample of n names (all when fewer), sorted; the same set for the same input."""
    pool = sorted(set(names))
    return sorted(random.Random(seed).sample(pool, min(n, len(pool))))


def target_of(mutant: str) -> str:
    """Which target a mutant's module belongs to (mutmut names: module.x_function__mutmut_N)."""
    path = mutant.split(".x", 1)[0].replace(".", "/") + ".py"
    for target, globs in TARGETS.items():
        if any(Path(path).match(g) for g in globs):
            return target
    raise ValueError(f"{mutant}: in no target")


def fingerprints(mutants_dir: Path) -> dict[str, str]:
    """Each mutant's name and the hash of its function's text, unmutated and mutated."""
    out: dict[str, str] = {}
    for globs in TARGETS.values():
        for g in globs:
            for path in sorted(mutants_dir.glob(g)):
                out.update(_file_fingerprints(path, mutants_dir))
    return out


def _file_fingerprints(path: Path, mutants_dir: Path) -> dict[str, str]:
    source = path.read_text(encoding="utf-8")
    module = ".".join(path.relative_to(mutants_dir).with_suffix("").parts)
    lines = source.splitlines()
    defs: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            # by lines, not ast.get_source_segment (which splits the whole file at each call)
            defs[node.name] = "\n".join(lines[node.lineno - 1 : node.end_lineno])
    out = {}
    for name, text in defs.items():
        stem, _, number = name.rpartition("__mutmut_")
        if not number.isdigit():
            continue
        orig = defs.get(f"{stem}__mutmut_orig", "")
        # the mutant's own name inside its text is the same at both commits: no need to strip
        digest = hashlib.sha256(f"{orig}\0{text}".encode()).hexdigest()[:16]
        out[f"{module}.{name}"] = digest
    return out


@contextlib.contextmanager
def worktree(commit: str) -> Iterator[Path]:
    """A temporary detached worktree of the commit, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="mutants-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(path),
                    commit], check=True)
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                       check=False)
        shutil.rmtree(path.parent, ignore_errors=True)


def configure(tree: Path) -> None:
    """mutmut's settings for this tree, in setup.cfg (the tree's pyproject has none)."""
    only = [g for globs in TARGETS.values() for g in globs]
    lines = ["[mutmut]", "source_paths=", *[f"    {s}" for s in SOURCES], "only_mutate="]
    lines += [f"    {g}" for g in only]
    lines += ["also_copy=", *[f"    {a}" for a in ALSO_COPY]]
    lines += ["pytest_add_cli_args_test_selection=", *[f"    {t}" for t in TESTS]]
    lines += ["pytest_add_cli_args=", "    -p", "    no:xdist", "    -p", "    no:cacheprovider"]
    lines += ["use_git_change_detection=false", "timeout_multiplier=3.0", ""]
    (tree / "setup.cfg").write_text("\n".join(lines), encoding="utf-8")


GENERATE = """
import mutmut.__main__ as m
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths
import os
os.makedirs('mutants', exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths()
m.create_mutants(1)
"""


def generate(tree: Path, python: str) -> dict[str, str]:
    """mutmut's mutants of the targets in this tree (no test run): name to fingerprint."""
    configure(tree)
    subprocess.run([python, "-c", GENERATE], cwd=tree, check=True,
                   stdout=subprocess.DEVNULL)
    return fingerprints(tree / "mutants")


def verdicts(tree: Path, names: list[str], python: str) -> dict[str, str]:
    """Run mutmut on the named mutants, one worker; each mutant's status as mutmut words it.
    A failed clean run (mutmut exits non-zero) stops here: no share of mutants never tried."""
    from mutmut.stats import status_by_exit_code

    subprocess.run([python, "-m", "mutmut", "run", "--max-children", "1", *names],
                   cwd=tree, check=True)
    codes: dict[str, int | None] = {}
    for meta in (tree / "mutants").rglob("*.py.meta"):
        codes.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return {n: status_by_exit_code[codes.get(n)] for n in names}


def shares(results: dict[str, str]) -> dict[str, dict[str, float | int | None]]:
    """Killed over tested per target and overall (none when a target has no mutant)."""
    rows: dict[str, dict[str, float | int | None]] = {}
    groups = {t: [s for n, s in results.items() if target_of(n) == t] for t in TARGETS}
    groups["all"] = list(results.values())
    for target, statuses in groups.items():
        killed = sum(s in KILLED for s in statuses)
        rows[target] = {"killed": killed, "total": len(statuses),
                        "share": round(killed / len(statuses), 4) if statuses else None}
    return rows


def resolve(commit: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", commit], check=True,
                          capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    commit = resolve(args.commit)
    with worktree(commit) as tree:
        prints = generate(tree, args.python)
        matched = prints
        if args.against:
            with worktree(resolve(args.against)) as other:
                theirs = generate(other, args.python)
            matched = {n: f for n, f in prints.items() if theirs.get(n) == f}
        sample = draw(list(matched), args.sample, args.seed)
        print(f"{len(prints)} mutants generated, {len(matched)} matched, {len(sample)} drawn",
              file=sys.stderr)
        if args.list:
            print("\n".join(sample))
            return 0
        results = verdicts(tree, sample, args.python)
    table = shares(results)
    for target, row in table.items():
        share = "none" if row["share"] is None else f"{row['share']:.1%}"
        print(f"{target:<11} {row['killed']}/{row['total']} killed ({share})")
    if args.out:
        from importlib.metadata import version

        report = {"commit": commit, "against": args.against and resolve(args.against),
                  "tool": f"mutmut {version('mutmut')}", "seed": args.seed,
                  "mutants_generated": len(prints), "mutants_matched": len(matched),
                  "sample": len(sample), "tests": list(TESTS), "targets": TARGETS,
                  "shares": table, "verdicts": results}
        args.out.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
