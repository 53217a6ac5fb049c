"""The renderer's program is a real tool (contract section 7): it compiles for every spec, uses
the standard library only, reads no table of settings, and stays readable in size; the runner
keeps it in a child process with a clean environment and a timeout."""

from __future__ import annotations

import ast
import sys

import pytest

from butterfly.code.program import render
from butterfly.code.runner import run_program
from butterfly.core.code_catalogue import KEYS, canonical, is_valid, one_away

SPECS = [canonical(), *one_away()]


@pytest.mark.parametrize("spec", SPECS)
def test_the_program_compiles_and_imports_only_the_standard_library(spec: dict[str, str]) -> None:
    assert is_valid(spec)
    tree = ast.parse(render(spec))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}


@pytest.mark.parametrize("spec", SPECS)
def test_no_setting_is_read_from_a_table(spec: dict[str, str]) -> None:
    tree = ast.parse(render(spec))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in KEYS]
    assert not [n for n in tree.body if isinstance(n, ast.Assign) and
                isinstance(n.value, ast.Dict)]


def test_the_program_is_readable_in_size() -> None:
    lengths = [len(render(s).splitlines()) for s in SPECS]
    assert min(lengths) >= 90 and max(lengths) <= 250  # the contract: "about 100 to 250"
    assert all(len(line) <= 100 for s in SPECS for line in render(s).splitlines())


def test_a_program_runs_in_a_child_with_a_clean_environment() -> None:
    source = "import os, sys\nprint(sorted(os.environ))\nprint(os.getcwd())\nsys.exit(3)\n"
    outcome = run_program(source, [], b"", 10.0)
    assert outcome.status == 3 and not outcome.ok
    keys = outcome.stdout.decode().splitlines()[0]
    assert "PATH" in keys and "HOME" not in keys and "bfcode-" in outcome.stdout.decode()


def test_a_program_that_hangs_is_stopped() -> None:
    outcome = run_program("import time\ntime.sleep(30)\n", [], b"", 0.5)
    assert outcome.status is None and not outcome.ok


def test_a_program_gets_its_inputs_and_leaves_its_outputs() -> None:
    source = "import sys\nopen('b', 'w').write(open('a').read().upper() + sys.stdin.read())\n"
    outcome = run_program(source, [], b"!", 10.0, {"a": b"hi"})
    assert outcome.ok and outcome.files == {"b": b"HI!"}
