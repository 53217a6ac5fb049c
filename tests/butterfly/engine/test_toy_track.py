"""A toy third track, written and registered here: the spec kept as YAML (issue 35, item 3).

It is what docs/design.md ("Where a change goes", a new track) names for a track that plays
the spec track's suites and needs no scripted agents of its own: one ``Track`` subclass and
its entry in the registry (``butterfly.engine.tracks.TRACKS``). The test patches nothing else:
the run layer, the engine, the records, the reader, the integrity checks, the scorer and the dry
run take the new track from the registry alone. It is played end to end through
``butterfly.run`` against a loopback fake server (a perfect YAML model, and one that misses a
turn), read back from disk, scored by ``score_run``, read again under another parse mode,
resumed, and counted by the dry run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from fakeserver import FakeServer

import butterfly
from butterfly.api.running import dry_run, options, run_params
from butterfly.core.prompts import Message
from butterfly.core.vocab import Protocol
from butterfly.engine.tracks import TRACKS, Parsed, Played, SpecTrack
from butterfly.errors import UserError
from butterfly.runs.reader import load_run
from butterfly.suite.load import resolve
from oracle import Scenario, replay

ASK_YAML = ("\n\nWrite the whole spec as one YAML mapping, one `setting: value` line per "
            "setting, and nothing else (no JSON).")


@dataclass(frozen=True)
class YamlTrack(SpecTrack):
    """The spec kept as YAML: the spec track's messages with the answer asked as YAML, its
    answers read as YAML into a spec (then checked by the spec track's parser), and scored as
    the spec track scores (its ``judge``)."""

    def fingerprint(self, p: Played) -> str:
        return f"yaml_prompt_version={self.prompt_version}\n{ASK_YAML}\n" + super().fingerprint(p)

    def added(self, scenario: Scenario, turn: int, previous: str | None, layout: str,
              p: Played) -> list[Message]:
        messages = super().added(scenario, turn, previous, layout, p)
        last = messages[-1]
        return [*messages[:-1], {**last, "content": last["content"] + ASK_YAML}]

    def read(self, text: str, p: Played, truncated: bool) -> Parsed:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            return Parsed(None, "no_yaml", f"not YAML: {str(e).splitlines()[0]}")
        if not isinstance(data, dict):
            return Parsed(None, "no_yaml", "the answer is not one YAML mapping")
        return super().read(json.dumps({str(k): str(v) for k, v in data.items()}), p,
                            truncated)

    def protocol(self, chosen: Protocol) -> Protocol:
        return "json"  # no JSON Schema as response_format: the answer is YAML

    def expected_answer(self, spec: Mapping[str, str]) -> str:
        return str(yaml.safe_dump(dict(spec), sort_keys=False))


TOY = YamlTrack("yaml", prompt_version=1, label="yaml ")
RUN: dict[str, Any] = {"model": "openai/fake", "suite": "butterfly-40", "track": "yaml",
                       "mode": "restate", "limit": 5, "retries": 0, "cache": None}


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(TRACKS, "yaml", TOY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    yield


def answers(wrong: str | None = None) -> dict[str, str]:
    """A YAML model of the run's scenarios, found from its one restated user message; with
    ``wrong``, that scenario's last turn is answered with its initial spec."""
    p = run_params(options(**RUN))
    out = {}
    for s in resolve("butterfly-40").scenarios[:RUN["limit"]]:
        oracle = replay(s)
        for t in range(1, len(s.turns) + 1):
            asked = TOY.added(s, t, None, "E", p)[-1]["content"]
            spec = s.initial if s.id == wrong and t == len(s.turns) else oracle[t]
            out[asked] = TOY.expected_answer(spec)
    return out


def served(table: dict[str, str]) -> FakeServer:
    return FakeServer(lambda body: table[body["messages"][-1]["content"]])


def test_a_registered_track_is_played_read_back_and_scored(tmp_path: Path) -> None:
    with served(answers()) as srv:
        run = butterfly.run(**RUN, api_base=srv.api_base, out=tmp_path / "r")
        sent = srv.count
        assert srv.requests[0].get("response_format") is None  # its own protocol: no schema
        assert "YAML" in srv.requests[0]["messages"][-1]["content"]
        again = butterfly.run(**RUN, api_base=srv.api_base, out=tmp_path / "r")
        assert srv.count == sent  # a resume: every answer is on file
    assert run.manifest.status == "complete" and run.manifest.params.track == "yaml"
    assert run.manifest.prompt_version == 1
    assert run.manifest.prompt_sha256 == TOY.prompt_sha256(run.params)
    assert all(v.raw and not v.raw.lstrip().startswith("{") for v in run.records.values())
    assert all(v.spec is not None for v in run.records.values())
    score = butterfly.score_run(run)
    assert score.final_match == 1.0 and score.n_conversations == RUN["limit"]
    assert score.prompt.track == "yaml" and score.code is None
    read = load_run(tmp_path / "r")  # its records checked: each spec the track's reading
    assert butterfly.score_run(read).model_dump() == score.model_dump()
    assert butterfly.score_run(read, parse_mode="lenient").final_match == 1.0
    assert again.manifest.n_calls == run.manifest.n_calls


def test_a_toy_model_that_misses_a_turn_is_scored_as_missing_it(tmp_path: Path) -> None:
    first = resolve("butterfly-40").scenarios[0]
    with served(answers(wrong=first.id)) as srv:
        run = butterfly.run(**RUN, api_base=srv.api_base, out=tmp_path / "r")
    score = butterfly.score_run(run)
    assert score.final_matches == RUN["limit"] - 1
    assert [c.id for c in score.scenarios if not c.final_match] == [first.id]


def test_an_edited_answer_of_the_toy_track_is_refused_on_reading(tmp_path: Path) -> None:
    with served(answers()) as srv:
        butterfly.run(**RUN, api_base=srv.api_base, out=tmp_path / "r")
    calls = tmp_path / "r" / "calls.jsonl"
    lines = calls.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["spec"] = {**rec["spec"], "delimiter": "tab" if rec["spec"]["delimiter"] != "tab"
                   else "comma"}
    calls.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    with pytest.raises(UserError, match="not the parse of the stored raw answer"):
        load_run(tmp_path / "r")


def test_the_dry_run_counts_the_toy_tracks_own_answers() -> None:
    chat = {**RUN, "model": "openai/gpt-4o-mini", "mode": "chat"}
    yaml_bill = dry_run(**chat)
    spec_bill = dry_run(**{**chat, "track": "spec"})
    assert yaml_bill.track == "yaml" and yaml_bill.total.calls == spec_bill.total.calls
    # YAML answers are other tokens than JSON ones, and the prompts ask for YAML
    assert yaml_bill.total.completion_tokens != spec_bill.total.completion_tokens
    assert yaml_bill.total.prompt_tokens > spec_bill.total.prompt_tokens


def test_an_unregistered_track_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(TRACKS, "yaml")
    with pytest.raises(UserError, match="--track takes one of spec, code, got 'yaml'"):
        run_params(options(**RUN))
