"""The prompts keep a stable prefix, so that a provider's prompt cache can serve it (docs/cost.md,
"Prompt caching"), held on what the loopback fake server received: in chat mode each call's
messages begin with the previous call's messages and its answer, byte for byte; in restate mode
every call's system message is the same and comes first."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer

from butterfly import api


class Answers:
    """A different answer to every call, remembered by the messages it answered."""

    def __init__(self) -> None:
        self.given: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self._lock:
            text = f"answer {len(self.given)}: " + "{}"
            self.given[_key(body["messages"])] = text
            return text


def _key(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False)


def _play(tmp_path: Path, mode: str, strategy: str = "zero-shot"
          ) -> tuple[list[list[dict[str, Any]]], dict[str, str]]:
    """The message lists the server received, in order, and the answer it gave each."""
    answers = Answers()
    with FakeServer(answers) as srv:
        api.run(model="openai/prefix-test", api_base=srv.api_base, out=tmp_path / mode,
                limit=3, cache=None, mode=mode, strategy=strategy, concurrency=2, timeout=5)
        sent = [r["messages"] for r in srv.requests]
    assert len(sent) == len(answers.given) > 3
    return sent, answers.given


@pytest.mark.parametrize("strategy", ["zero-shot", "few-shot"])
def test_chat_mode_sends_each_call_its_previous_call_and_answer_first(
        tmp_path: Path, strategy: str) -> None:
    sent, given = _play(tmp_path, "chat", strategy)
    order = {_key(m): i for i, m in enumerate(sent)}
    firsts = 0
    for messages in sent:
        assert messages[0]["role"] == "system"
        if len(messages) == 2:  # a conversation's first call: system, user
            firsts += 1
            continue
        previous, answer, edit = messages[:-2], messages[-2], messages[-1]
        assert _key(previous) in order, "a call whose history is no earlier call's messages"
        assert order[_key(previous)] < order[_key(messages)]
        assert answer == {"role": "assistant", "content": given[_key(previous)]}
        assert edit["role"] == "user"
    assert firsts == 3


def test_restate_mode_sends_one_system_message_first(tmp_path: Path) -> None:
    sent, _ = _play(tmp_path, "restate")
    systems = {json.dumps(m[0], ensure_ascii=False) for m in sent}
    assert len(systems) == 1 and sent[0][0]["role"] == "system"
    assert all(x["role"] != "system" for m in sent for x in m[1:])
