"""The Python API: the example of docs/api.md runs as written, and the API is the CLI's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

import butterfly
from butterfly.errors import UserError


def _example() -> str:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "docs/api.md should hold exactly one python example"
    return blocks[0]


def test_the_documented_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(_example(), "docs/api.md", "exec"), {"OUT": tmp_path})
    out = capsys.readouterr().out
    assert "script/oracle: final match 100% (3/3)" in out
    assert (tmp_path / "report.html").is_file()


def test_score_run_is_what_score_json_prints(tmp_path: Path) -> None:
    run = butterfly.run(model="script/last-edit", limit=5, out=tmp_path / "r", cache=None)
    cli = run_cli("score", str(tmp_path / "r"), "--json")
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    assert butterfly.score_run(run).to_json() == expected
    assert butterfly.score_run(tmp_path / "r").final_match == expected["final_match"]


def test_a_bad_option_is_the_cli_s_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--samples is only for --strategy self-consistency"):
        butterfly.run(model="script/oracle", out=tmp_path / "x", samples=3)
    r = run_cli("run", "--model", "script/oracle", "--out", str(tmp_path / "y"),
                "--samples", "3")
    assert r.returncode == 1 and "--samples is only for --strategy self-consistency" in r.stderr


def test_import_butterfly_is_cheap() -> None:
    """The API loads on first use: importing the package imports no layer, numpy or litellm."""
    code = ("import sys, butterfly; print(sorted(m for m in sys.modules if m.startswith("
            "('butterfly.', 'numpy', 'litellm'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
    assert butterfly.Run is butterfly.api.Run
