"""A code run's observations on disk (issue 34, items 2 to 4; docs/code-track.md "Observations
on disk"): kept as each is made, a killed run's too, with no sandbox directory left behind;
read, never made, by every reading command, which names the command that makes them; sealed,
so that an edited observation is named by every reader."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CODE_SUITE, ROOT, cli_in_process
from fakeserver import FakeServer

from butterfly import api
from butterfly.code import runner, sandbox, spec_of_program
from butterfly.code.agents import code_answers
from butterfly.code.judge import figures_line
from butterfly.runs import observe
from butterfly.runs.code_turns import programs
from butterfly.runs.lock import writer_lock
from butterfly.suite.load import load_suite

pytestmark = pytest.mark.xdist_group("code-runs")  # the scripted runs are played once

SCENARIOS = load_suite(CODE_SUITE)
READERS = ("score", "show", "report", "runs", "export", "compare", "flips", "audit")


@pytest.fixture
def run(code_runs: Path, tmp_path: Path) -> Path:
    """A copy of the oracle's code run, every program observed."""
    return Path(shutil.copytree(code_runs / "oracle", tmp_path / "oracle"))


@pytest.fixture(scope="module")
def half_observed(code_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The oracle's code run with only its first scenario's programs observed (made once)."""
    out = Path(shutil.copytree(code_runs / "oracle", tmp_path_factory.mktemp("half") / "run"))
    _forget(out)
    _observe_first_scenario(out)
    return out


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    return tmp


def _forget(run: Path) -> None:
    """Delete the run's observations (a cache of what its programs did)."""
    for name in (observe.OBSERVATIONS, observe.SEAL):
        (run / name).unlink()


def _observe_first_scenario(run: Path) -> None:
    """Observe the programs of the first scenario only: the others' await observing."""
    loaded = api.load_run(run)
    first = loaded.scenarios[0].id
    todo = [v for k, v in programs(loaded.suite, loaded.records).items() if k.scenario == first]
    with writer_lock(run):
        observe.observe_programs(run, todo)


def _refuse_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> Any:
        raise AssertionError("a reading command started a sandbox")

    for module, name in ((sandbox, "execute"), (runner, "run_program"),
                         (spec_of_program, "run_program"), (observe, "observe")):
        monkeypatch.setattr(module, name, refuse)


def _read(capsys: pytest.CaptureFixture[str], command: str, run: Path,
          tmp_path: Path) -> tuple[int, str, str]:
    args = {"score": ["score", str(run)], "show": ["show", str(run)],
            "report": ["report", str(run), "--html", str(tmp_path / "r.html")],
            "runs": ["runs", str(run.parent)], "export": ["export", str(run), "--csv", "-"],
            "compare": ["compare", str(run), str(run)], "flips": ["flips", str(run)],
            "audit": ["audit", str(run)]}[command]
    return cli_in_process(capsys, *args)


# --- reading never runs code (item 3) -----------------------------------------------------------

@pytest.mark.parametrize("command", READERS)
def test_reading_commands_start_no_sandbox_and_name_the_command_that_does(
        half_observed: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    run = Path(shutil.copytree(half_observed, tmp_path / "run"))
    _refuse_programs(monkeypatch)
    code, _, err = _read(capsys, command, run, tmp_path)
    assert code == 0, err
    assert f"observe them with: butterfly observe {run}" in err
    assert err.count("butterfly observe") == 1


def test_unobserved_turns_are_counted_apart_not_scored(run: Path, half_observed: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _forget(run)
    _refuse_programs(monkeypatch)
    score = api.score_run(run)
    assert score.code is not None and score.code.unobserved_turns == 12
    assert score.code.unobserved_conversations == 3 and score.code.turns_observed == 0
    assert score.n_conversations == 0 and score.incomplete == 0 and score.final_match is None
    run = half_observed
    score = api.score_run(run)
    assert score.code is not None and score.code.unobserved_conversations == 2
    assert score.n_conversations == 1 and score.final_match == 1.0
    assert "7 turns (2 complete conversations) not yet observed, not scored" in figures_line(
        score.code)
    assert [line.unobserved for line in api.runs(run.parent)] == [7]


def test_observe_observes_what_is_missing_once(run: Path, capsys: pytest.CaptureFixture[str],
                                               private_tmp: Path) -> None:
    _forget(run)
    code, _, err = cli_in_process(capsys, "observe", str(run))
    assert code == 0 and "program(s) to observe in the sandbox" in err
    assert f"{run}: observed 8 program(s) in the sandbox (bubblewrap)" in err, err
    assert api.score_run(run).final_match == 1.0
    code, _, err = cli_in_process(capsys, "observe", str(run))
    assert code == 0 and "every program is observed already (8 on file); nothing ran" in err
    assert not list(private_tmp.iterdir())


def test_observe_refuses_what_it_cannot_do(run: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    spec = api.run(model="script/oracle", limit=1, out=tmp_path / "spec", cache=None)
    code, _, err = cli_in_process(capsys, "observe", str(spec.path))
    assert code == 1 and "a spec-track run has no programs to observe" in err
    with writer_lock(run):
        code, _, err = cli_in_process(capsys, "observe", str(run))
    assert code == 1 and f"is being written by pid {os.getpid()}" in err
    if os.geteuid() == 0:  # the fallback as root: refused unless told
        monkeypatch.setenv(sandbox.ENV, "fallback")
        _forget(run)
        code, _, err = cli_in_process(capsys, "observe", str(run))
        assert code == 1 and "pass --allow-fallback" in err and err.count("\n") == 1
        assert not (run / observe.OBSERVATIONS).exists()
        code, _, err = cli_in_process(capsys, "observe", str(run), "--allow-fallback")
        assert code == 0 and "(fallback)" in err


# --- observations kept as they are made (item 2) ------------------------------------------------

def test_observations_are_kept_as_each_is_made(run: Path, private_tmp: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The third observation fails once two are on file: those two stay, sealed, and no
    sandbox directory is left (the other worker's program is stopped)."""
    _forget(run)
    real, calls = observe.observe, []

    def third_fails(program: str, expect: Any, spend: runner.Budget) -> Any:
        calls.append(program)
        if len(calls) == 3:
            for _ in range(400):
                if len((run / observe.OBSERVATIONS).read_bytes().splitlines()) >= 2:
                    break
                time.sleep(0.05)
            raise RuntimeError("the observer failed")
        return real(program, expect, spend)

    monkeypatch.setattr(observe, "observe", third_fails)
    with pytest.raises(RuntimeError, match="the observer failed"):
        api.observe(run)
    found = observe.read_observations(run)
    assert len(found.known) >= 2 and found.unsealed == 0
    assert not list(private_tmp.glob("bfcode-*"))


def _slow_oracle(slow_under: Path) -> Any:
    """The oracle's program for the turn asked, each run of it three seconds longer when its
    sandbox directory is under ``slow_under`` (the killed run's TMPDIR; observing the rest
    afterwards, in this process, runs them at once): with one second, the run observed its last
    program before the signal took effect under make test's load (seen twice on 2026-12-06),
    and the run ended 0."""
    future = "from __future__ import annotations\n"
    slow = f"os.getcwd().startswith({str(slow_under)!r})"
    sleep = f"import os, time\ntime.sleep(3 if {slow} else 0)\n"

    def answer(body: dict[str, Any]) -> str:
        turns = sum(1 for m in body["messages"] if m["role"] == "user")
        return code_answers("oracle", SCENARIOS[0])[turns].replace(future, future + sleep, 1)

    return answer


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_run_killed_mid_observation_keeps_what_it_observed_and_leaves_no_directory(
        tmp_path: Path, sig: signal.Signals) -> None:
    tmpdir, out = tmp_path / "tmpdir", tmp_path / "run"
    tmpdir.mkdir()
    with FakeServer(_slow_oracle(tmpdir)) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "butterfly.cli", "run", "--model", "openai/fake",
             "--api-base", srv.api_base, "--suite", str(CODE_SUITE), "--limit", "1",
             "--track", "code", "--out", str(out), "--no-cache"],
            cwd=ROOT, env={**os.environ, "TMPDIR": str(tmpdir)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                obs = out / observe.OBSERVATIONS
                if obs.is_file() and obs.read_bytes().count(b"\n") >= 1 \
                        and list(tmpdir.glob("bfcode-*")):
                    break
                time.sleep(0.02)
            assert proc.poll() is None, "the run ended before it could be killed"
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == (130 if sig == signal.SIGINT else 128 + sig), err
    assert "Traceback" not in err
    assert not list(tmpdir.glob("bfcode-*"))  # every sandbox directory removed
    found = observe.read_observations(out)
    assert len(found.known) >= 1 and found.unsealed == 0
    lines = (out / observe.OBSERVATIONS).read_bytes().splitlines(keepends=True)
    assert all(line.endswith(b"}\n") for line in lines)
    score = api.score_run(out)
    assert score.code is not None and score.code.unobserved_turns >= 1
    assert api.observe(out).observed >= 1 and api.score_run(out).final_match == 1.0


# --- observations sealed (item 4) ---------------------------------------------------------------

def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / observe.OBSERVATIONS).read_text().splitlines()]


def _write(run: Path, records: list[dict[str, Any]]) -> None:
    (run / observe.OBSERVATIONS).write_text("".join(json.dumps(r, separators=(",", ":")) + "\n"
                                                    for r in records))


def _changed(record: dict[str, Any]) -> dict[str, Any]:
    """One observed value changed (a valid value of another setting's reading)."""
    observed = dict(record["observed"])
    observed["date_format"] = "us" if observed["date_format"] != "us" else "eu"
    return {**record, "observed": observed}


@pytest.mark.parametrize(("edit", "said"), [
    ("second", "observations.jsonl:2: the observations' digest breaks: line 2 is not the "
               "observation written there"),
    ("last", "(the last observations.seal covers) is not the observation written there"),
    ("removed", "line(s), but observations.seal covers"),
    ("seal", "the last observations.seal covers) is not the observation written there"),
    ("garbled", "observations.jsonl:1: not an observation"),
])
@pytest.mark.parametrize("command", READERS)
def test_an_edited_observation_is_named_by_every_reader(
        run: Path, tmp_path: Path, edit: str, said: str, command: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    records = _lines(run)
    if edit == "second":
        records[1] = _changed(records[1])
    elif edit == "last":
        records[-1] = _changed(records[-1])
    elif edit == "removed":
        del records[-1]
    if edit == "seal":
        seal = json.loads((run / observe.SEAL).read_text())
        seal["observations_sha256"] = "0" * 64
        (run / observe.SEAL).write_text(json.dumps(seal))
    elif edit == "garbled":
        (run / observe.OBSERVATIONS).write_text("{\n" + (run / observe.OBSERVATIONS).read_text())
    else:
        _write(run, records)
    code, out, err = _read(capsys, command, run, tmp_path)
    if command == "runs":  # listed, with its error: one bad run hides no other
        (line,) = api.runs(run.parent)
        assert code == 0 and "unreadable" in out and line.error is not None and said in line.error
    else:
        assert code == 1 and said in err and "butterfly observe RUN" in err, err


def test_a_line_past_the_seal_is_not_used_and_a_writer_cuts_it(run: Path) -> None:
    records = _lines(run)
    forged = _changed(records[0])
    chain = observe.read_observations(run).chain
    forged["chain_sha256"] = chain.sha256  # linked as a writer would, but never sealed
    (run / observe.OBSERVATIONS).write_text(
        (run / observe.OBSERVATIONS).read_text() + json.dumps(forged) + "\n")
    found = observe.read_observations(run)
    assert found.unsealed == 1 and len(found.known) == len(records)
    assert api.score_run(run).final_match == 1.0
    assert api.observe(run).observed == 0
    forged_key = json.dumps(forged)
    assert forged_key not in (run / observe.OBSERVATIONS).read_text()


def test_deleting_the_observations_only_costs_observing_again(run: Path) -> None:
    _forget(run)
    assert api.score_run(run).final_match is None
    assert api.observe(run).observed == 8 and api.score_run(run).final_match == 1.0
