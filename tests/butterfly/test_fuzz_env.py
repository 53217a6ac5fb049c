"""Issue 21, item 2: hypothesis over option values and the environment, not only suites. A
``butterfly run`` is given a HOME (usable, unset, empty, relative, ``/proc/self``, a file,
missing), an answer cache (default, none, fine, in a missing directory, corrupt, a directory,
unwritable, through a file), an ``--api-base`` (none, a loopback fake server, malformed ones),
an ``--out`` (fresh, empty, a file, nested, through a file), a ``--max-cost``, a response-size
cap and a longest retry wait; ``report`` and ``compare`` a ``--q``; and (issue 34) every
command that names a path, through parent directories of each mode, in a process whose
permissions bite (the tests run as root). Whatever the draw: an exit status the help names, no
traceback, a refusal is one line on stderr, and a refusal creates nothing (the scratch tree,
HOME included, is unchanged). Derandomised; seconds, not minutes.

No draw reaches beyond loopback: every ``--api-base`` is malformed (refused before a call)
or the fake server, and an ``openai/`` model always gets one of them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sweep import examples

from butterfly.cli import main

SETTINGS = settings(max_examples=examples(50), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
CODES = {0, 1, 2, 3, 4, 5, 6, 130}
"""``butterfly --help``'s exit statuses."""
MODELS = ("script/oracle", "openai/fake", "openai/gpt-4o-mini")
HOMES = ("home", "unset", "", "relative", "/proc/self", "file", "missing")
CACHES = ("default", "none", "fine", "missing-dir", "corrupt", "dir", "", "/proc/c.sqlite",
          "through-file")
BAD_URLS = st.sampled_from(["notaurl", "ftp://127.0.0.1/v1", "127.0.0.1:1/v1", "http://",
                            "http://127.0.0.1:99999/v1", "", "http://[::1/v1", "http://a b/",
                            "file:///etc/passwd", "https:///v1"]) | st.text(
    st.characters(blacklist_characters=":", blacklist_categories=("Cs",)), max_size=12)
"""Never a URL that would be dialled: no text without a ':' is one."""
OUTS = ("fresh", "", "file", "nested", "through-file")
NUMBERS = st.sampled_from(["inf", "nan", "-1", "0", "1", "1e309", "x", "0.5", "-inf", ""])


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="bb-fuzz-env-"))
    try:
        (d / "home").mkdir()
        (d / "file").write_text("a file")
        (d / "corrupt.sqlite").write_bytes(b"\x13not a database" * 64)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def environment(home: str | None, cwd: Path) -> Iterator[None]:
    """HOME set (or unset, for None) and the working directory ``cwd`` meanwhile."""
    old_home, old_cwd = os.environ.get("HOME"), Path.cwd()
    if home is None:
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = home
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        if old_home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old_home


def cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return code, err.getvalue()


def clear(code: int, err: str) -> None:
    """An exit status the help names; no traceback; a refusal is one line (argparse's usage
    error ends with its one ``error:`` line)."""
    assert "Traceback" not in err, err
    assert code in CODES, (code, err)
    lines = err.splitlines()
    if code == 1:
        assert len(lines) == 1 and lines[0].startswith("butterfly: error: "), err
    if code == 2:
        assert lines and lines[-1].startswith("butterfly") and ": error: " in lines[-1], err


def _home(choice: str, d: Path) -> str | None:
    return {"home": str(d / "home"), "unset": None, "file": str(d / "file"),
            "missing": str(d / "nohome")}.get(choice, choice)


def _cache(choice: str, d: Path) -> list[str]:
    named = {"fine": d / "c.sqlite", "missing-dir": d / "nodir" / "c.sqlite",
             "corrupt": d / "corrupt.sqlite", "dir": d / "home",
             "through-file": d / "file" / "c.sqlite"}
    if choice == "default":
        return []
    if choice == "none":
        return ["--no-cache"]
    return ["--cache", str(named.get(choice, choice))]


