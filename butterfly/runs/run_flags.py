"""A run's options, checked once: every flag of ``butterfly run`` (and the Python API's
``butterfly.run``) becomes a :class:`RunParams` here, or a one-line :class:`UserError`."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from pydantic import JsonValue

from butterfly.core.asking import EVERY, LAST
from butterfly.core.options import FIELDS, RunOptions
from butterfly.core.prompts import compatible
from butterfly.core.vocab import (
    DEFAULTS,
    LAYOUTS,
    SC_BASES,
    VIAS,
    Layout,
    Protocol,
    SCBase,
    Strategy,
)
from butterfly.core.wire import redact
from butterfly.engine.tracks import SPEC, TRACKS, track
from butterfly.errors import UserError
from butterfly.files import parse_json, read_input
from butterfly.models.client import ANSWER_CAP
from butterfly.models.registry import check_model_name
from butterfly.runs.records import RouterRef, RunParams
from butterfly.runs.run_price import user_price
from butterfly.runs.shards import parse_shard
from butterfly.runs.store import redact_url
from butterfly.suite.load import ResolvedSuite


def parse_layouts(text: str | Sequence[str]) -> tuple[Layout, ...]:
    """``E,Q,H`` (or a sequence of letters) as distinct layouts."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    layouts = tuple(x.strip() for x in parts if x.strip())
    bad = [x for x in layouts if x not in LAYOUTS]
    if not layouts or bad or len(set(layouts)) != len(layouts):
        shown = text if isinstance(text, str) else ",".join(text)
        raise UserError(f"--layouts takes distinct letters from {','.join(LAYOUTS)}, "
                        f"got {shown!r}")
    return layouts  # type: ignore[return-value]


_OWNERS: Final = (
    ("the model", "--model", "model"),
    ("the conversation", "", "messages prompt contents system system_instruction"),
    ("the temperature", "--temperature", "temperature"),
    ("the seed", "--seed / --no-seed", "seed random_seed"),
    ("the answer's token limit", "--max-tokens", "max_tokens max_completion_tokens "
     "max_new_tokens max_output_tokens maxOutputTokens num_predict"),
    ("the response format", "--protocol / --no-schema", "response_format format output_format "
     "response_mime_type responseMimeType response_schema responseSchema response_json_schema "
     "responseJsonSchema"),
    ("tools", "", "tools tool_choice functions function_call"),
    ("the number of answers per call", "--strategy self-consistency --samples N",
     "n best_of candidate_count candidateCount"),
    ("streaming", "", "stream stream_options"),
    ("the server", "--api-base", "api_base base_url"),
    ("the credentials", "", "api_key"),
    ("the timeout", "--timeout", "timeout"),
    ("the retries", "--retries", "num_retries max_retries"),
)
OWNED: Final = {name: (what, flag) for what, flag, names in _OWNERS for name in names.split()}
"""Model-argument names the harness owns -> (what they set, the flag that sets it, or ""):
the manifest records these from the harness's own options, so no model argument may carry
them, at the top level or nested (:data:`NESTED`)."""
NESTED: Final = frozenset({"extra_body", "options", "generationConfig", "generation_config"})
"""Mappings whose keys reach the provider as request fields or sampling options: extra_body
(merged into the body), Ollama's options, Gemini's generation config; checked at any depth."""


def _owned(args: Mapping[str, JsonValue], path: str = "") -> tuple[str, str] | None:
    """(where, name) of the first harness-owned key in ``args`` or a nested mapping."""
    for key, value in args.items():
        where = f"{path}{key}"
        if key in OWNED:
            return where, key
        if key in NESTED and isinstance(value, dict):
            found = _owned(value, where + ".")
            if found is not None:
                return found
    return None


