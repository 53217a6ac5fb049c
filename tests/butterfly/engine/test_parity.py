"""The parity table (issue 35, item 2; docs/design.md, "The doors and their parity"): for every
feature the engine plays and every door besides ``butterfly run`` (the dry run, the Kaggle
notebook, inspect), either the test that shows the door gives the same records and figures (or,
for the dry run, the same calls) as ``butterfly run``, or the door's refusal in one line that
names the reason, or why the feature does not arise at that door.

This module holds the table once. It checks that the design doc prints exactly this table, that
every test a cell names exists, and that every refusal is what the door says, in one line. The
named tests run with the rest of the suite: a cell is only as good as its test."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path
from typing import Final, NamedTuple

import pytest
from conftest import ROOT

from butterfly.kaggle import settings as notebook


class Same(NamedTuple):
    """The door plays the feature as ``butterfly run`` does: the test that shows it."""

    test: str  # path::function


class Refused(NamedTuple):
    """The door refuses the feature in one line: what it is given, and a piece of the line."""

    given: tuple[tuple[str, object], ...]
    says: str


class Moot(NamedTuple):
    """The feature does not arise at the door, and why."""

    why: str


Cell = Same | Refused | Moot
DOORS: Final = ("dry run", "notebook", "inspect")

DRY: Final = "tests/butterfly/runs/test_dryrun.py::"
KAGGLE: Final = "tests/butterfly/kaggle/test_door.py::"
RUNNER: Final = "tests/butterfly/kaggle/test_kaggle_runner.py::"
INSPECT: Final = "tests/butterflybench/test_inspect_tasks.py::"
SAME_CALLS: Final = Same(DRY + "test_the_dry_run_makes_as_many_calls_as_the_run")
PROMPTS_KAGGLE: Final = Same(KAGGLE + "test_the_prompts_the_notebook_offers_are_the_clis")
PROMPTS_INSPECT: Final = Same(INSPECT + "test_the_prompts_a_task_offers_are_the_clis")
ANSWERED_BY_ORACLE: Final = Moot("the dry run answers each call itself, with the oracle's spec")

PARITY: Final[dict[str, dict[str, Cell]]] = {
    "chat mode": {
        "dry run": SAME_CALLS,
        "notebook": Same(RUNNER + "test_the_headline_says_what_score_says"),
        "inspect": Same(INSPECT + "test_a_scripted_agent_scores_alike_in_both_harnesses"),
    },
    "restate mode and ask points": {
        "dry run": SAME_CALLS,
        "notebook": Same(RUNNER + "test_asked_turns_send_and_score_what_the_cli_does"),
        "inspect": Same(INSPECT + "test_restate_asked_at_chosen_turns_scores_alike"),
    },
    "several layouts and repeats": {
        "dry run": SAME_CALLS,
        "notebook": Refused((("layout", "E,Q"),), notebook.REFUSALS["layouts"]),
        "inspect": Same(INSPECT + "test_a_scripted_agent_scores_alike_in_both_harnesses"),
    },
    "strategies (few-shot, cot, adaptive-cot)": {
        "dry run": SAME_CALLS,
        "notebook": PROMPTS_KAGGLE,
        "inspect": PROMPTS_INSPECT,
    },
    "self-consistency and its vote": {
        "dry run": SAME_CALLS,
        "notebook": Refused((("strategy", "self-consistency"),),
                            notebook.REFUSALS["self-consistency"]),
        "inspect": Same(INSPECT + "test_self_consistency_votes_alike_and_sends_the_vote_in_the_"
                        "history"),
    },
    "protocols json, json-first, json-last": {
        "dry run": SAME_CALLS,
        "notebook": PROMPTS_KAGGLE,
        "inspect": PROMPTS_INSPECT,
    },
    "protocol schema (response_format)": {
        "dry run": SAME_CALLS,
        "notebook": Refused((("protocol", "schema"),), notebook.REFUSALS["schema"]),
        "inspect": PROMPTS_INSPECT,
    },
    "parse modes structured, strict": {
        "dry run": Moot("the dry run parses nothing: it counts what is sent"),
        "notebook": PROMPTS_KAGGLE,
        "inspect": PROMPTS_INSPECT,
    },
    "parse mode lenient (json_repair)": {
        "dry run": Moot("the dry run parses nothing: it counts what is sent"),
        "notebook": Refused((("parse", "lenient"), ("json_repair", False)),
                            notebook.REFUSALS["lenient"]),
        "inspect": PROMPTS_INSPECT,
    },
    "the answer-size cap": {
        "dry run": ANSWERED_BY_ORACLE,
        "notebook": Same(KAGGLE + "test_the_answer_cap_cuts_what_the_history_holds_as_the_cli"),
        "inspect": Same(INSPECT + "test_the_answer_size_cap_cuts_alike"),
    },
    "abstention over the context window": {
        "dry run": Same(DRY + "test_the_dry_run_says_how_many_prompts_exceed_the_context_"
                        "window"),
        "notebook": Same(KAGGLE + "test_an_ask_over_the_context_window_is_an_abstention_as_in_"
                         "the_cli"),
        "inspect": Same(INSPECT + "test_an_ask_over_the_context_window_abstains_alike"),
    },
    "a failed call leaves the conversation incomplete": {
        "dry run": ANSWERED_BY_ORACLE,
        "notebook": Same(KAGGLE + "test_in_chat_mode_an_ask_over_the_context_window_fails_the_"
                         "conversation"),
        "inspect": Same(INSPECT + "test_a_failed_call_leaves_its_conversation_incomplete"),
    },
    "the code track (programs observed in the sandbox)": {
        "dry run": SAME_CALLS,
        "notebook": Same(KAGGLE + "test_the_code_track_abstains_over_the_context_window_and_goes_"
                         "on"),
        "inspect": Same(INSPECT + "test_the_code_track_observes_and_judges_programs_alike"),
    },
}
"""Feature -> door -> cell. ``butterfly run`` (the CLI and the API, one door) is the reference."""


def text_of(cell: Cell) -> str:
    """A cell as the design doc prints it."""
    if isinstance(cell, Same):
        path, name = cell.test.split("::")
        return f"same: `{Path(path).name}::{name}`"
    if isinstance(cell, Refused):
        return "refused: " + ", ".join(f"{k}={v}" for k, v in cell.given)
    return f"n/a: {cell.why}"


def rows() -> list[str]:
    """The table's lines as docs/design.md holds them."""
    head = ["| feature | " + " | ".join(DOORS) + " |", "|---" * (len(DOORS) + 1) + "|"]
    return head + [f"| {feature} | " + " | ".join(text_of(cells[d]) for d in DOORS) + " |"
                   for feature, cells in PARITY.items()]


