"""What each ``butterfly`` command does: parse nothing, call the Python API, print.

Each command imports what it needs when it runs, so commands that call no provider never
import litellm (it takes seconds to import). The argument parser is :mod:`butterfly.cli`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from butterfly.core.printable import printable
from butterfly.errors import UserError
from butterfly.files import write_text_atomic


def _write(path: str | None, text: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    if not path.strip():
        raise UserError("an output file must be named (or - for stdout), got ''")
    write_text_atomic(Path(path), text, path)


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2)


def cmd_generate(a: argparse.Namespace) -> int:
    from butterfly.suite.builder import GenerationError
    from butterfly.suite.chains import generate_chains, parse_mix
    from butterfly.suite.generate import generate_mixed
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
                mix = None if a.ops is None else parse_mix(a.ops)
                per = 12 if a.per_length is None else a.per_length
                scenarios = generate_chains(_lengths(a.lengths), per, seed, prefix=f"s{seed}",
                                            mix=mix)
            else:
                if a.count is None:
                    raise UserError("generate: give --suite NAME, --count N or --lengths L,.. "
                                    "(with --seed S)")
                if a.ops is not None or a.per_length is not None:
                    raise UserError("generate: --ops and --per-length go with --lengths")
                scenarios = generate_mixed(a.count, seed)
            scenarios = _variants(scenarios, a.paraphrase_variants)
        except GenerationError as e:
            raise UserError(f"generate: {e}") from None
        _write(a.out, dumps_suite(scenarios))
    if a.out not in (None, "-"):
        print(f"wrote {len(scenarios)} scenarios to {a.out}", file=sys.stderr)
    return 0


def _variants(scenarios: list[Any], k: int | None) -> list[Any]:
    from butterfly.suite.generate import paraphrase_variants

    if k is None:
        return scenarios
    if not 1 <= k <= 3:
        raise UserError("--paraphrase-variants takes 1 to 3 (the smallest family has "
                              "three paraphrases)")
    return [v for s in scenarios for v in paraphrase_variants(s, k)]


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
    from butterfly.core.prompts import few_shot_clash
    from butterfly.suite.load import load_suite, resolve_suite

    if a.readings:
        return _audit_readings(a.files)
    for path in (resolve_suite(f) for f in a.files):
        scenarios = load_suite(path)
        for s in scenarios:
            for t, turn in enumerate(s.turns, 1):
                example = few_shot_clash(turn.text)
                if example is not None:
                    raise UserError(f"{path}: scenario {s.id}, turn {t}: its wording is too close "
                                    f"to the few-shot example {example!r} (a few-shot run would "
                                    "show the model this turn's answer): reword it")
        turns = sum(len(s.turns) for s in scenarios)
        print(f"{path}: {len(scenarios)} scenarios, {turns} turns: valid")
    return 0


def _audit_readings(files: list[str]) -> int:
    from butterfly.present.readings import readings_table
    from butterfly.suite.load import load_suite, resolve_suite
    from oracle import replay
    from oracle.readings import audit

    for path in (resolve_suite(f) for f in files):
        scenarios = load_suite(path, readings=False)
        tallies = audit((s, replay(s)) for s in scenarios)
        print(readings_table(str(path), scenarios, tallies))
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
    from butterfly.present.schemas import write_schemas

    if not a.out_dir.strip():
        raise UserError("--out-dir must name a directory, got ''")
    for path in write_schemas(Path(a.out_dir)):
        print(f"wrote {path}", file=sys.stderr)
    return 0


RUN_OPTIONS = ("limit", "per_category", "seed", "layouts", "repeats", "mode", "temperature",
               "max_tokens", "concurrency", "timeout", "retries", "api_base", "no_schema",
               "parse", "strategy", "samples", "protocol", "sc_base", "no_seed", "max_cost",
               "via", "router", "shard", "max_answer_chars", "max_retry_wait")
"""The flags of ``butterfly run`` that are the API's ``run`` options as they are."""


