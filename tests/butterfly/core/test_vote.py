"""Self-consistency: the setting-wise vote, tie handling, and runs that sample and vote."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, rewrite_manifest, same_answers
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from fakeserver import FakeServer
from hypothesis import given, settings
from hypothesis import strategies as st
from sweep import examples

from butterfly.core.agents import noisy_rate, noisy_spec
from butterfly.core.vote import vote
from butterfly.engine.conversation import SAMPLE_SEED_STRIDE
from butterfly.runs.calls import read_calls
from butterfly.runs.reader import load_run, turns
from butterfly.runs.records import RunParams
from butterfly.suite.load import load_suite
from oracle import KEYS, SETTINGS, canonical_initial, replay

BASE = canonical_initial()
DOMAIN = {s.key: s.domain for s in SETTINGS}
SUITE = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")


def _with(**changes: str) -> dict[str, str]:
    return {**BASE, **changes}


def test_plurality_per_setting() -> None:
    a = _with(log_level="debug")
    b = _with(retries="5")
    c = _with(log_level="debug", retries="5")
    v = vote([a, b, c])  # log_level debug 2:1, retries 5 2:1: a spec none of them gave
    assert v.spec == c and v.abstention is None
    assert vote([a, a, b, None]).spec == a  # a minority of abstentions is outvoted


def test_a_tie_is_an_abstention_naming_the_setting() -> None:
    a, b = _with(log_level="debug"), _with(log_level="error")
    v = vote([a, b])
    assert v.spec is None and v.abstention == "vote_tie"
    assert v.detail == "log_level: 'debug', 'error' have 1 of 2 votes each"
    assert vote([a, b, BASE]).abstention == "vote_tie"  # three values, one vote each
    assert vote([a, a, b, b, BASE]).abstention == "vote_tie"


def test_abstaining_samples_vote_to_abstain() -> None:
    a = _with(log_level="debug")
    assert vote([None, None, a]).abstention == "vote_abstained"
    assert vote([None, None, a]).detail == "2 of 3 samples abstained"
    assert vote([None, a]).abstention == "vote_tie"  # 1 abstain vs 1 value
    assert vote([None]).abstention == "vote_abstained"
    with pytest.raises(ValueError):
        vote([])


spec_st = st.fixed_dictionaries({k: st.sampled_from(DOMAIN[k][:3]) for k in KEYS})


@settings(max_examples=examples(300), deadline=None, derandomize=True, database=None)
@given(st.lists(st.one_of(st.none(), spec_st), min_size=1, max_size=7), st.randoms())
def test_vote_laws(specs: list[dict[str, str] | None], rnd: Any) -> None:
    v = vote(specs)
    shuffled = list(specs)
    rnd.shuffle(shuffled)
    assert vote(shuffled) == v  # the order of the samples does not matter
    # a spec given by a strict majority of the samples is the answer
    counts = Counter(json.dumps(s, sort_keys=True) for s in specs)
    top, n = counts.most_common(1)[0]
    if n * 2 > len(specs):
        assert v.spec == json.loads(top)
    if v.spec is not None:  # every voted value has the unique top count of its setting
        for k in KEYS:
            c = Counter(None if s is None else s[k] for s in specs).most_common()
            assert c[0][0] == v.spec[k] and (len(c) == 1 or c[1][1] < c[0][1])


def test_noisy_agent_is_seeded_and_near_its_rate() -> None:
    s = SUITE[0]
    assert noisy_spec(s, 1, 7, 0.4) == noisy_spec(s, 1, 7, 0.4)
    assert noisy_spec(s, 1, 7, 0.0) == replay(s)[1]
    rates = [noisy_rate(x.id, 0.2) for x in SUITE]
    assert all(0 <= r <= 1 for r in rates) and len(set(rates)) == len(rates)
    s = max(SUITE, key=lambda x: noisy_rate(x.id, 0.5))
    q = noisy_rate(s.id, 0.5)
    o = replay(s)[1]
    wrong = sum(noisy_spec(s, 1, seed, 0.5, replay(s)) != o for seed in range(2000))
    assert abs(wrong / 2000 - q) < 4 * (q * (1 - q) / 2000) ** 0.5 + 1e-9


def _run(out: Path, *extra: str) -> Any:
    r = run_cli("run", "--model", "script/noisy:p=0.5", "--out", str(out), "--no-cache",
                "--limit", "12", *extra)
    assert r.returncode == 0, r.stderr
    s = run_cli("score", str(out), "--json")
    assert s.returncode == 0, s.stderr
    return same_answers(json.loads(s.stdout))


def test_self_consistency_run_samples_votes_and_feeds_back_the_vote(tmp_path: Path) -> None:
    one = _run(tmp_path / "one", "--temperature", "0.7")
    sc = _run(tmp_path / "sc", "--temperature", "0.7", "--strategy", "self-consistency",
              "--samples", "5")
    # the noisy agent's errors scatter over settings, so voting recovers the oracle more often
    assert sc["final_match"] > one["final_match"]
    loaded = load_run(tmp_path / "sc")
    manifest, scenarios, records = loaded.manifest, list(loaded.suite), loaded.records
    assert manifest.params.samples == 5 and manifest.params.strategy == "self-consistency"
    n_turns = sum(len(s.turns) for s in scenarios[:12])
    assert len(records) == 5 * n_turns
    by_turn: dict[tuple[str, int], list[Any]] = {}
    for rec in read_calls(tmp_path / "sc" / "calls.jsonl"):  # whole records: messages too
        by_turn.setdefault((rec.scenario, rec.turn), []).append(rec)
    voted = turns(records, manifest.params)
    oracle = {s.id: replay(s) for s in scenarios}
    finals = []
    for (sid, t), recs in by_turn.items():
        assert sorted(r.sample for r in recs) == [0, 1, 2, 3, 4]
        assert len({r.messages_sha256 for r in recs}) == 1  # all samples see the same prompt
        turn = voted[(sid, t, "E", 0)]
        assert turn.spec == vote([r.spec for r in sorted(recs, key=lambda r: r.sample)]).spec
        nxt = by_turn.get((sid, t + 1))
        if nxt is not None:  # the next prompt's history holds the voted answer
            shown = [m.content for m in nxt[0].messages_added if m.role == "assistant"]
            expected = json.dumps(turn.spec) if turn.spec is not None else turn.raw
            assert shown == [expected]
        if (sid, t + 1) not in by_turn:
            finals.append(turn.spec == oracle[sid][t])
    assert sum(finals) / len(finals) == sc["final_match"]


def test_seeds_of_samples_and_repeats(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def respond(body: dict[str, Any]) -> str:
        seen.append(body)
        # the answer depends on the seed only: seeds below the stride agree, others split
        spec = _with(log_level="debug") if body["seed"] % 2 == 0 else _with(log_level="error")
        return json.dumps(spec)

    out = tmp_path / "run"
    with FakeServer(respond) as srv:
        r = run_cli("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                    str(out), "--limit", "1", "--no-cache", "--strategy", "self-consistency",
                    "--samples", "3", "--temperature", "0.5", "--repeats", "2", "--seed", "10")
        assert r.returncode == 0, r.stderr
    seeds = Counter(b["seed"] for b in seen)
    turns_1 = len(SUITE[0].turns)
    stride = SAMPLE_SEED_STRIDE
    assert seeds == {10 + r + k * stride: turns_1 for r in (0, 1) for k in range(3)}
    assert {b["temperature"] for b in seen} == {0.5}
    loaded = load_run(out)
    manifest, _, records = loaded.manifest, list(loaded.suite), loaded.records
    voted = turns(records, manifest.params)
    # repeat 0: seeds 10, 100010, 200010 all even -> debug; repeat 1 all odd -> error
    assert voted[(SUITE[0].id, 1, "E", 0)].spec == _with(log_level="debug")
    assert voted[(SUITE[0].id, 1, "E", 1)].spec == _with(log_level="error")


def test_ties_abstain_and_the_history_shows_sample_zero(tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> str:
        return json.dumps(_with(log_level="debug" if body["seed"] < SAMPLE_SEED_STRIDE
                                else "error"))

    out = tmp_path / "run"
    with FakeServer(respond) as srv:
        r = run_cli("run", "--model", "openai/fake", "--api-base", srv.api_base, "--out",
                    str(out), "--limit", "3", "--no-cache", "--strategy", "self-consistency",
                    "--samples", "2", "--temperature", "0.5")
        assert r.returncode == 0, r.stderr
    score = json.loads(run_cli("score", str(out), "--json").stdout)
    assert score["abstention"] == 1.0 and score["final_match"] == 0.0
    loaded = load_run(out)
    manifest, _, records = loaded.manifest, list(loaded.suite), loaded.records
    voted = turns(records, manifest.params)
    assert {t.abstention for t in voted.values()} == {"vote_tie"}
    two = [r for r in read_calls(out / "calls.jsonl") if r.turn == 2 and r.sample == 1]
    assert two and all(
        [m.content for m in r.messages_added if m.role == "assistant"]
        == [json.dumps(_with(log_level="debug"))] for r in two
    )


def test_resume_calls_only_the_missing_samples(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("--strategy", "self-consistency", "--samples", "3", "--temperature", "0.7")
    full = _run(out, *args)
    calls = out / "calls.jsonl"
    lines = calls.read_bytes().splitlines(keepends=True)
    calls.write_bytes(b"".join(lines[:-4]) + lines[-4][:20])  # lose 4 samples, tear one line
    rewrite_manifest(out, status="running")  # as the kill that lost them leaves it
    again = _run(out, *args)
    assert again == full
    assert len(calls.read_bytes().splitlines()) == len(lines)


def test_refusals() -> None:
    for extra, words in (
        (("--strategy", "self-consistency"), "temperature above 0"),
        (("--strategy", "self-consistency", "--samples", "1", "--temperature", "1"),
         "at least 2"),
        (("--samples", "3"), "only for --strategy self-consistency"),
    ):
        r = run_cli("run", "--model", "script/oracle", "--out", "/nonexistent/x", *extra)
        assert r.returncode == 1 and words in r.stderr, (extra, r.stderr)
        assert "Traceback" not in r.stderr
    r = run_cli("run", "--model", "script/noisy:p=2", "--out", "/nonexistent/x")
    assert r.returncode == 1 and "between 0 and 1" in r.stderr
    with pytest.raises(ValueError):
        RunParams(strategy="self-consistency", samples=3)  # temperature 0
