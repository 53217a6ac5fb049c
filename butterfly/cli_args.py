"""The argument parser's pieces shared by several commands of :mod:`butterfly.cli`: the help
formatter (every flag's default shown), ``butterfly run``'s flags generated from the fields of
:class:`~butterfly.core.options.RunOptions`, and the flags ``sequential`` shares with it."""

from __future__ import annotations

import argparse
from typing import Any

from butterfly.core.options import FIELDS, flag_of


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
    how = flag_of(name)
    default = FIELDS[name].default
    words: dict[str, Any] = {"help": how.help}
    if default is False:
        words["action"] = "store_true"
    else:
        words["default"] = how.shown_default if how.shown_default is not None else default
        if how.choices is not None:
            words["choices"] = how.choices
        elif _kind(name) is not None:
            words["type"] = _kind(name)
        if how.metavar is not None:
            words["metavar"] = how.metavar
    words.update(override)
    p.add_argument(how.flag or "--" + name.replace("_", "-"), **words)


def add_run(p: argparse.ArgumentParser) -> None:
    """Every flag of ``butterfly run``, in the order of ``RunOptions``' fields."""
    for name in FIELDS:
        if name == "model_args":
            add_model_args(p, "every call", seed=False)
        elif name == "cache":
            add_cache(p)
        else:
            add_option(p, name)


def add_model_args(p: argparse.ArgumentParser, sent_with: str, seed: bool = True) -> None:
    """-M and --model-args (the field ``model_args``), then --no-seed unless ``seed`` is
    False (``butterfly run`` reaches it as a field of its own)."""
    p.add_argument("-M", "--model-arg", action="append", metavar="KEY=VALUE",
                   help=f"an argument sent with {sent_with} (repeatable; VALUE as JSON when "
                   "it parses), e.g. -M reasoning_effort=low -M top_p=0.9 -M "
                   "'extra_body={\"chat_template_kwargs\": {\"enable_thinking\": false}}'")
    p.add_argument("--model-args", metavar="FILE",
                   help="model arguments from a JSON or YAML mapping (-M overrides)")
    if seed:
        add_option(p, "no_seed")


def add_limits(p: argparse.ArgumentParser) -> None:
    """--max-answer-chars and --max-retry-wait."""
    add_option(p, "max_answer_chars")
    add_option(p, "max_retry_wait")


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
