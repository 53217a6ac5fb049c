"""The ``butterfly`` command line.

Each command imports what it needs when it runs: commands that call no provider never import
litellm (it takes seconds to import). A :class:`~butterfly.errors.UserError` is printed as one
line on stderr with exit status 1; usage errors exit 2; an abstention from ``parse`` exits 3.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from butterfly import __version__
from butterfly.errors import UserError
from butterfly.files import write_text_atomic

Command = Callable[[argparse.Namespace], int]
T = TypeVar("T")


def _write(path: str | None, text: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    write_text_atomic(Path(path), text, path)


def cmd_generate(a: argparse.Namespace) -> int:
    from butterfly.suite.generate import (
        GenerationError,
        generate,
        generate_chains,
        paraphrase_variants,
        parse_mix,
        proportional_counts,
    )
    from butterfly.suite.load import build_builtin, dumps_suite

    if a.suite is not None:
        if any(x is not None for x in (a.count, a.seed, a.lengths, a.ops, a.per_length)):
            raise UserError("generate: --suite rebuilds a frozen suite; it takes no "
                            "--count/--seed/--lengths/--per-length/--ops")
        scenarios, manifest = build_builtin(a.suite)
        _write(a.out, dumps_suite(scenarios))
        if a.manifest:
            _write(a.manifest, manifest.model_dump_json(indent=2) + "\n")
    else:
        seed = 0 if a.seed is None else a.seed
        try:
            if a.lengths is not None:
                if a.count is not None:
                    raise UserError("generate: --lengths builds chains by length; give "
                                    "--per-length K instead of --count")
                lengths = _lengths(a.lengths)
                mix = None if a.ops is None else parse_mix(a.ops)
                per = 12 if a.per_length is None else a.per_length
                scenarios = generate_chains(lengths, per, seed, prefix=f"s{seed}", mix=mix)
            else:
                if a.count is None:
                    raise UserError("generate: give --suite NAME, --count N or --lengths L,.. "
                                    "(with --seed S)")
                if a.ops is not None or a.per_length is not None:
                    raise UserError("generate: --ops and --per-length go with --lengths")
                scenarios = generate(proportional_counts(a.count), seed, prefix=f"s{seed}")
            if a.paraphrase_variants is not None:
                if not 1 <= a.paraphrase_variants <= 3:
                    raise UserError("--paraphrase-variants takes 1 to 3 (the smallest family "
                                    "has three paraphrases)")
                scenarios = [v for s in scenarios
                             for v in paraphrase_variants(s, a.paraphrase_variants)]
        except GenerationError as e:
            raise UserError(f"generate: {e}") from None
        _write(a.out, dumps_suite(scenarios))
    if a.out not in (None, "-"):
        print(f"wrote {len(scenarios)} scenarios to {a.out}", file=sys.stderr)
    return 0


def _lengths(text: str) -> list[int]:
    from oracle import MAX_TURNS

    try:
        lengths = [int(x) for x in text.split(",")]
    except ValueError:
        lengths = []
    if not lengths or not all(1 <= n <= MAX_TURNS for n in lengths):
        raise UserError(f"generate: --lengths takes whole numbers 1 to {MAX_TURNS}, "
                        "comma-separated (e.g. 5,10,20)")
    return lengths


def cmd_validate(a: argparse.Namespace) -> int:
    from butterfly.suite.load import load_suite

    for path in a.files:
        scenarios = load_suite(path)
        turns = sum(len(s.turns) for s in scenarios)
        print(f"{path}: {len(scenarios)} scenarios, {turns} turns: valid")
    return 0


def cmd_oracle(a: argparse.Namespace) -> int:
    from butterfly.suite.load import load_suite
    from oracle import replay

    out = sys.stdout
    for s in load_suite(a.file):
        for t, spec in enumerate(replay(s)):
            out.write(json.dumps({"id": s.id, "turn": t, "spec": spec}, ensure_ascii=False))
            out.write("\n")
    return 0


def cmd_schema(a: argparse.Namespace) -> int:
    from butterfly.suite.schemas import write_schemas

    for path in write_schemas(Path(a.out_dir)):
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-")


def _layouts(text: str) -> tuple[str, ...]:
    from butterfly.core.prompts import LAYOUTS

    layouts = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in layouts if x not in LAYOUTS]
    if not layouts or bad or len(set(layouts)) != len(layouts):
        raise UserError(f"--layouts takes distinct letters from {','.join(LAYOUTS)}, got {text!r}")
    return layouts


def cmd_run(a: argparse.Namespace) -> int:
    from butterfly.runs.records import RunParams

    protocol = a.protocol or ("json" if a.no_schema else "schema")
    if a.no_schema and protocol == "schema":
        raise UserError("--no-schema contradicts --protocol schema")
    if a.strategy == "cot" and protocol in ("schema", "json"):
        raise UserError("--strategy cot needs room to reason: use --protocol json-last or "
                        "json-first")
    samples = 1
    if a.strategy == "self-consistency":
        samples = 5 if a.samples is None else a.samples
        if samples < 2:
            raise UserError("--samples must be at least 2: self-consistency votes over samples")
        if a.temperature <= 0:
            raise UserError("--strategy self-consistency samples at a temperature above 0: "
                            "give --temperature (e.g. 0.7)")
    elif a.samples is not None:
        raise UserError("--samples is only for --strategy self-consistency")
    from butterfly.runs.play import open_run, pending_calls, select
    from butterfly.suite.load import load_suite, resolve_suite

    model = a.model or "local/smollm2"
    suite_path = resolve_suite(a.suite)
    scenarios = load_suite(suite_path)
    for name, value, low in (("--concurrency", a.concurrency, 1), ("--retries", a.retries, 0),
                             ("--max-tokens", a.max_tokens, 1), ("--limit", a.limit, 1),
                             ("--per-category", a.per_category, 1),
                             ("--repeats", a.repeats, 1)):
        if value is not None and value < low:
            raise UserError(f"{name} must be at least {low}")
    if a.timeout <= 0:
        raise UserError("--timeout must be positive")
    from butterfly.runs.play import redact_url

    params = RunParams(
        temperature=a.temperature,
        max_tokens=a.max_tokens,
        seed=a.seed,
        schema_output=protocol == "schema",
        strategy=a.strategy,
        samples=samples,
        protocol=protocol,
        parse=a.parse,
        limit=a.limit,
        per_category=a.per_category,
        layouts=_layouts(a.layouts),
        repeats=a.repeats,
        mode=a.mode,
        concurrency=a.concurrency,
        timeout=a.timeout,
        retries=a.retries,
        api_base=redact_url(a.api_base),
    )
    scenarios = select(scenarios, params)
    out = Path(a.out) if a.out else Path("runs") / f"{_slug(model)}__{suite_path.stem}"
    state = open_run(out, model, suite_path, scenarios, params)
    todo = pending_calls(scenarios, state)
    return _execute(a, model, scenarios, state, out, todo)


def _execute(a: argparse.Namespace, model: str, scenarios: list, state, out: Path,  # type: ignore[no-untyped-def, type-arg]
             todo: int) -> int:
    import asyncio
    import contextlib

    from butterfly.core.metrics import score_run
    from butterfly.models.client import ModelClient
    from butterfly.models.provider import open_provider
    from butterfly.present.display import ProgressDisplay, print_score
    from butterfly.runs.play import Progress, run_suite

    params = state.manifest.params
    with contextlib.ExitStack() as stack:
        provider = open_provider(stack, model, scenarios, concurrency=params.concurrency,
                                 api_base=a.api_base)
        cache = None
        if not a.no_cache and provider.cacheable:
            from butterfly.models.cache import Cache

            cache = Cache(Path(a.cache).expanduser())
        client = ModelClient(provider, concurrency=params.concurrency, retries=params.retries,
                             timeout=params.timeout, cache=cache)
        display = stack.enter_context(ProgressDisplay(todo, f"{model} on {out}"))
        progress = Progress(total=todo, on_update=display.update)
        try:
            result = asyncio.run(_run_and_close(run_suite(scenarios, client, state, out, progress),
                                                client))
        except KeyboardInterrupt:
            print(f"butterfly: interrupted; answers so far are kept in {out}. Re-run the same "
                  "command to resume.", file=sys.stderr)
            return 130
    print_score(score_run(out))
    if result.incomplete:
        print(
            f"butterfly: {len(result.incomplete)} scenario(s) incomplete after provider errors "
            f"({result.provider_errors} failed call(s) recorded): they are excluded from the "
            "scores above. Re-run the same command to complete them.",
            file=sys.stderr,
        )
        return 4
    return 0


async def _run_and_close(coro: Coroutine[Any, Any, T], client: Any) -> T:
    try:
        return await coro
    finally:
        await client.aclose()


def cmd_score(a: argparse.Namespace) -> int:
    from butterfly.core.metrics import score_run

    result = score_run(Path(a.run), a.parse)
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        from butterfly.present.display import print_score

        print_score(result)
    return 0


def cmd_flips(a: argparse.Namespace) -> int:
    from butterfly.analysis.flips import flip_grid, load_columns, render_flips

    scenarios, columns = load_columns([Path(r) for r in a.runs])
    grid = flip_grid(scenarios, columns)
    print(json.dumps(grid, indent=2) if a.json else render_flips(grid))
    return 0


def cmd_audit(a: argparse.Namespace) -> int:
    from butterfly.analysis.flips import audit, load_columns, render_audit

    scenarios, columns = load_columns([Path(r) for r in a.runs])
    items = audit(scenarios, columns)
    print(json.dumps(items, indent=2) if a.json else render_audit(items))
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    from butterfly.present.show import show

    if a.lines < 1:
        raise UserError("--lines must be at least 1")
    return show(Path(a.run), a.scenario, a.layout, a.repeat, full=a.full, lines=a.lines)


def cmd_report(a: argparse.Namespace) -> int:
    from butterfly.present.report import write_report

    html = Path(a.html)
    size = write_report([Path(r) for r in a.runs], html, a.title)
    print(f"wrote {html} ({size / 1e6:.2f} MB)", file=sys.stderr)
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from butterfly.analysis.compare import compare, load_answers, render

    result = compare(load_answers(Path(a.run_a), a.layout), load_answers(Path(a.run_b), a.layout),
                     a.method, a.q, k=a.k, cap=a.cap, stop_fine=a.stop_fine, seed=a.seed)
    print(json.dumps(result, indent=2) if a.json else render(result))
    return 0


def cmd_calibrate(a: argparse.Namespace) -> int:
    from butterfly.analysis.calibrate import real_study, render, run_rates, simulated_study

    if not 0 < a.q < 1:
        raise UserError("--q must be between 0 and 1")
    if a.run is None and not a.simulate:
        raise UserError("calibrate: give a run directory (made with --repeats K), --simulate, "
                        "or both")
    title = "simulated (realistic mixture of pass rates)"
    rates = None
    if a.run is not None:
        _, answers, model = run_rates(Path(a.run))
        rates = [sum(x) / len(x) for x in answers]
    if a.simulate:
        if a.reps < 1 or a.m < 1:
            raise UserError("--reps and --m must be at least 1")
        result = simulated_study(m=a.m, reps=a.reps, q=a.q, seed=a.seed, rates=rates)
        if a.run is not None:
            title = f"simulated from the pass rates of {model} ({a.run})"
    else:
        result = real_study(answers, q=a.q, reshuffles=a.reshuffles, seed=a.seed)
        title = f"{model} ({a.run}), real answers"
    if a.json:
        meta = result.pop("_study")
        for row in result.values():
            row["study"] = meta
        print(json.dumps(result, indent=2))
    else:
        print(render(result, title))
    return 0


def cmd_notebook(a: argparse.Namespace) -> int:
    from butterfly.kaggle.notebook import cmd_notebook as build_notebook

    return build_notebook(a.out, a.check)


def cmd_sequential(a: argparse.Namespace) -> int:
    from butterfly.analysis.sequential import render, run_sequential
    from butterfly.runs.play import redact_url
    from butterfly.runs.records import RunParams
    from butterfly.suite.load import resolve_suite

    for name, value in (("--per-category", a.per_category), ("--limit", a.limit),
                        ("--concurrency", a.concurrency)):
        if value is not None and value < 1:
            raise UserError(f"{name} must be at least 1")
    params = RunParams(temperature=a.temperature, max_tokens=a.max_tokens, seed=a.seed,
                       limit=a.limit, per_category=a.per_category, concurrency=a.concurrency,
                       timeout=a.timeout, retries=a.retries, api_base=redact_url(a.api_base))
    stem = resolve_suite(a.suite).stem
    out_a = Path(a.out_a) if a.out_a else Path("runs") / f"seq-{_slug(a.model_a)}__{stem}"
    out_b = Path(a.out_b) if a.out_b else Path("runs") / f"seq-{_slug(a.model_b)}__{stem}"
    if out_a == out_b and not (a.out_a or a.out_b):
        out_b = out_b.with_name(out_b.name + "-b")
    result = run_sequential(model_a=a.model_a, model_b=a.model_b, suite=a.suite, out_a=out_a,
                            out_b=out_b, method=a.method, cap=a.cap, q=a.q,
                            stop_fine=a.stop_fine, params=params, api_base=a.api_base,
                            cache_path=None if a.no_cache else a.cache, quiet=a.json)
    print(json.dumps(result, indent=2) if a.json else render(result))
    return 0


def cmd_parse(a: argparse.Namespace) -> int:
    from butterfly.core.parse import main_parse

    code, text = main_parse(a.mode, sys.stdin.read())
    print(text, file=sys.stdout if code == 0 else sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="butterfly",
        description="ButterflyBench: does a model change only what it was asked to change?",
    )
    p.add_argument("--version", action="version", version=f"butterfly {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    g = sub.add_parser("generate", help="write a suite: a frozen one, or a new seeded mix")
    g.add_argument("--suite", help="rebuild this frozen suite byte for byte (butterfly-40, "
                   "butterfly-long, butterfly-hard)")
    g.add_argument("--count", type=int, help="number of scenarios of a new mixed suite")
    g.add_argument("--seed", type=int, help="seed of a new mixed suite (default 0)")
    g.add_argument("--paraphrase-variants", type=int, metavar="K",
                   help="with --count: pose each scenario K times, each turn re-worded with "
                   "another paraphrase of its family (ids ID.p0 .. ID.pK-1)")
    g.add_argument("--lengths", metavar="L[,L..]", help="chains of exactly these numbers of "
                   "turns (1 to 200) instead of the category mix, e.g. 5,10,20 or 40")
    g.add_argument("--per-length", type=int, metavar="K",
                   help="with --lengths: chains per length (default 12)")
    g.add_argument("--ops", metavar="OP=W,..", help="with --lengths: op weights, e.g. "
                   "set=4,drop=1,undo_last=1,undo_ref=2,undo_earliest=1,redo=2,distractor=1,"
                   "indirect=1,coupling=1 (the default; unnamed ops get 0)")
    g.add_argument("--out", help="output file (default: stdout)")
    g.add_argument("--manifest", help="with --suite: also write its manifest here")
    g.set_defaults(func=cmd_generate)

    v = sub.add_parser("validate", help="check suite files; first violation on stderr")
    v.add_argument("files", nargs="+", metavar="SUITE.jsonl")
    v.set_defaults(func=cmd_validate)

    o = sub.add_parser("oracle", help="print the oracle's spec after every turn")
    o.add_argument("file", metavar="SUITE.jsonl")
    o.set_defaults(func=cmd_oracle)

    sc = sub.add_parser("schema", help="write the JSON Schemas of every record format")
    sc.add_argument("--out-dir", default="docs/schemas")
    sc.set_defaults(func=cmd_schema)

    r = sub.add_parser("run", help="run a suite against a model (default: the embedded SmolLM2)")
    r.add_argument("--model", help="local/smollm2 (default), local/PATH.gguf, script/NAME, or "
                   "any litellm model (openai/..., anthropic/..., ollama/...)")
    r.add_argument("--suite", default="butterfly-40", help="suite file or name")
    r.add_argument("--limit", type=int, help="only the first N scenarios")
    r.add_argument("--per-category", type=int, metavar="N",
                   help="only the first N scenarios of each category (before --limit)")
    r.add_argument("--out", help="run directory (default runs/MODEL__SUITE); re-run to resume")
    r.add_argument("--seed", type=int, default=0, help="base seed; repeat r uses seed + r")
    r.add_argument("--layouts", default="E",
                   help="prompt layouts, comma-separated: E evidence first, Q question first, "
                   "H hedged (E + 'answer UNSURE if unclear')")
    r.add_argument("--repeats", type=int, default=1, help="conversations per scenario and layout")
    r.add_argument("--mode", choices=("chat", "restate"), default="chat",
                   help="chat: the model sees its earlier answers; restate: each turn is asked "
                   "afresh with the initial spec and every edit so far")
    r.add_argument("--temperature", type=float, default=0.0)
    r.add_argument("--max-tokens", type=int, default=1024)
    r.add_argument("--concurrency", type=int, default=1)
    r.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    r.add_argument("--retries", type=int, default=4, help="retries per call after a failure")
    r.add_argument("--api-base", help="base URL of an OpenAI-compatible server")
    r.add_argument("--no-schema", action="store_true",
                   help="do not send the spec's JSON Schema as response_format")
    r.add_argument("--parse", choices=("strict", "structured", "lenient"), default="structured")
    r.add_argument("--strategy", choices=("zero-shot", "few-shot", "cot", "self-consistency"),
                   default="zero-shot", help="prompting strategy (docs/strategies.md)")
    r.add_argument("--samples", type=int,
                   help="self-consistency: answers sampled per turn and voted (default 5)")
    r.add_argument("--protocol", choices=("schema", "json", "json-first", "json-last"),
                   help="output protocol (default schema; json with --no-schema)")
    r.add_argument("--cache", default="~/.cache/butterfly/answers.sqlite",
                   help="SQLite answer cache shared by runs")
    r.add_argument("--no-cache", action="store_true")
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("score", help="score a run directory")
    s.add_argument("run", metavar="RUN")
    s.add_argument("--json", action="store_true", help="one JSON object on stdout")
    s.add_argument("--parse", choices=("strict", "structured", "lenient"),
                   help="re-parse the raw answers in this mode")
    s.set_defaults(func=cmd_score)

    f = sub.add_parser("flips", help="per scenario, one character per run for each layout; "
                       "stable / layout-sensitive / noisy")
    f.add_argument("runs", nargs="+", metavar="RUN", help="run directories of one suite")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_flips)

    au = sub.add_parser("audit", help="scenarios whose verdict flips across repeats of a layout")
    au.add_argument("runs", nargs="+", metavar="RUN")
    au.add_argument("--json", action="store_true")
    au.set_defaults(func=cmd_audit)

    sh = sub.add_parser("show", help="a conversation's transcript turn by turn, with the spec "
                        "diff against the oracle (without --scenario: every verdict)")
    sh.add_argument("run", metavar="RUN")
    sh.add_argument("--scenario", metavar="ID")
    sh.add_argument("--layout", metavar="L", help="default: the run's first layout")
    sh.add_argument("--repeat", type=int, default=0, metavar="R")
    sh.add_argument("--full", action="store_true", help="print raw answers whole")
    sh.add_argument("--lines", type=int, default=12, metavar="N",
                    help="lines of each raw answer to print (default 12)")
    sh.set_defaults(func=cmd_show)

    rp = sub.add_parser("report", help="one self-contained HTML report of one or more runs: "
                        "leaderboard, tables, charts, flips, transcripts")
    rp.add_argument("runs", nargs="+", metavar="RUN")
    rp.add_argument("--html", required=True, metavar="FILE")
    rp.add_argument("--title")
    rp.set_defaults(func=cmd_report)

    cp = sub.add_parser("compare", help="scenarios that regressed (and improved) from RUN_A to "
                        "RUN_B, with false-discovery control (docs/statistics.md)")
    cp.add_argument("run_a", metavar="RUN_A", help="the old run")
    cp.add_argument("run_b", metavar="RUN_B", help="the new run, on the same suite")
    cp.add_argument("--method", choices=("diff", "fixed", "bh", "ebh", "gs"), default="bh")
    cp.add_argument("--q", type=float, default=0.1,
                    help="false discovery rate (bh, ebh, gs) or per-scenario level (fixed)")
    cp.add_argument("--k", type=int, help="fixed, bh: pairs per scenario (default: all)")
    cp.add_argument("--cap", type=int, help="ebh, gs: at most this many pairs per scenario")
    cp.add_argument("--stop-fine", action="store_true",
                    help="ebh: stop scenarios that look fine at the looks")
    cp.add_argument("--layout", help="the layout to compare (default: each run's first)")
    cp.add_argument("--seed", type=int, default=0, help="seed of the bootstrap interval")
    cp.add_argument("--json", action="store_true")
    cp.set_defaults(func=cmd_compare)

    ca = sub.add_parser("calibrate", help="false alarms, FDR, power and answers of every "
                        "regression method on a run's repeats (null pair, injected drops)")
    ca.add_argument("run", nargs="?", metavar="RUN", help="a run made with --repeats K")
    ca.add_argument("--simulate", action="store_true",
                    help="synthetic answers (pass rates from RUN, or a realistic mixture)")
    ca.add_argument("--q", type=float, default=0.1)
    ca.add_argument("--reshuffles", type=int, default=20,
                    help="real answers: seeded reshuffles of the two halves")
    ca.add_argument("--m", type=int, default=60, help="--simulate: scenarios per suite")
    ca.add_argument("--reps", type=int, default=200, help="--simulate: replications")
    ca.add_argument("--seed", type=int, default=0)
    ca.add_argument("--json", action="store_true",
                    help="one object keyed by method: fdr, power, false_alarms, answers for "
                    "null, 0.3 and 0.6")
    ca.set_defaults(func=cmd_calibrate)

    nb = sub.add_parser("notebook", help="the Kaggle notebook, built from the package")
    nb_sub = nb.add_subparsers(dest="notebook_command", metavar="ACTION", required=True)
    nbb = nb_sub.add_parser("build", help="write notebooks/butterflybench.ipynb (docs/kaggle.md)")
    nbb.add_argument("--out", help="output file (default notebooks/butterflybench.ipynb)")
    nbb.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if the file differs from a fresh build")
    nbb.set_defaults(func=cmd_notebook)

    sq = sub.add_parser("sequential", help="draw answers of two models pair by pair per "
                        "scenario until each is decided; the regressions and answers spent")
    sq.add_argument("--model-a", required=True, help="the old model")
    sq.add_argument("--model-b", required=True, help="the new model")
    sq.add_argument("--method", choices=("ebh", "gs"), default="ebh",
                    help="ebh: e-process per scenario + e-BH; gs: group-sequential exact + BH")
    sq.add_argument("--cap", type=int, default=50, help="at most this many pairs per scenario")
    sq.add_argument("--q", type=float, default=0.1, help="false discovery rate")
    sq.add_argument("--stop-fine", action="store_true",
                    help="ebh: stop scenarios that look fine at the looks")
    sq.add_argument("--suite", default="butterfly-40")
    sq.add_argument("--limit", type=int)
    sq.add_argument("--per-category", type=int, metavar="N")
    sq.add_argument("--out-a", help="run directory of A (default runs/seq-MODEL__SUITE)")
    sq.add_argument("--out-b", help="run directory of B")
    sq.add_argument("--seed", type=int, default=0, help="base seed; pair r uses seed + r")
    sq.add_argument("--temperature", type=float, default=0.7)
    sq.add_argument("--max-tokens", type=int, default=1024)
    sq.add_argument("--concurrency", type=int, default=1)
    sq.add_argument("--timeout", type=float, default=120.0)
    sq.add_argument("--retries", type=int, default=4)
    sq.add_argument("--api-base")
    sq.add_argument("--cache", default="~/.cache/butterfly/answers.sqlite")
    sq.add_argument("--no-cache", action="store_true")
    sq.add_argument("--json", action="store_true")
    sq.set_defaults(func=cmd_sequential)

    pa = sub.add_parser("parse", help="parse one raw answer from stdin (exit 3: abstention)")
    pa.add_argument("--mode", choices=("strict", "structured", "lenient"), default="structured")
    pa.set_defaults(func=cmd_parse)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except UserError as e:
        print(f"butterfly: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("butterfly: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
