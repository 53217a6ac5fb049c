"""Output protocols read as they are defined: json-first takes the object that opens the
answer, json-last the one that closes it; strict accepts exactly that position."""

from __future__ import annotations

import json

import pytest
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly.core.parse import parse_answer
from butterfly.core.vocab import PARSE_MODES
from oracle import canonical_initial

SPEC = canonical_initial()
OBJ = json.dumps(SPEC)
QUOTE = '{"log_level": "debug"}'
FIRST = f"{OBJ}\n\nI left everything as it was; the user did not ask for {QUOTE}."
LAST = f"The user asks for {QUOTE}? No: a question only.\n{OBJ}"
FENCED_FIRST = f"```json\n{OBJ}\n```\nNothing changed, not even {QUOTE}."


@pytest.mark.parametrize("mode", PARSE_MODES)
def test_a_compliant_json_first_answer_quoting_an_object_parses(mode: str) -> None:
    for text in (FIRST, FENCED_FIRST):
        p = parse_answer(text, mode, protocol="json-first")  # type: ignore[arg-type]
        assert p.spec == SPEC, (mode, p)
        # read as the last object it abstains: the quoted object is not a spec
        assert parse_answer(text, mode).spec is None  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", PARSE_MODES)
def test_a_compliant_json_last_answer_parses_in_every_mode(mode: str) -> None:
    assert parse_answer(LAST, mode, protocol="json-last").spec == SPEC  # type: ignore[arg-type]


def test_strict_abstains_when_the_object_is_elsewhere() -> None:
    p = parse_answer(LAST, "strict", protocol="json-first")
    assert p.spec is None and p.reason == "misplaced"
    p = parse_answer(FIRST, "strict", protocol="json-last")
    assert p.spec is None and p.reason == "misplaced"
    # without a protocol, strict still wants the whole answer to be the object
    assert parse_answer(FIRST, "strict").reason == "bad_json"
    assert parse_answer(OBJ, "strict", protocol="json-first").spec == SPEC
    assert parse_answer(OBJ, "strict", protocol="json-last").spec == SPEC


def test_structured_json_first_ignores_a_later_draft_and_reads_a_cut_off_start() -> None:
    other = dict(SPEC, log_level="debug")
    text = f"{OBJ}\nA draft I rejected: {json.dumps(other)}"
    assert parse_answer(text, "structured", protocol="json-first").spec == SPEC
    assert parse_answer(text, "structured", protocol="json-last").spec == other
    cut = OBJ[:-40] + f"\nand then {QUOTE}"
    p = parse_answer(cut, "structured", protocol="json-first")
    assert p.spec is None and p.reason == "bad_json"  # never the quoted object


def test_parse_and_score_take_the_protocol(tmp_path: object) -> None:
    r = run_cli("parse", "--mode", "strict", "--protocol", "json-first", stdin=FIRST)
    assert r.returncode == 0 and json.loads(r.stdout) == SPEC
    r = run_cli("parse", "--mode", "strict", "--protocol", "json-last", stdin=FIRST)
    assert r.returncode == 3 and "misplaced" in r.stderr
    r = run_cli("parse", "--mode", "structured", stdin=FIRST)
    assert r.returncode == 3
