"""The transcripts as the report's page carries them (docs/report.md, "Transcripts"): each
scenario once (its initial spec and, per turn, what the oracle changed), and every
conversation of every run with its turns packed for ``templates/report.js``.

A code-track conversation carries, beside its packed turns, one entry per turn: the program's
unified diff against the program before it, exactly as ``butterfly show`` prints it
(:func:`butterfly.analysis.transcripts.with_program_diffs`), and the settings the program
showed no value of (``broken``: it crashed, hung, or behaved as no value of the setting does).
The page draws every string with ``textContent`` only: answers and programs are model-written
text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from butterfly.analysis.report.data import PackedTurn, PageConversation, PageScenario
from butterfly.analysis.transcripts import PROGRAMS, VIEWS, with_reasoning
from butterfly.core.code_catalogue import BROKEN
from butterfly.core.transcript import Transcript, TranscriptTurn, conversation_of
from butterfly.runs.reader import Run
from oracle import KEYS, Scenario, replay

REASONING_SHOWN: Final = 4000
"""The most of a turn's reasoning the report carries, in characters (``butterfly show --full``
prints all of it): reasoning can run to the response-size cap, and the page carries every
transcript."""
STATUS_LETTER: Final = {"match": "m", "wrong": "w", "abstained": "a", "missing": "x",
                        "not_asked": "n"}
"""A turn's status as the page's transcripts read it (n: not asked, ``--ask-at``)."""


def page_scenario(s: Scenario) -> PageScenario:
    """The scenario's category, initial spec, and per turn [op, user text, the settings the
    oracle changed and their new values]."""
    o = replay(s)
    return PageScenario(
        category=s.category, initial=o[0],
        turns=tuple((t.op, t.text, {k: o[i][k] for k in KEYS if o[i][k] != o[i - 1][k]})
                    for i, t in enumerate(s.turns, 1)))


def packed_turn(row: TranscriptTurn) -> PackedTurn:
    """One turn for the page (:data:`~butterfly.analysis.report.data.PackedTurn`), its reasoning
    cut to its first :data:`REASONING_SHOWN` characters."""
    spec = row["spec"]
    wrong = {k: spec[k] for k in row["wrong"]} if spec is not None else {}
    moved_right = [k for k in row["collateral"] if k not in row["wrong"]]
    out: tuple[Any, ...] = (STATUS_LETTER[row["status"]], row["raw"], wrong, row["collateral"],
                            row["missed"], row["abstention"], row["detail"], row["samples"],
                            {k: spec[k] for k in moved_right} if spec is not None else {})
    reasoning, tokens = row.get("reasoning"), row.get("reasoning_tokens")
    if reasoning or tokens:
        out += ((reasoning or "")[:REASONING_SHOWN], tokens, len(reasoning or ""))
    return out


def broken_keys(row: TranscriptTurn) -> tuple[str, ...]:
    """The settings of a turn's observed spec that are broken (each is also wrong)."""
    spec = row["spec"]
    return () if spec is None else tuple(k for k in row["wrong"] if spec[k] == BROKEN)


def code_entries(conv: Transcript,
                 scenario: Scenario) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
    """A code conversation's entries: per turn [its program's diff as one text ("" when the
    program is unchanged; None when the turn has no program: an abstention or no answer),
    the broken settings]."""
    rows = VIEWS[PROGRAMS](conv, scenario)["turns"]
    return tuple((None if "program_diff" not in row else "\n".join(row["program_diff"]),
                  broken_keys(row)) for row in rows)


def page_conversations(i: int, run: Run) -> Iterator[PageConversation]:
    """Every conversation run ``i`` played (a shard's own), one at a time."""
    params, answered = run.params, run.turns()
    by_id = {s.id: s for s in run.scenarios}
    for k in run.conversations():
        scenario = by_id[k.scenario]
        c = with_reasoning(conversation_of(scenario, answered, k.layout, k.repeat,
                                           params.ask_at), run.records)
        yield PageConversation(
            run=i, id=c["id"], layout=c["layout"], repeat=c["repeat"], verdict=c["verdict"],
            first_divergent=c["first_divergent"],
            turns=tuple(packed_turn(row) for row in c["turns"]),
            code=code_entries(c, scenario) if run.track.view == PROGRAMS else None)