def cmd_run(a: argparse.Namespace) -> int:
    from butterfly.api import default_out, run, score_run
    from butterfly.present.display import failure_lines, print_score
    from butterfly.runs.options import parse_model_args
    from butterfly.suite.load import resolve_suite

    model = a.model
    model_args = parse_model_args(a.model_arg or (), a.model_args)
    try:
        result = run(model, a.suite, a.out, cache=None if a.no_cache else a.cache, progress=True,
                     model_args=model_args, **{k: getattr(a, k) for k in RUN_OPTIONS})
    except KeyboardInterrupt:
        where = a.out or default_out(model, resolve_suite(a.suite), shard=a.shard)
        print(f"butterfly: interrupted; answers so far are kept in {where}. Re-run the same "
              "command to resume.", file=sys.stderr)
        return 130
    print_score(score_run(result))
    for line in failure_lines(result):
        print(f"butterfly: {line}", file=sys.stderr)
    m = result.manifest
    if m.status == "budget":
        spent = m.usage.spent_usd if m.usage is not None else None
        why = ("a call came back without a price (no token counts), so --max-cost cannot be "
               "enforced: run it without --max-cost" if spent is None else
               f"spent ${spent:.4f} of --max-cost ${a.max_cost:g}; the next call could exceed it")
        print(f"butterfly: stopped by the budget ({why}). {len(m.incomplete_scenarios)} "
              "scenario(s) are not finished; re-run the same command with a larger --max-cost "
              "to complete them.", file=sys.stderr)
        return 6
    if m.incomplete_scenarios:
        print(
            f"butterfly: {len(m.incomplete_scenarios)} scenario(s) incomplete after provider "
            f"errors ({m.n_provider_errors} failed call(s) recorded): they are excluded from "
            "the scores above. Re-run the same command to complete them.",
            file=sys.stderr,
        )
        return 4
    return 0


def cmd_merge(a: argparse.Namespace) -> int:
    from butterfly.runs.merge import merge

    manifest = merge([Path(p) for p in a.shards], Path(a.out))
    print(f"merged {len(manifest.merged_from)} shards into {a.out}: {manifest.n_calls} "
          f"answered and {manifest.n_provider_errors} failed call(s), status "
          f"{manifest.status}", file=sys.stderr)
    if manifest.status != "complete":
        print(f"butterfly: the merged run is {manifest.status}: butterfly run --out {a.out} "
              "with the sweep's model, suite and flags (no --shard) completes it",
              file=sys.stderr)
    return 0


def cmd_repair(a: argparse.Namespace) -> int:
    from butterfly.api import repair
    from butterfly.runs.options import parse_model_args

    r = a.run_args
    result = repair(a.run) if r is None else repair(
        a.run, r.model, r.suite, model_args=parse_model_args(r.model_arg or (), r.model_args),
        **{k: getattr(r, k) for k in RUN_OPTIONS})
    if result.found is None:
        print(f"{a.run} reads intact: nothing to repair", file=sys.stderr)
        return 0
    print(f"repaired {a.run}: found: {printable(result.found, newlines=False)}", file=sys.stderr)
    for line in result.dropped:
        print(f"  dropped {printable(line, newlines=False)}", file=sys.stderr)
    print(f"kept {result.kept} record(s), dropped {len(result.dropped)}; the old files are "
          f"beside the new ones (*.before-repair); the run is interrupted: butterfly run --out "
          f"{a.run} with the run's flags completes it", file=sys.stderr)
    return 0


def cmd_score(a: argparse.Namespace) -> int:
    from butterfly.api import load_run, score_run

    run = load_run(Path(a.run))
    result = score_run(run, a.parse, a.protocol)
    if a.json:
        print(_dump(result.to_json()))
    else:
        from butterfly.present.display import content_line, print_score

        print_score(result)
        print(content_line(run))
    if run.manifest.status == "failed":  # scored what there is, but say so: exit 5
        why = printable(run.manifest.failure or "no reason recorded", newlines=False)
        print(f"butterfly: error: {a.run}: this run failed ({why}); fix the cause and re-run "
              "its command to resume", file=sys.stderr)
        return 5
    return 0


def cmd_export(a: argparse.Namespace) -> int:
    from butterfly.analysis.tidy import tidy_rows, to_csv

    rows = tidy_rows([Path(r) for r in a.runs], a.level)
    _write(a.csv, to_csv(rows, a.level))
    if a.csv not in (None, "-"):
        print(f"wrote {len(rows)} {a.level} rows to {a.csv}", file=sys.stderr)
    return 0


