"""The code catalogue (contract section 7), re-exported from :mod:`butterfly.core.code_catalogue`.

The pure data moved to ``core`` so that the suite generator, which may import only ``core`` and
``suite`` (tests/butterfly/test_layers.py), draws settings and values from it; every public
name stays importable from here.
"""

from __future__ import annotations

from butterfly.core.code_catalogue import (
    ACTS_ON,
    BROKEN,
    COUPLINGS,
    DOMAINS,
    INPUT_SIDE,
    KEYS,
    UNOBSERVED,
    apply_couplings,
    canonical,
    is_valid,
    observable,
    one_away,
    visible,
)

__all__ = [
    "ACTS_ON",
    "BROKEN",
    "COUPLINGS",
    "DOMAINS",
    "INPUT_SIDE",
    "KEYS",
    "UNOBSERVED",
    "apply_couplings",
    "canonical",
    "is_valid",
    "observable",
    "one_away",
    "visible",
]
