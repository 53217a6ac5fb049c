"""Run records on disk: a manifest and append-only JSON Lines of calls. Strict and versioned.

A run directory holds:
- ``manifest.json``: what was run (suite, model, every parameter), never a secret;
- ``suite.jsonl``: a copy of the suite, so a run can be scored anywhere, years later;
- ``calls.jsonl``: one record per model call, appended and flushed as each call ends. The raw
  answer is always kept beside the parsed spec or the abstention reason.

Version 2 (issue 21) adds tamper evidence over content: each call record links to the rolling
digest of the lines before it (``chain_sha256``) and the manifest carries a ``seal``
(:mod:`butterfly.runs.digest`). Version 1 records and manifests, made before the digest, still
read: they have neither. Manifest version 3 (issue 26) adds ``imported_from``: the inspect eval
log a run was imported from (``butterfly import-inspect``); version 2 manifests still read.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, model_validator

from butterfly.core.scores import TrackName, Usage
from butterfly.core.user_price import UserPrice
from butterfly.core.vocab import (
    DEFAULTS,
    ErrorClass,
    Layout,
    Mode,
    ParseMode,
    Protocol,
    RunStatus,
    SCBase,
    Strategy,
    Transport,
    Via,
)
from butterfly.engine.tracks import registered, track

RUN_SCHEMA_VERSION: Literal[2] = 2
"""The call records' version written now; version 1 (before the digest) is still read."""
MANIFEST_SCHEMA_VERSION: Literal[3] = 3
"""The manifests' version written now; 2 (before ``imported_from``) and 1 (before the digest)
are still read."""
SHA256 = r"^[0-9a-f]{64}$"
ANSWER_KEY: Final = ("temperature", "max_tokens", "seed", "schema_output", "mode", "strategy",
                     "protocol", "samples", "sc_base", "model_args", "send_seed",
                     "max_answer_chars")
"""The parameters that change a run's answers, in :meth:`RunParams.answer_key` (and its track,
where the track says so): a resume keeps them all."""



class StrictModel(BaseModel):
    """A record's shape, strict: no field beyond those declared, none changed once made."""

    model_config = ConfigDict(extra="forbid", frozen=True)


RegisteredTrack = Annotated[TrackName, AfterValidator(registered)]
"""A track's name, checked against the registry (``butterfly.engine.tracks.TRACKS``)."""


class SuiteRef(StrictModel):
    path: str = Field(description="The suite file the run was started with.")
    sha256: str = Field(pattern=SHA256)
    n_scenarios: int


class Shard(StrictModel):
    """``--shard I/N``: this run plays slice I of N of the sweep's conversations."""

    index: int = Field(ge=1, description="I, from 1.")
    count: int = Field(ge=1, description="N, the number of shards of the sweep.")

    @model_validator(mode="after")
    def _index_in_range(self) -> Shard:
        if self.index > self.count:
            raise ValueError("a shard's index is at most the number of shards")
        return self

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


class RouterRef(StrictModel):
    """``--router FILE``: which router file served the run, never its secrets."""

    path: str = Field(description="The router file the run was started (or last resumed) with.")
    sha256: str = Field(pattern=SHA256, description="sha256 of the file's content "
                        "as canonical JSON with every secret-named parameter removed "
                        "(docs/scale.md).")
    models: tuple[str, ...] = Field(description="The distinct models the group's deployments "
                                    "serve (a resume must serve the same).")
    deployments: tuple[str, ...] = Field(description="Each deployment as MODEL @ API_BASE "
                                         "(credentials cut), sorted.")


