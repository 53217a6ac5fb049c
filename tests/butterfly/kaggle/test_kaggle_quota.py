"""The notebook's estimate (``notebooks/estimate.json``) and docs/kaggle.md's quota table stay
in step with the frozen suites and with each other (``tools/kaggle_quota.py --write`` remakes
both)."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

from conftest import ROOT

from butterfly.core.asking import n_asked
from butterfly.kaggle.notebook import ESTIMATE, frozen_suites
from butterfly.suite.load import load_suite


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kaggle_quota", ROOT / "tools/kaggle_quota.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_estimate_has_every_scenario_of_every_suite_the_notebook_carries() -> None:
    estimate = json.loads((ROOT / ESTIMATE).read_text(encoding="utf-8"))
    for suite in frozen_suites(ROOT):
        scenarios = load_suite(ROOT / suite.path)
        rows = estimate["suites"][suite.name]
        assert {s.id: len(s.turns) for s in scenarios} == {
            i: r["calls"] for i, r in rows.items()}, f"{suite.name}: run tools/kaggle_quota.py"
        for r in rows.values():
            assert set(r["prompt"]) == set(estimate["models"]) == set(r["completion"])
        if suite.entry["track"] == "spec":  # restate mode: every turn asked, and at the defaults
            assert {i: r["calls"] for i, r in estimate["restate"][suite.name].items()} == {
                s.id: len(s.turns) for s in scenarios}
        if suite.entry["ask_at"]:
            asked = estimate["asked"][suite.name]
            assert asked["ask_at"] == suite.entry["ask_at"]
            assert {i: r["calls"] for i, r in asked["scenarios"].items()} == {
                s.id: n_asked(len(s.turns), suite.entry["ask_at"]) for s in scenarios}


def test_the_docs_asked_table_is_the_estimates() -> None:
    """The table of restate mode asked at the default points holds the notebook's estimate."""
    tool = _tool()
    estimate = json.loads((ROOT / ESTIMATE).read_text(encoding="utf-8"))
    doc = (ROOT / "docs/kaggle.md").read_text(encoding="utf-8")
    asked = doc.split(f"**{tool.HEADINGS['asked']}**")[1].split(tool.END)[0]
    assert list(estimate["asked"]) == ["butterfly-long"]
    per = estimate["asked"]["butterfly-long"]["scenarios"]
    for model in tool.MODELS:
        mine = {i: (r["calls"], r["prompt"][model], r["completion"][model])
                for i, r in per.items()}
        for name, ids in tool.variants("butterfly-long"):
            line = "| " + " | ".join(tool.rows(model, name, ids, mine)) + " |"
            assert line in asked, f"{line}: run tools/kaggle_quota.py --write"


def test_the_docs_chat_table_is_the_estimates() -> None:
    tool = _tool()
    estimate = json.loads((ROOT / ESTIMATE).read_text(encoding="utf-8"))
    doc = (ROOT / "docs/kaggle.md").read_text(encoding="utf-8")
    chat = doc.split(tool.BEGIN)[1].split("**restate mode**")[0]
    for suite in tool.SUITES:
        per = estimate["suites"][suite]
        for model in tool.MODELS:
            mine = {i: (r["calls"], r["prompt"][model], r["completion"][model])
                    for i, r in per.items()}
            for name, ids in tool.variants(suite):
                line = "| " + " | ".join(tool.rows(model, name, ids, mine)) + " |"
                assert line in chat, f"{line}: run tools/kaggle_quota.py --write"
