"""Tests for tests/fakeserver.py, the loopback fake OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakeserver import (
    FakeServer,
    FakeServerError,
    Fault,
    Truncated,
    echo_responder,
    parse_fault,
)

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "True")

FAKESERVER_PY = Path(__file__).with_name("fakeserver.py")
MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "say hello world"},
]


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    # One shared (thread-safe) client: creating httpx clients is comparatively slow.
    with httpx.Client() as shared:
        yield shared


def chat(
    client: httpx.Client, srv: FakeServer, timeout: float = 5.0, **extra: Any
) -> httpx.Response:
    body: dict[str, Any] = {"model": "fake-model", "messages": MESSAGES, **extra}
    return client.post(f"{srv.api_base}/chat/completions", json=body, timeout=timeout)


def content_of(resp: httpx.Response) -> str:
    assert resp.status_code == 200, resp.text
    data = resp.json()
    text = data["choices"][0]["message"]["content"]
    assert isinstance(text, str)
    return text


def assert_openai_error(resp: httpx.Response, status: int) -> dict[str, Any]:
    assert resp.status_code == status
    assert resp.headers["content-type"].startswith("application/json")
    err = resp.json()["error"]
    assert isinstance(err, dict)
    assert isinstance(err["message"], str) and err["message"]
    assert {"type", "param", "code"} <= err.keys()
    return err


# -- normal behaviour ------------------------------------------------------------------------


def test_completion_shape_usage_and_recording(client: httpx.Client) -> None:
    with FakeServer(lambda body: "one two three") as srv:
        assert srv.api_base == f"http://127.0.0.1:{srv.port}/v1"
        assert srv.port > 0
        resp = chat(client, srv, temperature=0)
        assert resp.status_code == 200
        data = resp.json()
        assert data["object"] == "chat.completion"
        assert data["id"].startswith("chatcmpl-")
        assert isinstance(data["created"], int)
        assert data["model"] == "fake-model"
        assert data["choices"] == [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "one two three"},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ]
        # prompt: "You are terse." (3) + "say hello world" (3)
        assert data["usage"] == {"prompt_tokens": 6, "completion_tokens": 3, "total_tokens": 9}
        assert srv.count == 1
        assert srv.requests == [{"model": "fake-model", "messages": MESSAGES, "temperature": 0}]
        assert srv.fault_log == [(0, "ok")]


def test_default_responder_echoes_last_user_message(client: httpx.Client) -> None:
    with FakeServer() as srv:
        assert content_of(chat(client, srv)) == "say hello world"
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert echo_responder({"messages": [parts]}) == "a b"
    assert echo_responder({"messages": []}) == ""


def test_truncated_marker_gives_finish_reason_length(client: httpx.Client) -> None:
    with FakeServer(lambda body: Truncated('{"half": ')) as srv:
        resp = chat(client, srv)
        choice = resp.json()["choices"][0]
        assert choice["finish_reason"] == "length"
        assert choice["message"]["content"] == '{"half": '


def test_n_choices_call_responder_n_times(client: httpx.Client) -> None:
    calls: list[int] = []
    lock = threading.Lock()

    def responder(body: dict[str, Any]) -> str:
        with lock:
            calls.append(len(calls))
            return f"answer {len(calls)}"

    with FakeServer(responder) as srv:
        data = chat(client, srv, n=3).json()
    assert len(calls) == 3
    assert [c["index"] for c in data["choices"]] == [0, 1, 2]
    assert [c["message"]["content"] for c in data["choices"]] == [
        "answer 1",
        "answer 2",
        "answer 3",
    ]
    assert data["usage"]["completion_tokens"] == 6


def test_stream_true_is_rejected_with_400(client: httpx.Client) -> None:
    with FakeServer(lambda body: "x") as srv:
        err = assert_openai_error(chat(client, srv, stream=True), 400)
        assert err["param"] == "stream"
        assert err["type"] == "invalid_request_error"


def test_models_health_and_bad_requests(client: httpx.Client) -> None:
    with FakeServer(models=["fake", "other"]) as srv:
        health = client.get(f"{srv.url}/health")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        models = client.get(f"{srv.api_base}/models").json()
        assert models["object"] == "list"
        assert [m["id"] for m in models["data"]] == ["fake", "other"]
        assert all(m["object"] == "model" for m in models["data"])
        assert_openai_error(client.get(f"{srv.api_base}/nope"), 404)
        bad = client.post(
            f"{srv.api_base}/chat/completions",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert_openai_error(bad, 400)
        assert_openai_error(
            client.post(f"{srv.api_base}/chat/completions", json={"model": "m"}), 400
        )
        assert srv.count == 1  # the invalid-JSON body is not recorded


def test_requests_are_recorded_thread_safely(client: httpx.Client) -> None:
    with FakeServer(echo_responder) as srv:

        def worker(i: int) -> None:
            body = {"model": "m", "messages": [{"role": "user", "content": f"msg {i}"}]}
            resp = client.post(f"{srv.api_base}/chat/completions", json=body, timeout=5)
            assert content_of(resp) == f"msg {i}"

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.count == 16
        contents = sorted(r["messages"][0]["content"] for r in srv.requests)
        assert contents == sorted(f"msg {i}" for i in range(16))
        assert [i for i, _ in srv.fault_log] == sorted(i for i, _ in srv.fault_log)


# -- fault injection -------------------------------------------------------------------------


def test_fault_script_applies_in_order_then_answers_normally(client: httpx.Client) -> None:
    script = ["500", "429:0.2", "ok", "503", "nonjson", "garbage", "empty", "drop"]
    with FakeServer(lambda body: "fine", faults=script) as srv:
        err = assert_openai_error(chat(client, srv), 500)
        assert err["type"] == "server_error"

        resp = chat(client, srv)
        err = assert_openai_error(resp, 429)
        assert resp.headers["retry-after"] == "0.2"
        assert err["code"] == "rate_limit_exceeded"

        assert content_of(chat(client, srv)) == "fine"

        assert_openai_error(chat(client, srv), 503)

        resp = chat(client, srv)
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/html")
        assert resp.text == "<html>oops</html>"
        with pytest.raises(json.JSONDecodeError):
            resp.json()

        resp = chat(client, srv)
        garbage = content_of(resp)
        assert garbage.strip() and garbage != "fine"
        with pytest.raises(json.JSONDecodeError):
            json.loads(garbage)
        assert resp.json()["choices"][0]["finish_reason"] == "stop"

        resp = chat(client, srv)
        assert content_of(resp) == ""
        assert resp.json()["usage"]["completion_tokens"] == 0

        with pytest.raises(httpx.RemoteProtocolError):
            chat(client, srv)

        for _ in range(3):  # script exhausted
            assert content_of(chat(client, srv)) == "fine"

        assert srv.count == 11
        assert [spec for _, spec in srv.fault_log] == [*script, "ok", "ok", "ok"]


def test_retry_after_integer_seconds_and_comma_string_script(client: httpx.Client) -> None:
    with FakeServer(lambda body: "x", faults="429:2, 502") as srv:
        resp = chat(client, srv)
        assert_openai_error(resp, 429)
        assert resp.headers["retry-after"] == "2"
        resp = chat(client, srv)
        assert_openai_error(resp, 502)
        assert "retry-after" not in resp.headers
        assert content_of(chat(client, srv)) == "x"


def test_fault_callable_with_index_and_body(client: httpx.Client) -> None:
    def every_third(i: int, body: dict[str, Any]) -> str | None:
        assert body["model"] == "fake-model"
        return "500" if i % 3 == 2 else None

    with FakeServer(lambda body: "ok!", faults=every_third) as srv:
        codes = [chat(client, srv).status_code for _ in range(6)]
    assert codes == [200, 200, 500, 200, 200, 500]


def test_fault_callable_with_index_only(client: httpx.Client) -> None:
    with FakeServer(lambda body: "ok!", faults=lambda i: Fault("empty") if i == 0 else "ok") as srv:
        assert content_of(chat(client, srv)) == ""
        assert content_of(chat(client, srv)) == "ok!"


def test_hang_triggers_client_timeout_and_shutdown_interrupts_it(client: httpx.Client) -> None:
    t0 = time.monotonic()
    with FakeServer(lambda body: "late", faults=["hang:5"]) as srv:
        with pytest.raises(httpx.ReadTimeout):
            chat(client, srv, timeout=0.3)
        assert srv.count == 1
    assert time.monotonic() - t0 < 2.0  # exit did not wait out the 5 s hang


def test_hang_does_not_block_concurrent_request(client: httpx.Client) -> None:
    results: dict[str, Any] = {}

    def slow() -> None:
        resp = chat(client, srv)
        results["slow"] = (content_of(resp), time.monotonic())

    with FakeServer(lambda body: "done", faults=["hang:1.0"]) as srv:
        t0 = time.monotonic()
        thread = threading.Thread(target=slow)
        thread.start()
        assert srv.wait_for_requests(1, timeout=2)
        fast = chat(client, srv)
        fast_done = time.monotonic()
        assert content_of(fast) == "done"
        assert thread.is_alive() and "slow" not in results  # answered while the hang is pending
        thread.join(timeout=5)
    slow_text, slow_done = results["slow"]
    assert slow_text == "done"
    assert slow_done - t0 >= 0.95
    assert slow_done > fast_done


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, Fault()),
        ("", Fault()),
        (" OK ", Fault()),
        ("500", Fault("status", status=500, spec="500")),
        ("429:0.2", Fault("status", status=429, retry_after="0.2", spec="429:0.2")),
        ("hang:1.5", Fault("hang", seconds=1.5, spec="hang:1.5")),
        ("drop", Fault("drop", spec="drop")),
        ("garbage", Fault("garbage", spec="garbage")),
    ],
)
def test_parse_fault(spec: str | None, expected: Fault) -> None:
    assert parse_fault(spec) == expected


@pytest.mark.parametrize("spec", ["explode", "200", "600", "hang", "hang:x", "429:-1", "50"])
def test_parse_fault_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_fault(spec)
    with pytest.raises(ValueError):
        FakeServer(faults=["ok", spec])


def test_internal_errors_answer_500_and_raise_on_exit(client: httpx.Client) -> None:
    def boom(body: dict[str, Any]) -> str:
        raise RuntimeError("responder bug")

    with pytest.raises(FakeServerError, match="responder bug"), FakeServer(boom) as srv:
        assert_openai_error(chat(client, srv), 500)

    bad_spec = FakeServer(faults=lambda i, body: "nonsense")
    with pytest.raises(FakeServerError, match="bad fault spec"), bad_spec as srv:
        assert_openai_error(chat(client, srv), 500)

    with FakeServer(boom, raise_on_error=False) as srv:
        assert_openai_error(chat(client, srv), 500)
    assert len(srv.errors) == 1


def test_shutdown_frees_port(client: httpx.Client) -> None:
    with FakeServer() as srv:
        port = srv.port
        assert content_of(chat(client, srv)) == "say hello world"  # leaves a keep-alive conn
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 1):
        pass
    with FakeServer(port=port) as again:
        assert again.port == port
        assert content_of(chat(client, again)) == "say hello world"


# -- litellm -------------------------------------------------------------------------------


def test_litellm_completion_roundtrip() -> None:
    # through the seam: litellm offline (its bundled price map, no fetch), as the suite expects
    from butterfly.models.litellm_seam import litellm

    rate_limit_error = litellm.exceptions.RateLimitError

    answer = '{"edits": [], "note": "unchanged"}'
    faults = ["ok", "ok", "429:0"]
    with FakeServer(lambda body: answer, faults=faults) as srv:
        resp = litellm.completion(
            model="openai/fake",
            api_base=srv.api_base,
            api_key="x",
            messages=MESSAGES,
            timeout=5,
            max_retries=0,
        )
        assert resp.choices[0].message.content == answer
        assert resp.choices[0].finish_reason == "stop"
        assert resp.usage.prompt_tokens == 6
        assert srv.count == 1
        recorded = srv.requests[0]
        assert recorded["model"] == "fake"
        assert recorded["messages"] == MESSAGES
        assert not recorded.get("stream")

        srv.responder = lambda body: Truncated("cut off")
        resp = litellm.completion(
            model="openai/fake",
            api_base=srv.api_base,
            api_key="x",
            messages=MESSAGES,
            timeout=5,
            max_retries=0,
        )
        assert resp.choices[0].message.content == "cut off"
        assert resp.choices[0].finish_reason == "length"

        with pytest.raises(rate_limit_error):
            litellm.completion(
                model="openai/fake",
                api_base=srv.api_base,
                api_key="x",
                messages=MESSAGES,
                timeout=5,
                max_retries=0,
                num_retries=0,
            )
        assert srv.count == 3


# -- standalone process ----------------------------------------------------------------------


def test_standalone_process(client: httpx.Client, tmp_path: Path) -> None:
    answer_file = tmp_path / "answer.json"
    answer_file.write_text('{"answer": 42}', encoding="utf-8")
    record = tmp_path / "requests.jsonl"
    cmd = [sys.executable, str(FAKESERVER_PY), "--port", "0", "--echo"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True),
        subprocess.Popen(
            [*cmd, "--answer", str(answer_file), "--record", str(record), "--faults", "503"],
            stdout=subprocess.PIPE,
            text=True,
        ),
    ]
    try:
        ports = []
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.strip().isdigit(), line
            ports.append(int(line))
        body = {"model": "m", "messages": [{"role": "user", "content": "ping pong"}]}
        echo = client.post(f"http://127.0.0.1:{ports[0]}/v1/chat/completions", json=body)
        assert content_of(echo) == "ping pong"
        url = f"http://127.0.0.1:{ports[1]}/v1/chat/completions"
        assert_openai_error(client.post(url, json=body), 503)
        assert json.loads(content_of(client.post(url, json=body))) == {"answer": 42}
        lines = record.read_text(encoding="utf-8").splitlines()
        assert [json.loads(x) for x in lines] == [body, body]
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=5) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