def check_owned(args: Mapping[str, JsonValue], source: str) -> None:
    """Refuse a harness-owned key in ``args`` (from ``source``: -M, a file), one line."""
    found = _owned(args)
    if found is None:
        return
    where, name = found
    what, flag = OWNED[name]
    instead = f": use {flag}" if flag else ": it cannot be a model argument"
    raise UserError(f"model argument {where!r} ({source}) sets {what}, which the harness "
                    f"owns and records{instead}")


def arg_value(text: str) -> JsonValue:
    """A -M VALUE (and a ``butterfly sweep --budget`` value): JSON when it parses, else the
    string."""
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        return text
    except RecursionError:
        raise UserError("-M/--model-arg: a VALUE nested too deeply for JSON") from None
    return value


def parse_model_args(pairs: Sequence[str] = (), file: str | Path | None = None
                     ) -> dict[str, JsonValue]:
    """``--model-args FILE`` (a JSON or YAML mapping), then each ``-M KEY=VALUE`` over it
    (VALUE as JSON when it parses, else the string). ``extra_body`` mappings are merged."""
    out: dict[str, JsonValue] = {}
    if file is not None:
        out.update(_read_args_file(Path(file)))
        check_owned(out, f"--model-args {file}")
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"-M/--model-arg takes KEY=VALUE, got {pair!r}")
        one = {key.strip(): arg_value(text)}
        check_owned(one, "-M")
        _merge(out, one)
    return check_model_args(out)


def _merge(out: dict[str, JsonValue], new: Mapping[str, JsonValue]) -> None:
    for k, v in new.items():
        old = out.get(k)
        if k == "extra_body" and isinstance(v, dict) and isinstance(old, dict):
            out[k] = {**old, **v}
        else:
            out[k] = v


