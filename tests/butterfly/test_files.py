"""Writing output files (``butterfly/files.py``): atomically, and nothing left behind when the
path is refused (issue 21: a ``DIR.tmp`` stayed beside a refused ``--html DIR``). Reading the
files a user names: only regular files, within a size, parsed without recursion errors
(issue 34)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import cli_in_process
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

import butterfly
from butterfly.errors import UserError
from butterfly.files import INPUT_MAX_BYTES, SUITE_MAX_BYTES, write_text_atomic


def test_a_refused_path_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out.html"
    target.mkdir()  # a directory where the file should go
    with pytest.raises(UserError, match="cannot write"):
        write_text_atomic(target, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html"]
    write_text_atomic(tmp_path / "ok.txt", "y")
    assert (tmp_path / "ok.txt").read_text() == "y" and not (tmp_path / "ok.txt.tmp").exists()


def test_report_and_export_into_a_directory_leave_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert run_cli("run", "--model", "script/oracle", "--out", str(run), "--limit", "1",
                   "--no-cache").returncode == 0
    target = tmp_path / "out"
    target.mkdir()
    for cmd in (["report", str(run), "--html", str(target)],
                ["export", str(run), "--csv", str(target)]):
        r = run_cli(*cmd)
        assert r.returncode == 1 and "cannot write" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "run"]


# --- input files: regular, bounded, parsed without recursion errors (issue 34) --------------

HOSTILE = ("zero", "fifo", "brackets", "directory", "big")
"""A symlink to /dev/zero, a FIFO, ``[`` to the file's size limit (3 MB for a suite), a
directory, a sparse file over the limit."""


def _hostile(kind: str, where: Path, name: str, limit: int) -> Path:
    path = where / name
    if kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "brackets":
        path.write_text("[" * min(3_000_000, limit))  # within the size: parsed
    elif kind == "directory":
        path.mkdir()
    else:
        with path.open("wb") as f:
            f.truncate(limit + 1)  # sparse: no disk used
    return path


def _args(flag: str, file: Path, out: Path) -> list[str]:
    run = ["run", "--model", "script/oracle", "--limit", "1", "--no-cache", "--out", str(out)]
    return {"--price": [*run, "--price", str(file)],
            "--model-args": [*run, "--model-args", str(file)],
            "--router": ["run", "--model", "grp", "--limit", "1", "--no-cache", "--out",
                         str(out), "--router", str(file)],
            "--suite": [*run, "--suite", str(file)],
            "validate": ["validate", str(file)],
            "import-inspect --price": ["import-inspect", str(out / "log.eval"), "--out",
                                       str(out), "--price", str(file)],
            "sequential --price-a": ["sequential", "--model-a", "script/oracle", "--model-b",
                                     "script/noop", "--out-a", str(out), "--out-b",
                                     str(out) + "b", "--limit", "1", "--no-cache",
                                     "--price-a", str(file)]}[flag]


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("flag", ["--price", "--model-args", "--router", "--suite",
                                  "validate", "import-inspect --price",
                                  "sequential --price-a"])
def test_a_hostile_input_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          flag: str, kind: str) -> None:
    """Issue 34: ``--price`` given a symlink to /dev/zero was read until the kernel killed the
    process at 24 GB; 3 MB of ``[`` was a RecursionError traceback in ``run --price``,
    ``import-inspect --price`` and ``sequential --price-a``. Each input file is now read only
    if it is a regular file within its size (a FIFO is refused, never waited on), and parsed
    without recursion errors: one line, exit 1, nothing created."""
    suite = flag in ("--suite", "validate")
    limit = SUITE_MAX_BYTES if suite else INPUT_MAX_BYTES
    name = "s.jsonl" if suite else "f.yaml" if kind == "brackets" and flag == "--router" \
        else "f.json"
    file = _hostile(kind, tmp_path, name, limit)
    out = tmp_path / "run"
    code, _, err = cli_in_process(capsys, *_args(flag, file, out))
    assert code == 1 and err.count("\n") == 1 and err.startswith("butterfly: error: "), err
    said = {"zero": "not a regular file (a device)", "fifo": "not a regular file (a FIFO)",
            "brackets": "nested too deeply", "directory": "not a regular file (a directory)",
            "big": "over the"}[kind]
    if not (suite and kind == "brackets"):  # a suite's line is read by pydantic first
        assert said in err, err
    assert not out.exists() and not Path(str(out) + "b").exists()


def test_yaml_nested_too_deeply_is_one_line(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--model-args", "--router"):
        file = tmp_path / "deep.yaml"
        file.write_text("[" * 100_000)
        code, _, err = cli_in_process(capsys, *_args(flag, file, tmp_path / "run"))
        assert code == 1 and err.count("\n") == 1, err
    code, _, err = cli_in_process(capsys, "run", "--model", "script/oracle", "--no-cache",
                                  "-M", "x=" + "[" * 100_000, "--out", str(tmp_path / "run"))
    assert code == 1 and err.count("\n") == 1 and "nested too deeply" in err, err


@pytest.mark.parametrize("value", ["true", "false", '"2"', "[1]"])
def test_a_price_is_a_number_not_a_boolean(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          value: str) -> None:
    """Issue 34: ``"output_per_mtok": true`` was read as 1."""
    file = tmp_path / "p.json"
    file.write_text(f'{{"input_per_mtok": 1, "output_per_mtok": {value}}}')
    code, _, err = cli_in_process(capsys, *_args("--price", file, tmp_path / "run"))
    assert code == 1 and "output_per_mtok" in err and err.count("\n") == 1, err
    with pytest.raises(UserError, match="output_per_mtok"):
        butterfly.run(model="script/oracle", price={"input_per_mtok": 1,
                                                    "output_per_mtok": True},
                      out=tmp_path / "never", cache=None)
