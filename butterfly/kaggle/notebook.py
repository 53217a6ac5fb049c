"""``butterfly notebook build``: the Kaggle notebook, generated from the package (docs/kaggle.md).

The notebook is the same benchmark as the CLI, not a copy: each module it needs (the oracle, the
prompts, the parser, the scorer, the statistics and :mod:`butterfly.kaggle.runner`) is one code
cell holding that file's text verbatim, run as that module by a cell magic
(``%%butterfly_module PATH``: a fresh module object in ``sys.modules``, the cell's text executed
in it); the frozen suite is one cell of data (``%%butterfly_data PATH``), checked against the
manifest's sha256 when the notebook runs. So the notebook runs on Kaggle without installing this
project, and a test fails when the committed notebook differs from a fresh build.

The build is deterministic (no outputs, no execution counts, fixed cell ids, sorted keys): the
same sources give the same bytes. It imports neither litellm nor kaggle_benchmarks.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from butterfly import __version__
from butterfly.errors import UserError
from butterfly.files import write_text_atomic
from butterfly.kaggle.settings import SuiteEntry

ROOT: Final = Path(__file__).resolve().parents[2]
NOTEBOOK: Final = "notebooks/butterflybench.ipynb"
CELLS: Final = "butterfly/kaggle/cells.py"
"""The notebook's cells in order, its text and its own code (the set-up, the configuration, the
model, the tasks, the run): a module that ruff and mypy check, cut into cells by
:func:`template_cells`."""
SUITE: Final = "scenarios/butterfly-40.jsonl"
ESTIMATE: Final = "notebooks/estimate.json"
"""The dry run's estimate per scenario (``tools/kaggle_quota.py``), printed before the run."""
LONG: Final = "scenarios/butterfly-long.jsonl"
SUITE_NAMES: Final = ("butterfly-40", "butterfly-long", "butterfly-code")
"""The frozen suites the notebook carries, in this order; ``butterfly-40`` is required, the
others when their file is in the tree (``butterfly-code`` is the code track's, its manifest's
``track`` is ``code``)."""

MODULES: Final = (
    "oracle/catalogue.py",
    "oracle/records.py",
    "oracle/ledger.py",
    "oracle/wording.py",
    "oracle/guards.py",
    "oracle/engine.py",
    "oracle/ops.py",
    "oracle/readings.py",
    "oracle/replay.py",
    "oracle/depth.py",
    "oracle/__init__.py",
    "butterfly/__init__.py",
    "butterfly/core/__init__.py",
    "butterfly/core/vocab.py",
    "butterfly/core/asking.py",
    "butterfly/core/usage.py",
    "butterfly/core/wire.py",
    "butterfly/core/stats.py",
    "butterfly/core/find_json.py",
    "butterfly/core/normalise.py",
    "butterfly/core/parse.py",
    "butterfly/core/vote.py",
    "butterfly/core/turns.py",
    "butterfly/core/agents.py",
    "butterfly/core/logistic.py",
    "butterfly/core/horizon_metric.py",
    "butterfly/core/pooling.py",
    "butterfly/core/metric_registry.py",
    "butterfly/core/user_price.py",
    "butterfly/core/scores.py",
    "butterfly/core/horizon_text.py",
    "butterfly/core/efficiency.py",
    "butterfly/core/efficiency_text.py",
    "butterfly/core/metrics.py",
    "butterfly/core/prompts.py",
    "butterfly/core/cache_marks.py",
    "butterfly/errors.py",
    "butterfly/code/__init__.py",
    "butterfly/core/code_catalogue.py",
    "butterfly/code/program.py",
    "butterfly/code/conversation.py",
    "butterfly/code/probes.py",
    "butterfly/code/sandbox.py",
    "butterfly/code/runner.py",
    "butterfly/code/spec_of_program.py",
    "butterfly/code/judge.py",
    "butterfly/engine/__init__.py",
    "butterfly/engine/tracks.py",
    "butterfly/engine/conversation.py",
    "butterfly/kaggle/__init__.py",
    "butterfly/kaggle/settings.py",
    "butterfly/kaggle/runner.py",
    "butterfly/kaggle/code_track.py",
)
"""The inlined modules, in the order they run: each may import only those before it. The code
track's modules (``butterfly/code/``: the catalogue, the renderer, the conversation, the probes,
the sandbox (with its child-process wait and the fallback's audit hook) and its runner, the
extractor, the judge; ``butterfly/errors.py`` for the sandbox's error) are inlined so that the
notebook observes and scores programs with the CLI's code."""

PACKAGES: Final = ("oracle", "butterfly")
TASK_NAME: Final = "ButterflyBench"
DESCRIPTION_LIMIT: Final = 255
"""Kaggle's limit on a task's description (the saved task's docstring), in characters."""


class NotebookBuildError(UserError):
    """The package cannot be inlined as it is (an inlined module imports one that is not)."""


def module_name(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def check_imports(sources: dict[str, str]) -> None:
    """Every module-level import of ``oracle``/``butterfly`` in an inlined module must name a
    module inlined before it (imports inside functions run only if called, and the notebook
    calls none that leave the inlined set: the end-to-end test runs it)."""
    loaded: set[str] = set(PACKAGES)
    for path in MODULES:
        tree = ast.parse(sources[path], filename=path)
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom):
                raise NotebookBuildError(f"{path}:{node.lineno}: a relative import cannot be "
                                         "inlined; use an absolute one")
            for name in names:
                if name.split(".")[0] in PACKAGES and name not in loaded:
                    raise NotebookBuildError(
                        f"{path}:{node.lineno}: imports {name}, which the notebook does not "
                        f"inline (inlined before it: {', '.join(sorted(loaded))}); add it to "
                        "butterfly.kaggle.notebook.MODULES or import it inside the function that "
                        "needs it")
        loaded.add(module_name(path))


