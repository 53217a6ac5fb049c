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

from collections.abc import Sequence

import pytest

GROUPS = 2


def split(modules: Sequence[str], groups: int = GROUPS) -> dict[str, int]:
    """Each module, in the order of its first test, to the group with the fewest tests so far
    (``modules``: the module of each test, in run order)."""
    counts = {m: modules.count(m) for m in dict.fromkeys(modules)}
    sizes = [0] * groups
    out: dict[str, int] = {}
    for module, n in counts.items():
        group = sizes.index(min(sizes))
        out[module] = group
        sizes[group] += n
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
