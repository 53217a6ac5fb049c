"""Flip classification and the ambiguity audit on synthetic records with known answers."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

from butterfly.analysis.flips import Column, audit, classify, flip_grid
from butterfly.core.turns import Turn, TurnKey
from butterfly.present.text import flips_text as render_flips
from butterfly.runs.integrity import key_of
from butterfly.runs.reader import turns
from butterfly.runs.records import CallError, CallRecord, RunParams
from butterfly.suite.generate import generate, proportional_counts
from oracle import Scenario, replay

SCENARIOS = [s for s in generate(proportional_counts(80), seed=12) if len(s.turns) == 2][:5]


def _rec(s: Scenario, turn: int, layout: str, repeat: int, spec: dict[str, str] | None,
         error: bool = False) -> CallRecord:
    return CallRecord(
        chain_sha256="0" * 64, scenario=s.id, turn=turn, layout=layout, repeat=repeat,
        messages_sha256="0" * 64,
        messages_added=(), raw=None if error else json.dumps(spec),
        spec=None if error else spec, abstention=None if spec or error else "unsure",
        latency_s=0.0, attempts=1, at="2026-01-01T00:00:00+00:00",
        error=CallError(kind="timeout", message="x") if error else None,
    )


def _records(plan: dict[tuple[str, str, int], str]) -> dict[TurnKey, Turn]:
    """plan: (scenario id, layout, repeat) -> 'P' right at both turns, 'F' wrong at turn 2,
    'W' wrong at turn 1 only (a wobble that recovers), 'A' abstains at turn 2, '-' error."""
    by_id = {s.id: s for s in SCENARIOS}
    out = {}
    for (sid, lay, r), what in plan.items():
        s = by_id[sid]
        o = replay(s)
        wrong = dict(o[2], retries="5" if o[2]["retries"] != "5" else "1")
        specs = {
            "P": [o[1], o[2]], "F": [o[1], wrong], "W": [wrong, o[2]], "A": [o[1], None],
        }.get(what)
        for t in (1, 2):
            if what == "-":
                rec = _rec(s, t, lay, r, None, error=t == 2)
                if t == 1:
                    rec = _rec(s, t, lay, r, o[1])
            else:
                assert specs is not None
                rec = _rec(s, t, lay, r, specs[t - 1])
            out[key_of(rec)] = rec
    return turns(out, RunParams())


def test_classes_on_known_answers() -> None:
    a, b, c, d, e = (s.id for s in SCENARIOS)
    plan = {}
    for lay, seq in (("E", "PP"), ("Q", "PP")):
        plan.update({(a, lay, r): v for r, v in enumerate(seq)})  # stable-pass
    for lay, seq in (("E", "FF"), ("Q", "AA")):
        plan.update({(b, lay, r): v for r, v in enumerate(seq)})  # stable-fail (F and A)
    for lay, seq in (("E", "PP"), ("Q", "FF")):
        plan.update({(c, lay, r): v for r, v in enumerate(seq)})  # layout-sensitive
    for lay, seq in (("E", "PF"), ("Q", "PP")):
        plan.update({(d, lay, r): v for r, v in enumerate(seq)})  # noisy
    for lay, seq in (("E", "P-"), ("Q", "PP")):
        plan.update({(e, lay, r): v for r, v in enumerate(seq)})  # incomplete
    recs = _records(plan)
    grid = flip_grid(SCENARIOS, [Column("", "E", 2, recs), Column("", "Q", 2, recs)])
    classes = {r.id: r.class_ for r in grid.scenarios}
    assert classes == {a: "stable-pass", b: "stable-fail", c: "layout-sensitive", d: "noisy",
                       e: "incomplete"}
    assert grid.counts == {"stable-pass": 1, "stable-fail": 1, "layout-sensitive": 1,
                              "noisy": 1, "incomplete": 1}
    cells = {r.id: r.cells for r in grid.scenarios}
    assert cells[b] == {"E": "FF", "Q": "AA"} and cells[e] == {"E": "P-", "Q": "PP"}
    assert grid.pass_rate_by_column["E"] == 6 / 9  # PP FF PP PF P: 6 passes in 9 cells
    text = render_flips(grid)
    assert f"{c}" in text and "layout-sensitive" in text.splitlines()[3]
    assert "stable-pass 1  stable-fail 1  layout-sensitive 1  noisy 1  incomplete 1" in text


def test_classify_edge_cases() -> None:
    assert classify({"E": "P"}) == "stable-pass"
    assert classify({"E": "A", "Q": "F"}) == "stable-fail"  # abstaining is not passing
    assert classify({"E": "PA"}) == "noisy"
    assert classify({"E": ""}) == "incomplete"
    # a column that plays none of the scenario's conversations (a shard holding some of its
    # layouts) takes no part
    assert classify({"E": "PP", "Q": ""}) == "stable-pass"
    assert classify({"E": "", "Q": "F", "H": "P"}) == "layout-sensitive"
    assert classify({"E": "", "Q": "", "H": ""}) == "incomplete"


def test_runs_that_differ_are_not_layout_sensitive() -> None:
    """Two runs (two models) whose layouts each agree, but which disagree with each other: a
    difference between the runs, not a layout's (it was called layout-sensitive)."""
    runs = {"a:E": 0, "a:Q": 0, "b:E": 1, "b:Q": 1}
    assert classify({"a:E": "PP", "a:Q": "PP", "b:E": "FF", "b:Q": "AF"}, runs) == "runs-differ"
    assert classify({"a:E": "PP", "a:Q": "FF", "b:E": "FF", "b:Q": "FF"},
                    runs) == "layout-sensitive"  # within run a, the layouts disagree
    assert classify({"a:E": "PP", "a:Q": "PP", "b:E": "PF", "b:Q": "FF"}, runs) == "noisy"
    assert classify({"a:E": "P", "b:E": "P"}, runs) == "stable-pass"
    d = SCENARIOS[3]
    recs = _records({(d.id, "E", 0): "P"})
    wrong = _records({(d.id, "E", 0): "F"})
    grid = flip_grid([d], [Column("a", "E", 1, recs, run=0), Column("b", "E", 1, wrong, run=1)])
    assert grid.scenarios[0].class_ == "runs-differ" and grid.counts["runs-differ"] == 1
    one = flip_grid([d], [Column("", "E", 1, recs)])
    assert "runs-differ" not in one.counts  # one run: no such class (score's flips)


