"""How many examples a property test draws: a sample in ``make test``, the whole sweep in
``bench/laws.py``.

``make test`` keeps to about 10 minutes on two cores; the oracle's laws and its agreement with
the naive second oracle are worth more examples than that allows. A test names its full count
with :func:`examples`; ``make test`` draws a quarter of it (never fewer than 50), and
``BUTTERFLY_SWEEP=full`` (what ``bench/laws.py`` sets) draws all of it. Every run is
derandomized, so the sample is the same on every run (not a prefix of the sweep: hypothesis
plans its examples from the count).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

CI: settings = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""The oracle's property tests' settings (derandomized, no example database, no deadline); each
test adds its count: ``@settings(CI, max_examples=examples(n))``."""

SAMPLE = 4
"""make test draws 1/SAMPLE of each full count."""


def full() -> bool:
    """True when the whole sweep is asked for (``BUTTERFLY_SWEEP=full``)."""
    return os.environ.get("BUTTERFLY_SWEEP", "") == "full"


def examples(n: int) -> int:
    """The number of examples to draw for a test whose whole sweep is ``n``."""
    return n if full() else max(n // SAMPLE, min(n, 50))
