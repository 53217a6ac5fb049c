"""Every vocabulary and default of the harness, written once.

Records (``RunParams``), argparse choices, prompts, the parser and the Kaggle runner all read
these names: a new strategy, protocol or parse mode is added here and nowhere else in the
vocabulary (docs/design.md says which other files a new one touches). Pure: notebook-inlinable.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, get_args

Strategy = Literal["zero-shot", "few-shot", "cot", "self-consistency", "adaptive-cot"]
SCBase = Literal["zero-shot", "cot", "adaptive-cot"]
"""The prompt self-consistency samples and votes over (``--sc-base``)."""
Protocol = Literal["schema", "json", "json-first", "json-last"]
ParseMode = Literal["strict", "structured", "lenient"]
Mode = Literal["chat", "restate"]
Layout = Literal["E", "Q", "H"]
ErrorClass = Literal["timeout", "rate_limit", "server", "connection", "bad_response"]
"""Why a call finally failed: always the provider's fault, never scored as the model's."""
RunStatus = Literal["running", "complete", "incomplete", "interrupted", "failed", "budget"]
"""``failed``: the provider refused the run's calls (the manifest's ``failure`` says why).
``budget``: stopped by ``--max-cost`` before a call could exceed it (re-run with a larger
budget to complete it)."""
Via = Literal["auto", "litellm"]
"""``--via``: auto takes the fast path where it applies (an OpenAI-compatible ``--api-base``,
``local/...``) and litellm elsewhere; litellm forces litellm."""
Transport = Literal["direct", "litellm", "scripted"]
"""How a run's calls were sent: direct (the fast path: chat completions over one pooled
aiohttp session), litellm, or scripted (no model at all)."""
CompareMethod = Literal["diff", "fixed", "bh", "ebh", "gs"]
SequentialMethod = Literal["ebh", "gs"]
Track = Literal["spec", "code"]
"""spec: the model keeps the spec (JSON); code: it keeps a program (docs/code-track.md)."""

STRATEGIES: Final[tuple[Strategy, ...]] = get_args(Strategy)
"""Prompting strategies after PromptAudit (seed 001), one template each (docs/strategies.md)."""
SC_BASES: Final[tuple[SCBase, ...]] = get_args(SCBase)
PROTOCOLS: Final[tuple[Protocol, ...]] = get_args(Protocol)
"""Output protocols: JSON only with the spec's schema as response_format; JSON only; JSON
first then an explanation; an explanation then JSON last."""
PARSE_MODES: Final[tuple[ParseMode, ...]] = get_args(ParseMode)
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
"""chat: the model sees its earlier answers; restate: each turn asked afresh."""
LAYOUTS: Final[tuple[Layout, ...]] = get_args(Layout)
"""E evidence first; Q question first; H hedged (E plus the UNSURE sentence)."""
VIAS: Final[tuple[Via, ...]] = get_args(Via)
TRACKS: Final[tuple[Track, ...]] = get_args(Track)
COMPARE_METHODS: Final[tuple[CompareMethod, ...]] = get_args(CompareMethod)
"""Regression methods of ``butterfly compare`` (docs/statistics.md)."""
SEQUENTIAL_METHODS: Final[tuple[SequentialMethod, ...]] = get_args(SequentialMethod)


@dataclass(frozen=True)
class Defaults:
    """The defaults of a run, in one place (the CLI's flags and ``RunParams`` read them)."""

    temperature: float = 0.0
    max_tokens: int = 1024
    code_max_tokens: int = 4096
    """The code track's: its answer is a whole program (about 1,000 to 1,300 tokens)."""
    seed: int = 0
    concurrency: int = 1
    timeout: float = 120.0
    """Seconds per call."""
    retries: int = 4
    """Retries per call after a failure."""
    max_retry_wait: float = 60.0
    """The longest wait before a retry, in seconds, whatever a server's Retry-After asks."""
    max_answer_chars: int = 1_000_000
    """The response-size cap, in characters: the parser's own limit (``core.find_json.MAX_CHARS``:
    a longer answer is an abstention, too_large, either way), so it never changes a verdict."""
    strategy: Strategy = "zero-shot"
    protocol: Protocol = "schema"
    parse: ParseMode = "structured"
    mode: Mode = "chat"
    layouts: tuple[Layout, ...] = ("E",)
    samples: int = 5
    """Self-consistency: answers sampled per turn when ``--samples`` is not given."""
    sc_base: SCBase = "zero-shot"
    via: Via = "auto"
    sequential_temperature: float = 0.7
    """``butterfly sequential``'s temperature: above 0, so that the pairs it draws differ."""
    model: str = "local/smollm2"
    suite: str = "butterfly-40"
    cache: str = "~/.cache/butterfly/answers.sqlite"


DEFAULTS: Final = Defaults()

CHAIN_MIX: Final[dict[str, int]] = {
    "set": 4, "drop": 1, "undo_last": 1, "undo_ref": 2, "undo_earliest": 1, "redo": 2,
    "distractor": 1, "indirect": 1, "coupling": 1,
}
"""``generate --lengths``'s default op weights (``--ops``): the oracle's ops, plus ``indirect``
(a set by indirect reference) and ``coupling`` (a rule's trigger switched on, or off when it is
on). ``butterfly.suite.chains`` builds with it; ``--help`` shows it."""

TRANSIENT_STATUS: Final = frozenset({408, 409, 425, 429})
"""HTTP statuses worth retrying, besides every 5xx (the CLI client and the Kaggle runner)."""


def is_transient_status(status: int) -> bool:
    """True when a call answered with ``status`` may succeed if tried again."""
    return status in TRANSIENT_STATUS or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry mechanism of the harness: how often a failed call is tried again and how
    long to wait before each retry. The CLI's client (``models/client.py``, async) and the
    Kaggle runner (``kaggle/runner.py``, inlined in the notebook) each loop over their calls
    and ask :meth:`wait` what to do after a failure (docs/running.md, "The client")."""

    retries: int
    base: float
    cap: float
    jitter: bool = True
    """Full jitter: a wait drawn uniformly under :meth:`ceiling`; else the ceiling itself."""
    longest: float = math.inf
    """No wait is longer, whatever a server's Retry-After asks (``--max-retry-wait``)."""

    def ceiling(self, attempt: int) -> float:
        """The longest backoff before retry ``attempt`` (1-based): ``min(cap, base * 2 **
        (attempt - 1))``."""
        return float(min(self.cap, self.base * 2 ** (attempt - 1)))

    def wait(self, failed: int, retry_after: float | None = None,
             uniform: Callable[[float, float], float] = random.uniform) -> float | None:
        """Seconds to wait after the ``failed``-th failed attempt before the next one, or None
        when it was the last (``failed > retries``): the backoff (:attr:`jitter` draws it with
        ``uniform``), at least the server's ``retry_after`` when it gave one (up to a quarter
        more with jitter, so that the calls it refused together do not all come back at once),
        never more than :attr:`longest`."""
        if failed > self.retries:
            return None
        ceiling = self.ceiling(failed)
        delay = uniform(0, ceiling) if self.jitter else ceiling
        if retry_after is not None:
            delay = max(delay, retry_after * (1 + (uniform(0, 0.25) if self.jitter else 0)))
        return min(delay, self.longest)


CLI_RETRY: Final = RetryPolicy(retries=DEFAULTS.retries, base=0.5, cap=30.0,
                               longest=DEFAULTS.max_retry_wait)
"""The CLI's client: full jitter under the ceiling, honouring Retry-After up to
``--max-retry-wait`` (the client's own settings replace these defaults)."""
KAGGLE_RETRY: Final = RetryPolicy(retries=5, base=2.0, cap=60.0, jitter=False)
"""The Kaggle runner (the SDK owns its client): waits of exactly 2, 4, 8, 16, 32 s."""
