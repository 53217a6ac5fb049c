"""No traceback on any user input (issue 12): hypothesis feeds the command line, in-process,
with broken suite files, raw answers, damaged run directories and odd options, and asserts
only clear outcomes: an exit status the help names, and for an error one line on stderr
(``butterfly: error: ...``), never a traceback. Deterministic (``derandomize``), about 30 s.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sweep import examples

from butterfly.cli import main

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
CODES = {0, 1, 2, 3, 4, 5}
SUITE_LINES = (ROOT / "scenarios" / "butterfly-40.jsonl").read_text().splitlines()[:3]


def cli(*args: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def clear(code: int, err: str) -> None:
    """Only the outcomes ``butterfly --help`` names; an error is one line, no traceback."""
    assert "Traceback" not in err, err
    assert code in CODES, (code, err)
    if code in (1, 5):
        last = err.rstrip("\n").splitlines()[-1]
        assert last.startswith("butterfly: error: "), err
        assert "\x1b" not in last


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="bb-fuzz-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- suite files ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)


@st.composite
def suite_text(draw: st.DrawFn) -> str:
    """A suite file: real lines, mutated (a field replaced, dropped, cut, nested deep), or
    garbage."""
    lines = []
    for line in draw(st.lists(st.sampled_from(SUITE_LINES), min_size=0, max_size=3)):
        kind = draw(st.sampled_from(["keep", "replace", "drop", "cut", "deep", "garbage"]))
        obj = json.loads(line)
        if kind == "replace":
            obj[draw(st.sampled_from(sorted(obj)))] = draw(json_values)
        elif kind == "drop":
            obj.pop(draw(st.sampled_from(sorted(obj))))
        text = json.dumps(obj)
        if kind == "cut":
            text = text[: draw(st.integers(0, len(text)))]
        elif kind == "deep":
            n = draw(st.sampled_from([50, 1000, 100_000]))
            text = text[:-1] + ', "x": ' + "[" * n + "]" * n + "}"
        elif kind == "garbage":
            text = draw(st.text(max_size=40))
        lines.append(text)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


@SETTINGS
@given(text=suite_text(), command=st.sampled_from(["validate", "oracle", "run"]))
def test_suite_files(text: str, command: str) -> None:
    with scratch() as d:
        suite = d / "suite.jsonl"
        suite.write_text(text, encoding="utf-8", errors="surrogatepass")
        args = [command, str(suite)] if command != "run" else [
            "run", "--model", "script/oracle", "--suite", str(suite), "--out", str(d / "r"),
            "--no-cache", "--limit", "1"]
        code, _, err = cli(*args)
        clear(code, err)


# --- raw answers ------------------------------------------------------------------------------

@st.composite
def raw_answer(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["text", "json", "deep", "fenced"]))
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "deep":
        n = draw(st.sampled_from([100, 10_000, 100_000]))
        return draw(st.sampled_from(["{\"a\":", "["])) * n
    body = json.dumps(draw(json_values))
    return f"```json\n{body}\n```" if kind == "fenced" else body


@SETTINGS
@given(raw=raw_answer(), mode=st.sampled_from(["strict", "structured", "lenient"]),
       flag=st.sampled_from(["--parse", "--mode"]))
def test_raw_answers(raw: str, mode: str, flag: str) -> None:
    code, out, err = cli("parse", flag, mode, stdin=raw)
    assert code in (0, 3) and "Traceback" not in err, err
    if code == 0:
        assert isinstance(json.loads(out), dict)


# --- run directories --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fuzz") / "run"
    code, _, err = cli("run", "--model", "script/oracle", "--out", str(out), "--limit", "2",
                       "--no-cache", "--layouts", "E,Q")
    assert code == 0, err
    return out


FILES = ("manifest.json", "calls.jsonl", "suite.jsonl")


@st.composite
def damage(draw: st.DrawFn) -> list[tuple[str, str, object]]:
    """A few edits: (file, how, argument)."""
    hows = st.sampled_from(["delete", "cut", "append", "insert", "garbage", "field",
                            "directory", "empty"])
    return draw(st.lists(st.tuples(st.sampled_from(FILES), hows,
                                   st.integers(0, 10_000) | st.text(max_size=30) | json_values),
                         min_size=1, max_size=3))


def _apply(run: Path, edits: list[tuple[str, str, object]]) -> None:
    for name, how, arg in edits:
        path = run / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        n = arg if isinstance(arg, int) else len(str(arg))
        if how == "delete":
            path.unlink()
        elif how == "directory":
            path.unlink()
            path.mkdir()
        elif how == "empty":
            path.write_bytes(b"")
        elif how == "cut":
            path.write_bytes(data[: n % (len(data) + 1)])
        elif how == "append":
            path.write_bytes(data + str(arg).encode("utf-8", "surrogatepass"))
        elif how == "insert":
            lines = data.splitlines(keepends=True)
            lines.insert(n % (len(lines) + 1), (str(arg) + "\n").encode("utf-8",
                                                                          "surrogatepass"))
            path.write_bytes(b"".join(lines))
        elif how == "garbage":
            path.write_bytes(bytes((n * 7 + i) % 256 for i in range(64)))
        elif how == "field" and name == "manifest.json":
            try:
                obj = json.loads(data)
                key = sorted(obj)[n % len(obj)]
                obj[key] = arg
                path.write_text(json.dumps(obj))
            except (ValueError, ZeroDivisionError, TypeError):
                pass


COMMANDS = (["score"], ["score", "--json"], ["show"], ["show", "--scenario", "x"], ["flips"],
            ["audit"], ["compare", "BASE"], ["run"], ["report"])


@SETTINGS
@given(edits=damage(), command=st.sampled_from(COMMANDS))
def test_run_directories(base_run: Path, edits: list[tuple[str, str, object]],
                         command: list[str]) -> None:
    with scratch() as d:
        run = d / "run"
        shutil.copytree(base_run, run)
        _apply(run, edits)
        if command[0] == "run":
            args = ["run", "--model", "script/oracle", "--out", str(run), "--limit", "2",
                    "--no-cache", "--layouts", "E,Q"]
        elif command[0] == "report":
            args = ["report", str(run), "--html", str(d / "r.html")]
        elif command[0] == "compare":
            args = ["compare", str(base_run), str(run)]
        else:
            args = [command[0], str(run), *command[1:]]
        code, _, err = cli(*args)
        clear(code, err)


# --- options ----------------------------------------------------------------------------------

VALUES = st.sampled_from(["", "0", "-1", "1", "2", "nan", "inf", "-inf", "1e309", "0.5", "E",
                          "E,E", "x", "\x1b[2J", "3"]) | st.text(
    st.characters(blacklist_categories=("Nd",)), max_size=8)  # no huge counts: they just run
MODELS = st.sampled_from(["script/oracle", "script/bogus", "", " ", "script/noisy:p=2",
                          "script/drift:p=0.1", "local/none.gguf", "local/x", "script/"])
FLAGS = {
    "run": ["--limit", "--per-category", "--seed", "--layouts", "--repeats", "--mode",
            "--temperature", "--max-tokens", "--concurrency", "--timeout", "--retries",
            "--parse", "--strategy", "--samples", "--protocol", "--suite"],
    "sequential": ["--cap", "--q", "--limit", "--per-category", "--temperature", "--timeout",
                   "--concurrency", "--retries", "--method", "--max-tokens"],
    "generate": ["--count", "--seed", "--paraphrase-variants", "--lengths", "--per-length",
                 "--ops", "--suite", "--track"],
    "calibrate": ["--q", "--reshuffles", "--m", "--reps", "--seed"],
    "show": ["--scenario", "--layout", "--repeat", "--lines"],
    "compare": ["--method", "--q", "--k", "--cap", "--layout", "--seed"],
}


@SETTINGS
@given(command=st.sampled_from(sorted(FLAGS)), data=st.data())
def test_options(base_run: Path, command: str, data: st.DataObject) -> None:
    flags = data.draw(st.lists(st.sampled_from(FLAGS[command]), max_size=3, unique=True))
    argv = [x for f in flags for x in (f, data.draw(VALUES))]
    with scratch() as d:
        if command == "run":
            argv = ["run", "--model", data.draw(MODELS), "--out", str(d / "r"), "--no-cache",
                    *(["--limit", "2"] if "--limit" not in flags else []), *argv]
        elif command == "sequential":
            argv = ["sequential", "--model-a", data.draw(MODELS), "--model-b", "script/noop",
                    "--out-a", str(d / "a"), "--out-b", str(d / "b"), "--no-cache", "--json",
                    *(["--limit", "2"] if "--limit" not in flags else []),
                    *(["--cap", "2"] if "--cap" not in flags else []), *argv]
        elif command == "generate":
            argv = ["generate", "--out", str(d / "g.jsonl"), *argv]
        elif command == "calibrate":
            argv = ["calibrate", "--simulate", "--reps", "2", "--m", "5", *argv]
        elif command in ("show",):
            argv = ["show", str(base_run), *argv]
        else:
            argv = ["compare", str(base_run), str(base_run), *argv]
        code, _, err = cli(*argv)
        clear(code, err)
