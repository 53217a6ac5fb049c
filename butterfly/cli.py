"""The ``butterfly`` command line.

Each command imports what it needs when it runs: commands that call no provider never import
litellm (it takes seconds to import). A :class:`~butterfly.errors.UserError` is printed as one
line on stderr with exit status 1; usage errors exit 2; an abstention from ``parse`` exits 3.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from butterfly import __version__
from butterfly.errors import UserError

Command = Callable[[argparse.Namespace], int]


def _write(path: str | None, text: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    except OSError as e:
        raise UserError(f"{path}: cannot write: {e.strerror or e}") from None


def cmd_generate(a: argparse.Namespace) -> int:
    from butterfly.generate import GenerationError, generate, proportional_counts
    from butterfly.suite import build_builtin, dumps_suite

    if a.suite is not None:
        if a.count is not None or a.seed is not None:
            raise UserError("generate: --suite rebuilds a frozen suite; it takes no --count/--seed")
        scenarios, manifest = build_builtin(a.suite)
        _write(a.out, dumps_suite(scenarios))
        if a.manifest:
            _write(a.manifest, manifest.model_dump_json(indent=2) + "\n")
    else:
        if a.count is None:
            raise UserError("generate: give --suite NAME, or --count N (with --seed S)")
        seed = 0 if a.seed is None else a.seed
        try:
            counts = proportional_counts(a.count)
            scenarios = generate(counts, seed, prefix=f"s{seed}")
        except GenerationError as e:
            raise UserError(f"generate: {e}") from None
        _write(a.out, dumps_suite(scenarios))
    if a.out not in (None, "-"):
        print(f"wrote {len(scenarios)} scenarios to {a.out}", file=sys.stderr)
    return 0


def cmd_validate(a: argparse.Namespace) -> int:
    from butterfly.suite import load_suite

    for path in a.files:
        scenarios = load_suite(path)
        turns = sum(len(s.turns) for s in scenarios)
        print(f"{path}: {len(scenarios)} scenarios, {turns} turns: valid")
    return 0


def cmd_oracle(a: argparse.Namespace) -> int:
    from butterfly.suite import load_suite
    from oracle import replay

    out = sys.stdout
    for s in load_suite(a.file):
        for t, spec in enumerate(replay(s)):
            out.write(json.dumps({"id": s.id, "turn": t, "spec": spec}, ensure_ascii=False))
            out.write("\n")
    return 0


def cmd_schema(a: argparse.Namespace) -> int:
    from butterfly.schemas import write_schemas

    for path in write_schemas(Path(a.out_dir)):
        print(f"wrote {path}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="butterfly",
        description="ButterflyBench: does a model change only what it was asked to change?",
    )
    p.add_argument("--version", action="version", version=f"butterfly {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    g = sub.add_parser("generate", help="write a suite: a frozen one, or a new seeded mix")
    g.add_argument("--suite", help="rebuild this frozen suite byte for byte (butterfly-40)")
    g.add_argument("--count", type=int, help="number of scenarios of a new mixed suite")
    g.add_argument("--seed", type=int, help="seed of a new mixed suite (default 0)")
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
