"""Dependencies honest (issue 36, docs/install.md): every third-party import is declared in
pyproject.toml, and nothing is declared that nothing imports.

Imports are read from the source with an AST walk (nothing is imported): at module level, inside
functions and under ``if TYPE_CHECKING:`` alike. An import name is mapped to the distributions
that provide it by ``importlib.metadata.packages_distributions()`` over the environment of the
lock (every extra installed). The package (``butterfly/``, ``oracle/``, ``butterflybench/``)
may use what ``dependencies`` or an extra declares, and each of ``dependencies`` must be
imported by it; the tests, ``bench/`` and ``tools/`` may use any of them, and each extra's
requirement must be imported somewhere, unless :data:`NOT_IMPORTED` says why not.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterable, Mapping
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PACKAGE = ("butterfly", "oracle", "butterflybench")
AROUND = ("tests", "bench", "tools")
NOT_IMPORTED = {
    "hishel": "a version bound only: kaggle-benchmarks 0.6.2 fails to import with hishel 2",
    "ipykernel": "the kernel nbclient starts for the notebook's offline test",
    "ruff": "a command (make test)",
    "mypy": "a command (make test)",
    "pytest-timeout": "a pytest plugin (pyproject.toml's timeout)",
    "pytest-xdist": "a pytest plugin (make test's -n 2)",
    "pytest-randomly": "a pytest plugin (make test's order check)",
}
"""Requirements of an extra that no code imports, and why each is declared all the same."""


def imported(paths: Iterable[Path]) -> dict[str, list[str]]:
    """Top-level module name -> ``file:line`` of each ``import`` of it, relative imports aside."""
    found: dict[str, list[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:"
            for name in names:
                found.setdefault(name.split(".")[0], []).append(f"{where}{node.lineno}")
    return found


def sources(*folders: str) -> list[Path]:
    return sorted(p for d in folders for p in (ROOT / d).rglob("*.py"))


@cache
def _imported_in(folder: str) -> dict[str, list[str]]:
    return imported(sources(folder))


def imported_by(*folders: str) -> dict[str, list[str]]:
    """:func:`imported` over the sources of ``folders``, each folder read once per session
    (the tests share the scans: seconds each)."""
    found: dict[str, list[str]] = {}
    for folder in sorted(folders):
        for module, where in _imported_in(folder).items():
            found.setdefault(module, []).extend(where)
    return found


def own_modules() -> set[str]:
    """Names the repository's own files and folders give (the package's, the tests' helpers,
    a script beside another)."""
    files = sources(*PACKAGE, *AROUND)
    return {*PACKAGE, *(p.stem for p in files), *(p.parent.name for p in files)}


def third_party(found: dict[str, list[str]]) -> dict[str, list[str]]:
    own = own_modules()
    return {m: w for m, w in found.items() if m not in sys.stdlib_module_names and m not in own}


@cache
def declared() -> dict[str, set[str]]:
    """``dependencies`` and each extra -> the canonical names of what it requires."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = {"dependencies": project["dependencies"], **project["optional-dependencies"]}
    return {g: {canonicalize_name(Requirement(r).name) for r in reqs}
            for g, reqs in groups.items()}


@cache
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module -> the distributions that provide it: read from every installed
    distribution's metadata once per session (half a second each time)."""
    return packages_distributions()


def providers(module: str) -> set[str]:
    """The installed distributions that provide the top-level module ``module``."""
    return {canonicalize_name(d) for d in _distributions().get(module, [])}


def undeclared(found: dict[str, list[str]], allowed: set[str]) -> list[str]:
    """Each third-party module of ``found`` no distribution of ``allowed`` provides."""
    return [f"{m} ({', '.join(sorted(providers(m))) or 'not installed'}): {w[0]}"
            for m, w in sorted(third_party(found).items()) if not providers(m) & allowed]


def unused(group: set[str], found: dict[str, list[str]]) -> list[str]:
    """The requirements of ``group`` that provide no module of ``found``."""
    provided = set().union(*(providers(m) for m in third_party(found)))
    return sorted(group - provided)


def everything_declared() -> set[str]:
    return set().union(*declared().values())


def test_every_import_of_the_package_is_declared() -> None:
    bad = undeclared(imported_by(*PACKAGE), everything_declared())
    assert not bad, "declare in pyproject.toml (then make lock):\n" + "\n".join(bad)


def test_every_import_of_the_tests_and_scripts_is_declared() -> None:
    bad = undeclared(imported_by(*AROUND), everything_declared())
    assert not bad, "declare in pyproject.toml's dev extra (then make lock):\n" + "\n".join(bad)


def test_every_dependency_is_imported_by_the_package() -> None:
    idle = unused(declared()["dependencies"], imported_by(*PACKAGE))
    assert not idle, f"declared in dependencies, imported by nothing: {idle}"


def test_every_extra_is_imported_or_says_why_not() -> None:
    extras = set().union(*(v for k, v in declared().items() if k != "dependencies"))
    idle = unused(extras, imported_by(*PACKAGE, *AROUND))
    assert set(idle) == set(NOT_IMPORTED), idle


def test_the_scan_sees_imports_inside_functions_and_maps_them(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("import json\nfrom . import x\nfrom typing import TYPE_CHECKING\n"
                 "if TYPE_CHECKING:\n    import yaml\n"
                 "def f() -> None:\n    from tenacity import retry\n    import markupsafe.x\n")
    found = imported([f])
    assert set(third_party(found)) == {"yaml", "tenacity", "markupsafe"}
    assert providers("yaml") == {"pyyaml"}
    assert undeclared(found, {"pyyaml", "markupsafe"}) == [
        f"tenacity ({', '.join(sorted(providers('tenacity'))) or 'not installed'}): {f}:7"]
    assert unused({"pyyaml", "tenacity", "numpy"}, found) == ["numpy"]
