"""The Python API: the example of docs/api.md runs as written, and the API is the CLI's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

import butterfly
import butterfly.api
from butterfly.errors import UserError


def _examples() -> list[str]:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_documented_examples_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a default run directory (runs/...) would land here
    namespace = {"OUT": tmp_path}
    for block in _examples():
        exec(compile(block, "docs/api.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "script/oracle: final match 100% (3/3)" in out
    assert (tmp_path / "report.html").is_file()


def test_every_api_function_has_a_documented_example() -> None:
    """Each function of ``butterfly.api`` is called (as ``api.NAME(`` or ``butterfly.NAME(``)
    in the examples docs/api.md runs, and named in its table."""
    code = "\n".join(_examples())
    table = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    functions = [n for n in butterfly.api.__all__
                 if callable(getattr(butterfly.api, n)) and n[0].islower()
                 and n not in ("default_out", "run_dir", "run_params", "model_args",
                               "load_runs", "tidy_rows",  # helpers, and export's aliases
                               "import_inspect")]  # needs an inspect log and the extra:
    # docs/inspect.md shows it, tests/butterfly/runs/test_import_inspect.py runs it
    missing = [n for n in functions if not re.search(rf"\b(?:api|butterfly)\.{n}\(", code)]
    assert not missing, f"docs/api.md has no example calling: {missing}"
    assert not [n for n in functions if f"`{n}(" not in table and n not in (
        "options", "tidy_rows", "load_runs")]


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
