"""The runner end to end through the fake server: faults, resume after SIGKILL, refusals,
secrets, and no connection beyond loopback. The fault, resume and record tests run through
both transports (``--via auto``: the fast path, in a subprocess as a user runs it; ``--via
litellm``: in this process, so litellm is imported once, not per test)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli, run_inproc
from fakeserver import FakeServer

from butterfly.core.prompts import messages
from butterfly.suite.load import load_suite
from oracle import replay

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"
SCENARIOS = load_suite(SUITE)[:8]
N_CALLS = sum(len(s.turns) for s in SCENARIOS)
FAST = {"BUTTERFLY_BACKOFF_BASE": "0.01"}
VIAS = ["auto", "litellm"]


def oracle_responder() -> Any:
    """Answers like a perfect model, found from the user messages of the conversation."""
    table: dict[tuple[str, ...], str] = {}
    for s in SCENARIOS:
        specs = replay(s)
        answers = [json.dumps(x) for x in specs[1:]]
        for t in range(1, len(s.turns) + 1):
            users = tuple(m["content"] for m in messages(s, t, answers[: t - 1])
                          if m["role"] == "user")
            table[users] = answers[t - 1]

    def respond(body: dict[str, Any]) -> str:
        users = tuple(m["content"] for m in body["messages"] if m["role"] == "user")
        return table[users]

    return respond


def _run(out: Path, srv: FakeServer, *extra: str, env: dict[str, str] | None = None,
         via: str = "auto") -> subprocess.CompletedProcess[str]:
    runner = run_inproc if via == "litellm" else run_cli
    return runner("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out", str(out),
                  "--limit", str(len(SCENARIOS)), "--no-cache", "--timeout", "2", "--via", via,
                  *extra, env={**FAST, "OPENAI_API_KEY": "sk-test-SECRET-123", **(env or {})})


def _transports(out: Path) -> list[str]:
    return json.loads((out / "manifest.json").read_text())["transports"]  # type: ignore[no-any-return]


def _score(out: Path) -> dict[str, Any]:
    r = run_inproc("score", str(out), "--json")  # scoring is not what these tests are about
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("clean") / "run"
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv)
        assert r.returncode == 0, r.stderr
        assert srv.count == N_CALLS
    return _score(out)


def test_clean_run_is_perfect(clean: dict[str, Any]) -> None:
    assert clean["final_match"] == 1.0 and clean["n_scenarios"] == len(SCENARIOS)


@pytest.mark.parametrize("via", VIAS)
def test_failing_server_gives_the_same_score(tmp_path: Path, clean: dict[str, Any],
                                             via: str) -> None:
    cycle = ["500", "429:0.05", None, "503", "hang:4", None, "nonjson", "drop", None]
    faulty = 3 * len(cycle)  # each fault three times, over the first scenarios' turns; then none
    out = tmp_path / "run"
    with FakeServer(oracle_responder(),
                    faults=lambda i: cycle[i % len(cycle)] if i < faulty else None) as srv:
        r = _run(out, srv, "--retries", "6", "--timeout", "1", via=via)
    assert r.returncode == 0, r.stderr
    assert _transports(out) == ["direct" if via == "auto" else "litellm"]
    recs = _records(out)
    assert len(recs) == N_CALLS and all(x["error"] is None for x in recs)
    assert any(x["attempts"] > 1 for x in recs)
    assert srv.count > faulty  # every fault of the cycles was met
    got = _score(out)
    for key in ("final_match", "turn_match", "abstention", "change_radius", "undo_recovery"):
        assert got[key] == clean[key], key


def test_garbage_answer_is_an_abstention_not_an_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeServer(oracle_responder(), faults=["garbage"]) as srv:
        r = _run(out, srv)
    assert r.returncode == 0, r.stderr
    first = _records(out)[0]
    assert first["error"] is None and first["spec"] is None and first["abstention"]
    assert first["raw"]  # the raw answer is kept
    assert _score(out)["abstention"] > 0


@pytest.mark.parametrize("via", VIAS)
def test_provider_failure_marks_incomplete_then_rerun_completes(
    tmp_path: Path, clean: dict[str, Any], via: str
) -> None:
    victim = SCENARIOS[2]
    marker = victim.turns[0].text

    def fail_victim(i: int, body: dict[str, Any]) -> str | None:
        return "500" if any(marker in m["content"] for m in body["messages"]) else None

    out = tmp_path / "run"
    with FakeServer(oracle_responder(), faults=fail_victim) as srv:
        r = _run(out, srv, "--retries", "2", via=via)
    assert r.returncode == 4, r.stderr
    assert "incomplete" in r.stderr and "Traceback" not in r.stderr
    s = _score(out)
    assert s["incomplete"] == 1 and s["incomplete_scenarios"] == [victim.id]
    assert s["n_scenarios"] == len(SCENARIOS) - 1 and s["final_match"] == 1.0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "incomplete"
    with FakeServer(oracle_responder()) as srv:
        r = _run(out, srv, via=via)
        assert r.returncode == 0, r.stderr
        assert srv.count == len(victim.turns)  # only the missing calls are sent
    assert _score(out)["final_match"] == clean["final_match"]
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


class SlowOracle:
    """The oracle's answers, each 0.15 s late while :attr:`slow` (so that a signal lands
    mid-run); the resume after it is answered at once."""

    def __init__(self) -> None:
        self.respond = oracle_responder()
        self.slow = True

    def __call__(self, body: dict[str, Any]) -> str:
        if self.slow:
            time.sleep(0.15)
        return str(self.respond(body))


def start_run_and_wait(out: Path, srv: FakeServer, calls_done: int) -> subprocess.Popen[str]:
    """Start a run in a child process and return once ``calls_done`` calls are recorded."""
    cmd = [sys.executable, "-m", "butterfly.cli", "run", "--model", "openai/fake",
           "--api-base", srv.api_base, "--out", str(out), "--limit", str(len(SCENARIOS)),
           "--no-cache"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **FAST},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    calls = out / "calls.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if calls.exists() and calls.read_text().count("\n") >= calls_done:
            return proc
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"no {calls_done} calls recorded within 60 s")


def test_sigkill_then_resume_loses_nothing(tmp_path: Path, clean: dict[str, Any]) -> None:
    out, oracle = tmp_path / "run", SlowOracle()
    with FakeServer(oracle) as srv:
        proc = start_run_and_wait(out, srv, 5)
        calls = out / "calls.jsonl"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        oracle.slow = False
        done_before = calls.read_text().count("\n")
        assert 5 <= done_before < N_CALLS
        with calls.open("a") as f:
            f.write('{"schema_version": 1, "scenario": "torn wri')  # a write cut by the kill
        sent_before = srv.count
        r = _run(out, srv, via="litellm")  # killed on the fast path, resumed through litellm
        assert r.returncode == 0, r.stderr
        resent = srv.count - sent_before
    assert resent <= N_CALLS - done_before + 1  # at most the call in flight is asked again
    assert _transports(out) == ["direct", "litellm"]
    recs = _records(out)
    keys = [(x["scenario"], x["turn"]) for x in recs if x["error"] is None]
    assert len(keys) == len(set(keys)) == N_CALLS
    assert _score(out)["final_match"] == clean["final_match"]


def test_out_of_another_model_or_suite_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_inproc("run", "--model", "script/oracle", "--out", str(out), "--limit", "2",
                      "--no-cache").returncode == 0
    r = run_inproc("run", "--model", "script/noop", "--out", str(out), "--limit", "2")
    assert r.returncode == 1 and "holds a run of script/oracle" in r.stderr
    other = tmp_path / "other.jsonl"
    other.write_text("".join(s.to_json() + "\n" for s in SCENARIOS[:3]))
    r = run_inproc("run", "--model", "script/oracle", "--suite", str(other), "--out", str(out))
    assert r.returncode == 1 and "choose another --out" in r.stderr
    r = run_inproc("run", "--model", "script/oracle", "--out", str(out), "--limit", "2",
                   "--temperature", "0.5")
    assert r.returncode == 1 and "answer-changing" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("via", VIAS)
def test_no_secret_reaches_any_file(tmp_path: Path, via: str) -> None:
    out = tmp_path / "run"
    runner = run_inproc if via == "litellm" else run_cli
    with FakeServer(oracle_responder()) as srv:
        base = srv.api_base.replace("http://", "http://user:pw-SECRET-456@")
        r = runner("run", "--model", "openai/fake", "--api-base", base, "--out", str(out),
                   "--limit", "2", "--no-cache", "--via", via,
                   env={"OPENAI_API_KEY": "sk-test-SECRET-123"})
        assert r.returncode == 0, r.stderr
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "SECRET" not in text, path


@pytest.mark.parametrize("mode", ["scripted", "fake-server"])
def test_no_connection_leaves_loopback(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "net.log"
    out = tmp_path / "run"
    guard = [sys.executable, str(ROOT / "tests" / "netguard.py"), str(log)]
    env = {**os.environ, **FAST}
    if mode == "scripted":
        r = subprocess.run([*guard, "run", "--model", "script/oracle", "--out", str(out),
                            "--limit", "3", "--no-cache"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    else:
        with FakeServer(oracle_responder()) as srv:
            r = subprocess.run([*guard, "run", "--model", "openai/fake", "--api-base",
                                srv.api_base, "--out", str(out), "--limit", "2", "--no-cache"],
                               cwd=ROOT, env={**env, "OPENAI_API_KEY": "sk-x"},
                               capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    assert not log.exists(), log.read_text()


PROBE = """\
import io, json, runpy, sys
HEAVY = ("litellm", "aiohttp", "scipy", "inspect_ai")
for args, stdin, want in json.loads(sys.argv[1]):
    sys.argv, sys.stdin = ["butterfly", *args], io.StringIO(stdin)
    code = 0
    try:
        runpy.run_module("butterfly.cli", run_name="__main__")
    except SystemExit as e:
        code = e.code or 0
    assert code == (3 if args[0] == "parse" else 0), (args, code)  # UNSURE: an abstention
    got = [m for m in HEAVY if m in sys.modules]
    assert got == want, f"{args}: imported {got}, expected {want}"