class RunParams(StrictModel):
    """Every parameter of a run. ``answer_key()`` is the part that changes answers."""

    model_config = ConfigDict(allow_inf_nan=False)
    temperature: float = DEFAULTS.temperature
    max_tokens: int = DEFAULTS.max_tokens
    seed: int = DEFAULTS.seed
    schema_output: bool = Field(True, description="Send the spec's JSON Schema as response_format")
    parse: ParseMode = DEFAULTS.parse
    limit: int | None = None
    per_category: int | None = Field(
        None, description="Only the first N scenarios of each category (applied before limit)."
    )
    layouts: tuple[Layout, ...] = DEFAULTS.layouts
    repeats: int = Field(1, ge=1, description="Repeat r of a scenario uses seed = seed + r.")
    mode: Mode = DEFAULTS.mode
    ask_at: tuple[int, ...] | None = Field(
        None, description="--ask-at (restate mode only; contract v3, section 4): the turns "
        "asked in each chain, increasing, besides its last turn, which is always asked (an "
        "empty list: the last turn only); ask points beyond a chain's length are ignored for "
        "that chain. Null: every turn is asked. A turn not asked has no call and no answer.")
    strategy: Strategy = DEFAULTS.strategy
    samples: int = Field(1, ge=1, description="Answers sampled per turn and voted "
                         "(self-consistency); 1 for every other strategy.")
    protocol: Protocol = DEFAULTS.protocol
    sc_base: SCBase = Field(DEFAULTS.sc_base, description="The prompt self-consistency samples "
                            "and votes over; zero-shot for every other strategy.")
    model_args: dict[str, JsonValue] = Field(
        default_factory=dict, description="Extra arguments sent with every call (-M KEY=VALUE, "
        "--model-args FILE): reasoning_effort, top_p, stop, extra_body, ...")
    send_seed: bool = Field(True, description="Whether the seed is sent (--no-seed: not).")
    max_cost: float | None = Field(None, description="--max-cost USD: the run stops before a "
                                   "call could take its spending above this.")
    price: UserPrice | None = Field(None, description="--price FILE or --price-per-mtok: the "
                                    "price the user gave, which every call's cost_usd is "
                                    "computed by; null: litellm's offline price map "
                                    "(docs/cost.md). Not part of the answer key; a resume "
                                    "keeps it.")
    max_answer_chars: int = Field(
        DEFAULTS.max_answer_chars, ge=1, description="--max-answer-chars: the response-size "
        "cap; a longer answer is kept as its first N characters (an abstention, too_large) "
        "and sent back so.")
    concurrency: int = DEFAULTS.concurrency
    timeout: float = DEFAULTS.timeout
    retries: int = DEFAULTS.retries
    max_retry_wait: float = Field(
        DEFAULTS.max_retry_wait, ge=0, description="--max-retry-wait: the longest wait before "
        "a retry (seconds), whatever a server's Retry-After asks.")
    api_base: str | None = None
    via: Via = Field(DEFAULTS.via, description="--via: auto (the fast path for an "
                     "OpenAI-compatible --api-base and local/ models, litellm elsewhere) or "
                     "litellm. Not part of the answer key: both send the same request.")
    router: RouterRef | None = Field(None, description="--router FILE: the replicas the "
                                     "calls were spread over (not part of the answer key).")
    cache_markers: bool = Field(True, description="Whether a Claude model's stable prompt prefix "
                                "is marked with cache_control (--no-cache-markers: not; "
                                "docs/cost.md). Not part of the answer key: the text sent is "
                                "the same.")
    track: RegisteredTrack = Field("spec", description="--track: spec (the model keeps the spec as "
                         "JSON) or code (it keeps the program tool.py; docs/code-track.md).")
    shard: Shard | None = Field(None, description="--shard I/N: the slice of the sweep's "
                                "conversations this run plays; null for a whole run.")

    def answer_key(self) -> dict[str, float | int | bool | str | dict[str, JsonValue]]:
        keyed = (*ANSWER_KEY, "track") if track(self.track).keyed else ANSWER_KEY
        return {name: getattr(self, name) for name in keyed}

    @model_validator(mode="after")
    def _protocol_matches_schema_flag(self) -> RunParams:
        if self.schema_output != (self.protocol == "schema"):
            raise ValueError("schema_output is true exactly when protocol is 'schema'")
        if (self.samples > 1) != (self.strategy == "self-consistency"):
            raise ValueError("samples > 1 exactly when strategy is 'self-consistency'")
        if self.strategy == "self-consistency" and self.temperature <= 0:
            raise ValueError("self-consistency samples at a temperature above 0")
        if self.sc_base != "zero-shot" and self.strategy != "self-consistency":
            raise ValueError("sc_base is only for strategy 'self-consistency'")
        refused = track(self.track).refusal(self)
        if refused is not None:
            raise ValueError(refused)
        if self.ask_at is not None:
            if self.mode != "restate":
                raise ValueError("ask_at is only for mode 'restate'")
            if any(t < 1 for t in self.ask_at) or list(self.ask_at) != sorted(set(self.ask_at)):
                raise ValueError("ask_at holds distinct turns from 1, increasing")
        return self


class MergedShard(StrictModel):
    """One shard a merged run was joined from (``butterfly merge``)."""

    path: str
    shard: Shard
    status: RunStatus


class Seal(StrictModel):
    """What a reader checks a run's content against (docs/running.md, "Tamper evidence")."""

    records: int = Field(ge=0, description="The lines of calls.jsonl the seal covers (all of "
                         "them once the run is closed).")
    calls_sha256: str = Field(pattern=SHA256, description="The rolling digest of those lines: "
                              "C_0 = 64 zeros, C_n = sha256(C_(n-1) as hex + line n's bytes, "
                              "newline included).")
    sha256: str = Field(pattern=SHA256, description="sha256 of this manifest as canonical JSON "
                        "(sorted keys, no spaces) without this field: its parameters, counts, "
                        "status and the two fields above.")


