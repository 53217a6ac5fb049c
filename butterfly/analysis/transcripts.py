"""The transcripts ``butterfly show`` prints, loaded from a run: the run's heading and each
conversation's turns against the oracle, every string made printable (model answers are
untrusted text). :mod:`butterfly.present.show` renders them."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, TypedDict

from butterfly.code.conversation import code_spec, program_of
from butterfly.code.program import render as render_program
from butterfly.core.asking import asked_line
from butterfly.core.printable import printable
from butterfly.core.transcript import Transcript, conversation_of
from butterfly.core.turns import CallKey, ConversationKey
from butterfly.errors import UserError
from butterfly.runs.calls import CallView
from butterfly.runs.reader import Run, load_run
from oracle import Scenario


class ShowInfo(TypedDict):
    """What the transcript's heading says about the run."""

    run: str
    model: str
    layout: str
    repeat: int
    strategy: str
    samples: int
    asked: str | None
    """How the run asked (:func:`butterfly.core.asking.asked_line`); None: every turn."""


def load(run: Path | Run, scenario: str | None, layout: str | None,
         repeat: int) -> tuple[ShowInfo, list[Transcript]]:
    """The run's manifest summary and the transcripts asked for (every scenario when
    ``scenario`` is None); ``run``: its directory, or the run already read."""
    loaded = run if isinstance(run, Run) else load_run(run)
    run = loaded.path
    manifest, params = loaded.manifest, loaded.params
    chosen = loaded.scenarios
    lay = loaded.layout(layout)
    if not 0 <= repeat < params.repeats:
        raise UserError(f"{run}: no repeat {repeat} in this run (repeats 0..{params.repeats - 1})")
    if scenario is not None:
        picked = [s for s in chosen if s.id == scenario]
        if not picked:
            near = [s.id for s in chosen if scenario in s.id][:5]
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise UserError(f"{run}: no scenario {scenario!r} in this run{hint}")
        chosen = picked
    if params.shard is not None:  # a shard shows the conversations it played
        mine = set(loaded.conversations())
        chosen = [s for s in chosen if ConversationKey(s.id, lay, repeat) in mine]
        if not chosen:
            what = f" of {scenario}" if scenario else ""
            raise UserError(f"{run}: shard {params.shard} played no conversation{what} in layout "
                            f"{lay}, repeat {repeat}: show it from the shard that did, or from "
                            "the merged run")
    answered = loaded.turns()
    info = ShowInfo(run=str(run), model=manifest.model, layout=lay, repeat=repeat,
                    strategy=params.strategy, samples=params.samples,
                    asked=asked_line(params.ask_at))
    convs = [with_reasoning(conversation_of(s, answered, lay, repeat, params.ask_at),
                            loaded.records)
             for s in chosen]
    view, by_id = VIEWS[loaded.track.view], {s.id: s for s in chosen}
    return safe(info), [safe(view(c, by_id[c["id"]])) for c in convs]


def with_reasoning(conv: Transcript, records: Mapping[CallKey, CallView]) -> Transcript:
    """``conv`` with each answered turn's reasoning and reasoning tokens (its first sample's)."""
    for row in conv["turns"]:
        view = records.get(CallKey(conv["id"], row["turn"], conv.get("layout", "E"),
                                   conv.get("repeat", 0), 0))
        if row["status"] != "missing" and view is not None:
            row["reasoning"] = view.reasoning_content
            row["reasoning_tokens"] = view.tokens.reasoning
    return conv


def with_program_diffs(conv: Transcript, scenario: Scenario) -> Transcript:
    """A code conversation with each answered turn's program diff (``program_diff``: unified
    diff lines against the program before it: the initial one, or the latest the model gave)."""
    before = render_program(code_spec(scenario.initial))
    for row in conv["turns"]:
        program = None if not row["raw"] else program_of(row["raw"]).program
        if program is None:
            continue
        row["program_diff"] = list(difflib.unified_diff(
            before.splitlines(), program.splitlines(), "before", f"turn {row['turn']}",
            lineterm="", n=1))
        before = program
    return conv


def as_answers(conv: Transcript, scenario: Scenario) -> Transcript:
    """A conversation as its answers show it (the spec track's view): unchanged."""
    return conv


PROGRAMS: Final = "programs"
VIEWS: Final[dict[str, Callable[[Transcript, Scenario], Transcript]]] = {
    "answers": as_answers, PROGRAMS: with_program_diffs}
"""The transcript views, by name (a track's ``view``: ``butterfly.engine.tracks``): what
``show`` and the report add to a conversation's turns."""


def safe(data: Any) -> Any:
    """``data`` with every string in it :func:`printable` (dict keys included)."""
    if isinstance(data, str):
        return printable(data)
    if isinstance(data, dict):
        return {safe(k): safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(safe(x) for x in data)
    return data
