"""The Python API: what the command line does, for notebooks and scripts.

>>> import butterfly
>>> run = butterfly.run(model="script/oracle", limit=3, out="/tmp/bb-oracle", cache=None)
>>> butterfly.score_run(run).final_match
1.0

``run`` plays a suite and returns the :class:`~butterfly.runs.reader.Run` it wrote;
``load_run`` reads any run directory; ``score_run`` gives the typed
:class:`~butterfly.core.results.RunScore`; ``report`` writes the HTML report. The command
line is a thin layer over these (docs/api.md). Nothing here imports litellm unless a run calls
a provider that needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import JsonValue

from butterfly.analysis.scoring import score_run
from butterfly.analysis.tidy import load_runs, tidy_rows
from butterfly.core.results import RunScore, ScoreReport
from butterfly.core.vocab import DEFAULTS, Mode, ParseMode, Protocol, SCBase, Strategy, Via
from butterfly.errors import UserError
from butterfly.models.client import ANSWER_CAP, RETRY_WAIT_CAP, ModelClient
from butterfly.models.registry import (
    check_cache,
    check_priced,
    open_client,
    router_config,
    transport,
)
from butterfly.models.router import RouterConfig
from butterfly.present.display import ProgressDisplay
from butterfly.runs.lock import writer_lock
from butterfly.runs.options import check_model, check_out, make_params
from butterfly.runs.play import Progress, pending_calls, run_suite
from butterfly.runs.reader import Run, load_run, run_of
from butterfly.runs.records import RunParams
from butterfly.runs.repair import Identity, RepairResult
from butterfly.runs.repair import repair as repair_run
from butterfly.runs.scope import select
from butterfly.runs.store import RunState, note_transport, open_run
from butterfly.runs.sweep import parse_shard, router_ref
from butterfly.suite.load import load_suite, resolve_suite
from oracle import Scenario

__all__ = ["Run", "RunScore", "ScoreReport", "default_out", "load_run", "load_runs", "repair",
           "report", "run", "run_params", "score_run", "tidy_rows"]

T = TypeVar("T")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-")


def default_out(model: str, suite_path: Path, prefix: str = "",
                shard: str | None = None) -> Path:
    """``runs/MODEL__SUITE`` (``...__SUITE.shard-I-of-N`` for a shard): where a run goes
    when no ``out`` is given."""
    part = parse_shard(shard)
    tail = "" if part is None else f".shard-{part.index}-of-{part.count}"
    return Path("runs") / f"{prefix}{_slug(model)}__{suite_path.stem}{tail}"


def run_params(**options: Any) -> RunParams:
    """A run's parameters from the options of ``butterfly run`` (checked once)."""
    return make_params(**options)


def run(model: str = DEFAULTS.model, suite: str = DEFAULTS.suite, out: str | Path | None = None,
        *, limit: int | None = None, per_category: int | None = None,
        seed: int = DEFAULTS.seed, layouts: str | Sequence[str] = DEFAULTS.layouts,
        repeats: int = 1, mode: Mode = DEFAULTS.mode,
        temperature: float = DEFAULTS.temperature, max_tokens: int = DEFAULTS.max_tokens,
        concurrency: int = DEFAULTS.concurrency, timeout: float = DEFAULTS.timeout,
        retries: int = DEFAULTS.retries, api_base: str | None = None, no_schema: bool = False,
        parse: ParseMode = DEFAULTS.parse, strategy: Strategy = DEFAULTS.strategy,
        samples: int | None = None, protocol: Protocol | None = None,
        sc_base: SCBase | None = None, model_args: Mapping[str, JsonValue] | None = None,
        no_seed: bool = False, max_cost: float | None = None, via: Via = DEFAULTS.via,
        router: str | Path | None = None, shard: str | None = None,
        max_answer_chars: int = ANSWER_CAP, max_retry_wait: float = RETRY_WAIT_CAP,
        cache: str | None = DEFAULTS.cache, progress: bool = False) -> Run:
    """Run ``suite`` against ``model`` into ``out`` (created, or resumed when it holds the same
    run) and return the run as written. ``cache=None`` turns the answer cache off;
    ``progress`` shows a progress bar on stderr. ``model_args`` are sent with every call
    (``-M KEY=VALUE``); ``max_cost`` (USD) stops the run before a call could exceed it;
    ``via="litellm"`` sends through litellm what would take the fast path.
    ``router`` (a litellm Router file) spreads the calls over the deployments named ``model``;
    ``shard`` (``"I/N"``) plays slice I of N of the conversations (docs/scale.md).
    ``max_answer_chars`` caps what is kept (and sent back) of an answer; ``max_retry_wait``
    the longest wait before a retry (docs/running.md). The
    manifest's status says whether every conversation completed (``complete``) or some await
    a re-run (``incomplete``, or ``budget``: re-run with a larger ``max_cost``)."""
    where = check_out(out)
    config = None if router is None else router_config(router, model)  # checked first
    params = run_params(limit=limit, per_category=per_category, seed=seed, layouts=layouts,
                        repeats=repeats, mode=mode, temperature=temperature,
                        max_tokens=max_tokens, concurrency=concurrency, timeout=timeout,
                        retries=retries, api_base=api_base, no_schema=no_schema, parse=parse,
                        strategy=strategy, samples=samples, protocol=protocol,
                        sc_base=sc_base, model_args=model_args, no_seed=no_seed,
                        max_cost=max_cost, via=via,
                        router=None if config is None else router_ref(config), shard=shard,
                        max_answer_chars=max_answer_chars, max_retry_wait=max_retry_wait)
    if config is None:
        check_model(model)
    if max_cost is not None:
        check_priced(model, api_base, via, config)
    suite_path = resolve_suite(suite)
    whole = load_suite(suite_path)
    target = where or default_out(model, suite_path, shard=shard)
    check_cache(model, cache, routed=config is not None)  # last: it may create the cache
    state = _play_all(model, suite_path, select(whole, params), params, target,
                      api_base=api_base, cache=cache, progress=progress, router=config)
    return run_of(target, state.manifest, whole, state)  # what it played: nothing read again


def _play_all(model: str, suite_path: Path, scenarios: list[Scenario], params: RunParams,
              out: Path, *, api_base: str | None, cache: str | None, progress: bool,
              router: RouterConfig | None = None) -> RunState:
    """Hold ``out``'s write lock, open the model, then create or resume the run: a model that
    cannot be opened leaves nothing behind but the (free) lock file."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(writer_lock(out))
        client = open_client(stack, model, scenarios, concurrency=params.concurrency,
                             retries=params.retries, timeout=params.timeout, api_base=api_base,
                             cache_path=cache, via=params.via, router=router,
                             max_answer_chars=params.max_answer_chars,
                             max_retry_wait=params.max_retry_wait)
        try:
            state = open_run(out, model, suite_path, scenarios, params)
            note_transport(out, state, transport(model, api_base, params.via,
                                                 routed=router is not None))
        except BaseException:
            asyncio.run(client.aclose())
            raise
        todo = pending_calls(scenarios, state)
        tracker = Progress(total=todo)
        client.on_wait = tracker.waiting  # "rate-limited, waiting N s" on the progress line
        if progress:
            display = stack.enter_context(ProgressDisplay(todo, f"{model} on {out}"))
            tracker.on_update = display.update
        asyncio.run(_closing(run_suite(scenarios, client, state, out, tracker), client))
    return state


async def _closing(coro: Coroutine[Any, Any, T], client: ModelClient) -> T:
    try:
        return await coro
    finally:
        await client.aclose()


def report(runs: Sequence[str | Path | Run], html: str | Path,
           title: str | None = None, *, compare_method: str = "bh", q: float = 0.1) -> int:
    """Write the self-contained HTML report of ``runs`` to ``html``; its size in bytes. Runs
    of one suite are compared as ``butterfly compare`` does (``compare_method``, ``q``)."""
    if not runs:
        raise UserError("report: give at least one run directory")
    if not str(html).strip():
        raise UserError("--html must name a file, got ''")
    if not 0 < q < 1:  # as butterfly compare: checked before any run is read
        raise UserError("--q must be between 0 and 1")
    from butterfly.present.report import write_report  # matplotlib, jinja2, scipy: when asked

    paths = [r.path if isinstance(r, Run) else Path(r) for r in runs]
    return write_report(paths, Path(html), title, compare_method, q)


def repair(out: str | Path, model: str | None = None, suite: str = DEFAULTS.suite,
           **options: Any) -> RepairResult:
    """``butterfly repair``: rebuild the damaged run directory ``out`` from its records (see
    :mod:`butterfly.runs.repair`). ``model``, ``suite`` and ``options`` (those of :func:`run`)
    are the flags the run was made with, needed only when its manifest is lost."""
    if model is None:
        return repair_run(Path(out))
    router = options.pop("router", None)
    config = None if router is None else router_config(router, model)
    params = run_params(**options, router=None if config is None else router_ref(config))
    return repair_run(Path(out), Identity(model, resolve_suite(suite), params))
