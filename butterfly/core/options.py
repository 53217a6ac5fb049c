"""A run's options as one typed record: :class:`RunOptions`.

It is what the command line builds (``butterfly run``'s flags are generated from its fields, in
their order, each with the help line kept beside it here: :func:`butterfly.cli_args.add_fields`),
what :func:`butterfly.api.run` takes, what :func:`butterfly.runs.run_flags.make_params` checks
and turns into the manifest's ``RunParams``. A new option is one field here, with its help line;
one the manifest should record is also a field of ``RunParams`` (``runs/records.py``).
Defaults come from :data:`butterfly.core.vocab.DEFAULTS`.
"""

# ruff: noqa: RUF009  (each field is `field(...)` with its help line, through _opt)
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import JsonValue

from butterfly.core.user_price import PriceFields, UserPrice
from butterfly.core.vocab import (
    DEFAULTS,
    MODES,
    PARSE_MODES,
    PROTOCOLS,
    SC_BASES,
    STRATEGIES,
    TRACKS,
    VIAS,
    Mode,
    ParseMode,
    Protocol,
    SCBase,
    Strategy,
    Track,
    Via,
)


@dataclass(frozen=True)
class Flag:
    """How a field of :class:`RunOptions` reads on the command line (argparse's words)."""

    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    shown_default: str | None = None
    """The default argparse holds (and ``--help`` shows) when it is not the field's."""


def _opt(default: Any, text: str, **how: Any) -> Any:
    """A field of :class:`RunOptions`: its default and its command-line form."""
    return field(default=default, metadata={"flag": Flag(text, **how)})


