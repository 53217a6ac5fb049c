"""The notebook's code track (issue 23 item 8) beside ``butterfly run --track code`` + ``score``.

The tiny code suite is played both ways against the same scripted server (the oracle's program,
a program that always fails, an answer without a program, one that does not compile, the
collateral agent's and the no-op agent's programs): the notebook's messages must be the CLI's,
and its figures per turn (turn match, broken settings), per scenario (final match, change
radius, abstentions) and over the run (the code track's line) must be ``score``'s. Once through
the runner's functions in this process, once by executing the notebook headless (inlined
modules, the fallback sandbox forced).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_inproc
from fakeserver import FakeServer
from notebook_kernel import SharedKernel
from test_notebook import _need_kbench, execute

from butterfly.code.agents import code_answers
from butterfly.code.conversation import SYSTEM, code_spec, program_block, user_message
from butterfly.code.judge import broken
from butterfly.code.program import render
from butterfly.core.prompts import Message
from butterfly.kaggle import code_track as ct
from butterfly.kaggle import notebook
from butterfly.kaggle import runner as bb
from butterfly.runs.reader import load_run
from butterfly.suite.load import load_suite
from oracle import Scenario, replay

SUITE = ROOT / "tests/butterfly/code/code_suite.jsonl"
SCENARIOS = {s.id: s for s in load_suite(SUITE)}
MAX_TOKENS = 4000


def answer(sid: str, turn: int) -> str:
    """The scripted answer to ``turn`` of scenario ``sid`` (see the module's docstring)."""
    s = SCENARIOS[sid]
    if sid == "code-undo-last":
        program = render(code_spec(replay(s)[turn]))
        failing = program_block(f"raise SystemExit(3)\n{program}")  # every setting broken
        return {1: f"Done.\n\n{program_block(program)}", 2: failing,
                3: "I would rather not write code today.", 4: "```python\ndef main(:\n```",
                5: program_block(program)}[turn]
    agent = "collateral" if sid == "code-coupling" else "noop"
    return code_answers(agent, s)[turn]


def _key(body: dict[str, Any]) -> tuple[str, int]:
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    sid = next(i for i, s in SCENARIOS.items() if user_message(s, 1) == users[0])
    return sid, len(users)


def respond(body: dict[str, Any]) -> str:
    return answer(*_key(body))


def cli_figures(tmp_path: Path, api_base: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``butterfly run --track code`` on the fake server, then ``score``: (per scenario figures,
    the code track's figures)."""
    out = tmp_path / "cli"
    r = run_inproc("run", "--model", "openai/fake", "--api-base", api_base, "--suite",
                   str(SUITE), "--track", "code", "--max-tokens", str(MAX_TOKENS), "--no-cache",
                   "--out", str(out), env={"BUTTERFLY_SANDBOX": "fallback"})
    assert r.returncode == 0, r.stderr
    s = run_inproc("score", str(out), "--json", env={"BUTTERFLY_SANDBOX": "fallback"})
    assert s.returncode == 0, s.stderr
    score = json.loads(s.stdout)
    run = load_run(out)
    turns = run.turns()
    per: dict[str, Any] = {}
    for row in score["scenarios"]:
        sc = SCENARIOS[row["id"]]
        oracle = replay(sc)
        specs = [next(v.spec for k, v in turns.items() if k.scenario == sc.id and k.turn == t)
                 for t in range(1, len(sc.turns) + 1)]
        per[row["id"]] = {
            "final_match": row["final_match"], "change_radius": row["change_radius"],
            "first_divergent_turn": row["first_divergent_turn"],
            "abstentions": row["abstentions"],
            "turn_match": [spec == oracle[t] for t, spec in enumerate(specs, 1)],
            "broken": [None if spec is None else broken(spec) for spec in specs]}
    return per, score["code"]


def nb_figures(verdicts: list[Any]) -> dict[str, Any]:
    keys = ("final_match", "change_radius", "first_divergent_turn", "abstentions",
            "turn_match", "broken")
    return {v["id"]: {k: v[k] for k in keys} for v in verdicts}


def _play(s: Scenario, cli_by_turn: dict[tuple[str, int], Any]) -> list[bb.Answer]:
    """Play ``s`` with the runner's loop against the script, checking every request's messages
    against the CLI's."""

    def reply(chat: list[Message]) -> bb.Answer:
        assert chat[0] == {"role": "system", "content": SYSTEM}
        assert chat == cli_by_turn[_key({"messages": chat})]  # the CLI's messages
        return bb.Answer(respond({"messages": chat}), 100)

    answers = bb.play(s, reply, retries=lambda call: call(), settings=ct.CODE)
    for t in range(1, len(s.turns) + 1):
        assert bb.messages_for(s, t, [a.text for a in answers], ct.CODE) == cli_by_turn[(s.id, t)]
    return answers


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any],
                                                             list[Any]]:
    with FakeServer(respond) as srv:
        per, code = cli_figures(tmp_path_factory.mktemp("code-cli"), srv.api_base)
        bodies = list(srv.requests)
    return per, code, bodies


def test_the_runner_plays_and_scores_the_code_track_as_the_cli(
        cli: tuple[dict[str, Any], dict[str, Any], list[Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    per, code, bodies = cli
    monkeypatch.setenv("BUTTERFLY_SANDBOX", "auto")
    assert "sandbox: fallback (forced" in ct.use_fallback_sandbox()
    observe = ct.observe_cached()
    cli_by_turn = {_key(b): b["messages"] for b in bodies}
    verdicts = [ct.with_broken(bb.verdict(s, _play(s, cli_by_turn), MAX_TOKENS, settings=ct.CODE,
                                          judge=ct.judge_with(s, observe)))
                for s in SCENARIOS.values()]
    assert nb_figures(verdicts) == per
    figures = ct.code_figures(verdicts)
    assert figures.model_dump() == {**code, "sandbox": ("fallback",)}
    assert ct.code_text(verdicts).startswith(f"code track: {code['turns_observed']} turns")
    # the script reaches every case: a match, a broken program, two abstentions, collateral
    assert per["code-undo-last"]["broken"][1] and per["code-undo-last"]["broken"][2:4] == [
        None, None]
    assert per["code-undo-last"]["turn_match"][0] and per["code-coupling"]["change_radius"] == 1
    assert [v["answers"][2]["abstention"] for v in verdicts[:1]] == ["no_program"]


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
def test_the_notebook_plays_the_code_track_as_the_cli(
        cli: tuple[dict[str, Any], dict[str, Any], list[Any]], tmp_path: Path,
        notebook_kernel: SharedKernel) -> None:
    _need_kbench()
    per, code, bodies = cli
    cwd = tmp_path / "working"
    cwd.mkdir()
    with FakeServer(respond) as srv:
        env = {"BUTTERFLY_OPENAI_BASE_URL": srv.api_base, "BUTTERFLY_OPENAI_MODEL": "fake",
               "BUTTERFLY_N_JOBS": "1", "BUTTERFLY_MAX_TOKENS": str(MAX_TOKENS),
               "BUTTERFLY_SUITE_FILE": str(SUITE), "BUTTERFLY_TRACK": "code",
               "BUTTERFLY_SANDBOX": "auto"}
        nb, _ = execute(notebook_kernel, cwd, env)
        nb_bodies = list(srv.requests)
    assert sorted(_key(b) for b in nb_bodies) == sorted(_key(b) for b in bodies)
    cli_by_turn = {_key(b): b["messages"] for b in bodies}
    assert all(b["messages"] == cli_by_turn[_key(b)] for b in nb_bodies)
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    assert verdicts["track"] == "code"
    assert nb_figures(verdicts["scenarios"]) == per
    shown = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "sandbox: fallback (forced: Kaggle has no bubblewrap)" in shown
    assert (f"code track: {code['turns_observed']} turns observed, "
            f"{code['broken_per_turn']:.3f} settings broken per turn") in shown


def _tree_with_a_code_suite(tmp_path: Path) -> Path:
    """A copy of the sources the build reads, with the tiny suite frozen as butterfly-code
    (its manifest says ``"track": "code"``, as the frozen suite's will)."""
    root = tmp_path / "tree"
    for d in ("butterfly", "oracle"):
        shutil.copytree(ROOT / d, root / d, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scenarios", root / "scenarios",
                    ignore=shutil.ignore_patterns("retired"))
    (root / "notebooks").mkdir()
    shutil.copy(ROOT / notebook.ESTIMATE, root / notebook.ESTIMATE)
    text = SUITE.read_text(encoding="utf-8")
    (root / "scenarios/butterfly-code.jsonl").write_text(text, encoding="utf-8")
    manifest = {"name": "butterfly-code", "track": "code",
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    (root / "scenarios/butterfly-code.manifest.json").write_text(json.dumps(manifest))
    return root


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
def test_the_build_carries_butterfly_code_once_it_is_frozen(
        tmp_path: Path, notebook_kernel: SharedKernel) -> None:
    """A tree without butterfly-code builds a notebook without it; a tree that has it gets it
    with its track, and ``SUITE_NAME = "butterfly-code"`` plays the code track by name."""
    if not (ROOT / "scenarios/butterfly-code.jsonl").is_file():  # until the suite lands
        assert "butterfly-code" not in {x.name for x in notebook.frozen_suites(ROOT)}
    root = _tree_with_a_code_suite(tmp_path)
    suites = notebook.frozen_suites(root)
    assert [(x.name, x.entry["track"]) for x in suites] == [
        ("butterfly-40", "spec"), ("butterfly-long", "spec"), ("butterfly-code", "code")]
    built = notebook.build(root)
    assert "%%butterfly_data scenarios/butterfly-code.jsonl" in built
    assert '\\"butterfly-code\\": {\\"sha256\\": ' in built
    path = tmp_path / "with-code.ipynb"
    path.write_text(built, encoding="utf-8")
    _need_kbench()
    cwd = tmp_path / "working"
    cwd.mkdir()
    with FakeServer(respond) as srv:
        env = {"BUTTERFLY_OPENAI_BASE_URL": srv.api_base, "BUTTERFLY_OPENAI_MODEL": "fake",
               "BUTTERFLY_N_JOBS": "1", "BUTTERFLY_SUITE": "butterfly-code",
               "BUTTERFLY_SCENARIOS": "code-coupling"}
        nb, _ = execute(notebook_kernel, cwd, env, path=path)
    shown = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "butterfly-code (code track, chat mode): 1 conversations, 3 calls" in shown
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    assert verdicts["suite"] == "butterfly-code" and verdicts["track"] == "code"
    assert verdicts["scenarios"][0]["change_radius"] == 1  # the collateral agent's programs
