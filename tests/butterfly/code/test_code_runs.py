"""The code track end to end (contract section 7): scripted agents played, observed and scored
through the same commands as the spec track; the observation cache; abstentions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_inproc
from fakeserver import FakeServer

from butterfly import api
from butterfly.code import conversation
from butterfly.code.agents import code_answers, collateral_change
from butterfly.core.agents import agent_specs
from butterfly.core.metrics import score_scenario
from butterfly.runs import observe
from butterfly.suite.load import load_suite
from oracle import replay

pytestmark = pytest.mark.xdist_group("code-runs")  # one worker plays the module's runs once

SUITE = ROOT / "tests/butterfly/code/code_suite.jsonl"
SCENARIOS = load_suite(SUITE)


def _run(tmp_path: Path, agent: str) -> Any:
    return api.run(model=f"script/{agent}", suite=str(SUITE), track="code",
                   out=tmp_path / agent, cache=None)


@pytest.fixture(scope="module")
def played(code_runs: Path) -> Path:
    """oracle, refactor, collateral, noop and last-edit (tests/conftest.py)."""
    return code_runs


@pytest.fixture(scope="module")
def scored(played: Path) -> dict[str, Any]:
    return {p.name: api.score_run(p) for p in played.iterdir()}


@pytest.fixture
def oracle_run(played: Path, scored: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the oracle's run, its programs observed once (by ``scored``)."""
    return Path(shutil.copytree(played / "oracle", tmp_path / "oracle"))


@pytest.mark.parametrize("agent", ["oracle", "refactor"])
def test_the_oracle_and_its_refactoring_score_every_turn(scored: dict[str, Any],
                                                         agent: str) -> None:
    s = scored[agent]
    assert (s.final_match, s.turn_match, s.change_radius) == (1.0, 1.0, 0.0)
    assert s.code is not None and s.code.turns_observed == 12 and s.code.turns_broken == 0


def test_collateral_shows_exactly_its_planted_change_radius(scored: dict[str, Any]) -> None:
    assert scored["collateral"].change_radius == 1.0
    assert scored["collateral"].final_match == 0.0
    for s in SCENARIOS:
        change = collateral_change(s)
        assert change is not None and change[0] not in {"output_format", "quote_style"}


@pytest.mark.parametrize("agent", ["noop", "last-edit"])
def test_baselines_score_what_the_oracle_alone_says(scored: dict[str, Any], agent: str) -> None:
    want = [score_scenario(s, agent_specs(agent, s)[1:]) for s in SCENARIOS]
    got = scored[agent]
    assert got.final_match == pytest.approx(sum(w.final_match for w in want) / len(want))
    turns = [m for w in want for m in w.turn_match]
    assert got.turn_match == pytest.approx(sum(turns) / len(turns))


def test_a_rescore_and_a_resume_run_no_program_again(oracle_run: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    lines = (oracle_run / observe.OBSERVATIONS).read_text().splitlines()
    keys = {(r["program_sha256"], json.dumps(r["expect"])) for r in map(json.loads, lines)}
    assert 0 < len(keys) == len(lines) < 12  # one per distinct (program, expected spec)

    def refuse(*_: object) -> None:
        raise AssertionError("a program ran again")

    monkeypatch.setattr(observe, "observe", refuse)
    assert api.score_run(oracle_run).final_match == 1.0
    assert _run(tmp_path, "oracle").manifest.n_calls == 12  # resumed: nothing to play
    assert api.score_run(oracle_run).code is not None
    assert api.observe(oracle_run).observed == 0


def test_a_torn_observation_is_left_out_then_cut(oracle_run: Path) -> None:
    path = oracle_run / observe.OBSERVATIONS
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[0][:40])  # a kill mid-write
    score = api.score_run(oracle_run)
    assert score.final_match == 1.0 and score.code is not None
    assert score.code.unobserved_turns == 0
    assert api.observe(oracle_run).observed == 0
    path.write_bytes(whole + b'{"schema_version":2,')
    (oracle_run / observe.SEAL).unlink()  # killed before its first seal: nothing vouched for
    score = api.score_run(oracle_run)
    assert score.code is not None and score.code.unobserved_turns == 12
    assert score.n_conversations == 0 and score.code.unobserved_conversations == 3
    assert api.observe(oracle_run).observed == len(whole.splitlines())  # cut, observed again
    again = path.read_bytes().splitlines(keepends=True)
    assert len(again) == len(whole.splitlines()) and all(x.endswith(b"}\n") for x in again)
    assert json.loads((oracle_run / observe.SEAL).read_text())["observations"] == len(again)
    assert api.score_run(oracle_run).final_match == 1.0