_VIA_HELP: Final = ("auto (default): chat completions straight over one pooled HTTP client for "
                    "an OpenAI-compatible --api-base (openai/, hosted_vllm/) and local/ models, "
                    "litellm for every other provider; litellm: always litellm")


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """Every option of ``butterfly run`` (and of :func:`butterfly.api.run`), unchecked: a run
    checks them once (``runs.run_flags.make_params``) and records what they mean. A frozen
    dataclass, not a pydantic model: its fields carry the flags' help lines and defaults that
    ``cli_args`` generates ``run``'s flags from, and it takes values as given (checking is
    ``make_params``'s, with one-line refusals, not a validation error)."""

    model: str = _opt(DEFAULTS.model, "local/smollm2, local/PATH.gguf, script/NAME, or any "
                      "litellm model (openai/..., anthropic/..., gemini/..., ollama_chat/...)")
    suite: str = _opt(DEFAULTS.suite, "suite file or name")
    track: Track | None = _opt(None, "spec: the model keeps the spec as JSON; code: it keeps "
                               "the program tool.py (docs/code-track.md) (default: the suite's "
                               "track, from its manifest)", choices=TRACKS)
    limit: int | None = _opt(None, "only the first N scenarios (a resume keeps the recorded "
                             "scope)", metavar="N")
    per_category: int | None = _opt(None, "only the first N scenarios of each category (before "
                                    "--limit)", metavar="N")
    out: str | Path | None = _opt(None, "run directory (default runs/MODEL__SUITE); re-run to "
                                  "resume")
    seed: int = _opt(DEFAULTS.seed, "base seed; repeat r uses seed + r")
    layouts: str | Sequence[str] = _opt(
        DEFAULTS.layouts, "prompt layouts, comma-separated: E evidence first, Q question first, "
        "H hedged (E + 'answer UNSURE if unclear')", shown_default=",".join(DEFAULTS.layouts))
    repeats: int = _opt(1, "conversations per scenario and layout")
    mode: Mode = _opt(DEFAULTS.mode, "chat: the model sees its earlier answers; restate: each "
                      "turn is asked afresh with the initial spec and every edit so far",
                      choices=MODES)
    ask_at: str | Sequence[int] | None = _opt(
        None, "restate mode: ask only at these turns of each chain (comma-separated, e.g. "
        "5,10,20,40,80), 'last' (the last turn only) or 'all' (every turn); the last turn is "
        "always asked, and a turn not asked is no call and is not scored (default: the suite's "
        "ask points, from its manifest, in restate mode; else every turn)", metavar="TURNS")
    temperature: float = _opt(DEFAULTS.temperature, "sampling temperature (finite, 0 or more)")
    max_tokens: int | None = _opt(None, f"most tokens per answer (default: "
                                  f"{DEFAULTS.max_tokens}; {DEFAULTS.code_max_tokens} on the "
                                  "code track, whose answer is a whole program)")
    concurrency: int = _opt(DEFAULTS.concurrency, "conversations played at once")
    timeout: float = _opt(DEFAULTS.timeout, "seconds per call")
    retries: int = _opt(DEFAULTS.retries, "retries per call after a failure")
    api_base: str | None = _opt(None, "base URL of an OpenAI-compatible server")
    via: Via = _opt(DEFAULTS.via, _VIA_HELP, choices=VIAS)
    router: str | Path | None = _opt(
        None, "a litellm Router file (JSON or YAML model_list, router_settings): calls spread "
        "over the deployments named --model, with litellm's routing, cooldowns and retries "
        "(docs/scale.md; default: none, one server)", metavar="FILE")
    shard: str | None = _opt(None, "play only slice I of N of the run's conversations "
                             "(balanced by calls; join the shards with butterfly merge; "
                             "default: the whole run)", metavar="I/N")
    no_schema: bool = _opt(False, "do not send the spec's JSON Schema as response_format")
    parse: ParseMode = _opt(DEFAULTS.parse, "how strictly answers are parsed (docs/parser.md)",
                            choices=PARSE_MODES)
    strategy: Strategy = _opt(DEFAULTS.strategy, "prompting strategy (docs/strategies.md)",
                              choices=STRATEGIES)
    samples: int | None = _opt(None, f"self-consistency: answers sampled per turn and voted "
                               f"({DEFAULTS.samples} when not given)")
    protocol: Protocol | None = _opt(None, "output protocol (default schema; json with "
                                     "--no-schema)", choices=PROTOCOLS)
    sc_base: SCBase | None = _opt(None, "self-consistency: the prompt sampled and voted "
                                  "(default zero-shot)", choices=SC_BASES)
    model_args: Mapping[str, JsonValue] | None = _opt(
        None, "arguments sent with every call (-M KEY=VALUE, --model-args FILE)")
    no_seed: bool = _opt(False, "send no seed (for providers that reject it)")
    no_cache_markers: bool = _opt(False, "send no cache_control markers to Claude (Anthropic, "
                                  "Vertex AI, Bedrock), which caches only the prompt prefixes "
                                  "a request marks (docs/cost.md)")
    max_cost: float | None = _opt(None, "stop before a call could take the run's spending above "
                                  "USD (status budget, exit 6; re-run with a larger budget to "
                                  "complete)", metavar="USD")
    price: str | Path | UserPrice | PriceFields | None = _opt(
        None, "a JSON file of the model's price in USD per million tokens (input_per_mtok, "
        "output_per_mtok, optionally cached_input_per_mtok; docs/cost.md): every call is "
        "priced by it instead of litellm's offline price map (default: the map)",
        metavar="FILE")
    price_per_mtok: str | None = _opt(
        None, "the model's price in USD per million input, output and optionally "
        "cached-input tokens, e.g. 0.15,0.6,0.075 (instead of --price FILE)",
        metavar="IN,OUT[,CACHED]")
    max_answer_chars: int = _opt(
        DEFAULTS.max_answer_chars, "the response-size cap: a longer answer is kept (and sent "
        "back in the history) as its first N characters, an abstention (too_large)",
        metavar="N")
    max_retry_wait: float = _opt(DEFAULTS.max_retry_wait, "the longest wait before a retry, "
                                 "whatever a server's Retry-After asks", metavar="SECONDS")
    cache: str | None = _opt(DEFAULTS.cache, "SQLite answer cache shared by runs (None: off)")

    def replace(self, **changes: object) -> RunOptions:
        """A copy with ``changes`` (field names of :class:`RunOptions`)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


FIELDS: Final = {f.name: f for f in dataclasses.fields(RunOptions)}
"""The fields of :class:`RunOptions` by name, in order (the order of ``butterfly run --help``)."""
