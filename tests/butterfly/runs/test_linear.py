"""The harness's own cost grows linearly: a conversation's messages are extended turn by turn
(counted calls of the message builder at 200 turns, not timings), each record is validated
once, and closing a run reads nothing back. What is sent stays what ``prompts.messages``
builds, byte for byte."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import butterfly.core.prompts as prompts
import butterfly.runs.calls as calls
import butterfly.runs.store as store
from butterfly.core.wire import Request, Response
from butterfly.engine import conversation as engine_conversation
from butterfly.engine.conversation import Sent
from butterfly.models.client import ModelClient
from butterfly.runs.play import Progress, run_suite
from butterfly.runs.reader import load_run
from butterfly.runs.records import RunParams
from butterfly.runs.store import open_run
from butterfly.suite.chains import generate_chain
from butterfly.suite.load import dumps_suite
from oracle import Scenario

TURNS = 200


class Recorder:
    """A provider that answers every call with the same spec and keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    async def __call__(self, request: Request, timeout: float) -> Response:
        self.sent.append((request.meta["turn"], request.messages))
        return Response(text='{"log_level": "debug"}', finish_reason="stop")

    async def aclose(self) -> None:
        return None


def _play(tmp: Path, scenario: Scenario, **params: Any) -> Recorder:
    suite = tmp / "suite.jsonl"
    suite.write_text(dumps_suite([scenario]))
    out = tmp / "run"
    state = open_run(out, "test/recorder", suite, [scenario], RunParams(**params))
    provider = Recorder()
    asyncio.run(run_suite([scenario], ModelClient(provider), state, out, Progress(total=TURNS)))
    return provider


@pytest.fixture(scope="module")
def chain() -> Scenario:
    return generate_chain(TURNS, seed=5, scenario_id="long-200-00")


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    count = [0]
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return count


def test_chat_builds_each_user_message_once_at_200_turns(
        tmp_path: Path, chain: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    users = _counting(monkeypatch, prompts, "user_message")
    provider = _play(tmp_path, chain)
    assert len(provider.sent) == TURNS
    assert users[0] == TURNS  # rebuilt every turn, it was TURNS * (TURNS + 1) / 2 = 20,100


def test_what_is_sent_is_what_messages_builds(tmp_path: Path, chain: Scenario) -> None:
    provider = _play(tmp_path, chain)
    answers: list[str] = []
    recs = {r.turn: r for r in calls.read_calls(tmp_path / "run" / store.CALLS)}
    for turn, sent in provider.sent:
        expected = prompts.messages(chain, turn, answers)
        assert list(sent) == expected
        digest = hashlib.sha256(json.dumps(expected, ensure_ascii=False).encode()).hexdigest()
        assert recs[turn].messages_sha256 == digest
        answers.append('{"log_level": "debug"}')


def test_restate_sends_the_whole_list_each_turn(tmp_path: Path, chain: Scenario) -> None:
    short = chain.model_copy(update={"turns": chain.turns[:12]})
    provider = _play(tmp_path, short, mode="restate")
    recs = {r.turn: r for r in calls.read_calls(tmp_path / "run" / store.CALLS)}
    for turn, sent in provider.sent:
        expected = prompts.messages(short, turn, [], mode="restate")
        assert list(sent) == expected
        assert [m.model_dump() for m in recs[turn].messages_added] == expected


@pytest.mark.parametrize("layout", ["E", "Q", "H"])
def test_restate_hashes_what_json_dumps_writes(tmp_path: Path, chain: Scenario,
                                               layout: str) -> None:
    """Issue 34: a restated message is escaped only past where it parts from the previous
    turn's (a 5,000-turn chain escaped 900 MB); the hash is still that of ``json.dumps`` of
    the whole list, every turn of a 200-turn chain, each layout."""
    _play(tmp_path, chain, mode="restate", layouts=(layout,))
    recs = {r.turn: r for r in calls.read_calls(tmp_path / "run" / store.CALLS)}
    assert len(recs) == TURNS
    for turn, rec in recs.items():
        expected = prompts.messages(chain, turn, [], layout=layout, mode="restate")
        digest = hashlib.sha256(json.dumps(expected, ensure_ascii=False).encode()).hexdigest()
        assert rec.messages_sha256 == digest


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(start=TEXT, tails=st.lists(st.tuples(st.integers(0, 6000), TEXT), min_size=1,
                                  max_size=5), other=st.booleans())
def test_sent_hashes_json_dumps_of_every_restated_list(start: str, tails: list[tuple[int, str]],
                                                       other: bool) -> None:
    """The piecewise escaping of :class:`Sent` against ``json.dumps`` itself: messages with
    quotes, backslashes, control and non-ASCII characters, long ones sharing starts of any
    length with the turn before, and a message with another key."""
    sent = Sent()
    body = start * 200
    with pytest.MonkeyPatch.context() as mp:
        # every message escaped from the one before
        mp.setattr(engine_conversation, "LONG_MESSAGE", 0)
        for cut, tail in tails:
            body = body[:cut] + tail + "\"\n\x01é" + body[cut:cut + 3000]
            msgs: list[dict[str, str]] = [{"role": "system", "content": start},
                                          {"role": "user", "content": body}]
            if other:
                msgs.append({"content": tail, "role": "assistant"})
            sent.extend(msgs, restate=True)
            want = hashlib.sha256(json.dumps(msgs, ensure_ascii=False).encode()).hexdigest()
            assert sent.sha256() == want


def test_each_record_validated_once_and_close_reads_nothing(
        tmp_path: Path, chain: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _counting(monkeypatch, store, "iter_records")
    _play(tmp_path, chain)
    assert reads[0] == 0  # a fresh run: the file is written, never read back
    validated = _counting(monkeypatch, calls.CallRecord, "model_validate_json")
    run = load_run(tmp_path / "run")
    assert validated[0] == TURNS and reads[0] == 1
    assert run.manifest.n_calls == TURNS and len(run.turns()) == TURNS
