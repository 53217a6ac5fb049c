"""What reaches a terminal (issue 12): data's control characters escaped, tables within 80
columns without cutting a model name or an interval, tok/s only for generated tokens,
intervals inside their metric's range, help lines and defaults on every flag."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest
from conftest import cli_in_process, rewrite_calls, rewrite_manifest
from rich.console import Console

from butterfly.cli import build_parser
from butterfly.core.printable import printable
from butterfly.core.scores import RunScore
from butterfly.core.stats import mean_interval

EVIL = "\x1b[31mred\x1b]0;pwned title\x07\x1b[2J\x1b[H\u202eevil"


cli = cli_in_process


@pytest.fixture
def evil_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A run whose model name and first raw answer hold escape sequences."""
    out = tmp_path / "run"
    code, _, err = cli(capsys, "run", "--model", "script/noop", "--out", str(out), "--limit",
                       "2", "--no-cache")
    assert code == 0, err
    calls = out / "calls.jsonl"
    recs = [json.loads(x) for x in calls.read_text().splitlines()]
    recs[0]["raw"] = EVIL + recs[0]["raw"]
    rewrite_calls(out, [json.dumps(r) for r in recs])  # as a model answering so leaves it
    rewrite_manifest(out, model="script/noop" + EVIL)
    return out


def test_printable_escapes_controls_and_keeps_lines() -> None:
    assert printable("a\x1b[2Jb\n\tc\r") == "a\\x1b[2Jb\n\tc\\x0d"
    assert printable("x\ny\u202e", newlines=False) == "x\\x0ay\\u202e"
    assert printable("plain café ✓") == "plain café ✓"


def test_show_score_flips_and_errors_never_send_escapes(
        evil_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = json.loads((evil_run / "calls.jsonl").read_text().splitlines()[0])["scenario"]
    for args in (["show", str(evil_run), "--scenario", sid], ["show", str(evil_run)],
                 ["score", str(evil_run)], ["flips", str(evil_run)],
                 ["show", str(evil_run), "--scenario", "\x1b[2Jnope"],
                 ["validate", "/nonexistent/\x1b]0;t\x07.jsonl"]):
        code, out, err = cli(capsys, *args)
        assert code in (0, 1), err
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, args
    code, out, _ = cli(capsys, "show", str(evil_run), "--scenario", sid)
    assert "\\x1b[31mred\\x1b]0;pwned title\\x07\\x1b[2J" in out  # shown, escaped
    _, out, _ = cli(capsys, "score", str(evil_run))
    assert "\\x1b[31m" in out


def _report(model: str) -> RunScore:
    from conftest import ROOT

    from butterfly.analysis.scoring import score_run
    base = ROOT / "runs"
    run = next(p for p in sorted(base.iterdir()) if (p / "manifest.json").is_file())
    result = score_run(run)
    return result.model_copy(update={"model": model})


@pytest.mark.parametrize("model", ["script/oracle", "openai/a-rather-long-model-name-v2-2026"])
def test_the_score_table_fits_80_columns_and_cuts_nothing(model: str) -> None:
    from butterfly.present.display import print_score

    result = _report(model)
    buf = io.StringIO()
    print_score(result, Console(file=buf, width=80, color_system=None))
    text = buf.getvalue()
    assert max(len(x) for x in text.splitlines()) <= 80, text
    assert "…" not in text, text
    flat = text.replace("\n", "").replace("│", "").replace(" ", "")
    assert model.replace(" ", "") in flat  # folded onto lines perhaps, never cut
    ci = result.final_match_ci
    if ci is not None:
        assert f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f}%" in text


def test_no_tok_s_for_agents_that_generate_nothing(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "run", "--model", "script/oracle", "--out", str(tmp_path / "r"),
                       "--limit", "2", "--no-cache")
    assert code == 0 and " - tok/s" in err and ".0 tok/s" not in err, err


def test_a_change_radius_interval_is_never_negative() -> None:
    ci = mean_interval([[0.0], [0.0], [0.0], [4.0]], low=0.0, high=20.0)
    assert ci is not None and ci[0] == 0.0 and ci[1] > 0
    assert mean_interval([[0.0], [0.0], [0.0], [4.0]]) is not None
    raw = mean_interval([[0.0], [0.0], [0.0], [4.0]])
    assert raw is not None and raw[0] < 0  # what the clipping removes


