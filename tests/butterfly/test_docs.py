"""Docs that match the code (issue 21): every repository path, module and ``butterfly`` command
named in README.md, docs/*.md and the ``--help`` texts exists.

About 20 references in docs/ named modules of an old flat layout (``butterfly/score.py``,
``butterfly/kaggle_run.py``, ...), ``run --help`` pointed at ``docs/parsing.md``, and three docs
cited a contract file outside the repository. A path is looked up from the repository's root,
or from ``butterfly/`` for a layer's module (``runs/reader.py``: docs/design.md names modules
relative to the package); an upper-case word or ``<...>`` in it is a placeholder
(``scenarios/NAME.manifest.json``) that must match a file; ``runs/calls.iter_records`` names a
module and an attribute. Paths the docs name as what a command writes are listed in
:data:`OUTPUTS`, each with why it is not in the repository.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

from butterfly.cli import build_parser

TOP = ("butterfly", "butterflybench", "docs", "tests", "scenarios", "bench", "tools",
       "notebooks", "runs", "oracle")
LAYERS = ("core", "suite", "models", "runs", "analysis", "present", "kaggle")
PATH = re.compile(r"(?<![\w.~/$-])((?:" + "|".join(TOP) + r")/[\w.*<>/+-]*)")
MODULE = re.compile(r"(?<![\w/.-])((?:butterfly|oracle)(?:\.\w+)+)")
COMMAND = re.compile(r"(?<![\w./-])butterfly ([a-z][\w-]*)")
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
PLACEHOLDER = re.compile(r"<[^>/]+>|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b")
OUTPUTS = {
    "runs/demo-smollm2": "what make demo writes",
    "runs/local-smollm2__butterfly-40": "butterfly run's default --out for the default model",
    "runs/x": "an example --out",
    "runs/old": "an example argument of compare",
    "runs/new": "an example argument of compare",
    "runs/noisy-p02-repeats100": "rebuilt by the command beside it, not committed (45 MB)",
    "runs/noisy-p04-repeats50": "rebuilt by the command beside it, not committed",
    "runs/seq-MODEL__SUITE": "sequential's default --out",
    "runs/MODEL__SUITE": "run's default --out",
    "runs/MODEL__SUITE__restate": "a restate run's default --out",
    "runs/MODEL__SUITE.shard-I-of-N": "a shard's default --out",
    "runs/MODEL__SUITE__sweep-KEY": "a budget sweep's default --out (butterfly sweep)",
}


def docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def help_texts() -> Iterator[tuple[str, str]]:
    """(``butterfly COMMAND --help``, its text) for the program and every subcommand."""
    todo: list[tuple[str, argparse.ArgumentParser]] = [("butterfly", build_parser())]
    while todo:
        name, parser = todo.pop()
        yield f"{name} --help", parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}", p) for sub, p in action.choices.items()]


def sources() -> Iterator[tuple[str, str]]:
    for path in docs():
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    yield from help_texts()


def _found(pattern: str) -> bool:
    glob = PLACEHOLDER.sub("*", pattern).rstrip("/")
    return "*" in glob and any(next(base.glob(glob), None) is not None
                               for base in (ROOT, ROOT / "butterfly"))


def _attribute(path: str) -> bool:
    """``runs/calls.iter_records``: a module file and an attribute of it."""
    head, _, tail = path.rpartition("/")
    name, _, attrs = tail.partition(".")
    for base in ("", "butterfly/"):
        file = ROOT / base / head / f"{name}.py"
        if attrs and file.is_file():
            return _resolves(".".join(file.relative_to(ROOT).with_suffix("").parts) + "."
                             + attrs)
    return False


INSPECT_NAMES = ("butterflybench/butterfly_", "butterfly/script/")
"""Names that look like paths and are inspect's names of our tasks and scripted agents
(``inspect eval butterflybench/butterfly_40 --model butterfly/script/oracle``, docs/inspect.md)."""


def exists(path: str) -> bool:
    path = path.rstrip(".,;:)")
    if path in OUTPUTS or path.startswith(INSPECT_NAMES):
        return True
    if (ROOT / path).exists() or (path.split("/")[0] in LAYERS
                                  and (ROOT / "butterfly" / path).exists()):
        return True
    return _found(path) or _attribute(path)


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def test_every_path_named_exists() -> None:
    missing = [f"{where}:{_line(text, m.start())}: {m.group(1)}"
               for where, text in sources() for m in PATH.finditer(text)
               if not exists(m.group(1))]
    assert not missing, "\n".join(missing)


def test_every_module_named_imports() -> None:
    missing = [f"{where}:{_line(text, m.start())}: {m.group(1)}"
               for where, text in sources() for m in MODULE.finditer(text)
               if not _resolves(m.group(1).rstrip("."))]
    assert not missing, "\n".join(missing)


def commands_named(texts: Iterator[tuple[str, str]]) -> list[tuple[str, str]]:
    """(where, X) for each ``butterfly X`` in the code of a doc (backticks, fenced blocks)
    or anywhere in a help text."""
    named: list[tuple[str, str]] = []
    for where, text in texts:
        spans = [text] if where.endswith("--help") else [m.group(0) for m in
                                                          CODE.finditer(text)]
        named += [(where, c.group(1)) for span in spans for c in COMMAND.finditer(span)]
    return named


def subcommands() -> set[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def test_every_butterfly_command_named_is_a_subcommand() -> None:
    named = commands_named(sources())
    unknown = [f"{where}: butterfly {c}" for where, c in named if c not in subcommands()]
    assert len(named) > 50 and not unknown, "\n".join(unknown)


def test_each_output_path_listed_is_still_named() -> None:
    named = {m.group(1).rstrip(".,;:)") for _, text in sources() for m in PATH.finditer(text)}
    assert not set(OUTPUTS) - named, "stale entries of OUTPUTS"


@pytest.mark.parametrize("wrong", ["docs/parsing.md", "butterfly/score.py",
                                   "butterfly/kaggle_run.py", "runs/reader.pyc",
                                   "scenarios/NAME.manifest.jsonl"])
def test_the_check_catches_what_the_docs_got_wrong(wrong: str) -> None:
    assert not exists(wrong)
    assert exists("docs/parser.md") and exists("runs/reader.py")
    assert exists("runs/calls.iter_records") and not exists("runs/calls.iter_nothing")
    doc = "`butterfly frobnicate RUN` and `butterfly score RUN`; butterfly fix in prose"
    assert commands_named(iter([("x.md", doc)])) == [("x.md", "frobnicate"), ("x.md", "score")]


def test_make_demo_takes_one_time_measured_one_way() -> None:
    """The Makefile's comment on ``demo`` and the README's paragraph on it give one figure,
    each saying how it is measured (they said "about three minutes" and "6 min 34 s")."""
    figure = re.compile(r"(\d+ min \d+ s) by `time make\s+demo` on two idle cores")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    comment = makefile[:makefile.index("\ndemo:")].rsplit("\n\n", 1)[-1]
    in_make = figure.findall(" ".join(x.lstrip("# ") for x in comment.splitlines()))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    in_readme = figure.findall(" ".join(readme.split()))
    assert len(in_make) == 1 and in_readme == in_make, (in_make, in_readme)
