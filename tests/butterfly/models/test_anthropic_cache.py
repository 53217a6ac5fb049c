"""Anthropic's prompt cache, marked (docs/cost.md, "Prompt caching"): a Claude model's stable
prefix is marked with ``cache_control`` (the system message; in chat mode also the last two
user messages), held on what a loopback server speaking Anthropic's Messages API received
through litellm: the marks are where the scheme says (at most 4), the text is the same as
without them, ``messages_sha256`` too, the cached and written tokens are recorded and priced
as litellm prices them, and ``--no-cache-markers`` sends none."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from butterfly import api
from butterfly.core.cache_marks import cache_marks, marked

MODEL = "anthropic/claude-sonnet-4-5"
USAGE = {"input_tokens": 10, "output_tokens": 4, "cache_creation_input_tokens": 20}
READ = 30
"""Every call after the first reads this many prompt tokens from the cache."""


class AnthropicServer:
    """``POST /v1/messages`` on loopback: records each body, answers ``{}`` with a usage that
    writes 20 tokens to the cache on every call and reads 30 from it after the first."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    first = not owner.bodies
                    owner.bodies.append(body)
                usage = {**USAGE, "cache_read_input_tokens": 0 if first else READ}
                reply = json.dumps({"id": "msg_1", "type": "message", "role": "assistant",
                                    "model": body["model"], "stop_reason": "end_turn",
                                    "stop_sequence": None, "usage": usage,
                                    "content": [{"type": "text", "text": "{}"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
    srv = AnthropicServer()
    srv.thread.start()
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()


def _play(srv: AnthropicServer, out: Path, mode: str, markers: bool = True,
          cache: Path | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The bodies the server received and the run's call records, in order."""
    srv.bodies.clear()
    api.run(model=MODEL, api_base=srv.api_base, out=out, limit=2, cache=cache, mode=mode,
            no_schema=True, no_seed=True, concurrency=1, timeout=10,
            no_cache_markers=not markers)
    records = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    return list(srv.bodies), records


def _marks(body: dict[str, Any]) -> tuple[int, list[int]]:
    """The marked system blocks, and the indices of the marked messages."""
    system = sum("cache_control" in b for b in body.get("system", []))
    return system, [i for i, m in enumerate(body["messages"])
                    if isinstance(m["content"], list)
                    and any("cache_control" in b for b in m["content"])]


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def test_chat_mode_marks_the_system_message_and_the_last_two_user_turns(
        server: AnthropicServer, tmp_path: Path) -> None:
    bodies, records = _play(server, tmp_path / "on", "chat")
    assert len(bodies) == len(records) > 4
    for body in bodies:
        system, messages = _marks(body)
        users = [i for i, m in enumerate(body["messages"]) if m["role"] == "user"]
        assert system == 1 and messages == users[-2:]
        assert system + len(messages) <= 4
        assert all(b["cache_control"] == {"type": "ephemeral"}
                   for i in messages for b in body["messages"][i]["content"][-1:])
    plain, plain_records = _play(server, tmp_path / "off", "chat", markers=False)
    assert all(_marks(b) == (0, []) for b in plain)
    assert [_unmarked(b) for b in bodies] == plain  # the same text, only the marks differ
    assert [r["messages_sha256"] for r in records] == \
        [r["messages_sha256"] for r in plain_records]


def test_restate_mode_marks_the_system_message_only(
        server: AnthropicServer, tmp_path: Path) -> None:
    bodies, _ = _play(server, tmp_path / "on", "restate")
    assert bodies and all(_marks(b) == (1, []) for b in bodies)
    plain, _ = _play(server, tmp_path / "off", "restate", markers=False)
    assert all(_marks(b) == (0, []) for b in plain)
    assert [_unmarked(b) for b in bodies] == plain


def test_cache_reads_and_writes_are_recorded_and_priced_as_litellm_prices_them(
        server: AnthropicServer, tmp_path: Path) -> None:
    import litellm
    from litellm.types.utils import PromptTokensDetailsWrapper, Usage

    _, records = _play(server, tmp_path / "on", "chat")
    prompt = USAGE["input_tokens"] + USAGE["cache_creation_input_tokens"] + READ
    later = [r for r in records if r["tokens"]["cached"]]
    assert len(later) == len(records) - 1
    for r in later:
        assert r["tokens"] == {"prompt": prompt, "completion": 4, "cached": READ,
                               "reasoning": 0, "cache_write": 20}
        usage = Usage(prompt_tokens=prompt, completion_tokens=4, total_tokens=prompt + 4,
                      prompt_tokens_details=PromptTokensDetailsWrapper(
                          cached_tokens=READ, cache_creation_tokens=20),
                      cache_read_input_tokens=READ, cache_creation_input_tokens=20)
        p, c = litellm.cost_per_token(model=MODEL, usage_object=usage)
        assert r["cost_usd"] == pytest.approx(p + c, rel=1e-9)
        assert r["saved_usd"] == pytest.approx(READ * (3e-6 - 3e-7), rel=1e-9)
    summary = api.score_run(tmp_path / "on")
    assert summary.usage.cached_tokens == READ * len(later)


def test_the_answer_cache_serves_a_marked_runs_answers_to_an_unmarked_run(
        server: AnthropicServer, tmp_path: Path) -> None:
    """The marks are not part of the answer cache's key; a served answer keeps its tokens,
    cache writes included, and its price."""
    db = tmp_path / "answers.sqlite"
    bodies, fresh = _play(server, tmp_path / "on", "chat", cache=db)
    served_bodies, served = _play(server, tmp_path / "off", "chat", markers=False, cache=db)
    assert bodies and not served_bodies
    assert all(r["cached"] for r in served)
    assert [(r["tokens"], r["cost_usd"], r["saved_usd"]) for r in served] == \
        [(r["tokens"], r["cost_usd"], r["saved_usd"]) for r in fresh]


def test_the_scheme_never_marks_an_empty_message_and_keeps_the_text() -> None:
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": ""}, {"role": "user", "content": "b"},
            {"role": "assistant", "content": "x"}, {"role": "user", "content": ""}]
    assert cache_marks(chat, "chat") == (0, 3)
    assert cache_marks(chat, "restate") == (0,)
    sent = marked(chat, (0, 3))
    assert [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in sent] == [m["content"] for m in chat]
    assert chat[0] == {"role": "system", "content": "s"}  # the plain messages are untouched


CHAT = [{"role": "system", "content": "rules"}, {"role": "user", "content": "edit 1"},
        {"role": "assistant", "content": "{}"}, {"role": "user", "content": "edit 2"}]


def _transformed(config: Any, model: str) -> dict[str, Any]:
    body = config.transform_request(model=model, messages=marked(CHAT, cache_marks(CHAT, "chat")),
                                    optional_params={}, litellm_params={}, headers={})
    return {"system": body["system"], "messages": body["messages"]}


def test_litellm_passes_the_marks_to_claude_on_vertex_and_bedrock() -> None:
    """What litellm's own transformations make of the marks (no request is sent): Vertex AI's
    and Bedrock invoke's Anthropic body keeps them; Bedrock Converse turns each into a
    ``cachePoint`` after the marked text, and drops them for a model its map says does not
    cache prompts."""
    from litellm.llms.bedrock.chat.converse_transformation import AmazonConverseConfig
    from litellm.llms.bedrock.chat.invoke_transformations.anthropic_claude_transformation import (
        AmazonAnthropicClaudeConfig,
    )
    from litellm.llms.vertex_ai.vertex_ai_partner_models.anthropic.transformation import (
        VertexAIAnthropicConfig,
    )

    mark = {"cache_control": {"type": "ephemeral"}}
    want = {"system": [{"type": "text", "text": "rules", **mark}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "edit 1", **mark}]},
        {"role": "assistant", "content": [{"type": "text", "text": "{}"}]},
        {"role": "user", "content": [{"type": "text", "text": "edit 2", **mark}]}]}
    claude = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert _transformed(VertexAIAnthropicConfig(), "claude-sonnet-4-5@20250929") == want
    assert _transformed(AmazonAnthropicClaudeConfig(), claude) == want
    point = {"cachePoint": {"type": "default"}}
    assert _transformed(AmazonConverseConfig(), claude) == {
        "system": [{"text": "rules"}, point], "messages": [
            {"role": "user", "content": [{"text": "edit 1"}, point]},
            {"role": "assistant", "content": [{"text": "{}"}]},
            {"role": "user", "content": [{"text": "edit 2"}, point]}]}
    uncached = _transformed(AmazonConverseConfig(), "anthropic.claude-3-5-sonnet-20240620-v1:0")
    assert "cachePoint" not in json.dumps(uncached)