def _actions(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    """Every argument of ``parser`` and of its subcommands, with the command it belongs to."""
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                out += _actions(sub)
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            out.append((parser.prog, a))
    return out


def test_every_flag_has_a_help_line_and_help_names_the_exit_codes(
        capsys: pytest.CaptureFixture[str]) -> None:
    missing = [f"{prog}: {a.option_strings or a.dest}" for prog, a in _actions(build_parser())
               if a.help is None]
    assert not missing, missing
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    for line in ("0    success", "1    user error", "2    usage", "3    parse", "4    run",
                 "5    run, sequential, score: the run failed", "130  interrupted"):
        assert line in out
    _, out, _ = cli(capsys, "run", "--help")
    flat = " ".join(out.split())
    assert "temperature (finite, 0 or more) (default: 0.0)" in flat
    assert "(default: butterfly-40)" in flat and "(default: None)" not in flat


def test_parse_takes_parse_like_run_and_score_and_mode_still_works(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    answer = "here it is: {\"a\": 1}"
    for flag in ("--parse", "--mode"):
        monkeypatch.setattr("sys.stdin", io.StringIO(answer))
        code, _, err = cli(capsys, "parse", flag, "strict")
        assert code == 3 and "abstention" in err
    _, out, _ = cli(capsys, "parse", "--help")
    assert "--mode" not in out.splitlines()[0]  # the old spelling works, out of the usage


def test_score_and_score_json_say_the_same_censored_horizon(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every turn of chains of 3 and 8 turns matched: "above 8 turns" in both, no number."""
    suite, out = tmp_path / "ladder.jsonl", tmp_path / "run"
    code, _, err = cli(capsys, "generate", "--lengths", "3,8", "--per-length", "3", "--out",
                       str(suite))
    assert code == 0, err
    code, _, err = cli(capsys, "run", "--model", "script/oracle", "--suite", str(suite),
                       "--out", str(out), "--no-cache")
    assert code == 0, err
    code, text, _ = cli(capsys, "score", str(out))
    assert code == 0 and ("horizon: above 8 turns (no conversation failed); final match by "
                          "chain length: 3: 100.0% (n=3), 8: 100.0% (n=3)") in text
    code, text, _ = cli(capsys, "score", str(out), "--json")
    h = json.loads(text)["horizon"]
    assert (h["turns"], h["censored"], h["bound"], h["ci"], h["note"]) == (
        None, "above", 8, [8, None], "no conversation failed")


MARKED = "openai/\x1b[31mred[bold]x[/bold][red]y"
"""A model name with an escape and Rich markup: shown as written, escaped, never obeyed."""
SHOWN = "openai/\\x1b[31mred[bold]x[/bold][red]y"


@pytest.fixture
def marked_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """Two runs of a suite file whose name holds an escape and markup, the first in a directory
    whose name does too, both with :data:`MARKED` as their model."""
    from conftest import ROOT

    suite = tmp_path / "s\x1b[32m[italic]uite.jsonl"
    lines = (ROOT / "scenarios" / "butterfly-40.jsonl").read_text().splitlines()[:2]
    suite.write_text("\n".join(lines) + "\n")
    runs = (tmp_path / "runs" / "a\x1b[33m[u]run", tmp_path / "runs" / "b")
    for out in runs:
        code, _, err = cli(capsys, "run", "--model", "script/noop", "--suite", str(suite),
                           "--out", str(out), "--no-cache")
        assert code == 0, err
        rewrite_manifest(out, model=MARKED)
    return runs


def test_names_from_data_are_escaped_and_never_read_as_markup(
        marked_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """``runs`` lists, ``score`` scores, ``compare`` compares and ``show`` shows a run whose
    model name, directory and suite file hold an ESC byte and Rich markup: every one printed
    with the byte escaped (``\\x1b``) and the markup as written (the table title read it as
    markup: ``[bold]`` vanished)."""
    a, b = (str(x) for x in marked_runs)
    sid = json.loads((marked_runs[1] / "calls.jsonl").read_text().splitlines()[0])["scenario"]
    for args in (["runs", str(marked_runs[0].parent)], ["score", a], ["score", b],
                 ["compare", a, b], ["show", b, "--scenario", sid], ["show", a],
                 ["flips", a, b], ["audit", a, b]):
        code, out, err = cli(capsys, *args)
        assert code == 0, (args, err)
        for text in (out, err):
            assert "\x1b" not in text, args
        if args[0] != "audit":
            assert SHOWN in out, (args, out)
        if args[0] in ("runs", "score"):
            assert "s\\x1b[32m[italic]uite" in out, args  # the suite's name
        if args[0] in ("runs", "compare", "flips"):
            assert printable(a) in out, args  # the run's directory


def test_the_report_s_chart_legends_show_such_a_name_escaped(
        marked_runs: tuple[Path, Path], tmp_path: Path) -> None:
    """The charts' legends (first divergent turn) write a run's label as the terminal does:
    control characters escaped, never the raw byte (the SVG is text a browser shows)."""
    from butterfly.present.report import write_report

    write_report(list(marked_runs), tmp_path / "r.html", None, "bh", 0.1)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    chart = page.split('id="chart-first-divergent"')[1].split("</svg>")[0]
    assert "\x1b" not in chart and "\\x1b" in chart


def test_a_terminal_shows_the_markup_of_a_name_as_written(
        marked_runs: tuple[Path, Path]) -> None:
    """On a terminal (colours on), the score's title, table and lines and show's transcript
    print the name's brackets literally: rich reads no markup from data."""
    from butterfly import api
    from butterfly.analysis.scoring import score_run
    from butterfly.present.display import print_score
    from butterfly.present.show import print_shown

    console = Console(file=io.StringIO(), width=200, force_terminal=True, record=True)
    print_score(score_run(marked_runs[1]), console)
    text = console.export_text()
    title = next(line for line in text.splitlines() if "ButterflyBench:" in line)
    assert SHOWN in title and "s\\x1b[32m[italic]uite" in title
    assert text.count(SHOWN) == 3  # the title, the score table, the table by category
    console = Console(file=io.StringIO(), width=200, force_terminal=True, record=True)
    shown = api.show(marked_runs[1])
    print_shown(shown.info, shown.conversations, shown.one, console=console)
    assert SHOWN in console.export_text()
