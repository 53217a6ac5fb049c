"""An inspect eval log read into plain records (``butterfly import-inspect``): the only module
that imports ``inspect_ai``, and only inside :func:`read_log` (``import butterfly`` and every
other command never import it; tests/butterfly/runs/test_runner.py checks ``sys.modules``).

The log is read against the shape butterfly's inspect tasks write (docs/inspect.md,
"Importing an inspect log"): ``eval.metadata["butterfly"]`` names the suite and the run's
parameters; each sample is one conversation (id ``SCENARIO/LAYOUT``, epoch = repeat + 1) whose
store holds ``butterfly_turns``, one entry per call made. Anything else is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from butterfly.core.vocab import Layout, Mode, ParseMode, Protocol, SCBase, Strategy, Track
from butterfly.errors import UserError
from butterfly.runs.records import InspectSource
from butterfly.runs.run_price import first_error
from butterfly.suite.load import sha256_file

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

META_KEY: Final = "butterfly"
TURNS_KEY: Final = "butterfly_turns"
OVER_CONTEXT: Final = "model_length"
"""inspect's stop reason for a call over the model's context window (a logged call's
``finish_reason``)."""
OVER_CONTEXT_DETAIL: Final = "the conversation no longer fits the model's context window"
"""Why a call over the context window abstains, when its entry does not say."""
BUTTERFLY_PROVIDER: Final = "butterfly/"
"""Inspect's name of butterfly's own models (``butterfly/script/lifo``): the run's model is
the name after it (``script/lifo``)."""

_LOOSE = ConfigDict(extra="ignore", frozen=True)


class ButterflyMeta(BaseModel):
    """``eval.metadata["butterfly"]``: the suite and the parameters the task played."""

    model_config = _LOOSE
    suite: str
    suite_path: str
    suite_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    mode: Mode
    ask_at: tuple[int, ...] | None = None
    strategy: Strategy
    samples: int = Field(1, ge=1)
    protocol: Protocol
    max_answer_chars: int | None = Field(None, ge=1)
    prompt_version: int
    track: Track = "spec"
    layouts: tuple[Layout, ...] = Field(min_length=1)
    parse: ParseMode | None = None
    sc_base: SCBase | None = None
    per_category: int | None = None
    limit: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None


class TurnUsage(BaseModel):
    model_config = _LOOSE
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


class TurnEntry(BaseModel):
    """One entry of ``store["butterfly_turns"]``: one call the solver made."""

    model_config = _LOOSE
    turn: int = Field(ge=1)
    sample: int = Field(0, ge=0)
    raw: str
    raw_chars: int | None = Field(None, ge=0)
    """The answer's length when ``raw`` is only its first characters (the response-size cap)."""
    messages_sent: int = Field(ge=1)
    usage: TurnUsage = TurnUsage()
    latency_s: float | None = None
    finish_reason: str | None = None
    error: str | None = None
    abstention_detail: str | None = None
    """Why the answer abstained, as the solver read it (read for a call over the context
    window only: every other answer is read again)."""


@dataclass(frozen=True)
class LoggedSample:
    """One sample: a conversation (scenario, layout, repeat) and the calls it made."""

    id: str
    scenario: str
    layout: str
    repeat: int
    turns: tuple[TurnEntry, ...]
    error: str | None
    """The sample's own error (inspect stopped it), or None."""
    at: str


@dataclass(frozen=True)
class LoggedEval:
    """What an import reads of a log: its provenance (as the run's manifest records it), its
    parameters and samples."""

    path: Path
    source: InspectSource
    error: str | None
    meta: ButterflyMeta
    temperature: float | None
    max_tokens: int | None
    seed: int | None
    epochs: int
    selected: tuple[str, ...] | None
    """The sample ids the eval selected (``dataset.sample_ids``), played or not."""
    samples: tuple[LoggedSample, ...]

    @property
    def run_model(self) -> str:
        """The run's model: butterfly's own name for butterfly's models."""
        return self.source.model.removeprefix(BUTTERFLY_PROVIDER)


def _load(path: Path) -> EvalLog:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise UserError("import-inspect needs inspect-ai: pip install 'butterflybench[inspect]'"
                        ) from None
    if not path.is_file():
        raise UserError(f"{path}: no such file (give an inspect eval log, .eval or .json)")
    try:
        return read_eval_log(str(path), exclude_fields={"events", "attachments"})
    except Exception as e:  # inspect raises what its readers raise: say it in one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise UserError(f"{path}: not an inspect eval log ({first})") from None


def _meta(path: Path, log: EvalLog) -> ButterflyMeta:
    data = (log.eval.metadata or {}).get(META_KEY)
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a log of ButterflyBench's tasks (its eval metadata has no "
                        f"'{META_KEY}' entry): import-inspect reads logs of inspect eval "
                        "butterflybench/...")
    try:
        return ButterflyMeta.model_validate(data)
    except ValidationError as e:
        raise UserError(f"{path}: eval metadata '{META_KEY}': {first_error(e)}") from None


def _turns(path: Path, sample: EvalSample) -> tuple[TurnEntry, ...]:
    where = f"{path}: sample {sample.id} (epoch {sample.epoch})"
    entries = sample.store.get(TURNS_KEY, [])
    if not isinstance(entries, list):
        raise UserError(f"{where}: store '{TURNS_KEY}' is not a list")
    try:
        return tuple(TurnEntry.model_validate(x) for x in entries)
    except ValidationError as e:
        raise UserError(f"{where}: store '{TURNS_KEY}': {first_error(e)}") from None


def _sample(path: Path, sample: EvalSample, epochs: int) -> LoggedSample:
    meta = sample.metadata or {}
    scenario, layout = meta.get("scenario"), meta.get("layout")
    if not isinstance(scenario, str) or not isinstance(layout, str):
        raise UserError(f"{path}: sample {sample.id} has no scenario and layout in its "
                        "metadata: not a sample of ButterflyBench's tasks")
    if not 1 <= sample.epoch <= epochs:
        raise UserError(f"{path}: sample {sample.id} has epoch {sample.epoch}, outside the "
                        f"eval's {epochs}")
    error = None if sample.error is None else sample.error.message
    at = sample.completed_at or sample.started_at or ""
    return LoggedSample(str(sample.id), scenario, layout, sample.epoch - 1,
                        _turns(path, sample), error, str(at))


def _cost(log: EvalLog) -> float | None:
    costs = [u.total_cost for u in log.stats.model_usage.values() if u.total_cost is not None]
    return round(sum(costs), 8) if costs else None


def read_log(path: Path) -> LoggedEval:
    """The log at ``path`` (.eval or .json), refused in one line when it is not a log of a
    butterfly task."""
    log = _load(path)
    meta = _meta(path, log)
    spec, config = log.eval, log.eval.model_generate_config
    epochs = spec.config.epochs or 1
    ids = spec.dataset.sample_ids
    samples = tuple(_sample(path, s, epochs) for s in log.samples or ())
    source = InspectSource(
        log=str(path), log_sha256=sha256_file(path),
        inspect_version=spec.packages.get("inspect_ai"), eval_id=spec.eval_id,
        run_id=spec.run_id, task=spec.task, created=str(spec.created), status=log.status,
        model=spec.model, samples=len(samples), cost_usd=_cost(log))
    return LoggedEval(
        path=path, source=source, error=None if log.error is None else log.error.message,
        meta=meta, temperature=config.temperature, max_tokens=config.max_tokens,
        seed=config.seed, epochs=epochs,
        selected=None if ids is None else tuple(str(i) for i in ids), samples=samples)
