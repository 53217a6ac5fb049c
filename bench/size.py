"""Source lines of the benchmark, per package, on code formatted by ``ruff format`` (issue 36).

A copy of ``butterfly/``, ``oracle/`` and ``butterflybench/`` is formatted by the project's
ruff (its line length, pyproject.toml) in a temporary folder, so that a count measures code and
not layout: lines joined or split by hand count as ruff would write them. Two counts per package:

- **code lines**: lines that hold a token of code, docstrings (a string standing alone as a
  statement) and comments not counted, blank lines not counted. This is the figure issue 36's
  target is set on: a docstring cut or a comment dropped does not make the code smaller.
- **physical lines**: every line of the formatted files, for reference.

The baseline is the count at the commit before issue 36 (``BASELINE``, measured by this script
on a ``git archive`` of that commit); the script prints each count beside it.

    .venv/bin/python bench/size.py [--json] [--tree DIR]
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import shutil
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGES: Final = ("butterfly", "oracle", "butterflybench")
BASELINE_COMMIT: Final = "e30ca8a"
BASELINE: Final = {"butterfly": 18442, "oracle": 1457, "butterflybench": 734}
"""Code lines at ``BASELINE_COMMIT`` (issue 36 was filed against it), formatted by ruff 0.17.6."""
BASELINE_PHYSICAL: Final = {"butterfly": 25621, "oracle": 2095, "butterflybench": 1039}
TARGET: Final = 0.80
"""Issue 36: at least 20% fewer code lines than the baseline."""
SKIP: Final = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                         tokenize.DEDENT, tokenize.ENDMARKER})


def code_lines(source: str) -> int:
    """Lines holding a token of code: not blank, not only a comment, not part of a docstring
    (a string constant standing alone as a statement)."""
    docs: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            docs.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in SKIP:
            lines.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docs)
    return len(lines)


def formatted_copy(tree: Path, into: Path) -> Path:
    """The packages of ``tree`` copied into ``into`` and formatted by the project's ruff."""
    for pkg in PACKAGES:
        shutil.copytree(tree / pkg, into / pkg)
    shutil.copy(ROOT / "pyproject.toml", into / "pyproject.toml")
    ruff = Path(sys.executable).parent / "ruff"
    subprocess.run([str(ruff), "format", "-q", "."], cwd=into, check=True)
    return into


def count(tree: Path) -> dict[str, dict[str, int]]:
    """Per package: code lines and physical lines of the formatted code of ``tree``."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = formatted_copy(tree, Path(tmp))
        out = {}
        for pkg in PACKAGES:
            files = [p.read_text(encoding="utf-8") for p in sorted((copy / pkg).rglob("*.py"))]
            out[pkg] = {"code": sum(map(code_lines, files)),
                        "physical": sum(len(f.splitlines()) for f in files)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tree", type=Path, default=ROOT)
    a = ap.parse_args()
    got = count(a.tree)
    total = {k: sum(v[k] for v in got.values()) for k in ("code", "physical")}
    base = sum(BASELINE.values())
    if a.json:
        print(json.dumps({"packages": got, "total": total, "baseline": BASELINE,
                          "baseline_commit": BASELINE_COMMIT, "target": TARGET}, indent=1))
        return 0
    print(f"code lines (physical lines), formatted by ruff; baseline {BASELINE_COMMIT}")
    for pkg, v in got.items():
        print(f"{pkg:<16}{v['code']:>8,} ({v['physical']:,})   baseline {BASELINE[pkg]:>7,} "
              f"({BASELINE_PHYSICAL[pkg]:,})   {v['code'] / BASELINE[pkg]:.2f}")
    print(f"{'total':<16}{total['code']:>8,} ({total['physical']:,})   baseline {base:>7,} "
          f"({sum(BASELINE_PHYSICAL.values()):,})   {total['code'] / base:.2f} "
          f"(target at most {TARGET:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
