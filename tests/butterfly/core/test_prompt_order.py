"""Instruction pairs never contradict each other; adaptive CoT and self-consistency's base."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ROOT

from butterfly.core.options import RunOptions
from butterfly.core.prompts import (
    ADAPTIVE_COT,
    COT,
    FORMATS,
    compatible,
    messages,
    prompt_fingerprint,
    system_message,
)
from butterfly.core.vocab import PROTOCOLS, SC_BASES, STRATEGIES
from butterfly.errors import UserError
from butterfly.runs.records import RunParams
from butterfly.runs.run_flags import make_params as make_params_of
from butterfly.suite.load import load_suite


def make_params(**options: Any) -> RunParams:
    """The run's parameters from ``options`` (fields of RunOptions), checked."""
    return make_params_of(RunOptions(**options))


ORDER_PHRASES = {
    "reasoning first": ("think step by step before you give the spec",),
    "spec first": ("as one json object first", "reply with the json object only"),
}
"""What an instruction says comes first, by the phrases that say it (lower case)."""


def contradictions(text: str) -> list[str]:
    """The orders a prompt asks for at once ("reasoning first" and "spec first"): a prompt
    that says both contradicts itself. Empty for a consistent prompt."""
    low = " ".join(text.lower().split())
    found = [order for order, phrases in ORDER_PHRASES.items()
             if any(p in low for p in phrases)]
    return found if len(found) > 1 else []


SCENARIO = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")[0]
PAIRS = [(s, p, b) for s in STRATEGIES for p in PROTOCOLS
         for b in (SC_BASES if s == "self-consistency" else ("zero-shot",))]


def _options(strategy: str, protocol: str, base: str) -> dict[str, object]:
    sc = strategy == "self-consistency"
    return {"strategy": strategy, "protocol": protocol, "sc_base": base if sc else None,
            "temperature": 0.7 if sc else 0.0}


@pytest.mark.parametrize(("strategy", "protocol", "base"), PAIRS)
def test_every_accepted_pair_is_free_of_contradictions(strategy: str, protocol: str,
                                                       base: str) -> None:
    """Every pair ``butterfly run`` accepts says one order; every pair that would say two is
    refused (CoT with json-first said both "think first" and "the spec first")."""
    text = "\n".join(m["content"] for m in messages(SCENARIO, 2, ["{}"], "E", "chat", strategy,
                                                     protocol, base))
    opts = _options(strategy, protocol, base)
    if contradictions(text):
        assert not compatible(strategy, protocol, base)
        with pytest.raises(UserError, match="json-last"):
            make_params(**opts)  # type: ignore[arg-type]
    else:
        assert compatible(strategy, protocol, base)
        make_params(**opts)  # type: ignore[arg-type]


def test_the_detector_finds_the_old_contradiction() -> None:
    assert contradictions(COT + " " + FORMATS["json-first"]) == ["reasoning first", "spec first"]
    assert contradictions(ADAPTIVE_COT + " " + FORMATS["json"])
    assert contradictions(COT + " " + FORMATS["json-last"]) == []
    assert not compatible("cot", "json-first") and compatible("cot", "json-last")


def test_adaptive_cot_reasons_only_when_the_edit_is_not_a_plain_set() -> None:
    system = system_message("adaptive-cot", "json-last")
    assert ADAPTIVE_COT in system and COT not in system
    assert "only sets one setting" in ADAPTIVE_COT and "undo" in ADAPTIVE_COT
    assert prompt_fingerprint("adaptive-cot", "json-last") != prompt_fingerprint("cot",
                                                                                  "json-last")


def test_self_consistency_samples_its_base_prompt() -> None:
    zero = system_message("self-consistency", "json-last")
    assert COT not in zero and ADAPTIVE_COT not in zero
    assert COT in system_message("self-consistency", "json-last", "cot")
    assert ADAPTIVE_COT in system_message("self-consistency", "json-last", "adaptive-cot")
    fps = {prompt_fingerprint("self-consistency", "json-last", b) for b in SC_BASES}
    assert len(fps) == 3
    p = make_params(strategy="self-consistency", protocol="json-last", sc_base="cot",
                    temperature=0.7)
    assert p.sc_base == "cot" and p.samples == 5 and p.answer_key()["sc_base"] == "cot"
    with pytest.raises(UserError, match="only for --strategy self-consistency"):
        make_params(strategy="cot", protocol="json-last", sc_base="cot")
    with pytest.raises(UserError, match="--sc-base cot reasons before the spec"):
        make_params(strategy="self-consistency", sc_base="cot", temperature=0.7)
