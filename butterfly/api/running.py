"""The API's commands that play or write runs: ``run``, ``observe``, ``repair``, ``merge``,
``import_inspect`` (and ``sequential`` in :mod:`butterfly.api.sequential`). Each takes typed
options and returns what it wrote; the command line is a thin layer over them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import JsonValue

from butterfly.core.options import FIELDS, RunOptions
from butterfly.engine.tracks import Track, track
from butterfly.errors import UserError
from butterfly.models.client import ModelClient
from butterfly.models.price_map import Rates, rates_for, window
from butterfly.models.registry import (
    ModelRequest,
    check_cache,
    check_name_offline,
    check_priced,
    open_client,
    prefix_of,
    router_config,
)
from butterfly.models.router import load_router
from butterfly.models.tokens import caching_of, counter_for
from butterfly.present.display import ObservingDisplay, ProgressDisplay
from butterfly.runs.code_turns import programs
from butterfly.runs.dryrun import DryRun, SliceBy
from butterfly.runs.dryrun import dry_run as bill_of
from butterfly.runs.inspect_import import Imported, import_log
from butterfly.runs.lock import writer_lock
from butterfly.runs.merge import merge as merge_shards
from butterfly.runs.observe import Observed, check_sandbox, observe_programs
from butterfly.runs.play import Progress, pending_calls, run_suite
from butterfly.runs.reader import Run, load_run, run_of
from butterfly.runs.records import BudgetSweep, RunManifest, RunParams
from butterfly.runs.repair import Identity, RepairResult
from butterfly.runs.repair import repair as repair_run
from butterfly.runs.run_flags import check_model, check_out, make_params, parse_model_args
from butterfly.runs.run_price import PriceGiven, user_price
from butterfly.runs.scope import check_ask_at, select
from butterfly.runs.shards import parse_shard, router_ref
from butterfly.runs.store import RunState, note_transport, open_run, peek_state
from butterfly.suite.load import ResolvedSuite, resolve, resolve_suite
from oracle import Scenario

T = TypeVar("T")


def options(base: RunOptions | None = None, /, **fields: Any) -> RunOptions:
    """``base`` (the defaults when None) with ``fields`` (names of :class:`RunOptions`); an
    unknown name is one clear line."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise UserError(f"unknown run option(s) {', '.join(unknown)} (RunOptions has: "
                        f"{', '.join(FIELDS)})")
    return (base or RunOptions()).replace(**fields)


def model_args(pairs: Sequence[str] = (), file: str | Path | None = None
               ) -> dict[str, JsonValue]:
    """``-M KEY=VALUE`` pairs over ``--model-args FILE``, checked (harness-owned keys
    refused)."""
    return parse_model_args(pairs, file)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-")


def default_out(model: str, suite_path: Path, prefix: str = "",
                shard: str | None = None, mode: str = "chat") -> Path:
    """``runs/MODEL__SUITE`` (``MODEL__SUITE__restate`` in restate mode, so that a restate run
    never takes a chat run's directory; ``.shard-I-of-N`` after either for a shard): where a
    run goes when no ``out`` is given (the naming scheme: docs/running.md, "Run
    directories")."""
    part = parse_shard(shard)
    tail = "" if part is None else f".shard-{part.index}-of-{part.count}"
    kind = "__restate" if mode == "restate" else ""
    return Path("runs") / f"{prefix}{_slug(model)}__{suite_path.stem}{kind}{tail}"


def run_dir(opts: RunOptions) -> Path:
    """The run directory ``opts`` write to: ``out``, or the default for its model and suite."""
    where = check_out(opts.out)
    return where or default_out(opts.model, resolve_suite(opts.suite), shard=opts.shard,
                                mode=opts.mode)


def run_params(opts: RunOptions) -> RunParams:
    """A run's parameters (what its manifest records) from its options, checked once."""
    return _resolved(opts).params


@dataclass(frozen=True)
class Resolved:
    """A run as its options say, resolved and checked once: the suite (its file and manifest,
    its scenarios loaded when first read), the model and how it is reached, the parameters the
    manifest records, and the run directory."""

    suite: ResolvedSuite
    model: ModelRequest
    params: RunParams
    out: Path

    @property
    def track(self) -> Track:
        return track(self.params.track)

    def scenarios(self, given_ask_at: str | Sequence[int] | None) -> list[Scenario]:
        """The scenarios the run plays (its scope), with ``--ask-at`` (as given) checked
        against them."""
        chosen = select(self.suite.scenarios, self.params)
        check_ask_at(given_ask_at, chosen, self.params)
        return chosen


def _resolved(opts: RunOptions, offline: bool = False) -> Resolved:
    """The run ``opts`` describe: the suite named once, the router group (``opts.router``'s
    deployments named ``opts.model``, checked first, by litellm unless ``offline``) and every
    option checked (:func:`butterfly.runs.run_flags.make_params`)."""
    where = check_out(opts.out)
    suite = resolve(opts.suite)
    config = None if opts.router is None else (
        load_router(opts.router, opts.model) if offline else router_config(opts.router,
                                                                           opts.model))
    params = make_params(opts, None if config is None else router_ref(config), suite)
    out = where or default_out(opts.model, suite.path, shard=opts.shard, mode=opts.mode)
    model = ModelRequest(opts.model, opts.api_base, params.via, config, opts.cache)
    return Resolved(suite, model, params, out)


def run(opts: RunOptions | None = None, /, *, progress: bool = False,
        budget_sweep: BudgetSweep | None = None, **fields: Any) -> Run:
    """Run a suite against a model, as ``opts`` say (:class:`RunOptions`; ``fields`` change
    some of them: ``run(model="script/oracle", limit=3)``), into ``opts.out`` (created, or
    resumed when it holds the same run) and return the run as written. ``cache=None`` turns
    the answer cache off; ``progress`` shows a progress bar on stderr. The manifest's status
    says whether every conversation completed (``complete``) or some await a re-run
    (``incomplete``, or ``budget``: re-run with a larger ``max_cost``); ``budget_sweep``: the
    budget sweep the run is one budget of (:func:`butterfly.api.sweep` links its runs so);
    docs/api.md."""
    o = options(opts, **fields)
    r = _resolved(o)
    if not r.model.routed:
        check_model(o.model)
    if o.max_cost is not None:
        check_priced(o.model, o.api_base, o.via, r.model.router, r.params.price)
    scenarios = r.scenarios(o.ask_at)
    check_cache(o.model, o.cache, routed=r.model.routed)  # last: it may create the cache
    state = _play_all(r, scenarios, progress, budget_sweep)
    return run_of(r.out, state.manifest, r.suite.scenarios, state)  # nothing read again


def dry_run(opts: RunOptions | None = None, /, *, price: Rates | None = None,
            slice_by: SliceBy | None = None, **fields: Any) -> DryRun:
    """What :func:`run` with the same options would send, counted without playing anything
    or writing a file (``butterfly run --dry-run``): calls, prompt, completion and
    cached-prefix tokens and their cost, per slice of the suite (chain length for a suite built
    by length, else category) and in total; with ``out`` holding this run, what its resume
    would still send. ``price``: the rates to use (default: the model's offline price, if
    any); ``slice_by``: ``length``, ``category`` or ``scenario`` (default: length for a suite
    whose manifest says it is built by length, else category); docs/cost.md."""
    o = options(opts, **fields)
    r = _resolved(o, offline=True)
    if not r.model.routed:
        check_name_offline(o.model)
    scenarios = r.scenarios(o.ask_at)
    params = r.params
    state = peek_state(r.out, o.model, r.suite.path, scenarios, params)
    by: SliceBy = slice_by or ("length" if r.suite.by_length else "category")
    billed = r.model.routed or prefix_of(o.model).priced
    rates = price if price is not None else rates_for(o.model, params.price)  # the run's own
    limits = window(o.model)  # litellm's map, read without importing litellm
    return bill_of(o.model, r.suite.path, scenarios, state, by, counter_for(o.model),
                   caching_of(o.model), rates, billed, None if limits is None else limits.prompt)


def _play_all(r: Resolved, scenarios: list[Scenario], progress: bool,
              link: BudgetSweep | None = None) -> RunState:
    """Hold the run directory's write lock, open the model, then create or resume the run: a
    model that cannot be opened leaves nothing behind but the (free) lock file."""
    with writer_lock(r.out):
        state = _play(r, scenarios, progress, link)
        if r.track.observes:  # the writer observes its programs (the model closed)
            told = ObservingDisplay(f"observing the programs of {r.out}") if progress else None
            observe_programs(r.out, programs(tuple(scenarios), state.done).values(), told)
    return state


def _play(r: Resolved, scenarios: list[Scenario], progress: bool,
          link: BudgetSweep | None = None) -> RunState:
    """Open the model, create or resume the run, and play it (the caller holds the lock)."""
    out, model = r.out, r.model.model
    with contextlib.ExitStack() as stack:
        client = open_client(stack, r.model, scenarios, r.params)
        try:
            state = open_run(out, model, r.suite.path, scenarios, r.params, link)
            note_transport(out, state, r.model.transport)
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


def observe(run: str | Path | Run, *, allow_fallback: bool = False,
            on_done: Callable[[int, int], None] | None = None) -> Observed:
    """``butterfly observe``: run every program of the code run ``run`` (its directory, or the
    run loaded) not yet observed in the sandbox, each observation kept as it is made (the
    run's write lock held: refused while another process writes it). Refuses the fallback
    sandbox when this process is root unless ``allow_fallback``. ``on_done(observed,
    to_observe)`` is told after each (docs/code-track.md, "Observing a run")."""
    loaded = run if isinstance(run, Run) else load_run(Path(run))
    path = loaded.path
    if not loaded.track.observes:
        raise UserError(f"{path}: a {loaded.params.track}-track run has no programs to observe "
                        "(observe is for code-track runs)")
    check_sandbox(allow_fallback)
    with writer_lock(path):
        loaded = load_run(path)  # as it is now that no one else writes it
        return observe_programs(path, programs(loaded.suite, loaded.records).values(), on_done)


async def _closing(coro: Coroutine[Any, Any, T], client: ModelClient) -> T:
    try:
        return await coro
    finally:
        await client.aclose()


def repair(out: str | Path, flags: RunOptions | None = None) -> RepairResult:
    """``butterfly repair``: rebuild the damaged run directory ``out`` from its records (see
    :mod:`butterfly.runs.repair`). ``flags``: the options the run was made with, needed only
    when its manifest is lost."""
    if flags is None:
        return repair_run(Path(out))
    r = _resolved(flags)
    return repair_run(Path(out), Identity(flags.model, r.suite.path, r.params))


def merge(shards: Sequence[str | Path], out: str | Path) -> RunManifest:
    """``butterfly merge``: join the shards of one sweep into the run directory ``out``; the
    merged run's manifest (docs/scale.md)."""
    return merge_shards([Path(p) for p in shards], Path(out))



def import_inspect(log: str | Path, out: str | Path, suite: str | Path | None = None,
                   price: PriceGiven = None, price_per_mtok: str | None = None) -> Imported:
    """``butterfly import-inspect``: the inspect eval log ``log`` (.eval or .json) of a
    butterfly task made into the new run directory ``out``; ``suite``: the suite file to use
    instead of the one the log names; ``price`` or ``price_per_mtok``: the model's price, as
    ``run`` takes them, which every call is priced by (docs/inspect.md, "Importing an inspect
    log")."""
    given = user_price(price, price_per_mtok)
    return import_log(Path(log), Path(out), None if suite is None else Path(suite), given)
