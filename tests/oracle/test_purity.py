"""The oracle is pure: it imports nothing from the harness, and nothing that does I/O or time."""

from __future__ import annotations

import ast
from pathlib import Path

ORACLE = Path(__file__).resolve().parents[2] / "oracle"
FORBIDDEN = {"butterfly", "os", "io", "time", "datetime", "random", "pathlib", "subprocess",
             "socket", "sqlite3", "shutil", "tempfile", "logging", "numpy", "litellm"}


def test_oracle_imports_only_pure_modules() -> None:
    for path in sorted(ORACLE.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called = node.func.id
                assert called not in {"open", "print", "input"}, f"{path.name}: {called}"