def _read(rel: str, root: Path) -> str:
    path = root / rel
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise NotebookBuildError(f"{path}: cannot read: {e.strerror or e}") from None


def _quoted(text: str) -> str:
    """``text`` as it goes between the single quotes of a Python string literal."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


_CELL_MARK: Final = re.compile(r"^# %% (\w+)(?: \[(\w+)\])?\n", re.MULTILINE)
_COMMENT: Final = re.compile(r"^# ?", re.MULTILINE)
_PLACEHOLDER: Final = re.compile(r"@[A-Z][A-Z0-9_]*@")


def template_cells(text: str, values: dict[str, str]) -> list[tuple[str, str, str]]:
    """The cells of :data:`CELLS`, in order: (name, kind, text) of the part after each ``# %%
    NAME [KIND]`` line up to the next, without its surrounding blank lines, each ``@KEY@`` of
    ``values`` replaced by its value. KIND: ``code`` when not given; ``markdown`` and ``magic``
    (a code cell that is not Python) are written as comments and taken out of them;
    ``inlined`` marks where the build puts the inlined modules or suites."""
    parts = _CELL_MARK.split(text)
    cells = [(name, kind or "code", body.strip("\n") + "\n") for name, kind, body
             in zip(parts[1::3], parts[2::3], parts[3::3], strict=True)]
    cells = [(name, kind, body if kind == "code" else _COMMENT.sub("", body))
             for name, kind, body in cells]
    for key, value in values.items():
        if not any(f"@{key}@" in c for _, _, c in cells):
            raise NotebookBuildError(f"{CELLS}: no placeholder @{key}@")
        cells = [(name, kind, c.replace(f"@{key}@", value)) for name, kind, c in cells]
    left = sorted({m for _, _, c in cells for m in _PLACEHOLDER.findall(c)})
    if left:
        raise NotebookBuildError(f"{CELLS}: no value for {', '.join(left)}")
    return cells


def _cell(kind: str, text: str, n: int) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "id": f"cell-{n:02d}", "metadata": {},
                            "source": text.splitlines(keepends=True)}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


DESCRIPTION: Final = (
    "Does a model change only what it was asked to? 40 multi-turn edits of a 20-setting spec "
    "(undo, redo, drops, distractors, coupling rules); after each turn the model restates the "
    "spec as JSON. Score: share of final specs equal to an exact oracle's."
)


@dataclass(frozen=True)
class Frozen:
    """A frozen suite the notebook carries: its name, file and text, and what its ``SUITES``
    entry says of it (its sha256, its track, its default ask points: its manifest's ``ask_at``,
    where restate mode asks unless told, and the second K of its recency baseline)."""

    name: str
    path: str
    text: str
    entry: SuiteEntry


def frozen_suites(root: Path) -> list[Frozen]:
    """The suites of :data:`SUITE_NAMES` present under ``root`` (``butterfly-40`` must be),
    each checked against its manifest's sha256."""
    out = []
    for name in SUITE_NAMES:
        path = f"scenarios/{name}.jsonl"
        if name != "butterfly-40" and not (root / path).is_file():
            continue
        text = _read(path, root)
        manifest = json.loads(_read(f"scenarios/{name}.manifest.json", root))
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if sha != manifest.get("sha256"):
            raise NotebookBuildError(f"{path}: sha256 {sha[:12]} differs from its manifest's "
                                     f"({str(manifest.get('sha256'))[:12]})")
        out.append(Frozen(name, path, text, SuiteEntry(
            sha256=sha, track=str(manifest.get("track", "spec")), ask_at=manifest.get("ask_at"),
            window_k=manifest.get("window_k"))))
    return out


def build(root: Path = ROOT) -> str:
    """The notebook's JSON text, from the sources under ``root``."""
    if len(DESCRIPTION) >= DESCRIPTION_LIMIT:
        raise NotebookBuildError(f"the task description has {len(DESCRIPTION)} characters; "
                                 f"Kaggle takes fewer than {DESCRIPTION_LIMIT}")
    sources = {path: _read(path, root) for path in MODULES}
    check_imports(sources)
    suites = frozen_suites(root)
    suite = suites[0].text
    n = sum(1 for line in suite.splitlines() if line.strip())
    inlined = {
        "modules": [("code", f"%%butterfly_module {path}\n{sources[path]}") for path in MODULES],
        "suites": [("code", f"%%butterfly_data {x.path}\n{x.text}") for x in suites]}
    values = {"SUITES": json.dumps({x.name: x.entry for x in suites}),
              "ESTIMATE": _quoted(_read(ESTIMATE, root).strip()), "TASK": TASK_NAME,
              "DESCRIPTION": DESCRIPTION, "N": str(n), "VERSION": __version__}
    texts = [cell for name, kind, text in template_cells(_read(CELLS, root), values)
             for cell in (inlined[name] if kind == "inlined" else
                          [("markdown" if kind == "markdown" else "code", text)])]
    notebook = {
        "cells": [_cell(kind, text, i) for i, (kind, text) in enumerate(texts)],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def build_notebook(out: str | None, check: bool) -> tuple[Path, int]:
    """Write the notebook to ``out`` (default: the committed path); with ``check``, write
    nothing and refuse in one line when the file there differs from a fresh build. (path,
    size in characters)."""
    path = Path(out) if out else ROOT / NOTEBOOK
    text = build()
    if check:
        try:
            current = path.read_text(encoding="utf-8")
        except OSError as e:
            raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
        if current != text:
            raise UserError(f"{path} differs from a fresh build: run `butterfly notebook build "
                            f"--out {path}`")
        return path, len(text)
    write_text_atomic(path, text)
    return path, len(text)