class Repair(StrictModel):
    """``butterfly repair``: when and how the run directory was rebuilt."""

    at: str
    rebuilt_manifest: bool = Field(description="The manifest was lost or unreadable and was "
                                   "rebuilt from the records and the flags given.")
    dropped: tuple[str, ...] = Field(description="Each line of calls.jsonl left out, with why.")
    found: str = Field(description="What the digest found before the repair.")


class BudgetSweep(StrictModel):
    """``butterfly sweep``: the budget sweep a run is one budget of (contract v4, section 9):
    one model over one suite at several values of one model argument (reasoning effort, a
    thinking budget, max tokens), each an ordinary run directory linked to the others by this
    record; they compare like repeats."""

    name: str = Field(min_length=1, description="The sweep's name: the same in each of its "
                      "runs (by default the folder that holds them).")
    key: str = Field(min_length=1, description="The model argument swept (a -M key, e.g. "
                     "reasoning_effort, thinking_budget, max_tokens).")
    values: tuple[str, ...] = Field(min_length=1, description="Every budget of the sweep, in "
                                    "the order given (as given on the command line).")
    index: int = Field(ge=0, description="This run's budget: values[index].")

    @model_validator(mode="after")
    def _index_in_values(self) -> BudgetSweep:
        if self.index >= len(self.values):
            raise ValueError(f"budget index {self.index} is beyond the sweep's "
                             f"{len(self.values)} values")
        return self

    @property
    def value(self) -> str:
        """This run's budget, as given."""
        return self.values[self.index]


class InspectSource(StrictModel):
    """``butterfly import-inspect``: the inspect eval log a run was made from (docs/inspect.md,
    "Importing an inspect log")."""

    log: str = Field(description="The log file as given to import-inspect (.eval or .json).")
    log_sha256: str = Field(pattern=SHA256, description="sha256 of the log file's bytes.")
    inspect_version: str | None = Field(description="The inspect_ai version that wrote the "
                                        "log (its packages); null when it names none.")
    eval_id: str
    run_id: str
    task: str
    created: str = Field(description="When inspect created the eval (its own timestamp).")
    status: str = Field(description="The log's status: success, cancelled, error or started.")
    model: str = Field(description="The model as inspect names it (butterfly/script/lifo).")
    samples: int = Field(ge=0, description="Samples (conversations) the log holds.")
    cost_usd: float | None = Field(description="The cost inspect itself reported for the "
                                   "model (its model_usage total_cost); null when it reported "
                                   "none. The records' costs are butterfly's own prices.")


class RunManifest(StrictModel):
    schema_version: Literal[1, 2, 3] = Field(
        MANIFEST_SCHEMA_VERSION, description="3: may name the inspect log it was imported from "
        "(issue 26); 2: sealed (issue 21); 1: made before the digest, read unsealed.")
    kind: Literal["butterfly-run"] = "butterfly-run"
    butterfly_version: str
    git_commit: str | None
    model: str
    suite: SuiteRef
    params: RunParams
    prompt_sha256: str = Field(description="Hash of the system prompt and templates in force.")
    prompt_version: int | None = Field(
        None, description="The prompt's version (butterfly.core.prompts.PROMPT_VERSION); null "
        "for a run made before versions were recorded, whose prompt_sha256 names its version "
        "(docs/prompt-versions.md).")
    started_at: str
    updated_at: str
    status: RunStatus
    n_calls: int = 0
    n_provider_errors: int = 0
    incomplete_scenarios: tuple[str, ...] = ()
    failure: str | None = Field(None, description="Why the run failed (status failed): the "
                                "provider's refusal, secrets redacted; null otherwise.")
    usage: Usage | None = Field(None, description="Tokens and cost of the run's answers "
                                "(written when the run closes).")
    transports: tuple[Transport, ...] = Field(
        (), description="How the calls were sent, each way once in order of first use: direct "
        "(the fast path: chat completions over one pooled aiohttp session), litellm, or "
        "scripted. A run resumed through the other path lists both.")
    sandbox: str | None = Field(None, description="The code track's sandbox on the machine "
                                "that made the run (bubblewrap, or the documented fallback); "
                                "each observation records its own. Null on the spec track.")
    merged_from: tuple[MergedShard, ...] = Field(
        (), description="butterfly merge: the shard directories this run was joined from.")
    repaired: tuple[Repair, ...] = Field(
        (), description="butterfly repair: each time the directory was rebuilt.")
    imported_from: InspectSource | None = Field(
        None, description="butterfly import-inspect: the inspect eval log whose samples are "
        "this run's records (version 3); null for a run butterfly played.")
    budget_sweep: BudgetSweep | None = Field(
        None, description="butterfly sweep: the budget sweep this run is one budget of (the "
        "others name the same sweep); null for a run made alone.")
    seal: Seal | None = Field(None, description="The digest of calls.jsonl and of this "
                              "manifest (version 2 on); null in a version 1 manifest.")

    @model_validator(mode="after")
    def _sealed_from_version_2(self) -> RunManifest:
        if (self.seal is not None) != (self.schema_version >= 2):
            raise ValueError("a manifest of version 2 or 3 has a seal; a version 1 manifest "
                             "has none")
        if self.imported_from is not None and self.schema_version < 3:
            raise ValueError("only a version 3 manifest names an inspect log")
        return self


