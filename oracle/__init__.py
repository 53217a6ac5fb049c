"""ButterflyBench's exact semantics: the catalogue, scenario records, replay and guards.

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
from oracle.records import (
    CATEGORIES,
    MAX_TURNS,
    OPS,
    SCHEMA_VERSION,
    UNDO_OPS,
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
    "BY_KEY",
    "CATEGORIES",
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