def _read_args_file(path: Path) -> dict[str, JsonValue]:
    label = f"--model-args {path}"
    text = read_input(path, label)
    if path.suffix.lower() not in (".yaml", ".yml"):
        data = parse_json(text, label)
    else:
        try:
            import yaml  # type: ignore[import-untyped]

            data = yaml.safe_load(text)
        except RecursionError:
            raise UserError(f"{label}: not valid YAML: nested too deeply") from None
        except Exception as e:  # yaml.YAMLError
            raise UserError(f"{label}: not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise UserError(f"--model-args {path}: must hold one mapping of argument names")
    return data


def check_model_args(args: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """Refuse arguments the harness sets itself (:data:`OWNED`, nested ones too);
    ``extra_body`` must be a mapping; every value must be JSON (it is recorded in the
    manifest)."""
    check_owned(args, "model_args")
    if "extra_body" in args and not isinstance(args["extra_body"], dict):
        raise UserError("model argument 'extra_body' must be a JSON object, e.g. "
                        "-M 'extra_body={\"chat_template_kwargs\": {\"enable_thinking\": "
                        "false}}'")
    try:
        json.dumps(dict(args), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise UserError(f"model arguments must be plain JSON values: {e}") from None
    return dict(args)


def _protocol(protocol: Protocol | None, no_schema: bool, strategy: Strategy,
              sc_base: SCBase = "zero-shot") -> Protocol:
    chosen: Protocol = protocol or ("json" if no_schema else "schema")
    if no_schema and chosen == "schema":
        raise UserError("--no-schema contradicts --protocol schema")
    if not compatible(strategy, chosen, sc_base):
        name = (f"--sc-base {sc_base}" if strategy == "self-consistency"
                else f"--strategy {strategy}")
        raise UserError(f"{name} reasons before the spec: use --protocol json-last (json-first "
                        "asks for the spec first, schema and json for the spec alone)")
    return chosen


def _sc_base(strategy: Strategy, sc_base: SCBase | None) -> SCBase:
    if sc_base is None:
        return DEFAULTS.sc_base
    if sc_base not in SC_BASES:
        raise UserError(f"--sc-base takes one of {', '.join(SC_BASES)}, got {sc_base!r}")
    if strategy != "self-consistency":
        raise UserError("--sc-base is only for --strategy self-consistency")
    return sc_base


def _samples(strategy: Strategy, samples: int | None, temperature: float) -> int:
    if strategy != "self-consistency":
        if samples is not None:
            raise UserError("--samples is only for --strategy self-consistency")
        return 1
    n = DEFAULTS.samples if samples is None else samples
    if n < 2:
        raise UserError("--samples must be at least 2: self-consistency votes over samples")
    if temperature <= 0:
        raise UserError("--strategy self-consistency samples at a temperature above 0: "
                        "give --temperature (e.g. 0.7)")
    return n


def parse_ask_at(value: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """``--ask-at``: None (not given) or 'all' -> None (every turn); 'last' -> () (the last
    turn only); '5,10,20' or a sequence of turns -> those turns, distinct and increasing."""
    if value is None or (isinstance(value, str) and value.strip() == EVERY):
        return None
    if isinstance(value, str) and value.strip() == LAST:
        return ()
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        turns = [int(str(x).strip()) for x in parts]
    except ValueError:
        turns = []
    if not turns or any(t < 1 for t in turns) or any(isinstance(x, bool) for x in parts):
        shown = value if isinstance(value, str) else ",".join(str(x) for x in value)
        raise UserError(f"--ask-at takes turns from 1, comma-separated (e.g. 5,10,20,40,80), "
                        f"'{LAST}' or '{EVERY}'; got {shown!r}")
    return tuple(sorted(set(turns)))


def _ask_at(o: RunOptions) -> tuple[int, ...] | None:
    """The run's ask points: only restate mode asks at chosen turns."""
    turns = parse_ask_at(o.ask_at)
    if o.ask_at is not None and o.mode != "restate":
        raise UserError(f"--ask-at is for --mode restate (each ask a stateless call); --mode "
                        f"{o.mode} asks every turn")
    return turns


def _at_least(**values: tuple[int | None, int]) -> None:
    for name, (value, low) in values.items():
        if value is not None and value < low:
            raise UserError(f"--{name.replace('_', '-')} must be at least {low}")


def _finite(**values: float) -> None:
    for name, value in values.items():
        if not math.isfinite(value):
            raise UserError(f"--{name.replace('_', '-')} must be a finite number, got {value}")


def _limits(max_answer_chars: int, max_retry_wait: float) -> None:
    """The response-size cap (1 to the parser's limit: beyond it an answer is too_large
    anyway) and the longest wait before a retry (0 or more seconds)."""
    if not 1 <= max_answer_chars <= ANSWER_CAP:
        raise UserError(f"--max-answer-chars takes 1 to {ANSWER_CAP} (the parser's limit: a "
                        f"longer answer is an abstention anyway), got {max_answer_chars}")
    if max_retry_wait < 0:
        raise UserError(f"--max-retry-wait must be 0 or more seconds, got {max_retry_wait:g}")


def check_model(model: str) -> str:
    """``model`` if it names something a run can open; else one clear line, before anything
    is created (an unknown scripted agent or provider, an empty name)."""
    if not isinstance(model, str) or not model.strip():
        raise UserError(f"--model must name a model (e.g. {DEFAULTS.model}, script/oracle, "
                        f"ollama_chat/qwen2.5:7b), got {model!r}")
    check_model_name(model)
    return model


def check_api_base(url: str | None) -> str | None:
    """``--api-base``: None, or an http(s) URL with a host (and a valid port, no spaces)."""
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # a port that is not a number (or out of range) raises
    except ValueError:
        ok = False
    if not ok or any(c.isspace() or not c.isprintable() for c in url):
        raise UserError("--api-base must be an http:// or https:// URL with a host, e.g. "
                        f"http://127.0.0.1:8000/v1; got {redact(url)!r}")
    return url


def check_out(out: str | Path | None, flag: str = "--out") -> Path | None:
    """``--out`` as a path, or None (the default directory); an empty name is refused rather
    than read as the current directory or the default, and so is a path through a file."""
    if isinstance(out, str) and not out.strip():
        raise UserError(f"{flag} must name a directory (leave it out for the default), got "
                        f"{out!r}")
    if out is None:
        return None
    path = Path(out)
    try:
        there = next((p for p in (path, *path.parents) if p.exists()), None)
        through_file = there is not None and not there.is_dir()
    except OSError as e:  # a parent the user may not search (PermissionError), a loop
        raise UserError(f"{flag} {out}: cannot reach it: {e.strerror or e} (a directory on "
                        f"its way cannot be searched: choose another {flag})") from None
    if there is not None and through_file:
        raise UserError(f"{flag} {out}: {there} is a file, not a directory: choose another "
                        f"{flag}")
    return path


def check_routed(api_base: str | None) -> None:
    """``--router`` names each deployment's api_base: refuse ``--api-base`` beside it."""
    if api_base:
        raise UserError("--router spreads calls over the api_base of each deployment: give "
                        "--router or --api-base, not both")


def make_params(options: RunOptions, router: RouterRef | None = None,
                suite: ResolvedSuite | None = None) -> RunParams:
    """Every option checked, then the run's parameters (``api_base`` redacted; ``router``: the
    replicas of an opened ``--router`` file, checked before; ``suite``: the suite the run
    plays, whose manifest gives the track when ``--track`` is not given and, in restate mode,
    the ask points when ``--ask-at`` is not)."""
    o = options
    _finite(temperature=o.temperature, timeout=o.timeout, max_retry_wait=o.max_retry_wait,
            **({} if o.max_cost is None else {"max_cost": o.max_cost}))
    check_api_base(o.api_base)
    if router is not None:
        check_routed(o.api_base)
    if o.temperature < 0:
        raise UserError(f"--temperature must be 0 or more, got {o.temperature:g}")
    chosen_track = o.track or (suite.track if suite is not None else SPEC.name)
    if chosen_track not in TRACKS:
        raise UserError(f"--track takes one of {', '.join(TRACKS)}, got {chosen_track!r}")
    t = track(chosen_track)
    refused = t.flags_refusal(o, parse_layouts(o.layouts))
    if refused is not None:
        raise UserError(refused)
    if o.ask_at is None and o.mode == "restate" and suite is not None:
        o = o.replace(ask_at=suite.ask_at)  # the suite's default ask points
    ask_at = _ask_at(o)
    base = _sc_base(o.strategy, o.sc_base)
    chosen = _protocol(o.protocol, o.no_schema, o.strategy, base)
    if o.max_cost is not None and not o.max_cost > 0:
        raise UserError("--max-cost must be a positive number of US dollars")
    n_samples = _samples(o.strategy, o.samples, o.temperature)
    _at_least(concurrency=(o.concurrency, 1), retries=(o.retries, 0),
              max_tokens=(1 if o.max_tokens is None else o.max_tokens, 1), limit=(o.limit, 1),
              per_category=(o.per_category, 1), repeats=(o.repeats, 1))
    if o.timeout <= 0:
        raise UserError("--timeout must be positive")
    _limits(o.max_answer_chars, o.max_retry_wait)
    if o.via not in VIAS:
        raise UserError(f"--via takes one of {', '.join(VIAS)}, got {o.via!r}")
    chosen = t.protocol(chosen)
    checked = dict(
        max_tokens=o.max_tokens if o.max_tokens is not None else t.max_tokens,
        schema_output=chosen == "schema", samples=n_samples, protocol=chosen,
        layouts=parse_layouts(o.layouts), ask_at=ask_at, api_base=redact_url(o.api_base),
        sc_base=base, model_args=check_model_args(o.model_args or {}), send_seed=not o.no_seed,
        price=user_price(o.price, o.price_per_mtok), cache_markers=not o.no_cache_markers,
        router=router, shard=parse_shard(o.shard), track=t.name,
    )
    # every other parameter is the option of its name, as given
    as_given = {name: getattr(o, name) for name in RunParams.model_fields if name in FIELDS}
    return RunParams(**(as_given | checked))