def cmd_runs(a: argparse.Namespace) -> int:
    from butterfly.analysis.listing import list_runs, render

    lines = list_runs(Path(a.dir))
    print(_dump([x.to_json() for x in lines]) if a.json else render(lines))
    return 0


def cmd_flips(a: argparse.Namespace) -> int:
    from butterfly.analysis.flips import flip_grid, load_columns, render_flips

    scenarios, columns = load_columns([Path(r) for r in a.runs])
    grid = flip_grid(scenarios, columns)
    print(_dump(grid) if a.json else printable(render_flips(grid)))
    return 0


def cmd_audit(a: argparse.Namespace) -> int:
    from butterfly.analysis.flips import audit, load_columns, render_audit

    scenarios, columns = load_columns([Path(r) for r in a.runs])
    items = audit(scenarios, columns)
    print(_dump(items) if a.json else printable(render_audit(items)))
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    from butterfly.present.show import show

    if a.lines < 1:
        raise UserError("--lines must be at least 1")
    return show(Path(a.run), a.scenario, a.layout, a.repeat, full=a.full, lines=a.lines)


def cmd_report(a: argparse.Namespace) -> int:
    from butterfly.api import report

    size = report(a.runs, a.html, a.title, compare_method=a.compare_method, q=a.q)
    print(f"wrote {a.html} ({size / 1e6:.2f} MB)", file=sys.stderr)
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from butterfly.analysis.compare import compare, load_answers, render

    result = compare(load_answers(Path(a.run_a), a.layout), load_answers(Path(a.run_b), a.layout),
                     a.method, a.q, k=a.k, cap=a.cap, stop_fine=a.stop_fine, seed=a.seed)
    print(_dump(result.model_dump()) if a.json else printable(render(result)))
    return 0


def cmd_calibrate(a: argparse.Namespace) -> int:
    from butterfly.analysis.calibrate import calibrate, render

    result, title = calibrate(None if a.run is None else Path(a.run), simulate=a.simulate,
                              q=a.q, reshuffles=a.reshuffles, m=a.m, reps=a.reps, seed=a.seed)
    print(_dump(result.model_dump(by_alias=True)) if a.json else render(result, title))
    return 0


def cmd_notebook(a: argparse.Namespace) -> int:
    from butterfly.kaggle.notebook import cmd_notebook as build_notebook

    return build_notebook(a.out, a.check)


def cmd_sequential(a: argparse.Namespace) -> int:
    from butterfly.analysis.sequential import render, run_sequential
    from butterfly.api import default_out, run_params
    from butterfly.runs.options import check_out, parse_model_args
    from butterfly.suite.load import resolve_suite

    params = run_params(temperature=a.temperature, max_tokens=a.max_tokens, seed=a.seed,
                        limit=a.limit, per_category=a.per_category, concurrency=a.concurrency,
                        timeout=a.timeout, retries=a.retries, api_base=a.api_base,
                        via=a.via, no_seed=a.no_seed, max_cost=a.max_cost,
                        max_answer_chars=a.max_answer_chars, max_retry_wait=a.max_retry_wait,
                        model_args=parse_model_args(a.model_arg or (), a.model_args))
    suite_path = resolve_suite(a.suite)
    out_a = check_out(a.out_a, "--out-a") or default_out(a.model_a, suite_path, "seq-")
    out_b = check_out(a.out_b, "--out-b") or default_out(a.model_b, suite_path, "seq-")
    if out_a == out_b and not (a.out_a or a.out_b):
        out_b = out_b.with_name(out_b.name + "-b")
    result = run_sequential(model_a=a.model_a, model_b=a.model_b, suite=a.suite, out_a=out_a,
                            out_b=out_b, method=a.method, cap=a.cap, q=a.q,
                            stop_fine=a.stop_fine, params=params, api_base=a.api_base,
                            cache_path=None if a.no_cache else a.cache, router=a.router,
                            quiet=a.json)
    print(_dump(result.model_dump()) if a.json else printable(render(result)))
    return 0


def cmd_parse(a: argparse.Namespace) -> int:
    from butterfly.core.parse import main_parse

    code, text = main_parse(a.parse, sys.stdin.read(), a.protocol)
    print(text, file=sys.stdout if code == 0 else sys.stderr)
    return code