def test_the_first_message_shows_the_initial_program_and_the_rules() -> None:
    s = SCENARIOS[0]
    first = conversation.added_messages(s, 1, None)
    assert first[0]["content"] == conversation.SYSTEM
    assert "```python\n" in first[1]["content"] and s.turns[0].text in first[1]["content"]
    assert "keep its code in the program, unchanged, even while" in conversation.SYSTEM
    assert "removes a requirement" not in conversation.SYSTEM
    later = conversation.added_messages(s, 2, "previous answer")
    assert later[0] == {"role": "assistant", "content": "previous answer"}
    assert conversation.PROGRAM_INTRO not in later[1]["content"]


def _answer(body: dict[str, Any]) -> str:
    """A model that abstains in every way: no program, a syntax error, then the program echoed
    in its answer before the real one (the last block counts)."""
    turns = sum(1 for m in body["messages"] if m["role"] == "user")
    if turns == 1:
        return "I would change the output format."
    if turns == 2:
        return "```python\ndef main(:\n```"
    scenario = SCENARIOS[0]
    program = code_answers("oracle", scenario)[turns]
    return "Before:\n```python\nprint('old')\n```\nAfter:\n" + program


def test_abstentions_of_a_served_model(tmp_path: Path) -> None:
    with FakeServer(_answer) as srv:
        r = run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base, "--suite",
                       str(SUITE), "--limit", "1", "--track", "code", "--out", str(tmp_path / "r"),
                       "--no-cache")
    assert r.returncode == 0, r.stderr
    score = api.score_run(tmp_path / "r")
    assert score.abstention_by_reason == {"no_program": 1, "syntax": 1}
    assert score.final_match == 1.0  # turns 3 to 5: the last block is the oracle's program


def test_a_conversation_over_the_context_window_abstains_and_goes_on(tmp_path: Path) -> None:
    def over(index: int, body: dict[str, Any]) -> Any:
        users = sum(1 for m in body["messages"] if m["role"] == "user")
        return "context" if users >= 4 else None

    oracle = code_answers("oracle", SCENARIOS[0])
    with FakeServer(lambda body: oracle[sum(1 for m in body["messages"]
                                            if m["role"] == "user")], faults=over) as srv:
        r = run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base, "--suite",
                       str(SUITE), "--limit", "1", "--track", "code", "--out",
                       str(tmp_path / "r"), "--no-cache")
    assert r.returncode == 0, r.stderr
    score = api.score_run(tmp_path / "r")
    assert score.abstention_by_reason == {"context": 2} and score.incomplete == 0


@pytest.mark.parametrize("flags", [("--mode", "restate"), ("--layouts", "E,Q"),
                                   ("--strategy", "cot")])
def test_the_code_track_refuses_what_it_does_not_play(tmp_path: Path,
                                                      flags: tuple[str, str]) -> None:
    r = run_inproc("run", "--model", "script/oracle", "--suite", str(SUITE), "--track", "code",
                   "--out", str(tmp_path / "r"), *flags)
    assert r.returncode == 1 and "the code track plays chat mode" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_code_agent_on_the_spec_track_is_one_clear_line(tmp_path: Path) -> None:
    r = run_inproc("run", "--model", "script/refactor", "--suite", "butterfly-40",
                   "--out", str(tmp_path / "r"))
    assert r.returncode == 1 and "plays the code track" in r.stderr


def test_every_scenario_of_the_fixture_is_a_code_scenario() -> None:
    for s in SCENARIOS:
        assert replay(s)  # valid


