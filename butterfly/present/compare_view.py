"""The report's compare view: for runs of one suite, the scenarios that regressed and improved
from the first run of that suite to each later one, by ``butterfly compare`` (its method and
q), each linked to the two transcripts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from butterfly.errors import UserError
from butterfly.runs.reader import Run


class Link(TypedDict):
    """A transcript of the page: run index, scenario, layout, repeat, and its anchor."""

    r: int
    id: str
    l: str  # noqa: E741 (the page's conversation key)
    k: int
    href: str


class Finding(TypedDict):
    id: str
    a: Link
    b: Link


class Comparison(TypedDict):
    a: str
    b: str
    method: str
    q: float
    regressed: list[Finding]
    improved: list[Finding]
    error: str | None
    n_scenarios: int
    pairs: int
    difference: float


def _link(run: int, sid: str, layout: str) -> Link:
    return {"r": run, "id": sid, "l": layout, "k": 0, "href": f"#t/{run}/{sid}/{layout}/0"}


def _findings(ids: Sequence[str], i: int, j: int, la: str, lb: str) -> list[Finding]:
    return [{"id": sid, "a": _link(i, sid, la), "b": _link(j, sid, lb)} for sid in ids]


def compare_view(runs: Sequence[Path | Run], suites: Sequence[str], labels: Sequence[str],
                 method: str = "bh", q: float = 0.1) -> list[Comparison]:
    """One entry per pair (A = the first run of a suite, B = each later run of it): the
    method, q, the regressed and improved scenarios with links, or why the pair has none.
    ``runs``: directories, or the runs already loaded (not read again)."""
    if len(set(suites)) == len(suites):  # no two runs of one suite: no pair
        return []
    from butterfly.analysis.compare import compare, load_answers  # scipy: only for a pair

    out: list[Comparison] = []
    first: dict[str, int] = {}
    for j, sha in enumerate(suites):
        if sha not in first:
            first[sha] = j
            continue
        i = first[sha]
        entry: Comparison = {"a": labels[i], "b": labels[j], "method": method, "q": q,
                             "regressed": [], "improved": [], "error": None, "n_scenarios": 0,
                             "pairs": 0, "difference": 0.0}
        try:
            a, b = load_answers(runs[i]), load_answers(runs[j])
            res = compare(a, b, method, q)
        except UserError as e:
            entry["error"] = str(e)
            out.append(entry)
            continue
        entry["n_scenarios"] = res.n_scenarios
        entry["pairs"] = res.pairs_available
        entry["difference"] = res.final_match.diff
        entry["regressed"] = _findings(res.regressed, i, j, a.layout, b.layout)
        entry["improved"] = _findings(res.improved, i, j, a.layout, b.layout)
        out.append(entry)
    return out
