"""The architecture, enforced: which layer may import which, at any depth, no import cycles,
small files, a short top level (docs/design.md draws the same picture).

Imports are read from the source (an AST scan, nothing is imported). Every import obeys the
layer table, at module level and inside functions alike (``butterfly.commands`` imports the API
inside its functions so that commands which call no provider never import litellm: a deferred
import is allowed only where a module-level one would be, i.e. downward). The cycle check reads
module-level imports only: the statements at the top of a module and inside top-level
``try``/``if`` blocks, except ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from conftest import ROOT

PKG = ROOT / "butterfly"

FOUNDATION = {"butterfly", "butterfly.errors", "butterfly.files"}
"""Leaf modules every layer above ``core`` may use (``butterfly`` is ``__version__``)."""

ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "suite": {"core", "suite"},
    "models": {"core", "code", "models"},
    "engine": {"core", "code", "engine"},
    "runs": {"core", "code", "engine", "suite", "models", "runs"},
    "analysis": {"core", "code", "engine", "suite", "models", "runs", "analysis"},
    "present": {"core", "code", "engine", "suite", "models", "runs", "analysis", "present"},
    "kaggle": {"core", "code", "engine", "suite", "kaggle"},
    "api": {"core", "code", "engine", "suite", "models", "runs", "analysis", "present",
            "kaggle", "api"},
    "commands": {"api", "present", "commands"},
    "cli": {"core", "cli", "cli_args", "commands"},
    "cli_args": {"core"},
    "code": {"core", "code"},
}
"""Layer -> the layers (subpackages, or top-level modules) it may import, at any depth. Every
layer may import ``oracle``; every layer but ``core`` the foundation modules."""

ALSO: dict[str, set[str]] = {"commands": {"butterfly.core.vocab"},
                            "butterfly": {"butterfly.api"}}
"""Single modules a layer may import beside its layers: the command layer reads the
vocabularies (and nothing else of ``core``); the package's root hands out the API's names
on first use (``butterfly.run``: a deferred import in ``__getattr__``, never at import)."""

NOTEBOOK_INLINED = {
    "butterfly.kaggle.settings": {"core", "engine"},
    "butterfly.kaggle.runner": {"core", "engine", "kaggle"},
    "butterfly.kaggle.code_track": {"core", "code", "engine", "kaggle"},
    **{f"butterfly.code.{m}": {"core", "code"}
       for m in ("program", "conversation", "probes", "runner",
                 "spec_of_program", "judge")},
    "butterfly.code.sandbox": {"core", "code", "errors"},
    **{f"butterfly.engine.{m}": {"core", "code", "engine"} for m in ("tracks", "conversation")},
}
"""Modules the notebook inlines (``butterfly.kaggle.notebook.MODULES``), whatever their layer
allows: the notebook's settings, ``core``, ``engine`` and ``oracle`` only; the Kaggle-side
runner (the engine's door) and its restate mode, those and the settings; the code track's
Kaggle side, the code modules it needs too (the notebook observes and judges programs
with the CLI's own code, so both give the same figures); those code modules, ``core``, ``code``
and ``oracle`` only (no ``code.agents``, which the notebook does not carry);
the sandbox, also ``butterfly.errors`` (its ``SandboxUnavailable`` is a ``UserError``; the
notebook inlines that module too)."""

MAX_LINES = 600
"""A file over this many lines is flagged: length is reviewed, not capped to the line (issue
36: a cap met by joining lines measures layout, not design)."""
MAX_TOP_LEVEL = 8


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = path
    return out


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.If):
            test = node.test
            if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
                continue
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody)
            for h in node.handlers:
                yield from _top_level(h.body)
        else:
            yield node


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every module-level import of ``butterfly``/``oracle``."""
    return imports_of(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))


def imports_of(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of the ``butterfly``/``oracle`` imports among ``tree``'s top level."""
    found = []
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "butterfly":  # from butterfly import core, __version__, ...
                found += [(node.lineno, f"butterfly.{a.name}" if a.name != "__version__"
                           else "butterfly") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return [(n, m) for n, m in found if m.split(".")[0] in ("butterfly", "oracle")]


def all_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of ``butterfly``/``oracle`` anywhere in the file, inside
    functions and ``if TYPE_CHECKING:`` blocks too."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = ast.Module(body=[n for n in ast.walk(tree)
                              if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    return imports_of(module)


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "butterfly"


def violations(module: str, deps: list[tuple[int, str]]) -> list[str]:
    own = layer(module)
    allowed = NOTEBOOK_INLINED.get(module, ALLOWED.get(own, set()))
    bad = []
    for line, dep in deps:
        if dep.split(".")[0] == "oracle" or dep == module:
            continue
        if own != "core" and module not in NOTEBOOK_INLINED and dep in FOUNDATION:
            continue
        if dep in ALSO.get(own, set()):
            continue
        if layer(dep) not in allowed:
            bad.append(f"{module}:{line} imports {dep} (layer {own} may use: "
                       f"{', '.join(sorted(allowed))})")
    return bad


def test_every_module_is_in_a_known_layer() -> None:
    unknown = [m for m in modules() if layer(m) not in ALLOWED and m not in FOUNDATION]
    assert not unknown, f"add these to a layer in tests/butterfly/test_layers.py: {unknown}"


def test_imports_follow_the_layers() -> None:
    bad = [v for m, p in modules().items() for v in violations(m, all_imports(p))]
    assert not bad, "\n".join(bad)


def test_the_scan_reads_imports_inside_functions(tmp_path: Path) -> None:
    f = tmp_path / "commands.py"
    f.write_text("def cmd() -> None:\n    from butterfly.runs.reader import load_run\n"
                 "    import butterfly.core.vocab\n    from butterfly.core.prompts import x\n")
    deps = all_imports(f)
    assert [d for _, d in deps] == ["butterfly.runs.reader", "butterfly.core.vocab",
                                    "butterfly.core.prompts"]
    bad = violations("butterfly.commands", deps)
    assert len(bad) == 2 and "runs.reader" in bad[0] and "core.prompts" in bad[1]


def test_the_scan_catches_a_violating_import(tmp_path: Path) -> None:
    bad = tmp_path / "metrics.py"
    bad.write_text("import json\nfrom butterfly.runs.reader import load_run\n"
                   "if True:\n    from butterfly.present import show\n")
    deps = imports(bad)
    assert deps == [(2, "butterfly.runs.reader"), (4, "butterfly.present")]
    assert len(violations("butterfly.core.metrics", deps)) == 2
    assert violations("butterfly.analysis.scoring", deps[:1]) == []
    assert violations("butterfly.kaggle.runner", [(1, "butterfly.errors")])


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return [*stack[stack.index(d):], d]
            if d not in state and (found := visit(d)) is not None:
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)) is not None:
            return found
    return None


def test_no_import_cycle_between_modules_or_subpackages() -> None:
    mods = modules()
    graph = {m: {d for _, d in imports(p) if d in mods and d != m} for m, p in mods.items()}
    assert _cycle(graph) is None, f"module import cycle: {' -> '.join(_cycle(graph) or [])}"
    layers: dict[str, set[str]] = {}
    for m, deps in graph.items():
        layers.setdefault(layer(m), set()).update(layer(d) for d in deps if layer(d) != layer(m))
    assert _cycle(layers) is None, f"subpackage cycle: {' -> '.join(_cycle(layers) or [])}"
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


CAPPED = ("butterfly", "oracle", "butterflybench", "tools", "bench")
"""The trees whose files are flagged over :data:`MAX_LINES`: the package, the oracle, the inspect
tasks and the scripts beside them (the tests are not: a test file may keep a whole table of
cases together)."""


def capped_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for d in CAPPED for p in (ROOT / d).rglob("*.py"))


