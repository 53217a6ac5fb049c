"""The code track in the report's transcript viewer (docs/report.md, "The code track").

A conversation of a code-track run carries, beside its compacted turns, one entry per turn:
the program's unified diff against the program before it, exactly as ``butterfly show`` prints
it (:func:`butterfly.analysis.transcripts.with_program_diffs`: the initial program, or the
latest one the model gave), and the settings the program showed no value of (``broken``: it
crashed, hung, or behaved as no value of the setting does). The turn's other marks (wrong,
collateral, edit not made) are the spec track's, read off the observed spec. The page draws
them with ``textContent`` only (templates/report.js): the program is model-written text.
"""

from __future__ import annotations

from typing import Any, TypedDict

from butterfly.analysis.transcripts import PROGRAMS, VIEWS
from butterfly.code.catalogue import BROKEN
from butterfly.core.transcript import Transcript, TranscriptTurn
from oracle import Scenario


class CodeTurns(TypedDict, total=False):
    """What a code conversation adds to its page data: ``c``, per turn [the program's diff as
    one text ("" when the program is unchanged; None when the turn has no program: an
    abstention or no answer), the broken settings]."""

    c: list[list[Any]]


def broken_keys(row: TranscriptTurn) -> list[str]:
    """The settings of a turn's observed spec that are broken (each is also wrong)."""
    spec = row["spec"]
    return [] if spec is None else [k for k in row["wrong"] if spec[k] == BROKEN]


def code_turns(conv: Transcript, scenario: Scenario, view: str) -> CodeTurns:
    """``conv``'s code entries (``{"c": [...]}``) when its run's track shows programs (its
    ``view``: the code track's), else nothing: the spec track's page data is unchanged."""
    if view != PROGRAMS:
        return CodeTurns()
    rows = VIEWS[view](conv, scenario)["turns"]
    return CodeTurns(c=[[None if "program_diff" not in row else "\n".join(row["program_diff"]),
                         broken_keys(row)] for row in rows])
