"""The argument parser's pieces shared by several commands of :mod:`butterfly.cli`: the help
formatter (every flag's default shown), ``butterfly run``'s flags generated from the fields of
:class:`~butterfly.core.options.RunOptions`, and the flags ``sequential`` shares with it."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any, Final

from butterfly.core.options import FIELDS, Flag


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every flag's help line ends with its default (when it has one worth showing)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if ("%(default)" in text or not action.option_strings
                or any(action.default is x for x in (None, False, argparse.SUPPRESS))):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An argument parser (and subparsers) with :class:`HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def _kind(name: str) -> type | None:
    """The argparse ``type`` of a field: from its annotation (int, float; else text)."""
    note = str(FIELDS[name].type)
    if note.startswith("str"):  # text first (--ask-at takes 5,10,20 or 'last')
        return None
    return float if "float" in note else int if "int" in note else None


def add_option(p: argparse.ArgumentParser, name: str, **override: Any) -> None:
    """The flag of the field ``name`` of ``RunOptions`` (``override``: argparse keywords that
    differ for this command, e.g. ``sequential``'s own help line or default)."""
    how: Flag = FIELDS[name].metadata["flag"]
    default = FIELDS[name].default
    words: dict[str, Any] = {"action": "store_true"} if default is False else {
        "default": default if how.shown_default is None else how.shown_default,
        "choices": how.choices, "metavar": how.metavar, "type": _kind(name)}
    p.add_argument("--" + name.replace("_", "-"), **{"help": how.help, **words, **override})


def add_fields(p: argparse.ArgumentParser, names: Iterable[str], sent_with: str = "every call",
               override: Mapping[str, dict[str, Any]] | None = None) -> None:
    """The flags of the fields ``names`` of ``RunOptions``, in that order: ``model_args`` as
    -M and --model-args (an argument sent with ``sent_with``), ``cache`` as --cache and
    --no-cache; ``override``: a field's argparse keywords that differ for this command."""
    for name in names:
        if name == "model_args":
            add_model_args(p, sent_with)
        elif name == "cache":
            add_cache(p)
        else:
            add_option(p, name, **(override or {}).get(name, {}))


SWEEP_HELP: Final[dict[str, dict[str, Any]]] = {
    "out": {"help": "the sweep's folder: each budget's run is OUT/MODEL__SUITE__KEY=VALUE "
            "(default runs/MODEL__SUITE__sweep-KEY); re-run to resume"},
    "max_cost": {"help": "stop before a call could take the whole sweep's spending above USD "
                 "(what earlier budgets spent counts; status budget, exit 6; re-run with a "
                 "larger budget to continue)"},
}
"""``butterfly sweep``'s help where a run option means something else for a sweep."""


def add_sweep(p: argparse.ArgumentParser) -> None:
    """``butterfly sweep``: --budget, --name, every flag of ``run`` but --shard (a sweep plays
    whole runs), --dry-run and --json."""
    p.add_argument("--budget", required=True, metavar="KEY=V1,V2,..",
                   help="the budget to sweep and its values, in order: a -M key "
                   "(reasoning_effort=low,medium,high; thinking_budget=1024,4096) or "
                   "max_tokens=256,1024 (each VALUE as -M reads it)")
    p.add_argument("--name", help="the sweep's name, recorded in each run's manifest (default: "
                   "its folder's name)")
    add_fields(p, [n for n in FIELDS if n != "shard"], "every call of every budget", SWEEP_HELP)
    p.add_argument("--dry-run", action="store_true", help="play nothing and write nothing: "
                   "print the whole sweep's bill, per budget and in total (docs/cost.md)")
    p.add_argument("--json", action="store_true", help="print the bill (with --dry-run) or "
                   "the sweep's result as JSON")


def add_model_args(p: argparse.ArgumentParser, sent_with: str) -> None:
    """-M and --model-args (the field ``model_args``)."""
    p.add_argument("-M", "--model-arg", action="append", metavar="KEY=VALUE",
                   help=f"an argument sent with {sent_with} (repeatable; VALUE as JSON when "
                   "it parses), e.g. -M reasoning_effort=low -M top_p=0.9 -M "
                   "'extra_body={\"chat_template_kwargs\": {\"enable_thinking\": false}}'")
    p.add_argument("--model-args", metavar="FILE",
                   help="model arguments from a JSON or YAML mapping (-M overrides)")


def add_cache(p: argparse.ArgumentParser) -> None:
    """--cache and --no-cache (the field ``cache``: a path, or None when --no-cache)."""
    p.add_argument("--cache", default=FIELDS["cache"].default,
                   help="SQLite answer cache shared by runs")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")


def add_side_prices(p: argparse.ArgumentParser) -> None:
    """``sequential``'s prices, one per model: --price-a / --price-b FILE and
    --price-per-mtok-a / --price-per-mtok-b IN,OUT[,CACHED] (``run``'s --price, per model)."""
    for side, which in (("a", "--model-a"), ("b", "--model-b")):
        p.add_argument(f"--price-{side}", metavar="FILE",
                       help=f"a JSON file of {which}'s price in USD per million tokens, as "
                       "run --price (default: litellm's offline price map)")
        p.add_argument(f"--price-per-mtok-{side}", metavar="IN,OUT[,CACHED]",
                       help=f"{which}'s price in USD per million input, output and optionally "
                       f"cached-input tokens (instead of --price-{side} FILE)")
