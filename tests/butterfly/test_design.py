"""docs/design.md stays true: its picture of the layout lists every module on disk, and its
"Where a change goes" table names the files a new op, metric or chart touches, found in the
code (the files that name every one of them). Updating the doc after a change is one line."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT

from butterfly.core.metric_registry import METRICS
from oracle.ops import REGISTRY

DESIGN = ROOT / "docs" / "design.md"
SOURCES = ("oracle", "butterfly", "butterflybench")


def _section(title: str) -> list[str]:
    """The table rows of the section ``## title``, each as its cells."""
    text = DESIGN.read_text(encoding="utf-8").split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("|---")][1:]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _changes() -> dict[str, tuple[int, list[str]]]:
    """Per kind of change (the bold word), the count the doc gives and the paths it lists."""
    out = {}
    for change, files, _ in _section("Where a change goes"):
        kind = re.search(r"\*\*(.+?)\*\*", change)
        count = re.match(r"(\d+):", files)
        assert kind and count, f"a row of 'Where a change goes' without a kind or count: {change}"
        out[kind.group(1)] = (int(count.group(1)), _ticked(files))
    return out


def _sources() -> list[Path]:
    return sorted(p for top in SOURCES for pattern in ("*.py", "*.j2")
                  for p in (ROOT / top).rglob(pattern) if "__pycache__" not in p.parts)


def _naming_every(names: Callable[[str], list[bool]]) -> set[str]:
    """The source files whose text names every one of the things ``names`` looks for."""
    return {p.relative_to(ROOT).as_posix() for p in _sources()
            if all(names(p.read_text(encoding="utf-8")))}


def _ops(text: str) -> list[bool]:
    return [re.search(rf"\b{op.record.__name__}\b|[\"']{op.name}[\"']|\b{op.name}_step\b",
                      text) is not None for op in REGISTRY.values()]


def _metrics(text: str) -> list[bool]:
    return [re.search(rf"\b{name}\b", text) is not None for name in METRICS]


def _charts() -> list[str]:
    """The ``ReportData`` fields ``present/charts.draw`` draws from (``runs`` labels them)."""
    tree = ast.parse((ROOT / "butterfly/present/charts.py").read_text(encoding="utf-8"))
    draw = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "draw")
    return sorted({n.attr for n in ast.walk(draw) if isinstance(n, ast.Attribute)
                   and isinstance(n.value, ast.Name) and n.value.id == "data"} - {"runs"})


def _chart_names(text: str) -> list[bool]:
    return [name in text for name in _charts()]


FOUND: dict[str, Callable[[str], list[bool]]] = {
    "op": _ops, "metric": _metrics, "chart": _chart_names}
"""How the code says which files a change of each kind touches."""


@pytest.mark.parametrize("kind", sorted(FOUND))
def test_the_files_a_change_touches_are_the_codes(kind: str) -> None:
    count, listed = _changes()[kind]
    assert count == len(listed)
    assert set(listed) == _naming_every(FOUND[kind]), (
        f"docs/design.md, 'Where a change goes': the files of a new {kind} are not those the "
        "code names every one of in")


def test_every_row_counts_its_files_and_they_exist() -> None:
    changes = _changes()
    assert {"op", "metric", "provider", "command", "run option", "chart", "track"} <= set(
        changes)
    for kind, (count, listed) in changes.items():
        assert count == len(listed), kind
        for path in listed:
            assert (ROOT / path.replace("NAME.py", "registry.py")).exists(), (kind, path)


def test_the_picture_lists_every_module() -> None:
    pictured = {}
    for package, modules, _ in _section("The layout in one picture"):
        pictured[package.strip("`")] = sorted(_ticked(modules))
    on_disk: dict[str, list[str]] = {}
    for p in _sources():
        if p.suffix == ".py" and p.stem != "__init__":
            on_disk.setdefault(p.parent.relative_to(ROOT).as_posix() + "/", []).append(p.stem)
    assert pictured == {k: sorted(v) for k, v in on_disk.items()}

