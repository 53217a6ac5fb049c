"""The order check of ``make test`` (docs/install.md, "Tests that cannot flake").

``pytest -p randomly --randomly-seed=S -n 2 --dist loadgroup --order-check`` runs the tests in
the order pytest-randomly shuffles from the seed S (modules, then the tests of each module),
split into two xdist groups of whole modules, one per worker: each worker runs one fixed
sequence, the same on every run with that seed. A test that passes only after (or only
without) another one in its process fails here, and fails again when the command is re-run.
Tests already in an xdist group (those that start a llama.cpp server) are left out.

Both this and the main run rest on ``--dist loadgroup`` keeping a group on one worker, which
pytest-xdist does by writing the group into each test's node id; pytest 9.2 no longer reads
it there (pytest-xdist issue 1386), and the groups are then silently ignored: the llama.cpp
tests would run on both workers at once. tests/test_isolation.py fails on such a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import pytest

GROUPS = 2


PER_TEST: Final = 0.2
"""Seconds a test of a module not in :data:`MODULE_SECONDS` is taken to cost."""
MODULE_SECONDS: Final = {
    "tests/test_isolation.py": 28,
    "tests/butterfly/runs/test_model_args_cost.py": 25,
    "tests/butterfly/runs/test_failures.py": 19,
    "tests/butterfly/test_api.py": 7,
}
"""The sample's slow modules and their seconds in the order check (measured 2026-12-02, idle,
from ``--durations=0``; each of the others took 4 s or less). Split by number of tests, the two
workers took 72 s and 34 s; a module that starts interpreters or waits on servers is worth
many quick tests. A wrong figure costs balance only: every test still runs once, in its
shuffled place."""


def split(modules: Sequence[str], groups: int = GROUPS,
          seconds: Mapping[str, float] = MODULE_SECONDS) -> dict[str, int]:
    """Each module to a group, the costliest first (``seconds``, else :data:`PER_TEST` a test),
    each to the group with the least cost so far (ties: the module seen first, the lower group):
    ``modules`` is the module of each test, in run order. The tests keep their run order."""
    counts = {m: modules.count(m) for m in dict.fromkeys(modules)}
    cost = {m: seconds.get(m, PER_TEST * n) for m, n in counts.items()}
    sizes = [0.0] * groups
    out: dict[str, int] = {}
    for module in sorted(counts, key=lambda m: -cost[m]):  # stable: first seen first on ties
        group = sizes.index(min(sizes))
        out[module] = group
        sizes[group] += cost[module]
    return out


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def arrange(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the tests of an xdist group; put each other test in its module's group."""
    grouped = [i for i in items if i.get_closest_marker("xdist_group") is not None]
    if grouped:
        config.hook.pytest_deselected(items=grouped)
        items[:] = [i for i in items if i.get_closest_marker("xdist_group") is None]
    groups = split([_module(i) for i in items])
    for item in items:
        item.add_marker(pytest.mark.xdist_group(f"order-{groups[_module(item)]}"))


def lost_groups(items: list[pytest.Item]) -> list[str]:
    """The tests of an xdist group whose node id does not carry the group (what the loadgroup
    scheduler reads): empty unless pytest-xdist's groups have no effect."""
    return [i.nodeid for i in items
            if i.get_closest_marker("xdist_group") is not None and "@" not in i.nodeid]
