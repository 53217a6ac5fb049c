"""inspect's entry point (``[project.entry-points.inspect_ai]``): importing this module
registers ButterflyBench's tasks, scorer, metrics and the ``butterfly`` model provider."""

from __future__ import annotations

from butterflybench.provider import ScriptedAPI
from butterflybench.scorer import butterfly_scorer
from butterflybench.tasks import (
    butterfly_40,
    butterfly_code,
    butterfly_hard,
    butterfly_long,
    butterfly_suite,
)

__all__ = ["ScriptedAPI", "butterfly_40", "butterfly_code", "butterfly_hard", "butterfly_long",
           "butterfly_scorer", "butterfly_suite"]
