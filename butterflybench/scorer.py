"""The scorer: a conversation's verdicts from the oracle, with OUR engine and metric code.

The solver stored every call with what butterfly's engine read of it (``Conversation.read``:
the spec, or the abstention and why). The scorer makes each asked turn's answer from its
samples with ``core.turns.make_turn`` (the one answer, or the self-consistency vote), as
``butterfly score`` makes it from a run's records; on the code track each program is first
observed in the sandbox (``programs.py``) and judged by the track (``engine.tracks``,
``Track.judge``). The conversation is scored by ``core.metrics.score_scenario`` and described
turn by turn by ``core.transcript`` (what ``butterfly show`` prints): the functions ``butterfly
score`` runs on a run directory.

A complete conversation's score value is its final match (1.0 or 0.0), its metadata the rest
(docs/inspect.md, "The log"): its ScenarioScore whole (``metrics.score_metadata``), which the
metrics pool. A conversation that a provider error left incomplete is ``Score.unscored`` (NaN):
inspect leaves it out of every metric and counts it as an unscored sample, as ``butterfly
score`` leaves incomplete conversations out and counts them apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from butterfly.code.judge import broken
from butterfly.core.metrics import ScenarioScore, score_scenario
from butterfly.core.transcript import conversation
from butterfly.core.turns import Turn, make_turn
from butterfly.engine.conversation import Answered, Conversation
from butterfly.engine.tracks import Parsed
from butterfly.runs.inspect_log import OVER_CONTEXT, OVER_CONTEXT_DETAIL
from butterfly.runs.records import RunParams
from butterflybench.metrics import METRICS, score_metadata, spent_metadata
from butterflybench.programs import observed
from butterflybench.suites import SCORER, TURNS, by_id
from oracle import replay


def stored_read(conv: Conversation, e: Mapping[str, Any]) -> Parsed:
    """What the engine read of a stored call: as the solver stored it, or, in the log of an
    earlier solver that stored the raw answer only, read again by the engine."""
    if "abstention" in e:
        return Parsed(e["spec"], e["abstention"], e["abstention_detail"])
    over = conv.over_context(OVER_CONTEXT_DETAIL)
    if e["finish_reason"] == OVER_CONTEXT and over is not None:
        return over
    return conv.read(e["raw"], e["finish_reason"], e.get("raw_chars"))


async def sample_of(conv: Conversation, e: Mapping[str, Any], want: Mapping[str, str]
                    ) -> tuple[Answered, bool]:
    """A stored call as the record :func:`make_turn` reads, and whether it was observed: an
    answer the track took without a spec (the code track's program) is observed, and judged
    by the track against ``want``, the oracle's spec on its turn."""
    read = stored_read(conv, e)
    spec, seen = read.spec, read.spec is None and read.reason is None
    if seen:
        spec = conv.track.judge(want, await observed(e["raw"], e["finish_reason"] == "length",
                                                     want))
    return Answered(e.get("sample", 0), e["raw"], spec, read.reason, read.detail,
                    e["finish_reason"]), seen


class Answers(NamedTuple):
    """Turn t's answer at index t - 1 (None: not asked, or not every sample answered: a
    provider error), and the turns whose answer is a program judged from its observation."""

    turns: list[Turn | None]
    programs: frozenset[int]


async def answered(conv: Conversation, entries: Sequence[Mapping[str, Any]],
                   oracle: Sequence[dict[str, str]]) -> Answers:
    """Every asked turn's answer, from the stored calls."""
    by_turn: dict[int, list[Answered]] = {}
    programs: set[int] = set()
    for e in entries:
        if e["error"] is None:
            got, seen = await sample_of(conv, e, oracle[e["turn"]])
            by_turn.setdefault(e["turn"], []).append(got)
            if seen:
                programs.add(e["turn"])
    turns: list[Turn | None] = [None] * len(conv.scenario.turns)
    for t, samples in by_turn.items():
        if len(samples) == conv.settings.samples:
            turns[t - 1] = make_turn(sorted(samples, key=lambda s: s.sample))
    return Answers(turns, frozenset(programs))


def verdicts(conv: Conversation, got: Answers, chosen: Sequence[int] | None,
             oracle: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """Per asked turn: matched (None: no answer), the wrong and collateral settings, the
    abstention's reason, and for a program judged from its observation the settings it broke
    (``code.judge``)."""
    rows = conversation(conv.scenario, got.turns, oracle, chosen)["turns"]
    return [{"turn": r["turn"], "match": None if r["status"] == "missing" else
             r["status"] == "match", "wrong": r["wrong"], "collateral": r["collateral"],
             "abstention": r["abstention"],
             **({"broken": broken(r["spec"])} if r["turn"] in got.programs else {})}
            for r in rows if r["status"] != "not_asked"]


async def conversation_score(state: TaskState, suite_path: str, p: RunParams) -> Score:
    """The score of the sample's conversation."""
    scenario = by_id(suite_path)[state.metadata["scenario"]]
    conv = Conversation(scenario, p, state.metadata["layout"], state.epoch - 1)
    entries: list[dict[str, Any]] = state.store.get(TURNS, [])
    turn_list = list(conv.asked)
    chosen = None if p.ask_at is None else turn_list
    oracle = replay(scenario)
    got = await answered(conv, entries, oracle)
    meta: dict[str, Any] = {"scenario": scenario.id, "layout": conv.layout,
                            "repeat": conv.repeat, "category": scenario.category,
                            "turns": verdicts(conv, got, chosen, oracle),
                            "spent": spent_metadata(entries)}
    asked = [got.turns[t - 1] for t in turn_list]
    if any(t is None for t in asked):
        error = next((e["error"] for e in entries if e["error"]), "no answer")
        last = entries[-1]["raw"] if entries else None
        return Score.unscored(reason="incomplete", answer=last, metadata={
            **meta, "complete": False, "error": error},
            explanation=f"incomplete (not scored): {error}")
    s = score_scenario(scenario, [t.spec for t in asked if t is not None], oracle, chosen)
    last_turn = asked[-1]
    return Score(value=1.0 if s.final_match else 0.0,
                 answer=None if last_turn is None else last_turn.shown,
                 explanation=explain(s), metadata={**meta, "complete": True, **figures(s)})


def figures(s: ScenarioScore) -> dict[str, Any]:
    """A complete conversation's score as JSON: the ScenarioScore whole (the metrics read it
    back) and its per-conversation verdicts."""
    return {**score_metadata(s), "final_match": s.final_match, "wobble": s.wobble,
            "abstentions": s.abstentions}


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
