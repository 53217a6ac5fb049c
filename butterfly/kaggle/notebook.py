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

ROOT: Final = Path(__file__).resolve().parents[2]
NOTEBOOK: Final = "notebooks/butterflybench.ipynb"
CELLS: Final = "butterfly/kaggle/cells.py"
"""The notebook's own code (the set-up, the configuration, the model, the tasks, the run): a
module that ruff and mypy check, cut into cells by :func:`code_cells`."""
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
    "butterfly/code/child.py",
    "butterfly/code/guard.py",
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


_CELL_MARK: Final = re.compile(r"^# %% (\w+)\n", re.MULTILINE)
_PLACEHOLDER: Final = re.compile(r"@[A-Z][A-Z0-9_]*@")


def code_cells(text: str, values: dict[str, str]) -> dict[str, str]:
    """The cells of :data:`CELLS` by name: the text after each ``# %% NAME`` line up to the next,
    without its surrounding blank lines, each ``@KEY@`` of ``values`` replaced by its value."""
    parts = _CELL_MARK.split(text)
    cells = {name: body.strip("\n") + "\n" for name, body in zip(parts[1::2], parts[2::2],
                                                                  strict=True)}
    for key, value in values.items():
        if not any(f"@{key}@" in c for c in cells.values()):
            raise NotebookBuildError(f"{CELLS}: no placeholder @{key}@")
        cells = {name: c.replace(f"@{key}@", value) for name, c in cells.items()}
    left = sorted({m for c in cells.values() for m in _PLACEHOLDER.findall(c)})
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


INTRO: Final = """\
# ButterflyBench: does a model change only what it was asked to change?

A simulated user edits the 20-setting spec of a command-line data tool over 1 to 10 turns
(set, undo, undo by description, undo the earliest change still in effect, redo, drop a
requirement, distractors, coupling rules). After every turn the model restates the whole spec
as JSON, and an exact oracle replays the active changes to say what the spec must be. No LLM
judge.

**The saved task is `{task}`** (the last cell chooses it): it plays the {n} scenarios of
`butterfly-40` with `kbench.llm` and returns the share whose final spec equals the oracle's,
with its 95% interval (Wilson; Kaggle shows it as value ± the larger distance to an end of the
interval). A scenario whose calls still fail after the retries is a provider error, never a
model failure: the task then fails instead of reporting a number.

This notebook is generated by `butterfly notebook build` from ButterflyBench {version}: the
cells below hold the package's own modules and the frozen suite, verbatim. Do not edit it
here; change the package and rebuild (docs/kaggle.md).
"""

CODE_NOTE: Final = """\
## The package's code

Each cell below is one module of ButterflyBench, verbatim: the oracle (catalogue, records,
replay), the pure core of the harness (`butterfly/core/`: vocabulary, statistics, parser,
turns, scripted baselines, the horizon, results, scorer, prompts), the code track
(`butterfly/code/`: its catalogue, the reference program, the conversation, the probes, the
sandbox, the extractor and the judge), the conversation engine (`butterfly/engine/`: the
tracks and the turns of a conversation), `butterfly/kaggle/settings.py` (what the notebook plays,
checked once, and the estimate of what it will send), `butterfly/kaggle/runner.py` (the engine
driven through kaggle-benchmarks' chat, the retries and the verdicts) and
`butterfly/kaggle/code_track.py` (the code track's observations and verdicts).
"""

DATA_NOTE: Final = """\
## The frozen suites

`butterfly-40` (the default: 6 handwritten and 34 generated scenarios, seed 40) and
`butterfly-long` (12 chains at each of 5, 10, 20, 40 and 80 turns, seed 4080), and, once it is
frozen, `butterfly-code` (the code track), each checked against its manifest's sha256. Set
`SUITE_NAME = "butterfly-long"` in the configuration cell to run a slice of the long suite
instead: the first `LONG_PER_LENGTH` chains of each length (2 by default: 10 conversations, 310
calls; docs/kaggle.md sizes it to the daily quota). Set `SUITE_NAME = "butterfly-code"` to play
the code track: the model keeps a Python program up to date, and each answer's program is run
(in a child process, the fallback sandbox: Kaggle has no bubblewrap) to read its behaviour.
"""

CHOOSE: Final = "%choose butterflybench\n"

DESCRIPTION: Final = (
    "Does a model change only what it was asked to? 40 multi-turn edits of a 20-setting spec "
    "(undo, redo, drops, distractors, coupling rules); after each turn the model restates the "
    "spec as JSON. Score: share of final specs equal to an exact oracle's."
)


@dataclass(frozen=True)
class Frozen:
    """A frozen suite the notebook carries: its name, file, text, sha256 and track, and its
    default ask points (its manifest's ``ask_at``: restate mode asks there unless told)."""

    name: str
    path: str
    text: str
    sha256: str
    track: str
    ask_at: list[int] | None = None
    window_k: int | None = None
    """The second K of its recency baseline (its manifest's ``window_k``)."""


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
        out.append(Frozen(name, path, text, sha, str(manifest.get("track", "spec")),
                          manifest.get("ask_at"), manifest.get("window_k")))
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
    table = {x.name: {"sha256": x.sha256, "track": x.track, "ask_at": x.ask_at,
                      "window_k": x.window_k} for x in suites}
    code = code_cells(_read(CELLS, root), {"SUITES": json.dumps(table),
                                            "ESTIMATE": _quoted(_read(ESTIMATE, root).strip()),
                                            "TASK": TASK_NAME, "DESCRIPTION": DESCRIPTION})
    texts: list[tuple[str, str]] = [
        ("markdown", INTRO.format(task=TASK_NAME, n=n, version=__version__)),
        ("code", code["setup"]),
        ("markdown", CODE_NOTE),
        *(("code", f"%%butterfly_module {path}\n{sources[path]}") for path in MODULES),
        ("markdown", DATA_NOTE),
        *(("code", f"%%butterfly_data {x.path}\n{x.text}") for x in suites),
        ("markdown", "## The run\n"),
        *(("code", code[name]) for name in ("config", "estimate", "model", "tasks", "run")),
        ("markdown", f"Keep only the `{TASK_NAME}` task and its run: that is the one Kaggle "
                     "saves.\n"),
        ("code", CHOOSE),
    ]
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
