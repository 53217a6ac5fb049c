"""Run-directory integrity (issue 12): one writer, true statuses, options checked before the
first call, tamper evidence, scope kept on resume, clear errors for unwritable directories."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, cli_in_process, rewrite_manifest

from butterfly.runs.lock import LOCK, writer_lock

ORACLE = ["--model", "script/oracle", "--no-cache"]


cli = cli_in_process


def oracle_run(capsys: pytest.CaptureFixture[str], out: Path, limit: int = 3) -> None:
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", str(limit))
    assert code == 0, err


def manifest(out: Path) -> dict[str, object]:
    return json.loads((out / "manifest.json").read_text())  # type: ignore[no-any-return]


# --- one writer -------------------------------------------------------------------------------

def test_a_second_writer_is_refused_at_once_naming_the_holder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    oracle_run(capsys, out)
    with writer_lock(out):  # another writer holds the directory
        start = time.perf_counter()
        code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3")
        assert code == 1 and f"pid {os.getpid()}" in err and "being written" in err
        assert time.perf_counter() - start < 5
        code, out_text, err = cli(capsys, "score", str(out), "--json")  # readers still read
        assert code == 0 and json.loads(out_text)["final_match"] == 1.0, err
        code, _, _ = cli(capsys, "show", str(out))
        assert code == 0
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_sequential_locks_both_directories(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with writer_lock(b):
        code, _, err = cli(capsys, "sequential", "--model-a", "script/oracle", "--model-b",
                           "script/noop", "--out-a", str(a), "--out-b", str(b), "--limit", "2",
                           "--cap", "2", "--no-cache", "--json")
    assert code == 1 and "being written" in err and str(b) in err
    assert not (a / "manifest.json").exists()  # nothing was started on A either


def test_kill_9_never_leaves_a_stale_lock(tmp_path: Path) -> None:
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path\n"
         "from butterfly.runs.lock import writer_lock\n"
         f"with writer_lock(Path({str(out)!r})):\n    print('held', flush=True)\n"
         "    time.sleep(60)\n"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    assert (out / LOCK).read_text().strip() == str(holder.pid)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with writer_lock(out):  # the kernel freed it with the process
        assert (out / LOCK).read_text().strip() == str(os.getpid())


def test_removing_writer_lock_lets_no_second_writer_in(tmp_path: Path) -> None:
    """Issue 34: the lock is the directory's, not ``writer.lock``'s. A first process holds it
    and the file is deleted; a second process (a real ``butterfly run``) is still refused, and
    the first one's directory gets no call record from it."""
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from pathlib import Path\n"
         "from butterfly.runs.lock import writer_lock\n"
         f"with writer_lock(Path({str(out)!r})):\n    print('held', flush=True)\n"
         "    time.sleep(60)\n"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        (out / LOCK).unlink()
        second = subprocess.run(
            [sys.executable, "-m", "butterfly.cli", "run", *ORACLE, "--out", str(out),
             "--limit", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert second.returncode == 1, second.stderr
        assert "being written by another process" in second.stderr, second.stderr
        assert second.stderr.count("\n") == 1, second.stderr
        assert not (out / "calls.jsonl").exists() and not (out / "manifest.json").exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with writer_lock(out):  # the kernel freed it with the process
        assert (out / LOCK).read_text().strip() == str(os.getpid())


# --- statuses ---------------------------------------------------------------------------------

def test_a_run_whose_writer_died_reads_as_interrupted(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """kill -9 leaves the manifest saying running; readers ask the lock and say interrupted
    (and the manifest says running while the writer is alive)."""
    from butterfly.runs.lock import writer_alive
    from butterfly.runs.reader import load_run

    out = tmp_path / "run"
    oracle_run(capsys, out)
    rewrite_manifest(out, status="running")  # as a run killed mid-way leaves it
    assert not writer_alive(out)
    assert load_run(out).manifest.status == "interrupted"
    with writer_lock(out):
        assert writer_alive(out)
        assert load_run(out).manifest.status == "running"
    assert manifest(out)["status"] == "running"  # a reader never writes
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3")
    assert code == 0, err
    assert manifest(out)["status"] == "complete"


def test_an_unknown_agent_or_provider_leaves_nothing_that_blocks_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    for model in ("script/bogus", "no-such-provider-model", "script/noisy:p=7"):
        code, _, err = cli(capsys, "run", "--model", model, "--out", str(out), "--no-cache")
        assert code == 1 and err.count("\n") == 1, err
        assert not out.exists() or not (out / "manifest.json").exists()
    oracle_run(capsys, out)  # the --out is free for any other model


def test_a_manifest_left_by_a_run_that_never_called_is_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    oracle_run(capsys, out)
    m = manifest(out)
    m.update(model="script/bogus", status="running", n_calls=0)  # the old defect's leftovers
    (out / "manifest.json").write_text(json.dumps(m))
    (out / "calls.jsonl").write_text("")
    oracle_run(capsys, out)
    assert manifest(out)["model"] == "script/oracle"


@pytest.mark.parametrize("args,needle", [
    (["--temperature", "nan"], "--temperature must be a finite number"),
    (["--temperature", "inf"], "--temperature must be a finite number"),
    (["--temperature", "-0.5"], "--temperature must be 0 or more"),
    (["--timeout", "nan"], "--timeout must be a finite number"),
    (["--timeout", "inf"], "--timeout must be a finite number"),
    (["--timeout", "-1"], "--timeout must be positive"),
    (["--model", ""], "--model must name a model"),
    (["--model", "  "], "--model must name a model"),
])
def test_options_are_checked_before_anything_is_created(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str) -> None:
    out = tmp_path / "run"
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "1", *args)
    assert code == 1 and needle in err and err.count("\n") == 1, err
    assert not out.exists()


# --- tamper evidence --------------------------------------------------------------------------

def test_an_edited_suite_copy_is_refused_with_the_way_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    oracle_run(capsys, out)
    copy = out / "suite.jsonl"
    copy.write_text(copy.read_text().replace("European", "American", 1))
    for cmd in (["score", str(out)], ["show", str(out)], ["flips", str(out)]):
        code, _, err = cli(capsys, *cmd)
        assert code == 1 and "does not match the manifest" in err and "cp " in err, err
    oracle_run(capsys, out)  # a resume restores the copy from the checked suite file
    assert cli(capsys, "score", str(out))[0] == 0


def test_two_answers_for_one_call_are_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    oracle_run(capsys, out)
    calls = out / "calls.jsonl"
    lines = calls.read_text().splitlines()
    calls.write_text("\n".join([*lines, lines[0]]) + "\n")
    rewrite_manifest(out, n_calls=len(lines) + 1)  # as a second writer would have counted
    code, _, err = cli(capsys, "score", str(out))
    assert code == 1 and "a second answer for call" in err and "line 1" in err, err
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3")
    assert code == 1 and "a second answer" in err


def test_a_resume_with_other_parameters_names_only_those_that_differ(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    oracle_run(capsys, out)
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3",
                       "--temperature", "0.5", "--seed", "7")
    assert code == 1 and err.count("\n") == 1, err
    assert "temperature 0.0 (this is 0.5); seed 0 (this is 7); resume" in err, err
    assert "max_tokens" not in err and "model_args" not in err  # those agree: not shown


# --- scope ------------------------------------------------------------------------------------

def test_a_resume_keeps_the_recorded_scope(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    oracle_run(capsys, out, limit=5)
    for extra in (["--limit", "3"], [], ["--per-category", "1", "--limit", "5"]):
        code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), *extra)
        assert code == 1 and "keeps the run's scope" in err, err
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "5",
                       "--repeats", "1", "--layouts", "Q")
    assert code == 1 and "never drop recorded ones" in err
    code, text, _ = cli(capsys, "score", str(out), "--json")
    assert json.loads(text)["n_scenarios"] == 5 and manifest(out)["status"] == "complete"


# --- unwritable places ------------------------------------------------------------------------

@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` and everything under it read-only: modes for a user; for root (who writes
    through modes) a read-only bind mount of the directory over itself."""
    if os.geteuid() != 0:
        for p in (path, *path.iterdir()):
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p in (path, *path.iterdir()):
                p.chmod(0o755 if p.is_dir() else 0o644)
        return
    bind = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip("root, and no bind mount here: cannot make a directory read-only")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


def test_a_read_only_run_directory_is_one_clear_line(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    oracle_run(capsys, out)
    with read_only(out):
        code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3")
        assert code == 1 and "cannot write" in err and err.count("\n") == 1, err
        assert cli(capsys, "score", str(out))[0] == 0  # reading needs no write access


def test_schema_into_an_unwritable_place_is_one_clear_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = cli(capsys, "schema", "--out-dir", str(blocker / "schemas"))
    assert code == 1 and "cannot write" in err and err.count("\n") == 1, err


def test_a_suite_nested_100000_deep_is_one_clear_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    deeper = tmp_path / "deeper.jsonl"
    deeper.write_text('{"id": "x", "turns": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    for suite in (deep, deeper):
        for cmd in (["validate", str(suite)], ["oracle", str(suite)],
                    ["run", *ORACLE, "--suite", str(suite), "--out", str(tmp_path / "r")]):
            code, _, err = cli(capsys, *cmd)
            assert code == 1 and "nested too deeply" in err, (cmd, err)


# --- several runs: scenarios keyed by content -------------------------------------------------

def test_one_id_meaning_two_scenarios_is_refused_and_distinct_ids_mix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suites = {"a": ["--count", "6", "--seed", "1"], "b": [],
              "c": ["--lengths", "5", "--per-length", "2", "--seed", "3"]}
    runs = {}
    for name, args in suites.items():
        path = tmp_path / f"{name}.jsonl"
        if args:
            assert cli(capsys, "generate", *args, "--out", str(path))[0] == 0
        else:  # suite a with one scenario's words changed under the same id
            lines = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
            d = next(x for x in lines if x["category"] == "distractor")
            turn = next(t for t in d["turns"] if t["op"] == "distractor")
            turn["text"] = "Unrelated question: is the office open on Friday?"
            path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        runs[name] = tmp_path / f"run-{name}"
        code, _, err = cli(capsys, "run", *ORACLE, "--suite", str(path), "--out",
                           str(runs[name]), "--layouts", "E,Q")
        assert code == 0, err
    a, b, c = (str(runs[k]) for k in "abc")
    ids = {k: {json.loads(x)["id"] for x in (tmp_path / f"{k}.jsonl").read_text().splitlines()}
           for k in suites}
    assert ids["a"] & ids["b"] and not ids["a"] & ids["c"]  # the premise
    html = str(tmp_path / "r.html")
    for cmd in (["report", a, b, "--html", html], ["flips", a, b], ["compare", a, b]):
        code, _, err = cli(capsys, *cmd)
        assert code == 1 and "means two different scenarios" in err, (cmd, err)
    assert not Path(html).exists()
    code, _, err = cli(capsys, "report", a, c, "--html", html)  # other suites, other ids
    assert code == 0 and Path(html).is_file(), err
    code, _, err = cli(capsys, "flips", a, c)
    assert code == 1 and "no scenario in common" in err
