"""The ``butterfly`` command line: the argument parser and the entry point.

Only parsing lives here; each command is a function of :mod:`butterfly.commands`, a thin layer
over the Python API. Choices and defaults come from :mod:`butterfly.core.vocab`. A
:class:`~butterfly.errors.UserError` is printed as one line on stderr with exit status 1;
usage errors exit 2; an abstention from ``parse`` exits 3; a run left incomplete exits 4.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from butterfly import __version__, commands
from butterfly.core.vocab import (
    COMPARE_METHODS,
    MODES,
    PARSE_MODES,
    PROTOCOLS,
    SEQUENTIAL_METHODS,
    STRATEGIES,
)
from butterfly.core.vocab import DEFAULTS as D
from butterfly.errors import UserError

Command = Callable[[argparse.Namespace], int]


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
    g.set_defaults(func=commands.cmd_generate)

    v = sub.add_parser("validate", help="check suite files; first violation on stderr")
    v.add_argument("files", nargs="+", metavar="SUITE.jsonl")
    v.set_defaults(func=commands.cmd_validate)

    o = sub.add_parser("oracle", help="print the oracle's spec after every turn")
    o.add_argument("file", metavar="SUITE.jsonl")
    o.set_defaults(func=commands.cmd_oracle)

    sc = sub.add_parser("schema", help="write the JSON Schemas of every record format")
    sc.add_argument("--out-dir", default="docs/schemas")
    sc.set_defaults(func=commands.cmd_schema)

    r = sub.add_parser("run", help="run a suite against a model (default: the embedded SmolLM2)")
    r.add_argument("--model", help="local/smollm2 (default), local/PATH.gguf, script/NAME, or "
                   "any litellm model (openai/..., anthropic/..., ollama/...)")
    r.add_argument("--suite", default=D.suite, help="suite file or name")
    r.add_argument("--limit", type=int, help="only the first N scenarios")
    r.add_argument("--per-category", type=int, metavar="N",
                   help="only the first N scenarios of each category (before --limit)")
    r.add_argument("--out", help="run directory (default runs/MODEL__SUITE); re-run to resume")
    r.add_argument("--seed", type=int, default=D.seed, help="base seed; repeat r uses seed + r")
    r.add_argument("--layouts", default=",".join(D.layouts),
                   help="prompt layouts, comma-separated: E evidence first, Q question first, "
                   "H hedged (E + 'answer UNSURE if unclear')")
    r.add_argument("--repeats", type=int, default=1, help="conversations per scenario and layout")
    r.add_argument("--mode", choices=MODES, default=D.mode,
                   help="chat: the model sees its earlier answers; restate: each turn is asked "
                   "afresh with the initial spec and every edit so far")
    r.add_argument("--temperature", type=float, default=D.temperature)
    r.add_argument("--max-tokens", type=int, default=D.max_tokens)
    r.add_argument("--concurrency", type=int, default=D.concurrency)
    r.add_argument("--timeout", type=float, default=D.timeout, help="seconds per call")
    r.add_argument("--retries", type=int, default=D.retries,
                   help="retries per call after a failure")
    r.add_argument("--api-base", help="base URL of an OpenAI-compatible server")
    r.add_argument("--no-schema", action="store_true",
                   help="do not send the spec's JSON Schema as response_format")
    r.add_argument("--parse", choices=PARSE_MODES, default=D.parse)
    r.add_argument("--strategy", choices=STRATEGIES, default=D.strategy,
                   help="prompting strategy (docs/strategies.md)")
    r.add_argument("--samples", type=int,
                   help="self-consistency: answers sampled per turn and voted (default 5)")
    r.add_argument("--protocol", choices=PROTOCOLS,
                   help="output protocol (default schema; json with --no-schema)")
    r.add_argument("--cache", default=D.cache,
                   help="SQLite answer cache shared by runs")
    r.add_argument("--no-cache", action="store_true")
    r.set_defaults(func=commands.cmd_run)

    s = sub.add_parser("score", help="score a run directory")
    s.add_argument("run", metavar="RUN")
    s.add_argument("--json", action="store_true", help="one JSON object on stdout")
    s.add_argument("--parse", choices=PARSE_MODES,
                   help="re-parse the raw answers in this mode")
    s.set_defaults(func=commands.cmd_score)

    f = sub.add_parser("flips", help="per scenario, one character per run for each layout; "
                       "stable / layout-sensitive / noisy")
    f.add_argument("runs", nargs="+", metavar="RUN", help="run directories of one suite")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=commands.cmd_flips)

    au = sub.add_parser("audit", help="scenarios whose verdict flips across repeats of a layout")
    au.add_argument("runs", nargs="+", metavar="RUN")
    au.add_argument("--json", action="store_true")
    au.set_defaults(func=commands.cmd_audit)

    sh = sub.add_parser("show", help="a conversation's transcript turn by turn, with the spec "
                        "diff against the oracle (without --scenario: every verdict)")
    sh.add_argument("run", metavar="RUN")
    sh.add_argument("--scenario", metavar="ID")
    sh.add_argument("--layout", metavar="L", help="default: the run's first layout")
    sh.add_argument("--repeat", type=int, default=0, metavar="R")
    sh.add_argument("--full", action="store_true", help="print raw answers whole")
    sh.add_argument("--lines", type=int, default=12, metavar="N",
                    help="lines of each raw answer to print (default 12)")
    sh.set_defaults(func=commands.cmd_show)

    rp = sub.add_parser("report", help="one self-contained HTML report of one or more runs: "
                        "leaderboard, tables, charts, flips, transcripts")
    rp.add_argument("runs", nargs="+", metavar="RUN")
    rp.add_argument("--html", required=True, metavar="FILE")
    rp.add_argument("--title")
    rp.set_defaults(func=commands.cmd_report)

    cp = sub.add_parser("compare", help="scenarios that regressed (and improved) from RUN_A to "
                        "RUN_B, with false-discovery control (docs/statistics.md)")
    cp.add_argument("run_a", metavar="RUN_A", help="the old run")
    cp.add_argument("run_b", metavar="RUN_B", help="the new run, on the same suite")
    cp.add_argument("--method", choices=COMPARE_METHODS, default="bh")
    cp.add_argument("--q", type=float, default=0.1,
                    help="false discovery rate (bh, ebh, gs) or per-scenario level (fixed)")
    cp.add_argument("--k", type=int, help="fixed, bh: pairs per scenario (default: all)")
    cp.add_argument("--cap", type=int, help="ebh, gs: at most this many pairs per scenario")
    cp.add_argument("--stop-fine", action="store_true",
                    help="ebh: stop scenarios that look fine at the looks")
    cp.add_argument("--layout", help="the layout to compare (default: each run's first)")
    cp.add_argument("--seed", type=int, default=0, help="seed of the bootstrap interval")
    cp.add_argument("--json", action="store_true")
    cp.set_defaults(func=commands.cmd_compare)

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
    ca.set_defaults(func=commands.cmd_calibrate)

    nb = sub.add_parser("notebook", help="the Kaggle notebook, built from the package")
    nb_sub = nb.add_subparsers(dest="notebook_command", metavar="ACTION", required=True)
    nbb = nb_sub.add_parser("build", help="write notebooks/butterflybench.ipynb (docs/kaggle.md)")
    nbb.add_argument("--out", help="output file (default notebooks/butterflybench.ipynb)")
    nbb.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if the file differs from a fresh build")
    nbb.set_defaults(func=commands.cmd_notebook)

    sq = sub.add_parser("sequential", help="draw answers of two models pair by pair per "
                        "scenario until each is decided; the regressions and answers spent")
    sq.add_argument("--model-a", required=True, help="the old model")
    sq.add_argument("--model-b", required=True, help="the new model")
    sq.add_argument("--method", choices=SEQUENTIAL_METHODS, default="ebh",
                    help="ebh: e-process per scenario + e-BH; gs: group-sequential exact + BH")
    sq.add_argument("--cap", type=int, default=50, help="at most this many pairs per scenario")
    sq.add_argument("--q", type=float, default=0.1, help="false discovery rate")
    sq.add_argument("--stop-fine", action="store_true",
                    help="ebh: stop scenarios that look fine at the looks")
    sq.add_argument("--suite", default=D.suite)
    sq.add_argument("--limit", type=int)
    sq.add_argument("--per-category", type=int, metavar="N")
    sq.add_argument("--out-a", help="run directory of A (default runs/seq-MODEL__SUITE)")
    sq.add_argument("--out-b", help="run directory of B")
    sq.add_argument("--seed", type=int, default=0, help="base seed; pair r uses seed + r")
    sq.add_argument("--temperature", type=float, default=0.7)
    sq.add_argument("--max-tokens", type=int, default=D.max_tokens)
    sq.add_argument("--concurrency", type=int, default=D.concurrency)
    sq.add_argument("--timeout", type=float, default=D.timeout)
    sq.add_argument("--retries", type=int, default=D.retries)
    sq.add_argument("--api-base")
    sq.add_argument("--cache", default=D.cache)
    sq.add_argument("--no-cache", action="store_true")
    sq.add_argument("--json", action="store_true")
    sq.set_defaults(func=commands.cmd_sequential)

    pa = sub.add_parser("parse", help="parse one raw answer from stdin (exit 3: abstention)")
    pa.add_argument("--mode", choices=PARSE_MODES, default=D.parse)
    pa.set_defaults(func=commands.cmd_parse)
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