def test_audit_uses_the_complete_repeats_when_one_is_incomplete() -> None:
    d = SCENARIOS[3]
    recs = _records({(d.id, "E", 0): "P", (d.id, "E", 1): "F", (d.id, "E", 2): "-"})
    items = audit(SCENARIOS, [Column("", "E", 3, recs)])
    assert [it.verdicts for it in items] == ["PF"]


def test_audit_finds_the_split_turn_and_the_answers() -> None:
    d = SCENARIOS[3]
    recs = _records({(d.id, "E", 0): "P", (d.id, "E", 1): "F", (d.id, "E", 2): "W"})
    items = audit(SCENARIOS, [Column("", "E", 3, recs)])
    assert len(items) == 1
    it = items[0]
    assert it.id == d.id and it.verdicts == "PFP"
    assert it.split_turn == 1  # the wobbling repeat differs already at turn 1
    assert it.text == d.turns[0].text
    assert sum(a.repeats for a in it.answers) == 3
    assert any("retries=" in a.answer for a in it.answers)


def test_flips_and_audit_commands_on_runs(tmp_path: Path) -> None:
    one, two = tmp_path / "zero", tmp_path / "few"
    assert run_cli("run", "--model", "script/lifo", "--out", str(one), "--layouts", "E,Q",
                   "--repeats", "2", "--per-category", "1", "--no-cache").returncode == 0
    assert run_cli("run", "--model", "script/lifo", "--out", str(two), "--layouts", "H",
                   "--strategy", "few-shot", "--per-category", "1", "--no-cache"
                   ).returncode == 0
    r = run_cli("flips", str(one))
    assert r.returncode == 0 and "stable-pass 8  stable-fail 2" in r.stdout
    r = run_cli("flips", str(one), str(two), "--json")
    grid = json.loads(r.stdout)
    assert len(grid["columns"]) == 3
    assert f"{two}[script/lifo,few-shot,schema,chat]:H" in grid["columns"]
    r = run_cli("flips", str(one), str(one))
    assert r.returncode == 1 and "give each run once" in r.stderr
    r = run_cli("audit", str(one))
    assert r.returncode == 0 and "no scenario flips" in r.stdout
    s = json.loads(run_cli("score", str(one), "--json").stdout)
    assert s["flips"]["stable-pass"] == 8 and set(s["by_layout"]) == {"E", "Q"}
    other = tmp_path / "other.jsonl"
    other.write_text("".join(x.to_json() + "\n" for x in SCENARIOS))
    three = tmp_path / "other-run"
    assert run_cli("run", "--model", "script/lifo", "--suite", str(other), "--out", str(three),
                   "--no-cache").returncode == 0
    r = run_cli("flips", str(one), str(three))
    assert r.returncode == 1 and "means two different scenarios" in r.stderr  # same ids


def test_conversations_never_played_get_no_character() -> None:
    """A sequential comparison stops scenarios early: their missing repeats were never played,
    which is not a provider error (no '-', not incomplete)."""
    a, b = SCENARIOS[0].id, SCENARIOS[1].id
    recs = _records({(a, "E", 0): "P", (a, "E", 1): "P", (a, "E", 2): "P", (b, "E", 0): "F"})
    played = frozenset({(a, "E", 0), (a, "E", 1), (a, "E", 2), (b, "E", 0)})
    grid = flip_grid(SCENARIOS[:2], [Column("", "E", 3, recs, played)])
    cells = {r.id: (r.cells["E"], r.class_) for r in grid.scenarios}
    assert cells == {a: ("PPP", "stable-pass"), b: ("F", "stable-fail")}
    grid = flip_grid(SCENARIOS[:2], [Column("", "E", 3, recs)])  # without it: incomplete
    assert {r.class_ for r in grid.scenarios} == {"stable-pass", "incomplete"}
