"""Per-turn divergence transcripts: what the user said, what the model answered, and how its
spec differs from the oracle's, built from run records (never live objects).

Shared by ``butterfly show`` (terminal) and ``butterfly report`` (HTML), so both colour the same
things:

- **wrong**: a setting where the model's spec differs from the oracle's at that turn;
- **collateral**: a setting the model changed from its previous answer while the oracle did not
  (the thing ButterflyBench is about: changing what was not asked);
- **missed**: a setting the oracle changed and the model did not;
- the **first divergent turn** (the first turn without a full match).

A collateral move is usually also wrong; a wrong setting that is not collateral is an edit the
model failed to make (or an old mistake carried forward).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from butterfly.core.asking import asked_turns
from butterfly.core.metrics import collateral_keys
from butterfly.core.turns import Turn, TurnKey
from oracle import KEYS, Scenario, Spec, replay


class TranscriptTurn(TypedDict):
    """One turn of a transcript (``status``: match, wrong, abstained, missing: no answer yet,
    or not_asked: a run asked at chosen turns did not ask it, so it has no answer and is not
    scored)."""

    turn: int
    op: str
    user: str
    oracle: Spec
    oracle_changed: list[str]
    status: str
    spec: Spec | None
    raw: str | None
    samples: list[str]
    abstention: str | None
    detail: str
    wrong: list[str]
    collateral: list[str]
    missed: list[str]
    finish_reason: NotRequired[str | None]
    reasoning: NotRequired[str | None]
    """The reasoning the provider returned beside the answer (``butterfly show``)."""
    reasoning_tokens: NotRequired[int | None]
    program_diff: NotRequired[list[str]]
    """The code track: the program's unified diff against the one before it (``show``)."""


class Transcript(TypedDict):
    """One conversation's transcript: its verdict (P, F, A, or - when incomplete) and turns."""

    id: str
    category: str
    initial: Spec
    complete: bool
    final_match: bool
    verdict: str
    first_divergent: int | None
    turns: list[TranscriptTurn]
    layout: NotRequired[str]
    repeat: NotRequired[int]
    asked_turns_only: NotRequired[bool]
    """True when the run asked at chosen turns: ``first_divergent`` and collateral are over the
    asked turns (a turn's previous answer is the one at the asked turn before it)."""


def conversation(scenario: Scenario, answered: Sequence[Turn | None],
                 oracle: Sequence[Spec] | None = None,
                 asked: Sequence[int] | None = None) -> Transcript:
    """The transcript of one conversation as JSON-able data.

    ``answered[t-1]`` is turn t's answer, or None when the turn has no successful answer yet
    (a provider error or an unfinished run): such turns are listed with ``status`` "missing".
    ``asked``: the turns a run asked at chosen turns asked (None: every turn); the others are
    listed with ``status`` "not_asked", and an answer is compared with the asked one before it."""
    o = list(oracle) if oracle is not None else replay(scenario)
    prev: Spec | None = o[0]
    prev_t = 0
    first: int | None = None
    turns: list[TranscriptTurn] = []
    chosen = None if asked is None else frozenset(asked)
    for t, turn in enumerate(scenario.turns, 1):
        ans = answered[t - 1] if t - 1 < len(answered) else None
        skipped = chosen is not None and t not in chosen
        row = TranscriptTurn(
            turn=t, op=turn.op, user=turn.text, oracle=o[t],
            oracle_changed=[k for k in KEYS if o[t][k] != o[t - 1][k]],
            status="not_asked" if skipped else "missing", spec=None, raw=None, samples=[],
            abstention=None, detail="", wrong=[], collateral=[], missed=[])
        turns.append(row)
        if ans is None or skipped:
            if not skipped:
                prev, prev_t = None, t
            continue
        spec = ans.spec
        if spec is not None:
            row["wrong"] = [k for k in KEYS if spec[k] != o[t][k]]
            if prev is not None:
                row["collateral"] = collateral_keys(spec, prev, o[t], o[prev_t])
                row["missed"] = [k for k in KEYS if o[t][k] != o[prev_t][k] and spec[k] == prev[k]]
        match = spec is not None and not row["wrong"]
        if not match and first is None:
            first = t
        row.update({"status": "match" if match else ("abstained" if spec is None else "wrong"),
                    "spec": spec, "raw": ans.raw, "abstention": ans.abstention,
                    "detail": ans.detail, "finish_reason": ans.samples[0].finish_reason,
                    "samples": [s.raw or "" for s in ans.samples] if len(ans.samples) > 1 else []})
        prev, prev_t = spec, t
    complete = all(r["status"] != "missing" for r in turns)
    final = turns[-1]["status"] if turns else "missing"
    out = Transcript(
        id=scenario.id,
        category=scenario.category,
        initial=o[0],
        complete=complete,
        final_match=complete and final == "match",
        verdict={"match": "P", "abstained": "A"}.get(final, "F") if complete else "-",
        first_divergent=first,
        turns=turns,
    )
    if asked is not None:
        out["asked_turns_only"] = True
    return out


def conversation_of(scenario: Scenario, answered: Mapping[TurnKey, Turn],
                    layout: str, repeat: int, ask_at: Sequence[int] | None = None) -> Transcript:
    """The transcript of ``scenario`` under ``layout`` and ``repeat`` from a run's turns
    (``ask_at``: the run's ask points, when it asked at chosen turns)."""
    asked = None if ask_at is None else asked_turns(len(scenario.turns), ask_at)
    row = conversation(scenario, [answered.get(TurnKey(scenario.id, t, layout, repeat))
                                  for t in range(1, len(scenario.turns) + 1)], asked=asked)
    row["layout"] = layout
    row["repeat"] = repeat
    return row
