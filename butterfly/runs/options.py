"""A run's options, checked once: every flag of ``butterfly run`` (and the Python API's
``butterfly.run``) becomes a :class:`RunParams` here, or a one-line :class:`UserError`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from butterfly.core.vocab import DEFAULTS, LAYOUTS, Layout, Mode, ParseMode, Protocol, Strategy
from butterfly.errors import UserError
from butterfly.models.registry import check_model_name
from butterfly.runs.records import RunParams
from butterfly.runs.store import redact_url


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


def _protocol(protocol: Protocol | None, no_schema: bool, strategy: Strategy) -> Protocol:
    chosen: Protocol = protocol or ("json" if no_schema else "schema")
    if no_schema and chosen == "schema":
        raise UserError("--no-schema contradicts --protocol schema")
    if strategy == "cot" and chosen in ("schema", "json"):
        raise UserError("--strategy cot needs room to reason: use --protocol json-last or "
                        "json-first")
    return chosen


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


def _at_least(**values: tuple[int | None, int]) -> None:
    for name, (value, low) in values.items():
        if value is not None and value < low:
            raise UserError(f"--{name.replace('_', '-')} must be at least {low}")


def _finite(**values: float) -> None:
    for name, value in values.items():
        if not math.isfinite(value):
            raise UserError(f"--{name.replace('_', '-')} must be a finite number, got {value}")


def check_model(model: str) -> str:
    """``model`` if it names something a run can open; else one clear line, before anything
    is created (an unknown scripted agent or provider, an empty name)."""
    if not isinstance(model, str) or not model.strip():
        raise UserError(f"--model must name a model (e.g. {DEFAULTS.model}, script/oracle, "
                        f"ollama_chat/qwen2.5:7b), got {model!r}")
    check_model_name(model)
    return model


def make_params(*, temperature: float = DEFAULTS.temperature,
                max_tokens: int = DEFAULTS.max_tokens, seed: int = DEFAULTS.seed,
                strategy: Strategy = DEFAULTS.strategy, samples: int | None = None,
                protocol: Protocol | None = None, no_schema: bool = False,
                parse: ParseMode = DEFAULTS.parse, limit: int | None = None,
                per_category: int | None = None,
                layouts: str | Sequence[str] = DEFAULTS.layouts, repeats: int = 1,
                mode: Mode = DEFAULTS.mode, concurrency: int = DEFAULTS.concurrency,
                timeout: float = DEFAULTS.timeout, retries: int = DEFAULTS.retries,
                api_base: str | None = None) -> RunParams:
    """Every option checked, then the run's parameters (``api_base`` redacted)."""
    _finite(temperature=temperature, timeout=timeout)
    if temperature < 0:
        raise UserError(f"--temperature must be 0 or more, got {temperature:g}")
    chosen = _protocol(protocol, no_schema, strategy)
    n_samples = _samples(strategy, samples, temperature)
    _at_least(concurrency=(concurrency, 1), retries=(retries, 0), max_tokens=(max_tokens, 1),
              limit=(limit, 1), per_category=(per_category, 1), repeats=(repeats, 1))
    if timeout <= 0:
        raise UserError("--timeout must be positive")
    return RunParams(
        temperature=temperature, max_tokens=max_tokens, seed=seed,
        schema_output=chosen == "schema", strategy=strategy, samples=n_samples,
        protocol=chosen, parse=parse, limit=limit, per_category=per_category,
        layouts=parse_layouts(layouts), repeats=repeats, mode=mode, concurrency=concurrency,
        timeout=timeout, retries=retries, api_base=redact_url(api_base),
    )
