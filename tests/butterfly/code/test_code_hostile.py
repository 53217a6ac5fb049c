"""A small sample of ``bench/code_hostile.py`` (issue 34): a code run whose model answers a
program that never ends, or one that leaves forty files of 32 MiB, on every turn of one
scenario ends, keeps every observation with its reason, leaves no sandbox directory, and keeps
the harness small. The timed run of two scenarios at the default limits is the bench's, not
a test's (docs/performance.md)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest
from conftest import ROOT


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("code_hostile", ROOT / "bench" /
                                                  "code_hostile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", ["endless", "files"])
def test_a_hostile_model_costs_a_run_neither_hours_nor_gigabytes(kind: str) -> None:
    got = _bench().measure(kind, scenarios=1, run_seconds=1.0, limit_seconds=120.0)
    assert got.status == 0 and got.left_behind == 0, got
    assert got.observed == got.broken_turns == got.with_reason > 0, got
    assert got.rss_mib is not None and got.rss_mib < 1024, got