def test_show_gives_each_turns_program_diff_beside_the_observed_spec(played: Path,
                                                                   scored: dict[str, Any]) -> None:
    r = run_inproc("show", str(played / "collateral"), "--scenario", "code-undo-last")
    assert r.returncode == 0, r.stderr
    change = collateral_change(SCENARIOS[0])
    assert change is not None
    assert "program diff:" in r.stdout and "+++ turn 1" in r.stdout
    assert f"~ {change[0]} = '{change[1]}'" in r.stdout  # the planted change, as collateral
    assert "program: unchanged" in r.stdout  # the distractor's turn


def test_the_report_has_the_code_tracks_section(played: Path, scored: dict[str, Any],
                                                tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    r = run_inproc("report", str(played / "oracle"), str(played / "noop"), "--html", str(html))
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    assert '<section id="code-track">' in page and "bubblewrap" in page


HOSTILE = '''```python
import os, socket, sys
secret = os.environ.get("OPENAI_API_KEY", "")
open("/tmp/butterfly-hostile-marker", "w").write(secret)
socket.create_connection(("127.0.0.1", 9), timeout=1)
while True:
    os.fork()
```'''


def test_a_hostile_program_is_broken_recorded_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-reaches-the-program")
    marker = Path("/tmp/butterfly-hostile-marker")
    marker.unlink(missing_ok=True)
    with FakeServer(lambda body: HOSTILE) as srv:
        r = run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base, "--suite",
                       str(SUITE), "--limit", "1", "--track", "code", "--out",
                       str(tmp_path / "r"), "--no-cache")
    assert r.returncode == 0, r.stderr
    score = api.score_run(tmp_path / "r")
    assert score.code is not None and score.code.turns_observed == 5
    assert score.code.turns_broken == 5 and score.final_match == 0.0
    record = json.loads((tmp_path / "r" / observe.OBSERVATIONS).read_text().splitlines()[0])
    assert set(record["observed"].values()) <= {"broken", "unobserved"}
    assert not marker.exists()  # nothing written outside its private directory


def test_a_code_run_answers_with_room_for_a_whole_program() -> None:
    from butterfly.core.vocab import DEFAULTS

    assert api.run_params(api.options(suite=str(SUITE), track="code")).max_tokens == 4096
    assert api.run_params(api.options(suite=str(SUITE))).max_tokens == DEFAULTS.max_tokens
    assert api.run_params(api.options(suite=str(SUITE), track="code",
                                      max_tokens=1500)).max_tokens == 1500


def test_shards_of_a_code_run_merge_and_score(tmp_path: Path) -> None:
    shards = [api.run(model="script/oracle", suite=str(SUITE), track="code", shard=f"{i}/2",
                      out=tmp_path / f"s{i}", cache=None).path for i in (1, 2)]
    merged = api.merge(shards, tmp_path / "merged")
    assert merged.params.track == "code" and merged.sandbox is not None
    assert api.score_run(tmp_path / "merged").final_match == 1.0


def test_an_observation_of_another_extractor_is_made_again(oracle_run: Path) -> None:
    path = oracle_run / observe.OBSERVATIONS
    records = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "extractor": r["extractor"] - 1,  # as version 1
                                        "schema_version": 1, "chain_sha256": None}) + "\n"
                            for r in records))
    (oracle_run / observe.SEAL).unlink()
    assert api.score_run(oracle_run).final_match is None  # read, never observed by a reader
    assert api.observe(oracle_run).observed == len(records)
    assert api.score_run(oracle_run).final_match == 1.0
    fresh = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(fresh) == len(records) and {r["extractor"] for r in fresh} == {
        records[0]["extractor"]}


def test_a_code_run_whose_manifest_is_lost_is_rebuilt_as_a_code_run(oracle_run: Path) -> None:
    """``repair`` with the run's flags rebuilds a code run's manifest as a new code run's: the
    code track's prompt version and this machine's sandbox, and it scores as before."""
    before = api.score_run(oracle_run).final_match
    (oracle_run / "manifest.json").unlink()
    flags = api.RunOptions(model="script/oracle", suite=str(SUITE), track="code", cache=None)
    api.repair(oracle_run, flags)
    manifest = json.loads((oracle_run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["prompt_version"] == conversation.CODE_PROMPT_VERSION
    assert manifest["sandbox"] is not None and manifest["params"]["track"] == "code"
    assert api.score_run(oracle_run).final_match == before == 1.0
