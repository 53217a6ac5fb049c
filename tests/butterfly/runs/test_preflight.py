"""Issue 21, item 2: every failure one line, checked before anything is created. Options
(``--max-cost inf``, ``--out ''``, a URL that is not http(s) with a host, ``report --q``), the
environment (HOME, a missing or unwritable cache directory, a corrupt cache file) and an
unenforceable ``--max-cost`` are refused before a run directory, a lock or a call; a failed
atomic write leaves no temporary file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import run_inproc
from fakeserver import FakeServer

from butterfly.core.wire import Request, Response
from butterfly.errors import UserError
from butterfly.files import write_text_atomic
from butterfly.models.answer_cache import Cache, cache_file


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _refused(tmp: Path, *argv: str, env: dict[str, str] | None = None,
             srv: FakeServer | None = None) -> str:
    """Run ``argv``; assert exit 1, one line on stderr, nothing new under ``tmp``, no call."""
    before = _tree(tmp)
    r = run_inproc(*argv, env=env)
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("butterfly: error: "), r.stderr
    assert _tree(tmp) == before
    assert srv is None or srv.count == 0
    return lines[0]


def _fake_run(srv: FakeServer, tmp: Path, *extra: str) -> list[str]:
    return ["run", "--model", "openai/fake", "--api-base", srv.api_base, "--limit", "1",
            "--out", str(tmp / "out"), "--retries", "0", *extra]


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e309"])
def test_max_cost_must_be_finite(tmp_path: Path, value: str) -> None:
    line = _refused(tmp_path, "run", "--model", "script/oracle", "--no-cache", "--out",
                    str(tmp_path / "o"), f"--max-cost={value}")
    assert "--max-cost" in line


@pytest.mark.parametrize("url", ["notaurl", "ftp://127.0.0.1/v1", "127.0.0.1:8000/v1",
                                 "http://", "http://127.0.0.1:99999/v1", "http://a b/v1", "",
                                 "http://[::1/v1", "file:///etc/passwd"])
def test_api_base_must_be_http_with_a_host(tmp_path: Path, url: str) -> None:
    line = _refused(tmp_path, "run", "--model", "openai/fake", "--api-base", url, "--no-cache",
                    "--out", str(tmp_path / "o"), "--limit", "1")
    assert "--api-base must be an http:// or https:// URL with a host" in line


def test_a_url_with_credentials_is_not_echoed(tmp_path: Path) -> None:
    line = _refused(tmp_path, "run", "--model", "openai/fake", "--api-base",
                    "ftp://me:s3cretpass@host/v1", "--no-cache", "--out", str(tmp_path / "o"),
                    "--limit", "1")
    assert "s3cretpass" not in line


@pytest.mark.parametrize("argv", [["run", "--model", "script/oracle", "--out", ""],
                                  ["sequential", "--model-a", "script/oracle", "--model-b",
                                   "script/noop", "--out-a", "", "--out-b", "b"]])
def test_an_empty_out_is_refused_not_the_default(tmp_path: Path, argv: list[str]) -> None:
    line = _refused(tmp_path, *argv, "--no-cache", "--limit", "1")
    assert "must name a directory" in line


def test_an_out_through_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    for out in ("f", "f/run"):
        line = _refused(tmp_path, "run", "--model", "script/oracle", "--no-cache", "--limit",
                        "1", "--out", str(tmp_path / out))
        assert "is a file, not a directory" in line


@pytest.mark.parametrize("home", ["/proc/self", "", "relative/home", "FILE"])
def test_a_home_without_a_usable_directory(tmp_path: Path, home: str) -> None:
    (tmp_path / "FILE").write_text("x")
    home = str(tmp_path / "FILE") if home == "FILE" else home
    with FakeServer() as srv:
        line = _refused(tmp_path, *_fake_run(srv, tmp_path), env={"HOME": home}, srv=srv)
    assert "--cache ~/.cache/butterfly/answers.sqlite" in line and "HOME" in line


def test_the_default_cache_directory_is_created_under_home(tmp_path: Path) -> None:
    with FakeServer() as srv:  # a HOME that does not exist: refused, nothing made there
        _refused(tmp_path, *_fake_run(srv, tmp_path), env={"HOME": str(tmp_path / "h")},
                 srv=srv)
    (tmp_path / "h").mkdir()
    with FakeServer() as srv:
        r = run_inproc(*_fake_run(srv, tmp_path), env={"HOME": str(tmp_path / "h")})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "h" / ".cache" / "butterfly" / "answers.sqlite").is_file()


def _not_a_cache(tmp: Path) -> Path:
    other = tmp / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE answers (a INTEGER)")
    return other


@pytest.mark.parametrize(("make", "why"), [
    (lambda t: t / "missing" / "c.sqlite", "no directory"),
    (lambda t: Path("/proc/c.sqlite"), "not usable as the answer cache"),
    (lambda t: (t / "f").write_text("x") and t / "f" / "c.sqlite", "no directory"),
    (lambda t: (t / "c.sqlite").write_bytes(b"\x00garbage" * 999) and t / "c.sqlite",
     "not usable as the answer cache (file is not a database)"),
    (_not_a_cache, "not usable as the answer cache"),
    (lambda t: t, "is a directory"),
])
def test_a_cache_that_cannot_be_used_is_one_line_before_the_run(tmp_path: Path, make: object,
                                                               why: str) -> None:
    cache = make(tmp_path)  # type: ignore[operator]
    with FakeServer() as srv:
        line = _refused(tmp_path, *_fake_run(srv, tmp_path, "--cache", str(cache)), srv=srv)
    assert why in line
    if "usable" in why:
        assert "--no-cache" in line and "delete or move it" in line


def test_a_cache_row_that_does_not_read_is_a_miss(tmp_path: Path) -> None:
    cache = Cache(cache_file(tmp_path / "c.sqlite"))
    request = Request(model="m", messages=({"role": "user", "content": "x"},),
                      temperature=0.0, max_tokens=10, seed=0)
    cache.put(request, Response("answer"))
    cache._db.execute("UPDATE answers SET response = 'not json'")
    assert cache.get(request) is None
    cache.close()


def test_a_missing_cache_directory_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no directory"):
        cache_file(tmp_path / "a" / "b" / "c.sqlite")
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("q", ["2", "nan", "-1", "0", "1", "inf"])
def test_report_checks_q_like_compare(tmp_path: Path, q: str) -> None:
    run = tmp_path / "run"
    assert run_inproc("run", "--model", "script/oracle", "--limit", "1", "--no-cache",
                      "--out", str(run)).returncode == 0
    for command in (["report", str(run), "--html", str(tmp_path / "r.html")],
                    ["compare", str(run), str(run)]):
        line = _refused(tmp_path, *command, "--q", q)
        assert line == "butterfly: error: --q must be between 0 and 1"


def test_a_scripted_agent_has_no_price_for_max_cost(tmp_path: Path) -> None:
    line = _refused(tmp_path, "run", "--model", "script/oracle", "--no-cache", "--out",
                    str(tmp_path / "o"), "--max-cost", "1")
    assert "no price is known for script/oracle" in line


def test_a_failed_atomic_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "d.html").mkdir()
    with pytest.raises(UserError, match="cannot write"):
        write_text_atomic(tmp_path / "d.html", "x")
    assert _tree(tmp_path) == ["d.html"]


@pytest.mark.parametrize(("command", "why"), [
    (["generate", "--count", "1", "--out", ""], "an output file must be named"),
    (["schema", "--out-dir", ""], "--out-dir must name a directory"),
    (["generate", "--count", "1", "--out", ".."], "must name a file"),
])
def test_an_empty_output_name_is_one_line_not_a_traceback(tmp_path: Path, command: list[str],
                                                         why: str) -> None:
    assert why in _refused(tmp_path, *command)


def test_report_and_export_to_no_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert run_inproc("run", "--model", "script/oracle", "--limit", "1", "--no-cache",
                      "--out", str(run)).returncode == 0
    assert "--html must name a file" in _refused(tmp_path, "report", str(run), "--html", "")
    assert "output file must be named" in _refused(tmp_path, "export", str(run), "--csv", "")
