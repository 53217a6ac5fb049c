"""Self-consistency: n sampled answers to one turn, voted setting by setting.

The vote (docs/strategies.md): every sample votes on each of the 20 settings; a sample that
abstained (no parsable spec) votes "abstain" on every setting. Per setting the value with the
most votes wins (a plurality, as in Wang et al.'s self-consistency); the turn's answer is the
spec of the winners. The turn is an abstention when, for any setting,

- two or more values share the top count (``vote_tie``), or
- "abstain" has the top count (``vote_abstained``).

One sample (every strategy but self-consistency) is its own answer, with its own abstention
reason. The vote is derived from the sample records on disk, never stored apart, so scoring,
re-parsing and resuming all recompute the same answer.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from oracle import KEYS, Spec

_ABSTAIN = "\x00abstain"


@dataclass(frozen=True)
class Vote:
    spec: Spec | None
    abstention: str | None
    detail: str = ""


def vote(specs: Sequence[Spec | None]) -> Vote:
    """The setting-wise plurality of ``specs`` (None = an abstaining sample)."""
    if not specs:
        raise ValueError("a vote needs at least one sample")
    n = len(specs)
    out: Spec = {}
    for key in KEYS:
        counts = Counter(_ABSTAIN if s is None else s[key] for s in specs).most_common()
        top = counts[0][1]
        leaders = sorted(v for v, c in counts if c == top)
        if len(leaders) > 1:
            shown = ", ".join("abstain" if v == _ABSTAIN else repr(v) for v in leaders)
            return Vote(None, "vote_tie", f"{key}: {shown} have {top} of {n} votes each")
        if leaders[0] == _ABSTAIN:
            return Vote(None, "vote_abstained", f"{top} of {n} samples abstained")
        out[key] = leaders[0]
    return Vote(out, None)


def history_text(voted: Vote, first_raw: str) -> str:
    """What the model sees as its own answer in the next turn's history: the voted spec as
    JSON, or, when the vote abstained, the raw answer of sample 0 (what it would have said with
    one sample)."""
    if voted.spec is None:
        return first_raw
    return json.dumps(voted.spec)
