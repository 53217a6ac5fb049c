"""Shared fixtures: paths and a helper to run the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "tests"))


def run_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``butterfly ARGS`` as a user would, from the repo root."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "butterfly.cli", *args],
        input=stdin, capture_output=True, text=True, cwd=ROOT, env=full_env, timeout=timeout,
    )


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli
