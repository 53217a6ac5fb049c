"""``butterfly sequential`` in the API: draw answers of two models pair by pair per scenario
until each is decided (docs/statistics.md). The statistics are ``analysis.sequential_design``'s; the
playing is ``runs.sequential_draws``'s, through the same runner as ``butterfly run``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butterfly.analysis.results import SequentialResult
from butterfly.api.running import default_out, options
from butterfly.core.options import RunOptions
from butterfly.core.vocab import DEFAULTS, ErrorClass
from butterfly.engine.tracks import TRACKS, track
from butterfly.errors import UserError
from butterfly.models.client import OnWait
from butterfly.models.registry import check_cache, check_priced
from butterfly.present.text import round_line, wait_line
from butterfly.runs.run_flags import check_model, check_out, make_params
from butterfly.runs.run_price import PriceGiven, user_price
from butterfly.runs.scope import check_ask_at, select
from butterfly.runs.sequential_draws import Plan, play_sequential, routers
from butterfly.suite.load import resolve

if TYPE_CHECKING:
    from butterfly.analysis.sequential_design import SequentialDesign


def sequential(model_a: str, model_b: str, opts: RunOptions | None = None, /, *,
               method: str = "ebh", cap: int = 50, q: float = 0.1, stop_fine: bool = False,
               out_a: str | Path | None = None, out_b: str | Path | None = None,
               price_a: PriceGiven = None, price_b: PriceGiven = None,
               price_per_mtok_a: str | None = None, price_per_mtok_b: str | None = None,
               quiet: bool = False, **fields: Any) -> SequentialResult:
    """Compare ``model_a`` (old) with ``model_b`` (new) on ``opts.suite``, drawing answer pairs
    at ``opts`` (``temperature`` above 0; ``mode`` and ``ask_at`` as in :func:`run`; ``fields``
    change some options) into two run directories (``runs/seq-MODEL__SUITE`` by default) until
    each scenario is decided or has ``cap`` pairs; ``price_a`` / ``price_per_mtok_a`` (and
    ``_b``) price one model each, as ``run``'s ``price`` does; ``quiet`` says nothing on stderr
    while it plays."""
    from butterfly.analysis.sequential_design import check_options, make_design, result  # scipy

    o = options(opts or RunOptions(temperature=DEFAULTS.sequential_temperature), **fields)
    if o.price is not None or o.price_per_mtok is not None:
        raise UserError("sequential plays two models: give each its price with --price-a / "
                        "--price-b FILE or --price-per-mtok-a / --price-per-mtok-b IN,OUT "
                        "(price_a, price_b in the API), not --price (docs/cost.md)")
    suite = resolve(o.suite)
    chosen = o.track or suite.track
    if chosen in TRACKS and track(chosen).observes:
        raise UserError(f"sequential does not play the {chosen} track: a {chosen} run's "
                        "answers are programs, judged once observed in the sandbox, and the "
                        "sequential design decides from answers as they come (run each model "
                        f"with `butterfly run --track {chosen}`, then `butterfly compare`)")
    given = o.ask_at
    params = make_params(o, suite=suite)  # in restate mode, the suite's ask points by default
    suite_path = suite.path
    prices = (user_price(price_a, price_per_mtok_a, "-a"),
              user_price(price_b, price_per_mtok_b, "-b"))
    if model_a == model_b and prices[0] != prices[1]:
        raise UserError("--model-a and --model-b are one model: give it one price (the same "
                        "--price-a and --price-b)")
    a, b = _outs(model_a, model_b, suite_path, out_a, out_b, o.mode)
    check_options(method, cap, q, a, b)
    configs = routers(o.router, (model_a, model_b), o.api_base)
    if not configs:
        check_model(model_a)
        check_model(model_b)
    if params.max_cost is not None:
        for model, price, side in zip((model_a, model_b), prices, ("-a", "-b"), strict=True):
            check_priced(model, o.api_base, params.via, configs.get(model), price, side)
    scenarios = select(suite.scenarios, params)
    check_ask_at(given, scenarios, params)
    for model in (model_a, model_b):  # last: it may create the cache
        check_cache(model, o.cache, routed=model in configs)
    design = make_design(method, len(scenarios), q, cap, stop_fine)
    plan = Plan((model_a, model_b), (a, b), suite_path, scenarios,
                params.model_copy(update={"repeats": cap, "layouts": ("E",)}), o.api_base,
                o.cache, configs, prices)
    rounds = play_sequential(plan, design, on_wait=None if quiet else _announce,
                             on_round=None if quiet else _say_round(design))
    return result(design, scenarios, rounds, method=method, q=q, cap=cap, stop_fine=stop_fine,
                  model_a=model_a, model_b=model_b, out_a=a, out_b=b)


def _outs(model_a: str, model_b: str, suite_path: Path, out_a: str | Path | None,
          out_b: str | Path | None, mode: str) -> tuple[Path, Path]:
    """Both run directories: given, or ``runs/seq-MODEL__SUITE`` (``...__restate`` in restate
    mode, as ``run`` names them; ``-b`` added to B's when the two defaults are one)."""
    a = check_out(out_a, "--out-a") or default_out(model_a, suite_path, "seq-", mode=mode)
    b = check_out(out_b, "--out-b") or default_out(model_b, suite_path, "seq-", mode=mode)
    if a == b and not (out_a or out_b):
        b = b.with_name(b.name + "-b")
    return a, b


def _announce(model: str) -> OnWait:
    """Say on stderr that ``model``'s calls wait before a retry ("rate-limited, waiting N s")."""
    def say(seconds: float, kind: ErrorClass) -> None:
        print(wait_line(model, seconds, kind), file=sys.stderr, flush=True)
    return say


def _say_round(design: SequentialDesign) -> Callable[[int, int], None]:
    """Say on stderr how far the comparison got after each round."""
    from butterfly.analysis.sequential_design import round_counts

    def say(r: int, active: int) -> None:
        print(round_line(r, active, *round_counts(design)), file=sys.stderr, flush=True)
    return say
