"""The argument parser's pieces shared by several commands of :mod:`butterfly.cli`: the help
formatter (every flag's default shown) and the flag groups of ``run`` and ``sequential``."""

from __future__ import annotations

import argparse
from typing import Any

from butterfly.core.vocab import DEFAULTS as D
from butterfly.core.vocab import VIAS


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


def add_via(p: argparse.ArgumentParser) -> None:
    p.add_argument("--via", choices=VIAS, default=D.via,
                   help="auto (default): chat completions straight over one pooled HTTP "
                   "client for an OpenAI-compatible --api-base (openai/, hosted_vllm/) and "
                   "local/ models, litellm for every other provider; litellm: always litellm")


def add_model_args(p: argparse.ArgumentParser, sent_with: str) -> None:
    """-M, --model-args and --no-seed (``butterfly run`` and ``sequential``)."""
    p.add_argument("-M", "--model-arg", action="append", metavar="KEY=VALUE",
                   help=f"an argument sent with {sent_with} (repeatable; VALUE as JSON when "
                   "it parses), e.g. -M reasoning_effort=low -M top_p=0.9 -M "
                   "'extra_body={\"chat_template_kwargs\": {\"enable_thinking\": false}}'")
    p.add_argument("--model-args", metavar="FILE",
                   help="model arguments from a JSON or YAML mapping (-M overrides)")
    p.add_argument("--no-seed", action="store_true",
                   help="send no seed (for providers that reject it)")


def add_limits(p: argparse.ArgumentParser) -> None:
    """--max-answer-chars and --max-retry-wait (``butterfly run`` and ``sequential``)."""
    p.add_argument("--max-answer-chars", type=int, default=D.max_answer_chars, metavar="N",
                   help="the response-size cap: a longer answer is kept (and sent back in the "
                   "history) as its first N characters, an abstention (too_large)")
    p.add_argument("--max-retry-wait", type=float, default=D.max_retry_wait, metavar="SECONDS",
                   help="the longest wait before a retry, whatever a server's Retry-After asks")


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", default=D.cache, help="SQLite answer cache shared by runs")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