class Tokens(StrictModel):
    """Tokens of one call, as the provider reports them (null where it does not)."""

    prompt: int | None = None
    completion: int | None = None
    cached: int | None = Field(None, description="Prompt tokens served from the provider's "
                               "prompt cache.")
    reasoning: int | None = Field(None, description="Completion tokens spent on reasoning.")
    cache_write: int | None = Field(None, description="Prompt tokens written to the "
                                    "provider's prompt cache (Anthropic), counted in prompt "
                                    "and billed at the cache-write rate.")


class InvalidUsage(StrictModel):
    """Token counts a provider reported that cannot be right (issue 34): kept as they came,
    never summed or priced."""

    reason: str = Field(description="Why: a count negative, not a whole number, above "
                        "100,000,000, or over the model's context window (litellm's map).")
    raw: str = Field(description="The counts as the provider sent them (JSON).")


class CallError(StrictModel):
    kind: ErrorClass
    message: str


class Message(StrictModel):
    role: Literal["system", "user", "assistant"]
    content: str


class CallRecord(StrictModel):
    """One model call: what was sent, what came back, and what the parser made of it."""

    schema_version: Literal[1, 2] = Field(RUN_SCHEMA_VERSION, description="2: linked into the "
                                          "file's digest; 1: made before the digest.")
    chain_sha256: str | None = Field(None, pattern=SHA256, description="The rolling digest of "
                                     "every line of calls.jsonl before this one (see the run "
                                     "manifest's seal); null in a version 1 record.")
    scenario: str
    turn: int = Field(ge=1)
    layout: str = "E"
    repeat: int = 0
    sample: int = Field(0, ge=0, description="Which of a turn's self-consistency samples; "
                        "0 for every other strategy.")
    messages_sha256: str = Field(description="Hash of the full message list sent.")
    messages_added: tuple[Message, ...] = Field(
        description="Messages appended since this conversation's previous call (all for turn 1); "
        "the full list is the concatenation over turns 1..turn."
    )
    raw: str | None = Field(description="The model's raw answer; null only if the call failed.")
    raw_chars: int | None = Field(None, description="The answer's length in characters when it "
                                  "was longer than the response-size cap (--max-answer-chars) "
                                  "and raw holds only its first N; null when raw is the whole "
                                  "answer. Such an answer is an abstention (too_large).")
    reasoning_content: str | None = Field(None, description="The reasoning the provider "
                                          "returned beside the answer (reasoning_content), cut "
                                          "to the same cap; null when it returned none. Never "
                                          "sent back in the history.")
    finish_reason: str | None = None
    spec: dict[str, str] | None = Field(description="The parsed spec, or null (abstention).")
    abstention: str | None = Field(description="Why the answer is an abstention, or null.")
    abstention_detail: str = ""
    latency_s: float
    tokens: Tokens = Tokens()
    cost_usd: float | None = Field(None, description="The call's price: by the run's price "
                                   "(params.price) when the user gave one, else litellm's "
                                   "offline price map; null for a model neither prices.")
    saved_usd: float | None = Field(None, description="What the call's cached prompt tokens "
                                    "saved: cached x (input rate - cached-input rate), 0 "
                                    "without any; null when the call is unpriced, or was "
                                    "recorded before savings were.")
    attempts: int = Field(ge=1)
    cached: bool = False
    error: CallError | None = None
    at: str
    invalid_usage: InvalidUsage | None = Field(
        None, description="Set when the provider's token counts cannot be right: tokens are "
        "then null and the call unpriced (not summed, not in the answer cache; score counts "
        "such calls). Null otherwise, and in records made before issue 34.")

    @model_validator(mode="after")
    def _linked_from_version_2(self) -> CallRecord:
        if (self.chain_sha256 is not None) != (self.schema_version == 2):
            raise ValueError("a version 2 record has chain_sha256; a version 1 record has none")
        return self