"""
"""Runs ``butterfly`` commands one after another in one interpreter and checks, after each,
which of litellm, aiohttp, scipy and inspect_ai it has imported so far (inspect_ai: only
``import-inspect`` may, issue 26): the commands that import nothing
heavy come first, so a command that imported one would be caught (as in its own process)."""


def test_commands_import_litellm_aiohttp_and_scipy_only_when_they_need_them(
        tmp_path: Path) -> None:
    """No command without a provider imports litellm (3 s) or aiohttp; no command imports
    inspect_ai; no command that compares nothing imports scipy; a report of a pair does (it is
    compared); the fast path calls a provider with aiohttp and without litellm."""
    runs = [tmp_path / "a", tmp_path / "b"]
    for run, agent in zip(runs, ("script/noop", "script/oracle"), strict=True):  # what to read
        assert run_inproc("run", "--model", agent, "--out", str(run), "--limit", "3",
                          "--no-cache").returncode == 0
    a, html = str(runs[0]), str(tmp_path / "r.html")
    light: list[list[str]] = [
        ["validate", str(SUITE)], ["oracle", str(SUITE)], ["score", a], ["flips", a],
        ["show", a], ["export", a, "--csv", str(tmp_path / "x.csv")], ["runs", str(tmp_path)],
        ["report", a, "--html", html],
        ["run", "--model", "script/oracle", "--out", str(tmp_path / "c"), "--limit", "1",
         "--no-cache"],
        ["sweep", "--model", "script/budget", "--out", str(tmp_path / "sw"), "--limit", "1",
         "--budget", "reasoning_effort=low,high", "--no-cache"]]
    cases: list[tuple[list[str], str, list[str]]] = [(x, "", []) for x in light]
    cases += [(["parse", "--mode", "strict"], "UNSURE", []),
              (["report", *map(str, runs), "--html", html], "", ["scipy"])]
    with FakeServer(oracle_responder()) as srv:  # the fast path calls a provider without it
        cases.append((["run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                       str(tmp_path / "r3"), "--limit", "1", "--no-cache"], "",
                      ["aiohttp", "scipy"]))
        r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(cases)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def test_plain_progress_lines_when_not_a_terminal(tmp_path: Path) -> None:
    r = run_cli("run", "--model", "script/oracle", "--out", str(tmp_path / "r"), "--limit", "3",
                "--no-cache")
    assert r.returncode == 0
    calls = sum(len(s.turns) for s in SCENARIOS[:3])
    assert f"{calls} calls to make" in r.stderr
    assert f"calls {calls}/{calls}  errors 0" in r.stderr
    assert "\x1b[" not in r.stderr + r.stdout  # no terminal escapes in a pipe


def test_resume_of_a_complete_run_sends_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeServer(oracle_responder()) as srv:
        assert _run(out, srv).returncode == 0
        first = srv.count
        r = _run(out, srv)
        assert r.returncode == 0 and srv.count == first
        assert "0 calls to make" in r.stderr


def test_ctrl_c_keeps_answers_and_resume_completes(tmp_path: Path) -> None:
    out, oracle = tmp_path / "run", SlowOracle()
    with FakeServer(oracle) as srv:
        proc = start_run_and_wait(out, srv, 4)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        oracle.slow = False
        assert proc.returncode == 130, err
        assert "Re-run the same command to resume" in err and "Traceback" not in err
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["status"] == "interrupted"
        r = _run(out, srv)
        assert r.returncode == 0, r.stderr
    keys = [(x["scenario"], x["turn"]) for x in _records(out) if x["error"] is None]
    assert len(keys) == len(set(keys)) == N_CALLS


def test_unplayed_conversations_are_not_played_not_incomplete(tmp_path: Path) -> None:
    """A run interrupted after its first scenario (its records cut back to it, its manifest
    saying so, as a Ctrl-C leaves it): the rest were never played."""
    from conftest import rewrite_calls, rewrite_manifest

    out = tmp_path / "run"
    assert run_inproc("run", "--model", "script/oracle", "--out", str(out), "--limit", "3",
                      "--no-cache").returncode == 0
    calls = out / "calls.jsonl"
    first = SCENARIOS[0].id
    kept = [line for line in calls.read_text().splitlines()
            if json.loads(line)["scenario"] == first]
    rewrite_calls(out, kept)
    rewrite_manifest(out, status="interrupted", n_calls=len(kept))
    s = _score(out)
    assert s["not_played"] == 2 and s["incomplete"] == 0 and s["n_scenarios"] == 1
    text = run_inproc("score", str(out)).stdout
    assert "not played" in text and "incomplete" not in text


def test_progress_counts_only_generated_tokens() -> None:
    from butterfly.runs.play import Progress
    from butterfly.runs.records import CallRecord, Tokens

    def rec(cached: bool) -> CallRecord:
        return CallRecord(chain_sha256="0" * 64, scenario="s", turn=1, messages_sha256="0" * 64,
                          messages_added=(),
                          raw="{}", spec=None, abstention="no_json", latency_s=0.0,
                          tokens=Tokens(completion=100), attempts=1, cached=cached,
                          at="2026-01-01T00:00:00+00:00")

    p = Progress(total=2)
    p.add(rec(cached=True))
    p.add(rec(cached=False))
    assert p.done == 2 and p.completion_tokens == 100
