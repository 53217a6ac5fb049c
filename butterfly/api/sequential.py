"""``butterfly sequential`` in the API: draw answers of two models pair by pair per scenario
until each is decided (docs/statistics.md). The statistics are ``analysis.sequential``'s; the
playing is ``runs.sequential``'s, through the same runner as ``butterfly run``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butterfly.analysis.results import SequentialResult
from butterfly.api.running import default_out, options
from butterfly.core.options import RunOptions
from butterfly.core.vocab import DEFAULTS, ErrorClass
from butterfly.errors import UserError
from butterfly.models.client import OnWait
from butterfly.models.registry import check_cache, check_priced
from butterfly.present.text import round_line, wait_line
from butterfly.runs.options import check_model, check_out, make_params
from butterfly.runs.scope import select
from butterfly.runs.sequential import Plan, play_sequential, routers
from butterfly.suite.load import load_suite, resolve_suite

if TYPE_CHECKING:
    from butterfly.analysis.sequential import SequentialDesign


def sequential(model_a: str, model_b: str, opts: RunOptions | None = None, /, *,
               method: str = "ebh", cap: int = 50, q: float = 0.1, stop_fine: bool = False,
               out_a: str | Path | None = None, out_b: str | Path | None = None,
               quiet: bool = False, **fields: Any) -> SequentialResult:
    """Compare ``model_a`` (old) with ``model_b`` (new) on ``opts.suite``, drawing answer pairs
    at ``opts`` (``temperature`` above 0; ``fields`` change some options) into two run
    directories (``runs/seq-MODEL__SUITE`` by default) until each scenario is decided or has
    ``cap`` pairs; ``quiet`` says nothing on stderr while it plays."""
    from butterfly.analysis.sequential import check_options, make_design, result  # scipy

    o = options(opts or RunOptions(temperature=DEFAULTS.sequential_temperature), **fields)
    params = make_params(o)
    if params.price is not None:
        raise UserError("sequential plays two models: a price (price, price_per_mtok) is one "
                        "model's, so it is not taken here (docs/cost.md)")
    suite_path = resolve_suite(o.suite)
    a, b = _outs(model_a, model_b, suite_path, out_a, out_b)
    check_options(method, cap, q, a, b)
    configs = routers(o.router, (model_a, model_b), o.api_base)
    if not configs:
        check_model(model_a)
        check_model(model_b)
    for model in (model_a, model_b):
        if params.max_cost is not None:
            check_priced(model, o.api_base, params.via, configs.get(model))
    scenarios = select(load_suite(suite_path), params)
    for model in (model_a, model_b):  # last: it may create the cache
        check_cache(model, o.cache, routed=model in configs)
    design = make_design(method, len(scenarios), q, cap, stop_fine)
    plan = Plan((model_a, model_b), (a, b), suite_path, scenarios,
                params.model_copy(update={"repeats": cap, "layouts": ("E",)}), o.api_base,
                o.cache, configs)
    rounds = play_sequential(plan, design, on_wait=None if quiet else _announce,
                             on_round=None if quiet else _say_round(design))
    return result(design, scenarios, rounds, method=method, q=q, cap=cap, stop_fine=stop_fine,
                  model_a=model_a, model_b=model_b, out_a=a, out_b=b)


def _outs(model_a: str, model_b: str, suite_path: Path, out_a: str | Path | None,
          out_b: str | Path | None) -> tuple[Path, Path]:
    """Both run directories: given, or ``runs/seq-MODEL__SUITE`` (``-b`` added to B's when the
    two defaults are one)."""
    a = check_out(out_a, "--out-a") or default_out(model_a, suite_path, "seq-")
    b = check_out(out_b, "--out-b") or default_out(model_b, suite_path, "seq-")
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
    from butterfly.analysis.sequential import round_counts

    def say(r: int, active: int) -> None:
        print(round_line(r, active, *round_counts(design)), file=sys.stderr, flush=True)
    return say
