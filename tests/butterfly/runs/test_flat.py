"""What a run holds does not grow with its suite (checked by counting objects, not bytes:
``bench/scale.py`` measures the bytes): only the conversations being played exist as tasks,
and the scripted agents keep a bounded number of oracle replays."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import butterfly.models.scripted as scripted
from butterfly.core.wire import Request, Response
from butterfly.models.client import ModelClient
from butterfly.runs.play import Progress, run_suite
from butterfly.runs.reader import load_run
from butterfly.runs.records import RunParams
from butterfly.runs.store import open_run
from butterfly.suite.generate import generate
from butterfly.suite.load import dumps_suite
from oracle import Scenario, replay

CONCURRENCY = 4


def _qualname(task: asyncio.Task[object]) -> str:
    coro = task.get_coro()
    return getattr(coro, "__qualname__", "")


class TaskCounter:
    """Answers every call with the oracle's spec and notes how many tasks are alive."""

    def __init__(self, scenarios: list[Scenario]) -> None:
        self.oracle = {s.id: replay(s) for s in scenarios}
        self.tasks: list[int] = []

    async def __call__(self, request: Request, timeout: float) -> Response:
        # the run's own tasks (a library's background task in the same loop is not counted)
        self.tasks.append(sum(_qualname(t).startswith(("run_suite", "in_workers"))
                              for t in asyncio.all_tasks()))
        await asyncio.sleep(0)
        spec = self.oracle[str(request.meta["scenario"])][int(request.meta["turn"])]
        return Response(text=json.dumps(spec), finish_reason="stop")

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def suite() -> list[Scenario]:
    return generate({"undo_last": 40, "distractor": 40, "drop": 40}, 11)


def test_only_the_conversations_in_play_exist_as_tasks(tmp_path: Path,
                                                        suite: list[Scenario]) -> None:
    path = tmp_path / "suite.jsonl"
    path.write_text(dumps_suite(suite))
    params = RunParams(concurrency=CONCURRENCY, layouts=("E", "Q"), repeats=2)
    out = tmp_path / "run"
    state = open_run(out, "test/tasks", path, suite, params)
    provider = TaskCounter(suite)
    asyncio.run(run_suite(suite, ModelClient(provider), state, out, Progress(total=0)))
    conversations = len(suite) * 4
    assert len(provider.tasks) == sum(len(s.turns) for s in suite) * 4
    # the run itself and one task per worker, whatever the number of conversations (480 here)
    assert max(provider.tasks) == CONCURRENCY + 1 < conversations, provider.tasks[:50]
    run = load_run(out)
    assert run.manifest.status == "complete" and len(run.records) == len(provider.tasks)


def test_the_scripted_agents_keep_a_bounded_number_of_replays(
        monkeypatch: pytest.MonkeyPatch, suite: list[Scenario]) -> None:
    monkeypatch.setattr(scripted, "HELD", 8)
    by_id = {s.id: s for s in suite}
    for name in ("noisy:p=0.3", "oracle", "last-edit"):
        provider = scripted.ScriptedProvider(name, by_id)
        held = provider._oracle if name.startswith("noisy") else provider._answers
        texts = []
        for _ in range(2):  # the second pass asks again for replays already let go
            for s in suite:
                req = Request(model="script/x", messages=(), temperature=0.0, max_tokens=1,
                              seed=3, meta={"scenario": s.id, "turn": 1})
                texts.append(asyncio.run(provider(req, 1.0)).text)
            assert held.cache_info().currsize == 8
        assert texts[:len(suite)] == texts[len(suite):]
