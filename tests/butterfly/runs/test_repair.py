"""``butterfly repair RUN`` (issue 21): a lost manifest rebuilt from the records and the run's
flags, damaged records dropped and named, never silently; the repaired run resumes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import cli_in_process, same_answers

from butterfly.cli import main
from butterfly.runs.reader import load_run

ORACLE = ["--model", "script/oracle", "--no-cache"]


cli = cli_in_process


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A complete run of three scenarios in two layouts, and its score."""
    out = tmp_path_factory.mktemp("made") / "run"
    assert main(["run", *ORACLE, "--out", str(out), "--limit", "3", "--layouts", "E,Q"]) == 0
    return out, json.dumps(_score(out))


def _score(out: Path) -> dict[str, object]:
    from butterfly.analysis.scoring import score_run

    return same_answers(score_run(out).to_json())


def _copy(made: tuple[Path, str], tmp_path: Path) -> Path:
    return Path(shutil.copytree(made[0], tmp_path / "run"))


def test_a_lost_manifest_is_rebuilt_only_from_the_run_s_flags(
        made: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(made, tmp_path)
    (out / "manifest.json").unlink()
    code, _, err = cli(capsys, "score", str(out))
    assert code == 1 and "not a run directory" in err
    code, _, err = cli(capsys, "repair", str(out))
    assert code == 1 and "give the flags of the butterfly run command" in err, err
    for wrong, why in ((["--limit", "2"], "the run does not make"),
                       (["--limit", "3"], "the run does not make"),  # layouts E only
                       (["--limit", "3", "--layouts", "E,Q", "--mode", "restate"],
                        "its prompt is not what the flags send")):
        code, _, err = cli(capsys, "repair", str(out), *ORACLE, *wrong)
        assert code == 1 and why in err, (wrong, err)
        assert sorted(p.name for p in out.iterdir()) == [
            "calls.jsonl", "suite.jsonl", "writer.lock"]  # a refusal writes nothing
    code, _, err = cli(capsys, "repair", str(out), *ORACLE, "--limit", "3", "--layouts", "E,Q")
    assert code == 0 and "kept 24 record(s), dropped 0" in err, err
    run = load_run(out)
    assert run.manifest.status == "interrupted" and run.manifest.repaired[0].rebuilt_manifest
    assert run.digest.label() == "sealed (24 records)"
    code, _, err = cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3",
                       "--layouts", "E,Q")
    assert code == 0, err
    assert json.dumps(_score(out)) == made[1]  # the answers paid for, all kept
    code, _, err = cli(capsys, "repair", str(out))
    assert code == 0 and "nothing to repair" in err


def test_damaged_records_are_dropped_and_named_then_asked_again(
        made: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(made, tmp_path)
    lines = (out / "calls.jsonl").read_text().splitlines()
    lines[2] = "not json"
    rec = json.loads(lines[6])
    rec["spec"]["retries"] = "5" if rec["spec"]["retries"] != "5" else "3"
    rec["raw"] = json.dumps(rec["spec"])  # an answer made right, raw and spec together
    lines[6] = json.dumps(rec, separators=(",", ":"))
    (out / "calls.jsonl").write_text("".join(x + "\n" for x in lines))
    code, _, err = cli(capsys, "repair", str(out))
    assert code == 0, err
    assert "dropped line 3: not a call record" in err
    assert "dropped line 7: the digest line 8 keeps disagrees" in err
    assert "kept 22 record(s), dropped 2" in err
    assert (out / "calls.jsonl.before-repair").read_text().splitlines()[2] == "not json"
    code, text, _ = cli(capsys, "runs", str(tmp_path))
    assert "interrupted (repaired)" in text
    code, text, _ = cli(capsys, "score", str(out))
    assert code == 0 and "repaired" in text and "2 line(s) dropped" in text
    code, _, err = cli(capsys, "repair", str(out))
    assert code == 0 and "nothing to repair" in err
    assert cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3",
               "--layouts", "E,Q")[0] == 0
    assert json.dumps(_score(out)) == made[1]  # the dropped calls asked again


def test_a_cut_file_is_refused_until_repaired(
        made: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(made, tmp_path)
    (out / "calls.jsonl").write_text("")
    for cmd in (["score", str(out)], ["run", *ORACLE, "--out", str(out), "--limit", "3",
                                      "--layouts", "E,Q"]):
        code, _, err = cli(capsys, *cmd)
        assert code == 1 and "the manifest's seal covers 24: records were removed" in err, err
    assert cli(capsys, "repair", str(out))[0] == 0
    assert cli(capsys, "run", *ORACLE, "--out", str(out), "--limit", "3",
               "--layouts", "E,Q")[0] == 0
    assert json.dumps(_score(out)) == made[1]


def test_a_second_repair_keeps_the_first_one_s_files(
        made: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _copy(made, tmp_path)
    (out / "calls.jsonl").write_text("")
    assert cli(capsys, "repair", str(out))[0] == 0
    (out / "calls.jsonl").write_text("not json\n")
    code, _, err = cli(capsys, "repair", str(out))
    assert code == 1 and "left from an earlier repair: move it away first" in err, err
