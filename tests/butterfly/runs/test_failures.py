"""Runs the provider refuses or fails (issue 12): a true ``failed`` status, a summary of
failures by class with secrets redacted, no litellm noise, and a cache keyed on the server.
Refusals and failures run through both transports (``--via auto``, the fast path, in a
subprocess; ``--via litellm`` in this process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, run_inproc
from fakeserver import EchoKeyServer, FakeServer

KEY = "sk-test-SECRET-4242-abcdef"
ENV = {"BUTTERFLY_BACKOFF_BASE": "0.01", "OPENAI_API_KEY": KEY}


@pytest.fixture
def echo401() -> Iterator[EchoKeyServer]:
    with EchoKeyServer(401) as srv:
        yield srv


def _run(out: Path, api_base: str, *extra: str, via: str = "auto") -> Any:
    runner = run_inproc if via == "litellm" else run_cli
    return runner("run", "--model", "openai/fake", "--api-base", api_base, "--out", str(out),
                  "--limit", "2", "--no-cache", "--timeout", "5", "--via", via, *extra, env=ENV)


def _no_secret(out: Path, *texts: str) -> None:
    for text in texts:
        assert "SECRET" not in text
    for path in out.rglob("*"):
        if path.is_file():
            assert "SECRET" not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_a_refused_run_is_failed_with_its_reason_and_score_says_so(
        tmp_path: Path, echo401: EchoKeyServer, via: str) -> None:
    out = tmp_path / "run"
    r = _run(out, echo401.api_base, via=via)
    assert r.returncode == 5, r.stderr
    assert "the run failed" in r.stderr and "refused" in r.stderr
    assert "Traceback" not in r.stderr and "never awaited" not in r.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "failed" and "refused" in m["failure"] and m["n_calls"] == 0
    s = run_cli("score", str(out))
    assert s.returncode == 5 and "this run failed" in s.stderr
    _no_secret(out, r.stderr, r.stdout, s.stderr, s.stdout)
    ok = run_cli("run", "--model", "script/oracle", "--out", str(out), "--limit", "2",
                 "--no-cache")
    assert ok.returncode == 0, ok.stderr  # a run that never answered does not block --out


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_failures_are_summarised_by_class_with_secrets_redacted(tmp_path: Path,
                                                                via: str) -> None:
    out = tmp_path / "run"
    with EchoKeyServer(500) as srv:
        r = _run(out, srv.api_base, "--retries", "1", via=via)
    assert r.returncode == 4, r.stderr
    assert "call(s) failed after their retries: 2 HTTP status (5xx)" in r.stderr
    assert "[redacted]" in r.stderr and "Traceback" not in r.stderr
    _no_secret(out, r.stderr, r.stdout)
    with FakeServer(lambda body: "not json", faults=["drop"] * 50) as srv:
        r = _run(tmp_path / "conn", srv.api_base, "--retries", "0", via=via)
    assert r.returncode == 4 and "connection" in r.stderr, r.stderr


def test_the_cache_is_keyed_on_the_server(tmp_path: Path) -> None:
    cache = tmp_path / "answers.sqlite"
    answers = {"a": '{"from": "a"}', "b": '{"from": "b"}'}
    with FakeServer(lambda body: answers["a"]) as a, FakeServer(lambda body: answers["b"]) as b:
        for name, srv in (("a", a), ("b", b)):
            r = run_cli("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                        str(tmp_path / name), "--limit", "1", "--cache", str(cache),
                        "--timeout", "5", env=ENV)
            assert r.returncode == 0, r.stderr
        assert a.count > 0 and b.count == a.count  # b was asked, not served a's answers
        r = run_cli("run", "--model", "openai/fake", "--api-base", a.api_base, "--out",
                    str(tmp_path / "a2"), "--limit", "1", "--cache", str(cache), env=ENV)
        assert r.returncode == 0 and b.count == a.count  # a's answers still cached
    raws = [json.loads(x)["raw"] for x in (tmp_path / "b" / "calls.jsonl").read_text().splitlines()]
    assert set(raws) == {answers["b"]}
