"""The scorer: a conversation's verdicts from the oracle, with OUR parser and metric code.

Each answer is parsed as its call record would store it (its track's ``read``:
``butterfly.engine.tracks``), made a turn (``core.turns.make_turn``), and the conversation is
scored by ``core.metrics``'s ``score_scenario`` and described turn by turn by
``core.transcript`` (what ``butterfly show`` prints): the same functions ``butterfly score``
runs on a run directory.

A complete conversation's score value is its final match (1.0 or 0.0), its metadata the rest
(docs/inspect.md, "The log"). A conversation that a provider error left incomplete is
``Score.unscored`` (NaN): inspect leaves it out of every metric and counts it as an unscored
sample, as ``butterfly score`` leaves incomplete conversations out and counts them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from butterfly.code.judge import broken
from butterfly.core.metrics import ScenarioScore, score_scenario
from butterfly.core.transcript import conversation
from butterfly.core.turns import Turn, make_turn
from butterfly.engine.tracks import track
from butterfly.runs.records import RunParams
from butterfly.runs.scope import asked
from butterflybench.metrics import METRICS
from butterflybench.programs import judged_spec
from butterflybench.suites import SCORER, TURNS, by_id
from oracle import Scenario, replay


@dataclass(frozen=True, slots=True)
class Answer:
    """A turn's one answer as ``make_turn`` reads a call record."""

    raw: str | None
    spec: dict[str, str] | None
    abstention: str | None
    abstention_detail: str
    finish_reason: str | None
    sample: int = 0


async def answer_of(rec: dict[str, Any], p: RunParams, want: dict[str, str]) -> Answer:
    """A recorded turn parsed as our runner parses it (on the code track, its program observed
    and judged against ``want``, the oracle's spec); an ask over the context window is an
    abstention (reason ``context``), as our runner records it."""
    if rec["finish_reason"] == "model_length":
        return Answer("", None, "context", "the ask does not fit the model's context window",
                      rec["finish_reason"])
    truncated = rec["finish_reason"] == "length"
    got = track(p.track).read(rec["raw"], p, truncated=truncated)
    spec = got.spec
    if p.track == "code" and got.reason is None:
        spec = await judged_spec(rec["raw"], truncated, want)
    return Answer(rec["raw"], spec, got.reason, got.detail, rec["finish_reason"])


async def answered(scenario: Scenario, records: Sequence[dict[str, Any]], p: RunParams,
                   oracle: Sequence[dict[str, str]]) -> list[Turn | None]:
    """Turn t's answer at index t - 1 (None: not asked, or no answer: a provider error)."""
    out: list[Turn | None] = [None] * len(scenario.turns)
    for rec in records:
        if rec["error"] is None:
            t = rec["turn"]
            out[t - 1] = make_turn([await answer_of(rec, p, oracle[t])])
    return out


def verdicts(scenario: Scenario, turns: list[Turn | None], chosen: Sequence[int] | None,
             oracle: Sequence[dict[str, str]], track: str) -> list[dict[str, Any]]:
    """Per asked turn: matched (None: no answer), the wrong and collateral settings, the
    abstention's reason (and on the code track the settings broken: ``code.judge``)."""
    rows = conversation(scenario, turns, oracle, chosen)["turns"]
    return [{"turn": r["turn"], "match": None if r["status"] == "missing" else
             r["status"] == "match", "wrong": r["wrong"], "collateral": r["collateral"],
             "abstention": r["abstention"], **({"broken": broken(r["spec"])}
                                               if track == "code" else {})}
            for r in rows if r["status"] != "not_asked"]


def figures(s: ScenarioScore) -> dict[str, Any]:
    """A complete conversation's score as JSON (the metrics rebuild it: ``metrics.scored``)."""
    out = asdict(s)
    out["n_turns"] = out.pop("turns")  # "turns" holds the per-turn verdicts
    return {**out, "final_match": s.final_match, "wobble": s.wobble,
            "abstentions": s.abstentions}


async def conversation_score(state: TaskState, suite_path: str, p: RunParams) -> Score:
    """The score of the sample's conversation."""
    scenario = by_id(suite_path)[state.metadata["scenario"]]
    records: list[dict[str, Any]] = state.store.get(TURNS, [])
    turn_list = list(asked(scenario, p))
    chosen = None if p.ask_at is None else turn_list
    oracle = replay(scenario)
    turns = await answered(scenario, records, p, oracle)
    meta: dict[str, Any] = {"scenario": scenario.id, "layout": state.metadata["layout"],
                            "repeat": state.epoch - 1, "category": scenario.category,
                            "turns": verdicts(scenario, turns, chosen, oracle, p.track)}
    specs = [turns[t - 1] for t in turn_list]
    last = records[-1]["raw"] if records else None
    if any(t is None for t in specs):
        error = next((r["error"] for r in records if r["error"]), "no answer")
        return Score.unscored(reason="incomplete", answer=last, metadata={
            **meta, "complete": False, "error": error},
            explanation=f"incomplete (not scored): {error}")
    s = score_scenario(scenario, [t.spec for t in specs if t is not None], oracle, chosen)
    return Score(value=1.0 if s.final_match else 0.0, answer=last,
                 explanation=explain(s), metadata={**meta, "complete": True, **figures(s)})


def explain(s: ScenarioScore) -> str:
    """One line: the verdict, the first divergent turn, the change radius."""
    verdict = "final match" if s.final_match else "no final match"
    first = ("every asked turn matched" if s.first_divergent is None else
             f"first divergent turn {s.first_divergent}")
    radius = "" if s.change_radius is None else f"; change radius {s.change_radius}"
    return f"{verdict}; {first}{radius}; {s.abstentions} abstention(s)"


@scorer(metrics=[m() for m in METRICS], name=SCORER)
def butterfly_scorer(suite_path: str, params: dict[str, Any]) -> Scorer:
    """Score each conversation against the oracle (``suite_path``: the suite file;
    ``params``: the run's parameters, a :class:`RunParams` dump)."""
    p = RunParams.model_validate(params)

    async def score(state: TaskState, target: Target) -> Score:
        return await conversation_score(state, suite_path, p)

    return score
