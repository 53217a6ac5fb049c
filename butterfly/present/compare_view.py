"""The report's compare view: for runs of one suite, the scenarios that regressed and improved
from the first run of that suite to each later one, by ``butterfly compare`` (its method and
q), each linked to the two transcripts that show it: for a regression a passing repeat of A
and a failing repeat of B (for an improvement the other way round), and beside them every
repeat of both with its verdict."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from butterfly.errors import UserError
from butterfly.runs.reader import Run

if TYPE_CHECKING:  # compare imports scipy: only a report that compares runs loads it
    from butterfly.analysis.compare import RunAnswers


class Link(TypedDict):
    """A transcript of the page: run index, scenario, layout, repeat, its verdict (P final
    match, F not) and its anchor."""

    r: int
    id: str
    l: str  # noqa: E741 (the page's conversation key)
    k: int
    v: str
    href: str


class Finding(TypedDict):
    """A scenario that regressed (or improved): the transcripts that show it (``a``, ``b``)
    and every compared repeat of each run (``a_all``, ``b_all``)."""

    id: str
    a: Link
    b: Link
    a_all: list[Link]
    b_all: list[Link]


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
    note: str | None
    """Why the method can flag no scenario with these pairs, and what can (``compare``'s note)."""


def _links(run: int, answers: RunAnswers, sid: str) -> list[Link]:
    """Every complete repeat of ``sid`` in a run, with its verdict."""
    lay = answers.layout
    return [{"r": run, "id": sid, "l": lay, "k": k, "v": "P" if ok else "F",
             "href": f"#t/{run}/{sid}/{lay}/{k}"}
            for k, ok in zip(answers.repeats[sid], answers.passes[sid], strict=True)]


def _showing(links: list[Link], verdict: str) -> Link:
    """The first repeat with ``verdict`` (a scenario found by the comparison has one)."""
    return next((x for x in links if x["v"] == verdict), links[0])


def _findings(ids: Sequence[str], i: int, j: int, a: RunAnswers, b: RunAnswers,
              regressed: bool) -> list[Finding]:
    out: list[Finding] = []
    for sid in ids:
        la, lb = _links(i, a, sid), _links(j, b, sid)
        out.append({"id": sid, "a": _showing(la, "P" if regressed else "F"),
                    "b": _showing(lb, "F" if regressed else "P"), "a_all": la, "b_all": lb})
    return out


def compare_view(runs: Sequence[Path | Run], suites: Sequence[str], labels: Sequence[str],
                 method: str = "bh", q: float = 0.1) -> list[Comparison]:
    """One entry per pair (A = the first run of a suite, B = each later run of it): the
    method, q, the regressed and improved scenarios with links, or why the pair has none.
    ``runs``: directories, or the runs already loaded (not read again)."""
    if len(set(suites)) == len(suites):  # no two runs of one suite: no pair
        return []
    from butterfly.analysis.compare import compare, load_answers  # scipy: only for a pair
    from butterfly.present.text import cannot_flag_note

    out: list[Comparison] = []
    first: dict[str, int] = {}
    for j, sha in enumerate(suites):
        if sha not in first:
            first[sha] = j
            continue
        i = first[sha]
        entry: Comparison = {"a": labels[i], "b": labels[j], "method": method, "q": q,
                             "regressed": [], "improved": [], "error": None, "n_scenarios": 0,
                             "pairs": 0, "difference": 0.0, "note": None}
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
        entry["note"] = cannot_flag_note(res, "--compare-method")
        entry["regressed"] = _findings(res.regressed, i, j, a, b, regressed=True)
        entry["improved"] = _findings(res.improved, i, j, a, b, regressed=False)
        out.append(entry)
    return out
