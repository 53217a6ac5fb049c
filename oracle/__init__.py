"""ButterflyBench's exact semantics: the catalogue, scenario records, the ops, replay and guards.

Pure: plain data in, plain data out. No I/O, no clock, no randomness, nothing from ``butterfly``.
"""

from oracle.catalogue import (
    BY_KEY,
    COUPLINGS,
    DOMAINS,
    KEYS,
    SETTINGS,
    SPEC_VALUES,
    UNSPECIFIED,
    Coupling,
    Setting,
    apply_couplings,
    canonical_initial,
)
from oracle.ops import CHANGE_OPS, OPS, UNDO_OPS, Op
from oracle.records import (
    ASKED_MAX_TURNS,
    CATEGORIES,
    MAX_TURNS,
    SCHEMA_VERSION,
    Scenario,
    Spec,
    SuiteManifest,
    Turn,
    check_spec,
    spec_json_schema,
    turn_limit,
)
from oracle.replay import ORACLE, InvalidScenario, Rules, Violation, check, replay, targeted

__all__ = [
    "ASKED_MAX_TURNS",
    "BY_KEY",
    "CATEGORIES",
    "CHANGE_OPS",
    "COUPLINGS",
    "DOMAINS",
    "KEYS",
    "MAX_TURNS",
    "OPS",
    "ORACLE",
    "SCHEMA_VERSION",
    "SETTINGS",
    "SPEC_VALUES",
    "UNDO_OPS",
    "UNSPECIFIED",
    "Coupling",
    "InvalidScenario",
    "Op",
    "Rules",
    "Scenario",
    "Setting",
    "Spec",
    "SuiteManifest",
    "Turn",
    "Violation",
    "apply_couplings",
    "canonical_initial",
    "check",
    "check_spec",
    "replay",
    "spec_json_schema",
    "targeted",
    "turn_limit",
]