def _out(choice: str, d: Path) -> str:
    return {"fresh": str(d / "run"), "": "", "file": str(d / "file"),
            "nested": str(d / "a" / "b" / "run"),
            "through-file": str(d / "file" / "run")}[choice]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@SETTINGS
@given(model=st.sampled_from(MODELS), home=st.sampled_from(HOMES),
       cache=st.sampled_from(CACHES), out=st.sampled_from(OUTS), data=st.data())
def test_run_options_and_environment(server: FakeServer, model: str, home: str, cache: str,
                                     out: str, data: st.DataObject) -> None:
    if home == "unset" and cache == "default":
        cache = "none"  # the default cache of an unset HOME is the real one: never touch it
    with scratch() as d:
        base = data.draw(st.sampled_from(["fake", "none", "bad"]))
        if model.startswith("openai/") and base == "none":
            base = "fake"  # an openai/ name without a base URL would go to api.openai.com
        argv = ["run", "--model", model, "--limit", "1", "--retries", "0", "--timeout", "5",
                "--out", _out(out, d), *_cache(cache, d)]
        if base != "none":
            argv += ["--api-base", server.api_base if base == "fake" else data.draw(BAD_URLS)]
        for flag in ("--max-cost", "--max-answer-chars", "--max-retry-wait"):
            if data.draw(st.booleans()):
                argv.append(f"{flag}={data.draw(NUMBERS | st.sampled_from(['2000000', '50']))}")
        before = _tree(d)
        with environment(_home(home, d), d):
            code, err = cli(argv)
        clear(code, err)
        if code in (1, 2):
            assert _tree(d) == before, (argv, err)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fuzz-env") / "run"
    code, err = cli(["run", "--model", "script/oracle", "--limit", "1", "--no-cache",
                     "--out", str(out)])
    assert code == 0, err
    return out


@SETTINGS
@given(q=NUMBERS | st.floats().map(repr) | st.text(max_size=6))
def test_report_checks_q_like_compare(base_run: Path, q: str) -> None:
    with scratch() as d:
        codes = []
        for argv in (["report", str(base_run), "--html", str(d / "r.html")],
                     ["compare", str(base_run), str(base_run)]):
            before = _tree(d)
            code, err = cli([*argv, f"--q={q}"])
            clear(code, err)
            if code != 0:
                assert _tree(d) == before, (q, err)
            codes.append(code)
        assert codes[0] == codes[1], (q, codes)


OUTPUTS = st.sampled_from(["", ".", "..", "file", "file/x", "home", "new/x.out", "x.out",
                           "-"]) | st.text(st.characters(blacklist_characters="/\x00",
                                                         blacklist_categories=("Cs",)),
                                           min_size=1, max_size=8)
"""Output names, relative to a scratch working directory (never above it)."""


@SETTINGS
@given(command=st.sampled_from(["report", "export", "generate", "schema"]), name=OUTPUTS)
def test_output_files(base_run: Path, command: str, name: str) -> None:
    with scratch() as d:
        if command == "schema" and name in (".", "..", "-"):
            name = "x.out"  # a schema directory above or at the scratch root would escape it
        argv = {"report": ["report", str(base_run), "--html", name],
                "export": ["export", str(base_run), "--csv", name],
                "generate": ["generate", "--count", "1", "--out", name],
                "schema": ["schema", "--out-dir", name]}[command]
        before = _tree(d)
        with environment(str(d / "home"), d):
            code, err = cli(argv)
        clear(code, err)
        if code != 0:
            assert _tree(d) == before, (argv, err)
        assert not [p for p in _tree(d) if p.endswith(".tmp")], _tree(d)


# --- parent-directory permissions (issue 34) -------------------------------------------------

MODES = (0o000, 0o100, 0o300, 0o500, 0o600, 0o700)
"""A parent directory's modes: nothing, search only, write and search, read and search (not
write), read and write (not search), everything."""
DRIVER = """
import contextlib, io, json, sys
from butterfly.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except BaseException:
            import traceback
            traceback.print_exc(file=err)
            code = -1
    out.append((code, err.getvalue()))
print(json.dumps(out))
"""
"""Runs each command line in one process (whose permissions bite) and prints (code, stderr)."""


