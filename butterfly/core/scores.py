"""The score of a run as typed, frozen records: what ``score --json`` prints is their dump.

Field order is the JSON's key order. Shares are None where their denominator is 0 (honest
denominators: never a 0 for "nothing to count"); intervals are [lo, hi] or None. The JSON
Schemas are published under docs/schemas/ beside the records' (``butterfly schema``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, WithJsonSchema

from butterfly.core.pooling import Interval as Interval
from butterfly.core.pooling import Result
from butterfly.core.pooling import Share as Share
from butterfly.core.user_price import UserPrice
from butterfly.core.vocab import TRACKS

TrackName = Annotated[str, WithJsonSchema({"enum": list(TRACKS), "type": "string"})]
"""A track's name as a record holds it: a track of the registry (``butterfly.engine.tracks``,
which the run records check). The JSON Schemas list the tracks butterfly ships
(``core.vocab.TRACKS``); a track registered beside them (a test's toy track) is held too."""

class Aggregate(Result):
    """The metrics of a set of complete conversations (contract section 4)."""

    # A field for each of every registered metric's (core/metric_registry.py), in their order:
    # tests/butterfly/core/test_metric_registry.py holds them to the registry.
    n_scenarios: int
    n_conversations: int
    final_match: float | None
    final_matches: int
    final_match_ci: Interval | None
    turn_match: float | None
    turn_match_ci: Interval | None
    abstention: float | None
    coverage: float | None
    n_answers: int
    change_radius: float | None
    change_radius_n: int
    change_radius_ci: Interval | None
    collateral_per_turn: float | None
    undo_recovery: float | None
    undo_recovery_n: int
    undo_recovery_by_op: dict[str, Share]
    wobble: float | None
    wobbles: int
    first_divergent_turn: dict[str, int] = Field(
        description='Conversations by first divergent turn ("none": every turn matched).')


class BaselineScore(Aggregate):
    """A trivial agent scored on exactly the run's complete conversations."""

    by_category: dict[str, Aggregate]


class ParaphraseShare(Result):
    op: str
    share: float | None
    n: int


class OpHeld(Result):
    """Per op: of its turns whose previous turn matched, the share that still match; and the
    share of its answers that abstained."""

    held: float | None
    n: int
    abstention: float | None
    answers: int


class ConversationScore(Result):
    """One complete conversation's verdict."""

    id: str
    layout: str
    repeat: int
    category: str
    final_match: bool
    first_divergent_turn: int | None
    change_radius: int | None
    wobble: bool
    abstentions: int
    cost_usd: float | None = Field(
        None, description="What its answered calls cost (cache hits included: what the answers "
        "cost to make); null when one of them has no price.")
    tokens: int | None = Field(
        None, description="Prompt and completion tokens of its answered calls that report "
        "them; null when none does.")
    reasoning_tokens: int | None = Field(
        None, description="Reasoning tokens of its answered calls that report them; null when "
        "none does.")


class FlipCounts(Result):
    model_config = ConfigDict(populate_by_name=True)
    stable_pass: int = Field(alias="stable-pass")
    stable_fail: int = Field(alias="stable-fail")
    layout_sensitive: int = Field(alias="layout-sensitive")
    noisy: int
    incomplete: int


class Totals(Result):
    """What is reported besides the aggregate: the model, denominators and breakdowns."""

    n_total: int
    incomplete: int
    incomplete_share: float | None
    incomplete_scenarios: list[str]
    by_category: dict[str, Aggregate]
    by_layout: dict[str, Aggregate]
    by_paraphrase: dict[str, ParaphraseShare]
    by_op: dict[str, OpHeld]
    baselines: dict[str, BaselineScore]
    scenarios: list[ConversationScore]


class LengthRate(Result):
    n: int
    final_match: float


class HorizonFit(Result):
    """p(L) = 1 / (1 + exp(-(intercept + slope * log L)))."""

    intercept: float
    slope: float
    method: str


class SurvivalPoint(Result):
    """One turn of the Kaplan-Meier curve of turn match."""

    turn: int
    n: int = Field(description="Conversations at risk: at least this many turns, and every "
                   "turn before it matched.")
    still_matched: float = Field(description="Kaplan-Meier share matched at every turn up to "
                                 "this one (never rises).")


class HorizonBootstrap(Result):
    """What the interval rests on: resamples drawn (0 outside step 4, where the interval
    follows from the censoring), those decided (``resamples``: a resample with mixed outcomes
    at one length is left out) and how many of those were censored above and below."""

    resamples: int
    drawn: int
    above: int
    below: int
    seed: int


class HorizonResult(Result):
    """The horizon (contract section 4, docs/ladder.md): the chain length at which final match
    crosses 50%, its seeded cluster-bootstrap 95% interval, final match by chain length, and the
    Kaplan-Meier survival curve of turn match by turn index. ``turns`` is None when the
    horizon is censored (``censored`` says on which side, ``bound`` at which tested length) or
    when there is not enough data (``note``)."""

    turns: float | None = Field(description="The 50% crossing, inside the tested lengths; "
                                "null when censored or not enough data.")
    ci: list[float | None] = Field(description="[lo, hi], within the tested lengths; null for "
                                   "an open end (the interval goes on beyond them on that side). "
                                   "Wholly above the longest: [longest, null]; wholly below the "
                                   "shortest: [null, shortest]. Never of zero width.")
    censored: Literal["above", "below"] | None = Field(
        description="above: beyond the longest tested length; below: under the shortest.")
    bound: int | None = Field(description="The tested length the horizon is censored at.")
    note: str | None = Field(description="'not enough data' (outcomes mixed at one length "
                             "only), or why the horizon is censored.")
    by_length: dict[str, LengthRate]
    fit: HorizonFit | None
    survival: list[SurvivalPoint]
    n_conversations: int
    n_scenarios: int
    bootstrap: HorizonBootstrap


class SuiteLabel(Result):
    """Which suite a run played: a frozen suite's name and version when its sha256 is one we
    shipped (``butterfly-40`` v1 runs stay readable and say so), else the file it was run on."""

    name: str
    version: int | None
    sha256: str


class PromptLabel(Result):
    """Which prompt a run was asked with: its version as the run's manifest records it or, for a
    run made before versions were recorded, as its fingerprint names it (docs/prompt-versions.md:
    prompt v2 runs stay readable and say so)."""

    version: int | None = Field(description="null: recorded before prompt versions, and not a "
                                "fingerprint of a known version.")
    recorded: bool = Field(description="The manifest records the version; false: read from the "
                           "fingerprint.")
    sha256: str
    track: TrackName = Field("spec", description="code: the code track's conversation "
                         "(butterfly.code.conversation.CODE_PROMPT_VERSION).")


class CodeScore(Result):
    """The code track's own figures (contract section 7): how often the programs broke."""

    turns_observed: int = Field(description="Turns of the complete conversations whose answer "
                                "held a program, each observed in the sandbox.")
    broken_per_turn: float | None = Field(description="Settings broken per observed turn "
                                          "(the program crashed, hung, or showed no value of "
                                          "the setting), mean; null with no observed turn.")
    turns_broken: int = Field(description="Observed turns with at least one broken setting.")
    sandbox: tuple[str, ...] = Field(description="The sandboxes the programs ran in "
                                     "(bubblewrap, or the documented fallback).")
    unobserved_turns: int = Field(default=0, description="Answered turns whose program is not "
                                  "yet observed (butterfly observe RUN observes them): not "
                                  "scored.")
    unobserved_conversations: int = Field(default=0, description=(
        "Conversations holding such a turn (and no failed call): counted apart, neither "
        "complete nor incomplete, as never-played ones are."))


class Usage(Result):
    """Tokens and cost of a run's answers (every answered call, cache hits included: what the
    answers cost to make), and what this run directory itself spent (calls not served by the
    answer cache). Token totals count the calls that report them."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost_usd: float | None = Field(description="null when some answered call has no price.")
    spent_usd: float | None = Field(description="Cost of the calls this run sent (not cached).")
    priced_calls: int
    note: str = Field("", description="Why a cost is null (a model litellm does not price).")
    saved_usd: float | None = Field(None, description="What the cached prompt tokens saved at "
                                    "the cached-input price (summed over the answered calls "
                                    "that record it); null when none does.")
    price: UserPrice | None = Field(None, description="The price the user gave (--price), "
                                    "which the costs were computed by; null: litellm's "
                                    "offline price map.")
    invalid_usage_calls: int = Field(0, description="Answered calls whose provider reported "
                                     "token counts that cannot be right (negative, not whole, "
                                     "absurd, over the model's window): counted in calls, "
                                     "never in the tokens or the cost, which are then too low "
                                     "by theirs.")


class EfficiencySlice(Result):
    """What a set of complete conversations cost, against how many matched (contract v4,
    section 9; docs/metrics.md, "Efficiency"). A figure is null where its denominator is 0 or
    its numerator unknown (a call with no price: no cost; no call reporting tokens: no
    tokens), never 0."""

    conversations: int = Field(description="Complete conversations (the denominator of the "
                               "per-conversation figures).")
    correct: int = Field(description="Of those, the ones matched at their last asked turn "
                         "(final match).")
    cost_usd: float | None = Field(description="What their answered calls cost; null when "
                                   "one has no price.")
    cost_per_conversation_usd: float | None
    cost_per_correct_usd: float | None = Field(description="cost_usd / correct; null when no "
                                               "conversation matched or a call has no price.")
    tokens: int | None = Field(description="Prompt and completion tokens of their answered "
                               "calls that report them; null when none does.")
    tokens_per_conversation: float | None
    tokens_per_correct: float | None


class Efficiency(EfficiencySlice):
    """A run's efficiency figures (``score --json``'s ``efficiency``): its complete
    conversations' cost against their final match, reasoning tokens per edit at each asked
    turn, the latency of the calls it sent; incomplete conversations counted apart."""

    reasoning_tokens: int | None = Field(description="Reasoning tokens of the complete "
                                         "conversations' calls; null when no call reports "
                                         "them.")
    reasoning_per_edit: float | None = Field(
        description="Reasoning tokens of every ask / the edits each ask restates (an ask at "
        "turn t restates t edits), pooled over the asks of complete conversations; null when "
        "no call reports reasoning tokens.")
    reasoning_per_edit_by_turn: dict[str, float | None] = Field(
        description="The same at each asked turn t (its asks' reasoning tokens / (asks x t)): "
        "the ask points of a run asked at chosen turns, every turn of a chat run.")
    latency_calls: int = Field(description="Answered calls this run sent (not served by the "
                               "answer cache): the latency's denominator.")
    latency_median_s: float | None
    latency_p95_s: float | None = Field(description="The 95th percentile (nearest rank) of "
                                        "those calls' latency; null without any.")
    incomplete: int = Field(description="Conversations a failed call left incomplete: apart, "
                            "in no figure above.")
    incomplete_cost_usd: float | None = Field(description="What their answered calls cost "
                                              "(null when one has no price).")
    by_category: dict[str, EfficiencySlice] = Field(
        default_factory=dict, description="The same figures per scenario category.")


class _Named(Result):
    model: str


class RunScore(Totals, Aggregate, _Named):
    """The full score of a run (``butterfly score --json``): the model, the pooled
    :class:`Aggregate` of every complete conversation, then the :class:`Totals`, then these."""

    not_played: int = Field(description="Conversations never started (not counted anywhere).")
    flips: FlipCounts
    run: str
    parse: str
    suite: SuiteLabel
    prompt: PromptLabel
    horizon: HorizonResult | None = Field(
        description="None when the run has no complete conversation.")
    effective_final_match: float | None = Field(
        None, description="final match x coverage (PromptAudit's effective score).")
    abstention_by_reason: dict[str, int] = Field(
        default_factory=dict, description="Abstained answers of the complete conversations, "
        "by reason (docs/parser.md).")
    usage: Usage | None = None
    efficiency: Efficiency | None = Field(
        None, description="Cost, tokens and latency against the answers (docs/metrics.md, "
        "'Efficiency'); null when the run has no call record.")
    shard: str | None = Field(None, description="'I/N' when the run is shard I of N of a "
                              "sweep (run --shard): every figure covers that shard's "
                              "conversations only; null for a whole run.")
    sweep_conversations: int | None = Field(
        None, description="A shard's: the conversations of the whole sweep (its own are "
        "n_total + not_played); null for a whole run.")
    code: CodeScore | None = Field(None, description="The code track's figures; null for a "
                                   "spec-track run.")
    ask_at: tuple[int, ...] | None = Field(
        None, description="The run's ask points (--ask-at; the last turn of every chain is "
        "asked too; empty: the last turn only); null: every turn was asked.")
    asked_turns_only: bool = Field(
        False, description="True when the run asked at chosen turns: turn match, abstention and "
        "n_answers count the asked turns, and first_divergent_turn, wobble, undo_recovery, "
        "collateral_per_turn, by_op, by_paraphrase and the horizon's survival curve are over "
        "the asked turns only (a turn's previous turn is the asked turn before it); the "
        "horizon counts the ask at turn t as a chain of length t.")

    @property
    def overall(self) -> Aggregate:
        """The top-level figures as an :class:`Aggregate`."""
        return Aggregate.model_validate(
            {k: getattr(self, k) for k in Aggregate.model_fields})

    def to_json(self) -> dict[str, Any]:
        """The ``score --json`` object."""
        return self.model_dump(by_alias=True)
