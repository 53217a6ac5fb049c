"""The ``butterfly`` command line: the argument parser and the entry point.

Only parsing lives here; each command is a function of :mod:`butterfly.commands`, a thin layer
over the Python API. Choices and defaults come from :mod:`butterfly.core.vocab`. A
:class:`~butterfly.errors.UserError` is printed as one line on stderr with exit status 1;
usage errors exit 2; an abstention from ``parse`` exits 3; a run left incomplete exits 4; a
failed run exits 5; a run stopped by ``--max-cost`` exits 6 (``errors.EXIT_CODES``, shown by
``butterfly --help``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

from butterfly import __version__, commands
from butterfly.cli_args import Parser, add_fields, add_side_prices, add_sweep
from butterfly.core.options import FIELDS
from butterfly.core.printable import printable
from butterfly.core.vocab import (
    CHAIN_MIX,
    COMPARE_METHODS,
    PARSE_MODES,
    PROTOCOLS,
    SEQUENTIAL_METHODS,
    TRACKS,
)
from butterfly.core.vocab import DEFAULTS as D
from butterfly.errors import EXIT_CODES, BudgetStopped, RunFailed, UserError

Command = Callable[[argparse.Namespace], int]



ABOUT: dict[str, tuple[str, str, str]] = {
    "sweep": (
        "run one model over one suite at several reasoning budgets, one linked run each "
        "(docs/running.md)",
        "Play one ordinary run per value of --budget KEY=V1,V2,.. (a -M key such as\n"
        "reasoning_effort or thinking_budget, or max_tokens), in the order given, each into\n"
        "OUT/MODEL__SUITE__KEY=VALUE with a manifest naming the sweep. The whole sweep's "
        "dry-run\nbill is printed first (--dry-run stops there); --max-cost holds over the "
        "whole sweep.\nRe-run the same command to resume: a complete run is not played "
        "again; other values\nare refused. Then, per budget: final match (or horizon) with "
        "its interval, cost, cost\nper correct conversation and reasoning tokens per edit.",
        "exit status: 0 every budget complete, 1 refused, 4 a run incomplete, 5 a run failed, "
        "6\nstopped by --max-cost, 130 interrupted (re-run to resume)"),
    "merge": (
        "join the shards of a sweep (run --shard I/N) into one run directory (docs/scale.md)",
        "Join shards 1/N .. N/N of one sweep into one run directory that score, show, report,\n"
        "compare, export and runs read as one run, and that run --out RUN resumes. Refused (one "
        "line,\nexit 1, nothing written): shards of different suites, models, answer-changing "
        "parameters,\nprompts, versions or scopes; a shard given twice or missing; a call "
        "outside its shard;\na non-empty --out.",
        "exit status: 0 merged (the merged run's status is printed: incomplete when a shard "
        "was), 1 refused"),
    "import-inspect": (
        "make an inspect eval log of ButterflyBench's tasks into a run directory "
        "(docs/inspect.md)",
        "Read LOG (.eval or .json), written by inspect eval butterflybench/..., and write the "
        "run\ndirectory RUN that score, show, report, compare, flips and export read as any "
        "run: the\nsuite the log names (checked by sha256), a record per call with its raw "
        "answer, re-scored\nby the oracle. Refused (one line, exit 1, nothing written): a log "
        "not made by\nButterflyBench's tasks, a suite missing or changed, a non-empty --out. "
        "Needs the extra:\npip install 'butterflybench[inspect]'.",
        "exit status: 0 imported (the run's status is printed: incomplete or interrupted when "
        "the\neval did not finish), 1 refused"),
    "repair": (
        "rebuild a damaged run directory (a lost manifest, a broken digest) from its records, "
        "saying what it dropped",
        "Keep every record of RUN that reads as a call of the run, drop and name the rest, "
        "and\nwrite a sealed manifest, status interrupted (old files: *.before-repair; "
        "docs/running.md).\nA lost manifest is rebuilt from RUN FLAGS, the flags of the "
        "butterfly run that made RUN.",
        "exit status: 0 repaired (or nothing to repair), 1 refused"),
    "observe": (
        "run a code run's programs not yet observed in the sandbox, each observation kept as "
        "it is made",
        "Run every program of the code-track run RUN that has no observation yet in the "
        "sandbox\n(bubblewrap), within its budget, and append each observation, sealed, to\n"
        "RUN/observations.jsonl (docs/code-track.md). butterfly run --track code observes as it "
        "plays;\nscore, show, report, export, compare, flips and runs only read observations "
        "and\nsay when programs await this command. Holds RUN's write lock. As root, the "
        "fallback\nsandbox (no bubblewrap) is refused unless --allow-fallback.",
        "exit status: 0 observed (or nothing to observe), 1 refused, 130 interrupted "
        "(what was\nobserved is kept)"),
}
"""Commands with a description and an epilog of their own: (help, description, epilog)."""


SEQUENTIAL: Final[dict[str, dict[str, Any]]] = {
    "limit": {"help": "only the first N scenarios"},
    "seed": {"help": "base seed; pair r uses seed + r"},
    "temperature": {"default": D.sequential_temperature,
                    "help": "sampling temperature (above 0: pairs must differ)"},
    "router": {"help": "a litellm Router file (JSON or YAML) in which --model-a and --model-b "
               "each name a group of deployments (docs/scale.md)"},
    "max_cost": {"help": "stop before a call could take the spending of both models together "
                 "above USD (both runs' status budget, exit 6; re-run with a larger budget to "
                 "continue)"},
}
"""``butterfly sequential``'s help (and default) where a run option means something else for
two models."""


def _documented(sub: argparse._SubParsersAction[Parser],
                name: str) -> argparse.ArgumentParser:
    """The parser of ``name`` with its help line, description and epilog from ABOUT."""
    text, description, epilog = ABOUT[name]
    return sub.add_parser(name, help=text, description=description, epilog=epilog)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="butterfly",
        description="ButterflyBench: does a model change only what it was asked to change?",
        epilog=EXIT_CODES,
    )
    p.add_argument("--version", action="version", version=f"butterfly {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    g = sub.add_parser("generate", help="write a suite: a frozen one, or a new seeded mix")
    g.add_argument("--suite", help="rebuild this frozen suite byte for byte (butterfly-40, "
                   "butterfly-long, butterfly-hard, butterfly-code, butterfly-horizon)")
    g.add_argument("--track", choices=TRACKS, default="spec", help="with --count or --lengths: "
                   "code draws over the code catalogue (no drop turns; docs/code-track.md)")
    g.add_argument("--count", type=int, help="number of scenarios of a new mixed suite")
    g.add_argument("--seed", type=int, help="seed of a new mixed suite (0 when not given)")
    g.add_argument("--paraphrase-variants", type=int, metavar="K",
                   help="with --count: pose each scenario K times, each turn re-worded with "
                   "another paraphrase of its family (ids ID.p0 .. ID.pK-1)")
    g.add_argument("--lengths", metavar="L[,L..]", help="chains of exactly these numbers of "
                   "turns (1 to 200; to 10,000 with --ask-at) instead of the category mix, e.g. "
                   "5,10,20 or 40")
    g.add_argument("--ask-at", metavar="T[,T..]", help="with --lengths: the suite's default ask "
                   "points (turns a run in restate mode asks at), written in its manifest beside "
                   "--out (or to --manifest); its chains are drawn by butterfly-horizon's "
                   "planner, hard ops at every length (docs/ladder.md)")
    g.add_argument("--per-length", type=int, metavar="K", help="with --lengths: chains per length "
                   "(12 when not given)")
    g.add_argument("--ops", metavar="OP=W,..", help="with --lengths: op weights, e.g. "
                   f"{','.join(f'{op}={w}' for op, w in CHAIN_MIX.items())} (the default; "
                   "unnamed ops get 0)")
    g.add_argument("--out", help="output file (default: stdout)")
    g.add_argument("--manifest", help="with --suite or --ask-at: also write its manifest here "
                   "(with --ask-at, default: beside --out, NAME.manifest.json)")

    v = sub.add_parser("validate", help="check suite files; first violation on stderr")
    v.add_argument("files", nargs="+", metavar="SUITE", help="suite files or frozen suites' names")
    v.add_argument("--readings", action="store_true", help="audit instead: what each second "
                   "reading would change (docs/readings.md)")
    v.add_argument("--depth", action="store_true", help="the depth table instead: per ask point "
                   "from 40 turns, how old the changes that show are and how often the last t/2 "
                   "or t/10 messages alone match (exit 1 when the depth guard fails; "
                   "docs/ladder.md)")
    v.add_argument("--track", choices=TRACKS, help="also hold every suite to this track's rules "
                   "(default: its manifest's track; code: code-catalogue values, no drop turns)")

    o = sub.add_parser("oracle", help="print the oracle's spec after every turn")
    o.add_argument("file", metavar="SUITE.jsonl", help="the suite to replay")

    sc = sub.add_parser("schema", help="write the JSON Schemas of every record format")
    sc.add_argument("--out-dir", default="docs/schemas", help="directory to write them to")

    r = sub.add_parser("run", help="run a suite against a model (default: the embedded SmolLM2)")
    add_fields(r, FIELDS)
    r.add_argument("--dry-run", action="store_true", help="play nothing and write nothing: "
                   "print the calls, prompt, completion and cached-prefix tokens and the cost "
                   "the run would send, per slice of the suite and in total (docs/cost.md)")
    r.add_argument("--json", action="store_true", help="with --dry-run: print it as JSON")

    sw = _documented(sub, "sweep")
    add_sweep(sw)

    mg = _documented(sub, "merge")
    mg.add_argument("shards", nargs="+", metavar="SHARD_DIR", help="the run directories of "
                    "shards 1/N .. N/N, in any order")
    mg.add_argument("--out", required=True, metavar="RUN", help="the merged run directory "
                    "(new or empty)")

    ii = _documented(sub, "import-inspect")
    ii.add_argument("log", metavar="LOG", help="an inspect eval log (.eval or .json)")
    ii.add_argument("--out", required=True, metavar="RUN", help="the run directory to write "
                    "(new or empty)")
    ii.add_argument("--suite", metavar="FILE", help="the suite file (or frozen suite's name) "
                    "the eval played, when it is not where the log says (its sha256 must be the "
                    "log's)")
    add_fields(ii, ("price", "price_per_mtok"))

    rr = _documented(sub, "repair")
    rr.add_argument("run", metavar="RUN", help="a run directory")
    rr.add_argument("flags", nargs=argparse.REMAINDER, metavar="RUN FLAGS",
                    help="when RUN's manifest is lost: --model M [--suite S --limit N ...] as "
                    "given to butterfly run")

    ob = _documented(sub, "observe")
    ob.add_argument("run", metavar="RUN", help="a code-track run directory")
    ob.add_argument("--allow-fallback", action="store_true", help="as root without "
                    "bubblewrap: observe in the fallback sandbox anyway (it cannot stop a "
                    "program from reading this user's files)")

    s = sub.add_parser("score", help="score a run directory")
    s.add_argument("run", metavar="RUN", help="a run directory")
    s.add_argument("--json", action="store_true", help="one JSON object on stdout")
    s.add_argument("--parse", choices=PARSE_MODES,
                   help="re-parse the raw answers in this mode (the run's own when not given)")
    s.add_argument("--protocol", choices=PROTOCOLS,
                   help="re-parse the raw answers as this output protocol defines them "
                   "(json-first: the object opening an answer; json-last: closing it)")

    ex = sub.add_parser("export", help="tidy CSV rows of runs, one per turn or conversation")
    ex.add_argument("runs", nargs="+", metavar="RUN", help="run directories")
    ex.add_argument("--csv", required=True, metavar="FILE", help="output file ('-': stdout)")
    ex.add_argument("--level", choices=("turn", "conversation"), default="conversation",
                    help="one row per turn, or per conversation (default)")

    rs = sub.add_parser("runs", help="every run directory under DIR: model, suite, prompt "
                        "version, layouts, repeats, mode and ask points, source (inspect: imported "
                        "from an inspect log), status, final match, cost")
    rs.add_argument("dir", nargs="?", default="runs", metavar="DIR",
                    help="where to look (default runs)")
    rs.add_argument("--json", action="store_true", help="one JSON object per run directory")

    f = sub.add_parser("flips", help="per scenario, one character per run for each layout; "
                       "stable / layout-sensitive / runs-differ / noisy")
    f.add_argument("runs", nargs="+", metavar="RUN", help="run directories of one suite")
    f.add_argument("--json", action="store_true", help="one JSON object on stdout")

    au = sub.add_parser("audit", help="scenarios whose verdict flips across repeats of a layout")
    au.add_argument("runs", nargs="+", metavar="RUN", help="run directories made with --repeats")
    au.add_argument("--json", action="store_true", help="one JSON list on stdout")

    sh = sub.add_parser("show", help="a conversation's transcript turn by turn, with the spec "
                        "diff against the oracle (without --scenario: each scenario's verdict "
                        "in one layout and repeat)")
    sh.add_argument("run", metavar="RUN", help="a run directory")
    sh.add_argument("--scenario", metavar="ID", help="the scenario to show (when not given: "
                    "each scenario's verdict in the --layout and --repeat shown)")
    sh.add_argument("--layout", metavar="L", help="the layout to show (the run's first when "
                    "not given)")
    sh.add_argument("--repeat", type=int, default=0, metavar="R", help="the repeat to show")
    sh.add_argument("--full", action="store_true", help="print raw answers whole")
    sh.add_argument("--lines", type=int, default=12, metavar="N",
                    help="lines of each raw answer to print")

    rp = sub.add_parser("report", help="one self-contained HTML report of one or more runs: "
                        "leaderboard, tables, charts, flips, transcripts")
    rp.add_argument("runs", nargs="+", metavar="RUN", help="run directories (any suites whose "
                    "scenario ids do not clash)")
    rp.add_argument("--html", required=True, metavar="FILE", help="the HTML file to write")
    rp.add_argument("--title", help="the page title (ButterflyBench report when not given)")
    rp.add_argument("--compare-method", choices=COMPARE_METHODS, default="bh",
                    help="the compare section's method (runs of one suite; as butterfly compare)")
    rp.add_argument("--q", type=float, default=0.1, help="the compare section's q")

    cp = sub.add_parser("compare", help="scenarios that regressed (and improved) from RUN_A to "
                        "RUN_B, with false-discovery control (docs/statistics.md)")
    cp.add_argument("run_a", metavar="RUN_A", help="the old run")
    cp.add_argument("run_b", metavar="RUN_B", help="the new run, on the same suite")
    cp.add_argument("--method", choices=COMPARE_METHODS, default="bh",
                    help="regression method (docs/statistics.md)")
    cp.add_argument("--q", type=float, default=0.1,
                    help="false discovery rate (bh, ebh, gs) or per-scenario level (fixed)")
    cp.add_argument("--k", type=int, help="fixed, bh: pairs per scenario (all when not given)")
    cp.add_argument("--cap", type=int, help="ebh, gs: at most this many pairs per scenario")
    cp.add_argument("--stop-fine", action="store_true",
                    help="ebh: stop scenarios that look fine at the looks")
    cp.add_argument("--layout", help="the layout to compare (each run's first when not given)")
    cp.add_argument("--seed", type=int, default=0, help="seed of the bootstrap interval")
    cp.add_argument("--json", action="store_true", help="one JSON object on stdout")

    ca = sub.add_parser("calibrate", help="false alarms, FDR, power and answers of every "
                        "regression method on a run's repeats (null pair, injected drops)")
    ca.add_argument("run", nargs="?", metavar="RUN", help="a run made with --repeats K")
    ca.add_argument("--simulate", action="store_true",
                    help="synthetic answers (pass rates from RUN, or a realistic mixture)")
    ca.add_argument("--q", type=float, default=0.1, help="false discovery rate")
    ca.add_argument("--reshuffles", type=int, default=20,
                    help="real answers: seeded reshuffles of the two halves")
    ca.add_argument("--m", type=int, default=60, help="--simulate: scenarios per suite")
    ca.add_argument("--reps", type=int, default=200, help="--simulate: replications")
    ca.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    ca.add_argument("--json", action="store_true",
                    help="one object keyed by method: fdr, power, false_alarms, answers for "
                    "null, 0.3 and 0.6")

    nb = sub.add_parser("notebook", help="the Kaggle notebook, built from the package")
    nb_sub = nb.add_subparsers(dest="notebook_command", metavar="ACTION", required=True)
    nbb = nb_sub.add_parser("build", help="write notebooks/butterflybench.ipynb (docs/kaggle.md)")
    nbb.add_argument("--out", help="output file (notebooks/butterflybench.ipynb when not "
                     "given)")
    nbb.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if the file differs from a fresh build")

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
    add_fields(sq, ("suite", "limit", "per_category", "mode", "ask_at"), override=SEQUENTIAL)
    sq.add_argument("--out-a", help="run directory of A (runs/seq-MODEL__SUITE when not given)")
    sq.add_argument("--out-b", help="run directory of B (runs/seq-MODEL__SUITE when not given)")
    add_fields(sq, ("seed", "temperature", "max_tokens", "concurrency", "timeout", "retries",
                    "api_base", "router", "via", "model_args", "no_seed", "max_cost"),
               "every call of both models", SEQUENTIAL)
    add_side_prices(sq)
    add_fields(sq, ("max_answer_chars", "max_retry_wait", "cache"))
    sq.add_argument("--json", action="store_true", help="one JSON object on stdout")

    pa = sub.add_parser("parse", help="parse one raw answer from stdin (exit 3: abstention)")
    pa.add_argument("--parse", choices=PARSE_MODES, default=D.parse,
                    help="how strictly to parse, as in run --parse (--mode is the old name)")
    pa.add_argument("--mode", dest="parse", choices=PARSE_MODES, default=argparse.SUPPRESS,
                    help=argparse.SUPPRESS)
    pa.add_argument("--protocol", choices=PROTOCOLS,
                    help="json-first: the object opening the answer; json-last: closing it "
                    "(default: the whole answer, or the last object)")
    for name, command in sub.choices.items():  # `butterfly NAME` runs commands.cmd_NAME
        command.set_defaults(func=_repair if name == "repair"
                             else getattr(commands, f"cmd_{name.replace('-', '_')}"))
    return p


def _repair(a: argparse.Namespace) -> int:
    """``repair``: its RUN FLAGS read as ``butterfly run`` reads them."""
    a.run_args = None if not a.flags else build_parser().parse_args(
        ["run", *a.flags, "--out", a.run])
    return commands.cmd_repair(a)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except UserError as e:  # RunFailed exits 5, BudgetStopped 6 (and is no error)
        stopped = isinstance(e, BudgetStopped)
        print(f"butterfly: {'' if stopped else 'error: '}{printable(str(e), newlines=False)}",
              file=sys.stderr)
        return 6 if stopped else 5 if isinstance(e, RunFailed) else 1
    except PermissionError as e:  # a file, or a directory on its way, this user may not open
        where = "" if e.filename is None else f"{e.filename}: "
        print(f"butterfly: error: {printable(where, newlines=False)}{e.strerror or e} (this "
              "user may not open it, or a directory on its way)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("butterfly: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
