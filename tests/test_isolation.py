"""Tests that cannot flake (docs/install.md, "Tests that cannot flake"): what a test changes in
litellm's globals is put back (tests/litellm_state.py), so the prices test passes after a
router test in one process; a test that first imports litellm is put back to that import,
and a test that never imports it does not pay for it; every hypothesis test is derandomised
and keeps no example database; the order check splits the shuffled modules in two fixed,
balanced sequences (tests/order_check.py).

Tests of the test harness are kept only where they guard a failure seen here (issue 36), each
named: litellm's globals leaking between tests (a router test made ``openai/fake`` priced at $0
in the prices test, in one process); a first import of litellm left half-done by a test;
hypothesis examples that differed between runs; the order check's two sequences, which must
not change with the machine (its point is that a failure repeats); pytest 9.2 with xdist
grouping nothing, which put two llama.cpp servers on the two cores at once. The loopback fake
server is not tested on its own: every behaviour of it a test relies on is that test's
premise, and a fake that stopped doing it fails that test (its 17 tests of itself went)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import litellm_state
import pytest
from conftest import ROOT
from order_check import lost_groups, split

THEN_PRICES = ["tests/butterfly/models/test_router.py::"
               "test_a_refused_key_fails_the_run_with_the_key_redacted",  # a Router of openai/fake
               "tests/butterfly/models/test_prices.py::test_an_unpriced_model_costs_none"]


COUNTERS = {"utils._model_cost_mutation_generation"}
"""Grows at each change of the price map, so that litellm's caches of it see the change: not
put back (a cache would take the restored map for the one it indexed), so not compared."""


def _copy(items: Any) -> object:
    if isinstance(items, dict):  # the price map's entries are dicts: copied one level down
        return {k: dict(v) if isinstance(v, dict) else v for k, v in items.items()}
    return list(items) if isinstance(items, list) else frozenset(items)


def every_global(litellm: Any) -> dict[str, object]:
    """A wider look than tests/litellm_state.py keeps: every scalar (private ones too) and the
    content of every list, dict and set of litellm and of ``litellm.utils`` (the price
    registry's module)."""
    import litellm.utils as utils

    out: dict[str, object] = {}
    for prefix, module in (("", litellm), ("utils.", utils)):
        for name, value in vars(module).items():
            if isinstance(value, litellm_state.SETTING_TYPES):
                out[prefix + name] = (type(value), value)
            elif isinstance(value, list | dict | set | frozenset):
                out[prefix + name] = _copy(value)
    return {k: v for k, v in out.items() if k not in COUNTERS}


def _router_file(tmp_path: Path) -> Path:
    deployments = [{"model_name": "g", "litellm_params": {"model": model,
                                                          "api_base": "http://127.0.0.1:9/v1",
                                                          "api_key": "sk-x"}}
                   for model in ("openai/fake", "openai/gpt-4o-mini")]
    file = tmp_path / "router.json"
    file.write_text(json.dumps({"model_list": deployments}))
    return file


def _change_litellm(file: Path) -> None:
    """What tests of the suite do to litellm: a Router, URL credentials, a callback, a setting."""
    from butterfly.models.litellm_seam import LiteLLMProvider, RouterProvider, litellm
    from butterfly.models.router import load_router

    RouterProvider(load_router(file, "g"))
    LiteLLMProvider(api_base="http://user:pw@127.0.0.1:9/v1")
    litellm.success_callback.append("cache")
    litellm.num_retries = 7


def test_what_a_router_credentials_and_callbacks_change_is_put_back(tmp_path: Path) -> None:
    from butterfly.models.litellm_seam import litellm

    file = _router_file(tmp_path)
    with litellm_state.preserved(litellm_state.FirstImport()):
        _change_litellm(file)  # once, so that what litellm creates on first use exists
    before = every_global(litellm)
    with litellm_state.preserved(litellm_state.FirstImport()):
        _change_litellm(file)
        assert litellm.disable_aiohttp_transport and litellm.num_retries == 7
        assert litellm.cost_per_token(model="openai/fake", prompt_tokens=1,
                                      completion_tokens=1) == (0, 0)  # the Router's entry
        changed = {k for k, v in every_global(litellm).items() if before.get(k) != v}
        assert {"model_cost", "success_callback", "disable_aiohttp_transport"} <= changed
    assert every_global(litellm) == before
    with pytest.raises(Exception):  # noqa: B017 - unpriced again: litellm refuses it
        litellm.cost_per_token(model="openai/fake", prompt_tokens=1, completion_tokens=1)


def test_the_prices_test_passes_after_the_router_tests_in_one_process() -> None:
    """The issue's failure: in one process, after a router test, ``openai/fake`` was priced."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                        "no:randomly", "-p", "no:xdist", *THEN_PRICES],
                       cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "4 passed" in r.stdout


FIRST_IMPORT = """
import sys
sys.path.insert(0, "tests")
import litellm_state

first = litellm_state.FirstImport()
sys.meta_path.insert(0, first)
with litellm_state.preserved(first):
    pass
assert "litellm" not in sys.modules, "the fixture imported litellm"
with litellm_state.preserved(first):
    from butterfly.models.litellm_seam import LiteLLMProvider, litellm
    LiteLLMProvider(api_base="http://user:pw@127.0.0.1:9/v1")
    assert litellm.disable_aiohttp_transport
assert litellm.disable_aiohttp_transport is False, "not put back"
assert litellm.telemetry is False, "the seam's own setting was undone"
print("ok")
"""


def test_a_first_import_is_put_back_to_that_import_and_no_test_pays_for_it() -> None:
    r = subprocess.run([sys.executable, "-c", FIRST_IMPORT], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def hypothesis_tests(items: list[pytest.Item]) -> dict[str, Any]:
    """The settings of each collected hypothesis test, by node id."""
    from hypothesis.internal.detection import is_hypothesis_test

    found = {}
    for item in items:
        test = getattr(item, "obj", None)
        if test is not None and is_hypothesis_test(test):
            found[item.nodeid] = test._hypothesis_internal_use_settings
    return found


def test_every_hypothesis_test_is_derandomised_without_a_database(
        request: pytest.FixtureRequest) -> None:
    found = hypothesis_tests(request.session.items)
    if not found:
        pytest.skip("no hypothesis test collected beside this one: run it with the suite")
    loose = sorted(n for n, s in found.items() if not s.derandomize or s.database is not None)
    assert not loose, f"hypothesis tests not derandomised or keeping examples: {loose}"


def test_the_order_check_splits_whole_modules_into_groups_balanced_by_cost() -> None:
    run = ["a"] * 5 + ["b"] * 2 + ["c"] * 2 + ["d"] * 4 + ["e"]
    by_count = split(run, seconds={})  # 0.2 s a test: a 5, d 4, b 2, c 2, e 1
    assert by_count == {"a": 0, "d": 1, "b": 1, "c": 0, "e": 1}  # 5+2 tests and 4+2+1
    assert split(run, seconds={}) == split(list(run), seconds={})  # same order, same groups
    slow = split(run, seconds={"e": 30.0, "b": 20.0})  # a module that waits on servers
    assert slow == {"e": 0, "b": 1, "a": 1, "d": 1, "c": 1}  # 30 s against 20 s + 11 tests
    assert split(["x"] * 3, groups=2) == {"x": 0}


def test_xdist_groups_keep_their_tests_on_one_worker(request: pytest.FixtureRequest) -> None:
    """pytest 9.2 with pytest-xdist 3.8: ``--dist loadgroup`` silently groups nothing (the
    llama.cpp tests on both workers at once), hence ``pytest<9.2`` in requirements/lock.in."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not an xdist worker of --dist loadgroup (make test runs it as one)")
    lost = lost_groups(request.session.items)
    assert not lost, (f"pytest {pytest.__version__}: --dist loadgroup puts {lost[0]} on any "
                      "worker (pytest-xdist issue 1386); install requirements/lock.txt")
