"""Shared fixtures: paths, helpers to run the CLI in a subprocess or in this process,
litellm's process-wide state put back after every test (tests/litellm_state.py), and the
``--order-check`` option of make test (tests/order_check.py)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "tests"))

import litellm_state  # noqa: E402 - from tests/, on the path just above; imports no litellm
import order_check  # noqa: E402

FIRST_IMPORT = litellm_state.FirstImport()
sys.meta_path.insert(0, FIRST_IMPORT)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--order-check", action="store_true", default=False,
                     help="with -p randomly and -n 2 --dist loadgroup: two fixed sequences of "
                     "whole modules, one per worker (tests/order_check.py)")


@pytest.hookimpl(tryfirst=True)  # after pytest-randomly's shuffle, before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("order_check"):
        order_check.arrange(config, items)


@pytest.fixture(autouse=True)
def _litellm_state_put_back() -> Iterator[None]:
    """Whatever a test changes in litellm's globals (price map, transport flag, callbacks)
    is undone when it ends, so no test depends on which ran before it in this process."""
    with litellm_state.preserved(FIRST_IMPORT):
        yield


def run_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``butterfly ARGS`` as a user would, from the repo root."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "butterfly.cli", *args],
        input=stdin, capture_output=True, text=True, cwd=ROOT, env=full_env, timeout=timeout,
    )


def cli_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``butterfly ARGS`` in this process: (exit status, stdout, stderr); never a traceback."""
    from butterfly.cli import main

    try:
        code = main(list(args))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


TIMING: tuple[str, ...] = ("latency_calls", "latency_median_s", "latency_p95_s")
"""The score's figures that time the calls sent (``efficiency``): two plays of the same answers
(a resume, shards merged, another harness, the answer cache serving some) take other times."""


def same_answers(score: dict[str, Any]) -> dict[str, Any]:
    """A ``score --json`` object without what two plays of the same answers may differ in:
    the run's path and the calls' timing."""
    out = {k: v for k, v in score.items() if k != "run"}
    if out.get("efficiency") is not None:
        out["efficiency"] = {k: v for k, v in out["efficiency"].items() if k not in TIMING}
    return out


def rewrite_manifest(out: Path, **changes: object) -> None:
    """Change fields of a run's manifest as the harness writes it (sealed again over the calls
    file as it is): for tests that make what a process leaves behind (a kill -9, a second
    writer). An edit by hand, unsealed, is what the digest refuses."""
    from butterfly.runs.digest import chain_of
    from butterfly.runs.records import RunManifest
    from butterfly.runs.store import CALLS, MANIFEST, write_manifest

    data = json.loads((out / MANIFEST).read_text())
    data.update(changes)
    write_manifest(out, RunManifest.model_validate(data), chain_of(out / CALLS))


def rewrite_calls(out: Path, lines: list[str]) -> None:
    """Replace a run's calls.jsonl by ``lines`` (records as JSON), linked into the digest as the
    harness writes them: the file a run that made only those calls would have left."""
    from butterfly.runs.digest import Chain, LinkedLog
    from butterfly.runs.records import CallRecord
    from butterfly.runs.store import CALLS

    (out / CALLS).unlink()
    log = LinkedLog(out / CALLS, Chain())
    for line in lines:
        log.append(CallRecord.model_validate_json(line))
    log.close()


@contextlib.contextmanager
def _patched_env(env: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_inproc(*args: str, stdin: str | None = None, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """``butterfly ARGS`` in this process (from the repo root, ``env`` set meanwhile, ``stdin``
    as its standard input): what :func:`run_cli` returns, without a new interpreter importing
    butterfly (and for a model, litellm) again."""
    from butterfly.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd, old_stdin = Path.cwd(), sys.stdin
    with _patched_env(env or {}), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        os.chdir(ROOT)
        sys.stdin = io.StringIO(stdin or "")
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 2
        finally:
            os.chdir(cwd)
            sys.stdin = old_stdin
    return subprocess.CompletedProcess(["butterfly", *args], code, out.getvalue(),
                                       err.getvalue())


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli


CODE_SUITE = ROOT / "tests/butterfly/code/code_suite.jsonl"
CODE_AGENTS = ("oracle", "refactor", "collateral", "noop", "last-edit")


@pytest.fixture(scope="session")
def code_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted code agents' runs (:data:`CODE_AGENTS`) of the test code suite, one
    directory each, played once per worker: the modules that use them are in the xdist group
    ``code-runs``, so one worker plays them for both (code/test_code_runs.py,
    present/test_report_code.py). Playing them writes their observations; a test that changes
    a run works on a copy."""
    from butterfly import api

    tmp = tmp_path_factory.mktemp("code-runs")
    for agent in CODE_AGENTS:
        api.run(model=f"script/{agent}", suite=str(CODE_SUITE), track="code", out=tmp / agent,
                cache=None)
    return tmp


@pytest.fixture(scope="session")
def notebook_kernel() -> Iterator[object]:
    """One Jupyter kernel per worker for the tests that execute the Kaggle notebook, put back
    before each execution to what a new kernel would hold (tests/notebook_kernel.py): started
    once instead of once per test, with kaggle-benchmarks' dependencies imported once."""
    from notebook_kernel import SharedKernel

    kernel = SharedKernel()
    yield kernel
    kernel.shutdown()


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One headless Chromium for the tests that use it (tests/browser.py: offline), started
    once per worker: a test sizes its viewport and loads its page. A missing browser is a
    failure, not a skip: make test installs it."""
    from browser import chrome, missing

    why = missing()
    if why is not None:
        pytest.fail(why)
    with chrome(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver
