"""A suite is resolved once (issue 35, item 4): ``butterfly.run`` and its dry run name the suite
once, read its manifest once and load its scenarios once, then pass the ``ResolvedSuite`` whole
to where each part is used."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import butterfly
from butterfly.api.running import dry_run
from butterfly.suite import load
from butterfly.suite.load import ResolvedSuite, resolve


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often the suite's name is resolved, its manifest read and its file loaded."""
    seen: Counter[str] = Counter()

    def counted(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen[name] += 1
            return f(*args, **kwargs)
        return wrapper

    for name in ("resolve_suite", "load_manifest", "_load"):
        monkeypatch.setattr(load, name, counted(name, getattr(load, name)))
    return seen


def test_a_run_resolves_its_suite_once(tmp_path: Path, calls: Counter[str]) -> None:
    run = butterfly.run(model="script/oracle", suite="butterfly-long", mode="restate",
                        limit=3, cache=None, out=tmp_path / "r")
    assert run.params.ask_at == (5, 10, 20, 40, 80)  # the manifest's ask points, read once
    assert calls == {"resolve_suite": 1, "load_manifest": 1, "_load": 1}


def test_a_dry_run_resolves_its_suite_once(calls: Counter[str]) -> None:
    bill = dry_run(model="script/oracle", suite="butterfly-long", limit=3)
    assert bill.sliced_by == "length"  # from the manifest read once
    assert calls == {"resolve_suite": 1, "load_manifest": 1, "_load": 1}


def test_a_resolved_suite_says_what_its_manifest_says() -> None:
    code = resolve("butterfly-code")
    assert isinstance(code, ResolvedSuite) and code.track == "code" and code.ask_at is None
    assert code.label == f"butterfly-code v{code.version}" and not code.by_length
    long = resolve("butterfly-long")
    assert long.track == "spec" and long.ask_at == (5, 10, 20, 40, 80) and long.by_length
    plain = resolve(str(load.SCENARIOS_DIR / "handwritten.jsonl"))
    assert plain.manifest is None and plain.track == "spec" and plain.label == "handwritten"
    assert plain.scenarios is plain.scenarios  # loaded once
