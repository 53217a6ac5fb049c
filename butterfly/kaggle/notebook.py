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
from pathlib import Path
from typing import Any, Final

from butterfly import __version__
from butterfly.errors import UserError
from butterfly.files import write_text_atomic

ROOT: Final = Path(__file__).resolve().parents[2]
NOTEBOOK: Final = "notebooks/butterflybench.ipynb"
SUITE: Final = "scenarios/butterfly-40.jsonl"
SUITE_MANIFEST: Final = "scenarios/butterfly-40.manifest.json"
LONG: Final = "scenarios/butterfly-long.jsonl"
LONG_MANIFEST: Final = "scenarios/butterfly-long.manifest.json"

MODULES: Final = (
    "oracle/catalogue.py",
    "oracle/records.py",
    "oracle/ledger.py",
    "oracle/readings.py",
    "oracle/replay.py",
    "oracle/__init__.py",
    "butterfly/__init__.py",
    "butterfly/core/__init__.py",
    "butterfly/core/vocab.py",
    "butterfly/core/wire.py",
    "butterfly/core/stats.py",
    "butterfly/core/extract.py",
    "butterfly/core/normalise.py",
    "butterfly/core/parse.py",
    "butterfly/core/vote.py",
    "butterfly/core/turns.py",
    "butterfly/core/agents.py",
    "butterfly/core/logistic.py",
    "butterfly/core/horizon.py",
    "butterfly/core/results.py",
    "butterfly/core/horizon_text.py",
    "butterfly/core/metrics.py",
    "butterfly/core/prompts.py",
    "butterfly/kaggle/__init__.py",
    "butterfly/kaggle/runner.py",
)
"""The inlined modules, in the order they run: each may import only those before it."""

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


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _cell(kind: str, text: str, n: int) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "id": f"cell-{n:02d}", "metadata": {},
                            "source": _lines(text)}
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

SETUP: Final = '''\
# Set-up: kaggle-benchmarks, and two cell magics that make the next cells the package itself.
import os
import sys
import types

import kaggle_benchmarks as kbench
import pandas as pd
from IPython.core.magic import register_cell_magic

try:
    import json_repair  # noqa: F401
except ImportError:  # only the lenient parser calls it; this notebook parses "structured"
    def _no_repair(*args, **kwargs):
        raise ImportError("json_repair is not installed")

    sys.modules["json_repair"] = types.ModuleType("json_repair")
    sys.modules["json_repair"].loads = _no_repair

for _name in ("oracle", "butterfly"):
    _package = types.ModuleType(_name)
    _package.__path__ = []  # nothing of these packages is imported from disk
    _package.__package__ = _name
    sys.modules[_name] = _package

DATA = {}


@register_cell_magic
def butterfly_module(line, cell):
    """Run the cell's text as the module LINE of the package (e.g. oracle/replay.py)."""
    path = line.strip()
    name = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    module = sys.modules.get(name)
    if module is None:  # a module, or a subpackage (butterfly/core/__init__.py)
        module = types.ModuleType(name)
        parent = name.rsplit(".", 1)[0]
        if path.endswith("__init__.py"):
            module.__path__ = []
            parent = name
        module.__package__ = parent
        sys.modules[name] = module
        setattr(sys.modules[name.rsplit(".", 1)[0]], name.rsplit(".", 1)[1], module)
    module.__file__ = path
    exec(compile(cell, path, "exec", dont_inherit=True), module.__dict__)


@register_cell_magic
def butterfly_data(line, cell):
    """Keep the cell's text as the data file LINE."""
    DATA[line.strip()] = cell
'''

CODE_NOTE: Final = """\
## The package's code

Each cell below is one module of ButterflyBench, verbatim: the oracle (catalogue, records,
replay), the pure core of the harness (`butterfly/core/`: vocabulary, statistics, parser,
turns, scripted baselines, the horizon, results, scorer, prompts), and
`butterfly/kaggle/runner.py` (the conversation loop, the retries and the verdicts).
"""

DATA_NOTE: Final = """\
## The frozen suites

`butterfly-40` (the default: 6 handwritten and 34 generated scenarios, seed 40) and
`butterfly-long` (12 chains at each of 5, 10, 20, 40 and 80 turns, seed 4080), each checked
against its manifest's sha256. Set `SUITE_NAME = "butterfly-long"` in the configuration cell to
run a slice of the long suite instead: the first `LONG_PER_LENGTH` chains of each length
(2 by default: 10 conversations, 310 calls; docs/kaggle.md sizes it to the daily quota).
"""

CONFIG: Final = '''\
# Configuration. On Kaggle nothing here needs changing; the BUTTERFLY_* variables exist for
# the offline end-to-end test (a local OpenAI-compatible server, a few scenarios).
import hashlib

from butterfly.kaggle import runner as bb

SUITE_NAME = os.environ.get("BUTTERFLY_SUITE", "butterfly-40")  # or "butterfly-long"
LONG_PER_LENGTH = int(os.environ.get("BUTTERFLY_LONG_PER_LENGTH", "2"))
SHA256 = {{"butterfly-40": "{sha256}", "butterfly-long": "{long_sha256}"}}
SUITE = DATA[f"scenarios/{{SUITE_NAME}}.jsonl"]
if hashlib.sha256(SUITE.encode("utf-8")).hexdigest() != SHA256[SUITE_NAME]:
    raise RuntimeError("the suite cell differs from the frozen suite: rebuild the notebook")
SCENARIOS = bb.load_scenarios(SUITE)
BY_ID = {{s.id: s for s in SCENARIOS}}
RUN_IDS = [i.strip() for i in os.environ.get("BUTTERFLY_SCENARIOS", "").split(",") if i.strip()]
if not RUN_IDS and SUITE_NAME == "butterfly-long":
    RUN_IDS = [s.id for s in bb.long_slice(SCENARIOS, LONG_PER_LENGTH)]
RUN_IDS = RUN_IDS or [s.id for s in SCENARIOS]
print(f"{{SUITE_NAME}}: {{len(RUN_IDS)}} conversations, "
      f"{{sum(len(BY_ID[i].turns) for i in RUN_IDS)}} calls")
MAX_TOKENS = int(os.environ.get("BUTTERFLY_MAX_TOKENS", bb.MAX_TOKENS))
N_JOBS = int(os.environ.get("BUTTERFLY_N_JOBS", "4"))  # scenarios played at once
SEED_ARGS = bb.seed_args(os.environ)  # none with BUTTERFLY_NO_SEED=1 (`butterfly run --no-seed`)
# What llm.prompt(..., extra_api_params=...) passes: the output bound (else a quota 403), -M args
EXTRA_API_PARAMS = bb.api_params(MAX_TOKENS, os.environ)
print(f"{{len(RUN_IDS)}} of {{len(SCENARIOS)}} scenarios, {{EXTRA_API_PARAMS}}, "
      f"temperature {{bb.TEMPERATURE}}, {{SEED_ARGS or 'no seed'}}, protocol {{bb.PROTOCOL}}")
'''

MODEL: Final = '''\
# The model: kbench.llm (Kaggle runs this notebook once for each model of the benchmark).
# BUTTERFLY_OPENAI_BASE_URL (the offline test) points kaggle-benchmarks' own OpenAI actor at
# an OpenAI-compatible server instead; the model proxy's variables cannot, since they append
# /openapi to the URL.
if os.environ.get("BUTTERFLY_OPENAI_BASE_URL"):
    import openai
    from kaggle_benchmarks.actors.llms import OpenAI as OpenAIChat

    llm = OpenAIChat(
        openai.OpenAI(base_url=os.environ["BUTTERFLY_OPENAI_BASE_URL"],
                      api_key=os.environ.get("BUTTERFLY_OPENAI_API_KEY", "sk-local"),
                      max_retries=0),
        os.environ["BUTTERFLY_OPENAI_MODEL"],
        support_temperature=True,
    )
else:
    llm = kbench.llm
MODEL_NAME = getattr(llm, "model", llm.name)
print(f"model: {MODEL_NAME}; temperature sent: {llm.support_temperature}")
'''

TASKS: Final = '''\
VERDICTS = {{}}


@kbench.task(name="{task} scenario", store_task=False)
def butterflybench_scenario(llm, scenario_id: str) -> bool:
    """One ButterflyBench conversation: passes when the final spec equals the oracle's."""
    scenario = BY_ID[scenario_id]
    kbench.system.send(bb.system_text(scenario))
    # As llm.prompt() does: temperature only for a model that takes it.
    request = {{**SEED_ARGS, "reasoning": None,
               "temperature": bb.TEMPERATURE if llm.support_temperature else None}}

    def respond():
        # llm.prompt(text, ...) is kbench.user.send(text) then this call; split, a retry asks
        # again with the same history instead of repeating the user's message.
        message = llm.respond(schema=str, **request, **EXTRA_API_PARAMS)
        return bb.Answer(message.content, message.usage.output_tokens)

    answers = bb.play(scenario, kbench.user.send, respond)  # retries transient errors
    VERDICTS[scenario_id] = bb.verdict(scenario, answers, MAX_TOKENS)
    return VERDICTS[scenario_id]["final_match"]


@kbench.task(name="{task}")
def butterflybench(llm) -> tuple[float, float]:
    """{description}"""
    # Nested evaluation runs with max_attempts=1: the retries are inside the scenario task.
    runs = butterflybench_scenario.evaluate(
        llm=[llm], evaluation_data=pd.DataFrame({{"scenario_id": RUN_IDS}}), n_jobs=N_JOBS,
        on_failure="continue")
    failed = [r for r in runs if r.status == "failed"]
    if failed:
        errors = "; ".join(f"{{r.params['scenario_id']}}: "
                           f"{{(r.error_message or '?').strip().splitlines()[-1]}}"
                           for r in failed)
        raise RuntimeError(f"{{len(failed)}} scenario(s) got no answer (provider errors, not "
                           f"model failures), so no score is reported: {{errors}}")
    rows = [VERDICTS[i] for i in RUN_IDS]
    head = bb.headline([r["final_match"] for r in rows])
    with open("butterflybench_verdicts.json", "w", encoding="utf-8") as f:
        f.write(bb.dumps({{"model": MODEL_NAME, "max_tokens": MAX_TOKENS,
                          "api_params": EXTRA_API_PARAMS,
                          "temperature": bb.TEMPERATURE, "seed": SEED_ARGS.get("seed"),
                          "protocol": bb.PROTOCOL, "parse": bb.PARSE, **head,
                          "scenarios": rows}}))
    return head["final_match"], head["ci"]
'''

RUN: Final = '''\
run = butterflybench.run(llm=llm)
if run.status != "success":
    raise RuntimeError(f"ButterflyBench did not complete: {run.error_message}")
print(bb.headline_text(MODEL_NAME, [VERDICTS[i] for i in RUN_IDS]))  # value, CI, horizon
pd.DataFrame([{k: v[k] for k in ("id", "category", "final_match", "first_divergent_turn",
                                 "abstentions")} for v in (VERDICTS[i] for i in RUN_IDS)])
'''

CHOOSE: Final = "%choose butterflybench\n"

DESCRIPTION: Final = (
    "Does a model change only what it was asked to? 40 multi-turn edits of a 20-setting spec "
    "(undo, redo, drops, distractors, coupling rules); after each turn the model restates the "
    "spec as JSON. Score: share of final specs equal to an exact oracle's."
)


def build(root: Path = ROOT) -> str:
    """The notebook's JSON text, from the sources under ``root``."""
    if len(DESCRIPTION) >= DESCRIPTION_LIMIT:
        raise NotebookBuildError(f"the task description has {len(DESCRIPTION)} characters; "
                                 f"Kaggle takes fewer than {DESCRIPTION_LIMIT}")
    sources = {path: _read(path, root) for path in MODULES}
    check_imports(sources)
    suite = _read(SUITE, root)
    manifest = json.loads(_read(SUITE_MANIFEST, root))
    sha = hashlib.sha256(suite.encode("utf-8")).hexdigest()
    if sha != manifest.get("sha256"):
        raise NotebookBuildError(f"{SUITE}: sha256 {sha[:12]} differs from its manifest's "
                                 f"({str(manifest.get('sha256'))[:12]})")
    long = _read(LONG, root)
    long_sha = hashlib.sha256(long.encode("utf-8")).hexdigest()
    if long_sha != json.loads(_read(LONG_MANIFEST, root)).get("sha256"):
        raise NotebookBuildError(f"{LONG}: sha256 {long_sha[:12]} differs from its manifest's")
    n = sum(1 for line in suite.splitlines() if line.strip())
    texts: list[tuple[str, str]] = [
        ("markdown", INTRO.format(task=TASK_NAME, n=n, version=__version__)),
        ("code", SETUP),
        ("markdown", CODE_NOTE),
        *(("code", f"%%butterfly_module {path}\n{sources[path]}") for path in MODULES),
        ("markdown", DATA_NOTE),
        ("code", f"%%butterfly_data {SUITE}\n{suite}"),
        ("code", f"%%butterfly_data {LONG}\n{long}"),
        ("markdown", "## The run\n"),
        ("code", CONFIG.format(sha256=sha, long_sha256=long_sha)),
        ("code", MODEL),
        ("code", TASKS.format(task=TASK_NAME, description=DESCRIPTION)),
        ("code", RUN),
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


def cmd_notebook(out: str | None, check: bool) -> int:
    """Write the notebook to ``out`` (default: the committed path); with ``check``, exit 1 when
    the file there differs from a fresh build instead of writing it."""
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
        print(f"{path}: up to date")
        return 0
    write_text_atomic(path, text)
    print(f"wrote {path} ({len(text)} bytes)")
    return 0
