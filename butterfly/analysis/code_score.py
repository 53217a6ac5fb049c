"""The code track's own figures of a run (contract section 7): settings broken per turn, the
sandbox its programs ran in, and the turns (and conversations) whose programs are not yet
observed, counted apart. The spec track's metrics read the observed specs unchanged
(``runs/code_turns.py``, ``code/judge.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from butterfly.code.judge import broken, figures
from butterfly.core.scores import CodeScore
from butterfly.core.turns import ConversationKey, Turn, TurnKey
from butterfly.runs.reader import Run


def code_score(run: Run, complete: Iterable[ConversationKey], done: Mapping[TurnKey, Turn],
               unobserved: int = 0) -> CodeScore:
    """Broken settings over the observed turns of the ``complete`` conversations, and the
    ``unobserved`` conversations (whose programs await ``butterfly observe``) apart."""
    n_turns = {s.id: len(s.turns) for s in run.suite}
    counts = []
    for key in complete:
        for t in range(1, n_turns[key.scenario] + 1):
            turn = done[TurnKey(key.scenario, t, key.layout, key.repeat)]
            if turn.spec is not None:
                counts.append(broken(turn.spec))
    return figures(counts, run.code().sandboxes).model_copy(update={
        "unobserved_turns": len(run.unobserved), "unobserved_conversations": unobserved})