@pytest.mark.parametrize("rel", capped_files())
def test_no_source_file_over_600_lines(rel: str) -> None:
    n = len((ROOT / rel).read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{rel} has {n} lines; split it by what it is about (docs/design.md)"


def test_the_line_cap_covers_the_oracle_and_the_scripts() -> None:
    files = capped_files()
    for rel in ("oracle/replay.py", "butterfly/cli.py", "tools/screenshots.py",
                "bench/harness.py"):
        assert rel in files, rel


def test_a_short_top_level() -> None:
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


MAX_OPEN_DICTS = 39
"""Today's count, in ``butterfly/`` and ``oracle/``: ``dict[str, Any]`` on 20 lines (19 of them
in ``butterfly/``, which the count of 20 covered alone before), ``Mapping[str, Any]`` on 10, the
alias ``RunEntry`` (the report page's run entries) on 9 more. It may only go down."""

OPEN_DICT: Final = re.compile(r"\b(?:dict|Mapping|MutableMapping)\[str, Any\]")
OPEN_ALIAS: Final = re.compile(r"^(?:type )?(\w+)(?:: TypeAlias)? = "
                               r"(?:dict|Mapping|MutableMapping)\[str, Any\]$", re.MULTILINE)


def open_dicts(files: list[Path]) -> list[str]:
    """Lines naming an open dict: ``dict``/``Mapping``/``MutableMapping[str, Any]``, or an alias
    of one (``Name = dict[str, Any]``, ``Name: TypeAlias = ...``) outside its definition."""
    texts = {p: p.read_text(encoding="utf-8") for p in files}
    aliases = {m.group(1) for t in texts.values() for m in OPEN_ALIAS.finditer(t)}
    alias = re.compile(rf"\b(?:{'|'.join(sorted(aliases))})\b") if aliases else None
    return [f"{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}:{n}"
            for p, t in texts.items()
            for n, line in enumerate(t.splitlines(), 1)
            if OPEN_DICT.search(line) or (alias and alias.search(line))]


def test_open_dicts_stay_few() -> None:
    """Results are typed records; an open dict is kept for data that really is open (a JSON
    Schema, decoded JSON, a request body, a router file, the report page's run entries, nbformat
    cells)."""
    found = open_dicts(sorted(p for d in ("butterfly", "oracle") for p in (ROOT / d).rglob("*.py")))
    assert len(found) <= MAX_OPEN_DICTS, "\n".join(found)


def test_the_open_dict_count_sees_mappings_and_aliases(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("Row = dict[str, Any]\ndef f(a: Row, b: Mapping[str, Any]) -> None: ...\n"
                 "def g(c: dict[str, int]) -> Rows: ...\n")
    found = [x.rsplit(":", 1)[1] for x in open_dicts([f])]
    assert found == ["1", "2"]


def test_every_package_is_installed() -> None:
    """``[tool.setuptools] packages`` in pyproject.toml names every package of the tree: a
    subpackage left out works in the editable install of ``make test`` and is missing from a
    wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for d in ("butterfly", "oracle", "butterflybench")
             for p in (ROOT / d).rglob("__init__.py")}
    assert listed == found, f"pyproject.toml packages: add {sorted(found - listed)}, " \
                            f"drop {sorted(listed - found)}"


OUTSIDE: Final = ("butterflybench", "inspect_ai")
"""What ``butterfly`` and ``oracle`` never import: the inspect tasks import butterfly, never
the other way round, so nothing but a task run inside inspect pays for inspect-ai
(docs/inspect.md)."""
READS_INSPECT_LOGS: Final = "butterfly/runs/inspect_log.py"
"""The one exception: ``import-inspect`` reads inspect's logs with inspect's own reader, importing
``inspect_ai.log`` for type checking and inside the function that reads (never when the module
is imported; the one-interpreter probe of test_runner.py checks every other command)."""


def foreign_imports(path: Path) -> list[str]:
    """``line: module`` of every import of :data:`OUTSIDE` anywhere in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = [(n.lineno, a.name) for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names]
    found += [(n.lineno, n.module) for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module and n.level == 0]
    return [f"{line}: {m}" for line, m in sorted(found) if m.split(".")[0] in OUTSIDE]


def top_level_imports(path: Path, package: str) -> list[int]:
    """Lines of ``path`` that import ``package`` when the module is imported: statements of the
    module's body (not inside a function, nor under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    body = [n for n in tree.body if not (isinstance(n, ast.If) and isinstance(n.test, ast.Name)
                                         and n.test.id == "TYPE_CHECKING")]
    return [n.lineno for n in body
            if (isinstance(n, ast.Import) and any(a.name.split(".")[0] == package
                                                  for a in n.names))
            or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == package)]


def test_butterfly_never_imports_the_inspect_tasks_or_inspect(tmp_path: Path) -> None:
    bad = {str(p.relative_to(ROOT)): foreign_imports(p)
           for d in ("butterfly", "oracle") for p in sorted((ROOT / d).rglob("*.py"))}
    reader = bad.pop(READS_INSPECT_LOGS)
    assert reader and all(m.endswith(": inspect_ai.log") for m in reader), reader
    assert not {k: v for k, v in bad.items() if v}
    assert not top_level_imports(ROOT / READS_INSPECT_LOGS, "inspect_ai")
    f = tmp_path / "m.py"
    f.write_text("import json\ndef f() -> None:\n    from inspect_ai.model import x\n"
                 "    import butterflybench.tasks\n")
    assert foreign_imports(f) == ["3: inspect_ai.model", "4: butterflybench.tasks"]
    assert top_level_imports(f, "inspect_ai") == []
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import inspect_ai\n"
                 "from inspect_ai.log import read_eval_log\n")
    assert top_level_imports(f, "inspect_ai") == [4]


def test_the_notebook_rule_names_every_inlined_module_above_core() -> None:
    """``NOTEBOOK_INLINED`` holds exactly the inlined modules of the code, engine and kaggle layers
    (their packages' ``__init__`` aside), so none of them escapes the notebook's rule."""
    from butterfly.kaggle.notebook import MODULES, module_name

    inlined = {module_name(p) for p in MODULES}
    above_core = {m for m in inlined if m.startswith("butterfly.")
                  and layer(m) in ("code", "engine", "kaggle")
                  and m not in ("butterfly.code", "butterfly.engine", "butterfly.kaggle")}
    assert above_core == set(NOTEBOOK_INLINED)
