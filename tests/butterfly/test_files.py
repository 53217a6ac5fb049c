"""Writing output files (``butterfly/files.py``): atomically, and nothing left behind when the
path is refused (issue 21: a ``DIR.tmp`` stayed beside a refused ``--html DIR``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from butterfly.errors import UserError
from butterfly.files import write_text_atomic


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
