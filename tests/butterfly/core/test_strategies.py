"""Strategies and output protocols: each renders its template; answers in every protocol parse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from fakeserver import FakeServer

from butterfly.core.prompts import (
    COT,
    FORMATS,
    SYSTEM,
    messages,
    prompt_fingerprint,
    system_message,
)
from butterfly.core.vocab import PROTOCOLS, STRATEGIES
from butterfly.suite.load import load_suite
from oracle import replay

SCENARIOS = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")


def test_default_style_is_the_original_prompt() -> None:
    assert system_message() == SYSTEM
    assert prompt_fingerprint() == prompt_fingerprint("zero-shot", "json")
    assert prompt_fingerprint("few-shot", "schema") != prompt_fingerprint()


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_strategy_and_protocol_renders_its_template(strategy: str, protocol: str) -> None:
    s = SCENARIOS[0]
    msgs = messages(s, 2, ["{}"], "E", "chat", strategy, protocol)
    system = msgs[0]["content"]
    assert system.endswith(FORMATS[protocol])
    assert (COT in system) == (strategy == "cot")
    assert ("Worked examples" in system) == (strategy == "few-shot")
    for m in msgs:
        if m["role"] == "user":
            assert m["content"].endswith(FORMATS[protocol])


def test_few_shot_examples_are_oracle_answers_and_not_from_the_suite() -> None:
    system = system_message("few-shot", "schema")
    texts = [line[7:-1] for line in system.splitlines() if line.startswith('User: "')]
    specs = [json.loads(line[6:]) for line in system.splitlines() if line.startswith("Spec: ")]
    assert len(texts) == len(specs) == 3
    suite_texts = {t.text for s in SCENARIOS for t in s.turns}
    assert not set(texts) & suite_texts
    assert specs[1]["input_format"] == "tsv" and specs[1]["delimiter"] == "tab"  # a rule applied
    assert specs[2]["input_format"] == "csv" and specs[2]["log_level"] == "warning"  # undo


def _oracle_answer(scenarios: list[Any], protocol: str) -> Any:
    table: dict[tuple[str, ...], str] = {}
    for s in scenarios:
        specs = replay(s)
        for t in range(1, len(s.turns) + 1):
            key = tuple(x.text for x in s.turns[:t])
            table[key] = json.dumps(specs[t])

    def respond(body: dict[str, Any]) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        turn = len(users)
        for key, answer in table.items():
            if len(key) == turn and all(k in u for k, u in zip(key, users, strict=True)):
                if protocol == "json-first":  # quoting an object in the explanation
                    return (f'{answer}\nI applied the change and kept everything else, e.g. '
                            '{"log_level": "debug"} was not asked for.')
                if protocol == "json-last":
                    return f"The user changes one setting; rules checked.\n{answer}"
                return answer
        raise AssertionError("unknown conversation")

    return respond


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_protocols_end_to_end(tmp_path: Path, protocol: str) -> None:
    subset = SCENARIOS[:3]
    out = tmp_path / "run"
    with FakeServer(_oracle_answer(subset, protocol)) as srv:
        r = run_cli("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                    str(out), "--limit", "3", "--no-cache", "--protocol", protocol,
                    "--strategy", "cot" if protocol == "json-last" else "few-shot")
        assert r.returncode == 0, r.stderr
        has_schema = {("response_format" in b) for b in srv.requests}
        assert has_schema == {protocol == "schema"}
    score = json.loads(run_cli("score", str(out), "--json").stdout)
    assert score["final_match"] == 1.0 and score["abstention"] == 0.0
    if protocol == "json-first":  # score --protocol re-reads the raw answers
        strict = json.loads(run_cli("score", str(out), "--json", "--parse", "strict").stdout)
        assert strict["final_match"] == 1.0 and strict["parse"] == "strict"
        last = json.loads(run_cli("score", str(out), "--json", "--protocol", "json-last").stdout)
        assert last["final_match"] == 0.0  # the quoted object is not a spec
        assert last["abstention_by_reason"] == {"missing_key": last["n_answers"]}


def test_strategy_is_answer_changing_and_cot_needs_room(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_cli("run", "--model", "script/oracle", "--out", str(out), "--limit", "1",
                   "--no-cache").returncode == 0
    r = run_cli("run", "--model", "script/oracle", "--out", str(out), "--limit", "1",
                "--strategy", "few-shot")
    assert r.returncode == 1 and "answer-changing" in r.stderr
    r = run_cli("run", "--model", "script/oracle", "--out", str(tmp_path / "x"), "--strategy",
                "cot")
    assert r.returncode == 1 and "json-last" in r.stderr
