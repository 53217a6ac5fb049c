"""A code-track turn judged against the oracle (contract section 7), shared by ``butterfly
score`` (``runs/code_turns.py``) and the Kaggle notebook (``kaggle/code_track.py``), so both give
the same figures for the same answers.

A turn's spec, as the spec track's metrics read it, is the oracle's spec on that turn with each
observed code setting's value put in: a setting the turn's spec makes unobservable keeps the
oracle's value (it is not judged on that turn), ``broken`` stays ``broken`` (a value no spec
holds: a mismatch), and the six settings outside the code catalogue are the oracle's (inert in a
code scenario). The code track's own figures (broken settings per turn) are counted here too.
Pure: the observation itself (``code.spec_of_program``, in the sandbox) is the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from butterfly.core.code_catalogue import BROKEN, KEYS, UNOBSERVED
from butterfly.core.scores import CodeScore


def judged(observed: Mapping[str, str], oracle: Mapping[str, str]) -> dict[str, str]:
    """The observed code spec as the metrics read it (see the module's docstring)."""
    out = dict(oracle)
    for k in KEYS:
        if observed[k] != UNOBSERVED:
            out[k] = observed[k]
    return out


def broken(spec: Mapping[str, str] | None) -> int:
    """How many settings of a judged spec are broken (0 for an abstention)."""
    return 0 if spec is None else sum(1 for k in KEYS if spec.get(k) == BROKEN)


def figures(counts: Sequence[int], sandboxes: Iterable[str]) -> CodeScore:
    """The code track's own figures from the broken settings of each observed turn (``counts``)
    and the sandboxes the programs ran in: ``butterfly score``'s and the notebook's."""
    return CodeScore(turns_observed=len(counts),
                     broken_per_turn=round(sum(counts) / len(counts), 6) if counts else None,
                     turns_broken=sum(1 for c in counts if c),
                     sandbox=tuple(sorted(set(sandboxes))))


def figures_line(code: CodeScore) -> str:
    """The code track's line under the score table (``butterfly score``, the notebook)."""
    per = "-" if code.broken_per_turn is None else f"{code.broken_per_turn:.3f}"
    waiting = (f"; {code.unobserved_turns} turns ({code.unobserved_conversations} complete "
               "conversations) not yet observed, not scored" if code.unobserved_turns else "")
    return (f"code track: {code.turns_observed} turns observed, {per} settings broken per turn "
            f"({code.turns_broken} turns with a broken setting); sandbox: "
            f"{', '.join(code.sandbox) or '-'}{waiting}")
