"""Metrics of contract section 4, per scenario and aggregated, from records (never live objects).

m_t is the model's parsed spec after turn t (None for an abstention), o_t the oracle's; m_0 = o_0
is the initial spec.

- turn match: m_t == o_t on all 20 settings (an abstention is a mismatch);
- final match: turn match at the last turn (the headline: share of scenarios);
- first divergent turn: the first t without a turn match, or none;
- wobble: a final match with a divergent turn on the way;
- change radius: settings wrong in the final spec that no turn targeted (explicitly or through a
  coupling), mean per scenario over scenarios whose final answer parsed;
- collateral(t): settings where m_t differs from m_{t-1} while o_t equals o_{t-1}, over turns
  whose answers at t-1 and t both parsed;
- undo recovery: over undo_last / undo_ref / undo_earliest / redo turns whose previous turn
  matched, the share that still match; per op;
- abstention: abstentions / answers; coverage = 1 - abstention.

Scenarios with a provider error (incomplete) are excluded from every figure and counted apart.
Each figure of :func:`aggregate` is a registered metric (``core/metric_registry.py``): its
per-conversation items read from a :class:`ScenarioScore`, pooled as its registration says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from butterfly.core.agents import agent_specs_at, window_name
from butterfly.core.asking import asked_turns
from butterfly.core.horizon_metric import Conversation, horizon
from butterfly.core.metric_registry import pooled
from butterfly.core.pooling import share
from butterfly.core.scores import (
    Aggregate,
    BaselineScore,
    ConversationScore,
    HorizonResult,
    OpHeld,
    ParaphraseShare,
    Totals,
)
from butterfly.core.turns import ConversationKey
from oracle import CATEGORIES, KEYS, OPS, UNDO_OPS, Scenario, Spec, replay, targeted
from oracle.depth import DEPTH_FROM, half


@dataclass(frozen=True, slots=True)
class ScenarioScore:
    id: str
    category: str
    turns: int
    turn_match: tuple[bool, ...]
    """Per asked turn (every turn, unless the run asks at chosen turns: :attr:`asked`)."""
    first_divergent: int | None
    """The first asked turn without a turn match (a turn number), or None."""
    change_radius: int | None
    collateral: tuple[int | None, ...]
    """Per asked turn: settings changed since the answer at the asked turn before it."""
    undo: tuple[tuple[str, bool], ...]
    """(op, still matches) for asked undo/redo turns whose previous asked turn matched."""
    abstained: tuple[bool, ...]
    """Per asked turn: the answer is an abstention."""
    asked: tuple[int, ...] | None = None
    """The turns asked, when the run asks at chosen turns (contract v3, section 4); None:
    every turn. The figures that need every turn are then over the asked turns only."""

    @property
    def abstentions(self) -> int:
        return sum(self.abstained)

    @property
    def final_match(self) -> bool:
        return self.turn_match[-1]

    @property
    def wobble(self) -> bool:
        return self.final_match and self.first_divergent is not None

    def turn_numbers(self) -> Sequence[int]:
        """The turn each entry of :attr:`turn_match` is the answer to."""
        return range(1, self.turns + 1) if self.asked is None else self.asked


def collateral_keys(cur: Spec, prev: Spec, oracle_now: Spec, oracle_before: Spec) -> list[str]:
    """Settings the model changed from its previous answer while the oracle did not."""
    return [k for k in KEYS if cur[k] != prev[k] and oracle_now[k] == oracle_before[k]]


def score_scenario(
    scenario: Scenario, answers: Sequence[Spec | None], oracle: Sequence[Spec] | None = None,
    asked: Sequence[int] | None = None,
) -> ScenarioScore:
    """Score one complete conversation: ``answers[i]`` is m_t for the i-th turn t of ``asked``
    (None: every turn, t = 1..n). With chosen turns, a turn's "previous turn" is the asked turn
    before it (turn 0, the initial spec, before the first): collateral, undo recovery, first
    divergent turn and wobble are over the asked turns only."""
    o = oracle if oracle is not None else replay(scenario)
    n = len(scenario.turns)
    ts: Sequence[int] = range(1, n + 1) if asked is None else asked
    if len(answers) != len(ts) or (asked is not None and (not asked or asked[-1] != n)):
        raise ValueError(f"{scenario.id}: {len(answers)} answers for the {len(ts)} asked turns "
                         f"of {n}")
    match = tuple(a == o[t] for a, t in zip(answers, ts, strict=True))
    first = next((t for t, ok in zip(ts, match, strict=True) if not ok), None)
    final = answers[-1]
    radius: int | None = None
    if final is not None:
        hit = targeted(scenario)
        radius = sum(1 for k in KEYS if k not in hit and final[k] != o[n][k])
    collateral: list[int | None] = []
    undo: list[tuple[str, bool]] = []
    prev_m: Spec | None = o[0]
    prev_t, prev_ok = 0, True
    for i, t in enumerate(ts):
        cur = answers[i]
        collateral.append(None if cur is None or prev_m is None else
                          len(collateral_keys(cur, prev_m, o[t], o[prev_t])))
        op = scenario.turns[t - 1].op
        if op in UNDO_OPS and prev_ok:
            undo.append((op, match[i]))
        prev_t, prev_m, prev_ok = t, cur, match[i]
    return ScenarioScore(
        id=scenario.id, category=scenario.category, turns=n, turn_match=match,
        first_divergent=first, change_radius=radius, collateral=tuple(collateral),
        undo=tuple(undo), abstained=tuple(a is None for a in answers),
        asked=None if asked is None else tuple(asked))


def aggregate(scores: Sequence[ScenarioScore]) -> Aggregate:
    """The metrics of a set of scored scenarios (all complete): every registered metric
    (``core/metric_registry.py``), pooled."""
    return Aggregate.model_validate(pooled(scores))


def effective_final_match(agg: Aggregate) -> float | None:
    """Final match x coverage (contract v2; PromptAudit's effective score), rounded to 6
    places: the one computation of it, read by ``butterfly score`` (``RunScore``), inspect's
    metrics and the Kaggle notebook's headline. None where either share has no denominator."""
    if agg.final_match is None or agg.coverage is None:
        return None
    return round(agg.final_match * agg.coverage, 6)


def by_category(scores: Sequence[ScenarioScore]) -> dict[str, Aggregate]:
    return {
        c: aggregate([s for s in scores if s.category == c])
        for c in CATEGORIES
        if any(s.category == c for s in scores)
    }


def _held(pairs: Sequence[tuple[Scenario, ScenarioScore]],
          group: Callable[[Any], str | None]) -> dict[str, list[Any]]:
    """Per group of asked turns: [op, held, cases, abstained, answers], where a case is a turn
    whose previous (asked) turn matched (turn 0 always does) and held means it still matches."""
    tally: dict[str, list[Any]] = {}
    for scenario, sc in pairs:
        for i, t in enumerate(sc.turn_numbers()):
            turn = scenario.turns[t - 1]
            key = group(turn)
            if key is None:
                continue
            entry = tally.setdefault(key, [turn.op, 0, 0, 0, 0])
            entry[3] += sc.abstained[i]
            entry[4] += 1
            if i == 0 or sc.turn_match[i - 1]:
                entry[1] += sc.turn_match[i]
                entry[2] += 1
    return tally


def by_paraphrase(
        pairs: Sequence[tuple[Scenario, ScenarioScore]]) -> dict[str, ParaphraseShare]:
    """Per paraphrase id: of the turns worded that way whose previous turn matched, the share
    that still match (so a hard wording is told apart from a lost history)."""
    tally = _held(pairs, lambda turn: turn.paraphrase)
    return {p: ParaphraseShare(op=op, share=share(ok, n), n=n)
            for p, (op, ok, n, _, _) in sorted(tally.items()) if n}


def by_op(pairs: Sequence[tuple[Scenario, ScenarioScore]]) -> dict[str, OpHeld]:
    """Per op: the same "held" share as by_paraphrase, and the share of its answers that
    abstained."""
    tally = _held(pairs, lambda turn: turn.op)
    return {op: OpHeld(held=share(tally[op][1], tally[op][2]), n=tally[op][2],
                       abstention=share(tally[op][3], tally[op][4]), answers=tally[op][4])
            for op in OPS if op in tally}


def _baseline_scores(names: Sequence[str], scenario: Scenario, oracle: Sequence[Spec],
                     asked: Sequence[int] | None) -> dict[str, ScenarioScore]:
    """Each baseline's score of ``scenario``: what the scripted agent answers at the asked
    turns (every turn when ``asked`` is None), scored against ``oracle``."""
    turns = range(1, len(scenario.turns) + 1) if asked is None else asked
    return {b: score_scenario(scenario, list(agent_specs_at(b, scenario, turns)), oracle, asked)
            for b in names}


BASELINES = ("noop", "last-edit")
"""The trivial baselines scored beside every run; a suite with chains of 40 turns or more adds
the recency baseline ``window:k=K`` (:func:`recency_ks`)."""


def recency_ks(scenarios: Sequence[Scenario], ask_at: Sequence[int] | None,
               named: int | None = None) -> tuple[int, ...]:
    """The K of each recency baseline a run shows (contract v4, section 8): none unless some
    chain reaches 40 turns; else half the shortest asked length of 40 turns or more, and the
    second K its suite's manifest names (``named``), in increasing order."""
    asked = [t for s in scenarios if len(s.turns) >= DEPTH_FROM
             for t in asked_turns(len(s.turns), ask_at) if t >= DEPTH_FROM]
    if not asked:
        return ()
    return tuple(sorted({half(min(asked)), *(() if named is None else (named,))}))


def score_conversations(
    scenarios: Sequence[Scenario],
    answers: dict[ConversationKey, list[Spec | None]],
    incomplete: Sequence[ConversationKey],
    layouts: Sequence[str] = ("E",),
    ask_at: Sequence[int] | None = None,
    windows: Sequence[int] = (),
) -> tuple[Aggregate, Totals, HorizonResult | None]:
    """The score of a run's complete conversations: the pooled aggregate, the totals, and the
    horizon (None when no conversation is complete).

    Top-level figures pool every complete conversation (all layouts and repeats); ``by_layout``
    pools the repeats of each layout. Baselines are scored on exactly the same conversations.
    ``ask_at``: the run's ask points (contract v3, section 4); each list of ``answers`` then
    holds the answers to the asked turns (:func:`butterfly.core.asking.asked_turns`).
    ``windows``: the K of each recency baseline to score too (:func:`recency_ks`).
    """
    by_id = {s.id: s for s in scenarios}
    keys = [k for k in answers if k.scenario in by_id]
    names = (*BASELINES, *(window_name(k) for k in windows))
    scores, per_id = _scored(by_id, answers, keys, ask_at, names)
    all_scores = list(scores.values())
    total = len(answers) + len(incomplete)
    pairs = [(by_id[k.scenario], v) for k, v in scores.items()]
    totals = Totals(
        n_total=total,
        incomplete=len(incomplete),
        incomplete_share=share(len(incomplete), total),
        incomplete_scenarios=list(dict.fromkeys(k.scenario for k in incomplete)),
        by_category=by_category(all_scores),
        by_layout={lay: aggregate([v for k, v in scores.items() if k.layout == lay])
                   for lay in layouts},
        by_paraphrase=by_paraphrase(pairs),
        by_op=by_op(pairs),
        baselines={b: _baseline([per_id[b][k.scenario] for k in keys]) for b in names},
        scenarios=[_verdict(k, v) for k, v in scores.items()],
    )
    return aggregate(all_scores), totals, horizon_of(scores)


def baselines_of(scenarios: Sequence[Scenario], ask_at: Sequence[int] | None = None,
                 windows: Sequence[int] = ()) -> dict[str, BaselineScore]:
    """Each baseline scored once on each of ``scenarios`` (the Kaggle notebook's headline: one
    conversation a scenario), as :func:`score_conversations` scores them beside a run."""
    names = (*BASELINES, *(window_name(k) for k in windows))
    scored = [_baseline_scores(names, s, replay(s), _asked(s, ask_at)) for s in scenarios]
    return {b: _baseline([one[b] for one in scored]) for b in names}


def horizon_of(scores: dict[ConversationKey, ScenarioScore]) -> HorizonResult | None:
    """The horizon over complete conversations, clustered by scenario (core/horizon_metric.py). A
    conversation asked at chosen turns gives one point per ask: the ask at turn t is a chain of
    length t (contract v3, section 4); its survival curve is over the asked turns."""
    return horizon_over([(k.scenario, v.turns, v.turn_match, v.asked)
                         for k, v in scores.items()])


Chain = tuple[str, int, Sequence[bool], Sequence[int] | None]
"""(scenario id, chain length, turn match per asked turn, the asked turns or None: every
turn): what the horizon reads of one complete conversation."""


def horizon_over(chains: Sequence[Chain]) -> HorizonResult | None:
    """The horizon of these conversations (:func:`horizon_of`; the Kaggle notebook calls it
    with its verdicts): asked at chosen turns, each ask at turn t is a chain of length t."""
    if not chains:
        return None
    if all(asked is None for _, _, _, asked in chains):
        convs = [Conversation(sid, n, bool(match[-1]), tuple(match))
                 for sid, n, match, _ in chains]
        return HorizonResult.model_validate(horizon(convs).to_json())
    turns = [(sid, n, match, range(1, n + 1) if asked is None else asked)
             for sid, n, match, asked in chains]
    points = [Conversation(sid, t, ok) for sid, _, match, asked in turns
              for t, ok in zip(asked, match, strict=True)]
    whole = [Conversation(sid, n, bool(match[-1]), tuple(match), asked=tuple(asked))
             for sid, n, match, asked in turns]
    return HorizonResult.model_validate(horizon(points, chains=whole).to_json())


def _scored(by_id: dict[str, Scenario], answers: dict[ConversationKey, list[Spec | None]],
            keys: Sequence[ConversationKey], ask_at: Sequence[int] | None = None,
            names: Sequence[str] = BASELINES,
            ) -> tuple[dict[ConversationKey, ScenarioScore], dict[str, dict[str, ScenarioScore]]]:
    """Every conversation's score, and each baseline's score of each scenario. A scenario's
    oracle replay is made once and let go after its last conversation, so a run's replays are
    never all held at once (a 10,000-scenario run's would take tens of MB)."""
    last = {k.scenario: i for i, k in enumerate(keys)}
    oracle: dict[str, list[Spec]] = {}
    scores: dict[ConversationKey, ScenarioScore] = {}
    per_id: dict[str, dict[str, ScenarioScore]] = {b: {} for b in names}
    for i, k in enumerate(keys):
        s = by_id[k.scenario]
        o = oracle.get(s.id) or oracle.setdefault(s.id, replay(s))
        asked = _asked(s, ask_at)
        scores[k] = score_scenario(s, answers[k], o, asked)
        if last[s.id] == i:
            for b, score in _baseline_scores(names, s, o, asked).items():
                per_id[b][s.id] = score
            del oracle[s.id]
    return scores, per_id


def _asked(scenario: Scenario, ask_at: Sequence[int] | None) -> Sequence[int] | None:
    """The turns of ``scenario`` a run with these ask points asks; None: every turn."""
    return None if ask_at is None else asked_turns(len(scenario.turns), ask_at)


def _baseline(scores: Sequence[ScenarioScore]) -> BaselineScore:
    """A baseline's figures on these conversations, overall and by category."""
    return BaselineScore(**dict(aggregate(scores)), by_category=by_category(scores))


def _verdict(k: ConversationKey, v: ScenarioScore) -> ConversationScore:
    return ConversationScore(
        id=k.scenario, layout=k.layout, repeat=k.repeat, category=v.category,
        final_match=v.final_match, first_divergent_turn=v.first_divergent,
        change_radius=v.change_radius, wobble=v.wobble, abstentions=v.abstentions)
