"""The code track's own figures of a run (contract section 7): settings broken per turn, and the
sandbox its programs ran in. The spec track's metrics read the observed specs unchanged
(``runs/code_turns.py``, ``code/judge.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from butterfly.code.judge import broken, figures
from butterfly.core.results import CodeScore
from butterfly.core.turns import ConversationKey, Turn, TurnKey
from butterfly.runs.observe import Observer
from butterfly.runs.reader import Run


def code_score(run: Run, complete: Iterable[ConversationKey],
               done: Mapping[TurnKey, Turn]) -> CodeScore:
    """Broken settings over the observed turns of the ``complete`` conversations."""
    n_turns = {s.id: len(s.turns) for s in run.suite}
    counts = []
    for key in complete:
        for t in range(1, n_turns[key.scenario] + 1):
            turn = done[TurnKey(key.scenario, t, key.layout, key.repeat)]
            if turn.spec is not None:
                counts.append(broken(turn.spec))
    return figures(counts, (o.sandbox for o in Observer(run.path).known.values()))
