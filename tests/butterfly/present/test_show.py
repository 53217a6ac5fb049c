"""``butterfly show``: the transcript of one conversation in the terminal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly.core.transcript import conversation_of
from butterfly.runs.reader import load_run, turns
from butterfly.suite.load import load_suite
from oracle import replay

SUITE = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")
ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "noisy"
    r = run_cli("run", "--model", "script/noisy:p=0.6", "--out", str(out), "--no-cache",
                "--temperature", "0.7", "--limit", "12")
    assert r.returncode == 0, r.stderr
    return out


def _with_collateral(run: Path) -> tuple[str, int, dict]:  # type: ignore[type-arg]
    loaded = load_run(run)
    manifest, scenarios, records = loaded.manifest, list(loaded.suite), loaded.records
    answered = turns(records, manifest.params)
    for s in scenarios[:12]:
        conv = conversation_of(s, answered, "E", 0)
        for row in conv["turns"]:
            if row["collateral"]:
                return s.id, row["turn"], conv
    raise AssertionError("the noisy agent made no collateral move in 12 scenarios")


def test_transcript_marks_collateral_wrong_and_first_divergence(noisy: Path) -> None:
    sid, turn, conv = _with_collateral(noisy)
    r = run_cli("show", str(noisy), "--scenario", sid)
    assert r.returncode == 0, r.stderr
    assert not ANSI.search(r.stdout)  # a pipe gets no colour
    out = r.stdout
    row = conv["turns"][turn - 1]
    k = row["collateral"][0]
    assert f"~ {k} = {row['spec'][k]!r}" in out and "changed, not asked" in out
    fd = conv["first_divergent"]
    assert f"> turn {fd} (" in out and "<- first divergent turn" in out
    assert out.count("<- first divergent turn") == 1
    s = next(x for x in SUITE if x.id == sid)
    for t in s.turns:
        assert t.text in out  # every user message
    o = replay(s)
    for row in conv["turns"]:
        for w in row["wrong"]:
            assert f"oracle {o[row['turn']][w]!r}" in out


def test_colour_on_a_terminal(noisy: Path) -> None:
    sid, _, _ = _with_collateral(noisy)
    from io import StringIO

    from rich.console import Console

    from butterfly import api
    from butterfly.present.show import print_shown

    buf = StringIO()
    console = Console(file=buf, force_terminal=True, color_system="standard", width=120)
    shown = api.show(noisy, sid, None, 0)
    print_shown(shown.info, shown.conversations, shown.one, console=console)
    assert ANSI.search(buf.getvalue())
    assert "\x1b[35m" in buf.getvalue() or "\x1b[35;" in buf.getvalue()  # magenta: collateral


def test_listing_and_truncation(noisy: Path, tmp_path: Path) -> None:
    r = run_cli("show", str(noisy))
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 12 + 2
    sid = SUITE[0].id
    short = run_cli("show", str(noisy), "--scenario", sid, "--lines", "1").stdout
    full = run_cli("show", str(noisy), "--scenario", sid, "--full").stdout
    assert "more lines (--full shows them)" not in full
    assert len(full) >= len(short)


def test_untrusted_answers_print_as_text(tmp_path: Path) -> None:
    """An answer full of rich markup and HTML is printed exactly as the model wrote it."""
    from fakeserver import FakeServer

    evil = "[bold red]HACKED[/bold red] <script>alert(1)</script> [link=http://x]y[/link]"
    out = tmp_path / "run"
    with FakeServer(lambda body: evil) as srv:
        r = run_cli("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                    str(out), "--limit", "1", "--no-cache")
        assert r.returncode == 0, r.stderr
    r = run_cli("show", str(out), "--scenario", SUITE[0].id)
    assert r.returncode == 0, r.stderr
    assert evil in r.stdout and "ABSTAINED" in r.stdout


def test_clear_errors(noisy: Path, tmp_path: Path) -> None:
    for args, words in (
        (("--scenario", "no-such-id"), "no scenario 'no-such-id'"),
        (("--layout", "Q"), "no layout Q"),
        (("--repeat", "3"), "no repeat 3"),
        (("--lines", "0"), "--lines must be at least 1"),
    ):
        r = run_cli("show", str(noisy), *args)
        assert r.returncode == 1 and words in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    r = run_cli("show", str(tmp_path))
    assert r.returncode == 1 and "not a run directory" in r.stderr