def test_the_design_doc_prints_this_table() -> None:
    doc = (ROOT / "docs" / "design.md").read_text("utf-8")
    start = doc.index("| feature | dry run |")
    printed = doc[start:].split("\n\n", 1)[0].splitlines()
    assert printed == rows(), "docs/design.md's parity table; print it anew:\n" + "\n".join(rows())


@cache
def functions(path: str) -> frozenset[str]:
    tree = ast.parse((ROOT / path).read_text("utf-8"))
    return frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))


def test_every_cell_names_a_test_that_exists_or_a_reason() -> None:
    for feature, cells in PARITY.items():
        assert set(cells) == set(DOORS), feature
        for door, cell in cells.items():
            if isinstance(cell, Same):
                path, name = cell.test.split("::")
                assert name.startswith("test_") and name in functions(path), (feature, door)
            elif isinstance(cell, Moot):
                assert cell.why and "\n" not in cell.why


REFUSED: Final = [(f, d, c) for f, cells in PARITY.items() for d, c in cells.items()
                  if isinstance(c, Refused)]


@pytest.mark.parametrize(("feature", "door", "cell"), REFUSED,
                         ids=[f"{d}:{f}" for f, d, _ in REFUSED])
def test_each_refusal_is_the_doors_own_in_one_line(feature: str, door: str,
                                                    cell: Refused) -> None:
    # the only door that refuses a feature butterfly run plays: inspect's tasks and the dry run
    # refuse what butterfly run refuses, in its words (their own tests), and nothing else
    assert door == "notebook"
    with pytest.raises(notebook.Refused) as info:
        notebook.settings_of("spec", **dict(cell.given))  # type: ignore[arg-type]
    said = str(info.value)
    assert cell.says in said and "\n" not in said and re.search(r"\w", said)