def _unprivileged() -> list[str]:
    """How to start a process that permissions bind: as root, without the capabilities that
    override them (the tests run as root, where a directory's mode does not bite); else as is."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv is needed to drop root's permission overrides")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def _commands(d: Path, base: Path, tmp: Path) -> list[list[str]]:
    run = ["run", "--model", "script/oracle", "--limit", "1", "--no-cache"]
    outside = tmp / f"o{d.name}"
    return [[*run, "--out", str(d / "new" / "run")], [*run, "--out", str(d / "run2")],
            [*run, "--out", str(d / "run")],
            [*run, "--suite", str(d / "suite.jsonl"), "--out", str(outside / "s")],
            [*run, "--price", str(d / "price.json"), "--out", str(outside / "p")],
            [*run, "--model-args", str(d / "args.json"), "--out", str(outside / "a")],
            ["score", str(d / "run")], ["show", str(d / "run")], ["runs", str(d)],
            ["flips", str(d / "run")], ["compare", str(d / "run"), str(base)],
            ["export", str(d / "run"), "--csv", str(outside / "x.csv")],
            ["report", str(d / "run"), "--html", str(outside / "r.html")],
            ["report", str(base), "--html", str(d / "r.html")],
            ["export", str(base), "--csv", str(d / "x.csv")],
            ["generate", "--count", "1", "--out", str(d / "g.jsonl")],
            ["schema", "--out-dir", str(d / "schemas")], ["validate", str(d / "suite.jsonl")],
            ["repair", str(d / "run")], ["merge", str(d / "run"), "--out", str(outside / "m")]]


def test_parent_directory_permissions(base_run: Path, tmp_path: Path) -> None:
    """Issue 34: ``--out`` inside a directory the user cannot read was a PermissionError
    traceback (from ``check_out``), and so were ``score``, ``show``, ``report``, ``validate``
    and more of a path through such a directory. Every command that names a path, through a
    parent of each mode (:data:`MODES`), in a process whose permissions bite: an exit status the
    help names, no traceback, a refusal in one line that changes nothing."""
    tree = tmp_path / "tree"
    tree.mkdir()
    suite = (base_run / "suite.jsonl").read_text()
    cases: list[tuple[Path, list[str]]] = []
    for mode in MODES:
        d = tree / f"d{mode:03o}"
        shutil.copytree(base_run, d / "run")
        (d / "suite.jsonl").write_text(suite)
        (d / "price.json").write_text('{"input_per_mtok": 1, "output_per_mtok": 2}')
        (d / "args.json").write_text('{"top_p": 0.5}')
        cases += [(d, argv) for argv in _commands(d, base_run, tmp_path)]
    made = [_target(argv) for _, argv in cases]
    there = [p is not None and p.exists() for p in made]
    for mode in MODES:
        (tree / f"d{mode:03o}").chmod(mode)
    try:
        r = subprocess.run([*_unprivileged(), sys.executable, "-c", DRIVER,
                            json.dumps([argv for _, argv in cases])], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        results = json.loads(r.stdout)
    finally:
        for mode in MODES:
            (tree / f"d{mode:03o}").chmod(0o700)
    refused = 0
    for (_, argv), (code, err), target, was in zip(cases, results, made, there, strict=True):
        assert "Traceback" not in err, (argv, err)
        clear(code, err)
        if code in (1, 2):
            refused += 1
            assert target is None or was or not target.exists(), (argv, err)  # nothing made
    assert refused > len(cases) // 3  # the modes do bite


def _target(argv: list[str]) -> Path | None:
    """What a command line writes (its --out, --html, --csv or --out-dir), if it names one."""
    for flag in ("--out", "--html", "--csv", "--out-dir"):
        if flag in argv:
            return Path(argv[argv.index(flag) + 1])
    return None
