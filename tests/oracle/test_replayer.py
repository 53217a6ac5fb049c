"""oracle.replay.Replayer, the generators' incremental replay: a turn a guard refuses leaves the
state exactly as it was, so what it accepts and the specs it gives are those of ``replay`` on
the whole partial scenario (the quadratic way the generators worked before)."""

from __future__ import annotations

import random

from oracle import KEYS, SETTINGS, InvalidScenario, Scenario, Turn, canonical_initial, replay
from oracle.records import DropTurn, RedoTurn, SetTurn, UndoEarliestTurn, UndoLastTurn, UndoRefTurn
from oracle.replay import Replayer

TEXTS = {"undo_last": "Undo that last change.", "redo": "Redo the change I just undid.",
         "undo_earliest": "Of the changes still in effect, revert the one I made first."}


def _draw(rng: random.Random) -> Turn:
    i = rng.randrange(len(KEYS))
    key, s = KEYS[i], SETTINGS[i]
    kind = rng.choice(("set", "set", "set", "drop", "undo_ref", "undo_ref", "undo_last",
                       "undo_earliest", "redo", "redo"))
    if kind == "set":
        return SetTurn(op="set", setting=key, value=rng.choice(s.domain), text="Switch.")
    if kind == "drop":
        return DropTurn(op="drop", setting=key, text=f"Remove the requirement on {key}.")
    if kind == "undo_ref":
        return UndoRefTurn(op="undo_ref", setting=key, text="Undo my change still in effect.")
    record = {"undo_last": UndoLastTurn, "redo": RedoTurn, "undo_earliest": UndoEarliestTurn}
    return record[kind](op=kind, text=TEXTS[kind])  # type: ignore[call-arg]


def _whole(initial: dict[str, str], turns: list[Turn]) -> list[dict[str, str]] | None:
    draft = Scenario.model_construct(id="d", category="long_chain", source="generated", seed=0,
                                     initial=initial, turns=tuple(turns))
    try:
        return replay(draft)
    except InvalidScenario:
        return None


def test_the_replayer_accepts_and_answers_as_the_whole_replay() -> None:
    rng = random.Random(24)
    for _ in range(12):
        initial = canonical_initial()
        replayer, kept = Replayer(initial), []
        for _ in range(150):
            turn = _draw(rng)
            whole = _whole(initial, [*kept, turn])
            spec = replayer.push(turn)
            assert (spec is None) == (whole is None), (kept, turn)
            if spec is None:
                continue
            assert spec == whole[-1]
            if rng.random() < 0.2:  # taken back: as if never tried
                replayer.pop()
                continue
            kept.append(turn)
        assert replayer.specs == replay(Scenario.model_construct(
            id="d", category="long_chain", source="generated", seed=0, initial=initial,
            turns=tuple(kept)))
