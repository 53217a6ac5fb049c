"""Run directories named by one scheme (docs/running.md, "Run directories"): ``MODEL__SUITE``
for a chat run, ``MODEL__SUITE__restate`` for a restate run (which took the chat run's
directory and was refused there), ``seq-`` before a sequential pair's; a directory of another
name still reads and resumes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import cli_in_process as cli

from butterfly.api.running import default_out


def test_the_scheme() -> None:
    suite = Path("scenarios/butterfly-40.jsonl")
    assert default_out("script/noisy:p=0.2", suite) == Path(
        "runs/script-noisy-p-0.2__butterfly-40")
    assert default_out("script/oracle", suite, mode="restate") == Path(
        "runs/script-oracle__butterfly-40__restate")
    assert default_out("script/oracle", suite, shard="2/3", mode="restate") == Path(
        "runs/script-oracle__butterfly-40__restate.shard-2-of-3")
    assert default_out("script/oracle", suite, "seq-") == Path(
        "runs/seq-script-oracle__butterfly-40")


def test_a_restate_run_never_takes_the_chat_runs_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Both by default, one after the other: each in its own directory, both complete (the
    restate run was refused: "--out runs/...__butterfly-40 was run with ... mode chat")."""
    monkeypatch.chdir(tmp_path)
    for mode in ("chat", "restate"):
        code, _, err = cli(capsys, "run", "--model", "script/oracle", "--limit", "2",
                           "--no-cache", "--mode", mode)
        assert code == 0, err
    made = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert made == ["script-oracle__butterfly-40", "script-oracle__butterfly-40__restate"]
    modes = [json.loads((tmp_path / "runs" / n / "manifest.json").read_text())["params"]["mode"]
             for n in made]
    assert modes == ["chat", "restate"]


def test_a_directory_of_the_old_scheme_still_reads_and_resumes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Readers never read a run's directory name: a run moved to ``MODEL-SUITE`` (the committed
    runs' names before the scheme) lists, scores and resumes with ``--out`` as it was."""
    new = tmp_path / "script-oracle__butterfly-40"
    code, _, err = cli(capsys, "run", "--model", "script/oracle", "--limit", "2", "--no-cache",
                       "--out", str(new))
    assert code == 0, err
    old = tmp_path / "script-oracle-butterfly-40"
    shutil.move(new, old)
    assert cli(capsys, "score", str(old))[0] == 0
    code, out, _ = cli(capsys, "runs", str(tmp_path))
    assert code == 0 and "script-oracle-butterfly-40" in out and "complete" in out
    code, _, err = cli(capsys, "run", "--model", "script/oracle", "--limit", "2", "--no-cache",
                       "--out", str(old))
    assert code == 0, err
