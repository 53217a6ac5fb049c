"""The report's compare section: for runs of one suite, the scenarios that regressed and improved
from the first run of that suite to each later one, by ``butterfly compare`` (its method and
q), each linked to the two transcripts that show it: for a regression a passing repeat of A
and a failing repeat of B (for an improvement the other way round), and beside them every
repeat of both with its verdict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from butterfly.analysis.report.data import Comparison, Finding, Link
from butterfly.analysis.report.figures import Answers
from butterfly.errors import UserError

if TYPE_CHECKING:  # compare imports scipy: only a report that compares runs loads it
    from butterfly.analysis.compare import RunAnswers


def _links(run: int, answers: RunAnswers, sid: str) -> tuple[Link, ...]:
    """Every complete repeat of ``sid`` in a run, with its verdict."""
    return tuple(Link(run=run, id=sid, layout=answers.layout, repeat=k, passed=ok)
                 for k, ok in zip(answers.repeats[sid], answers.passes[sid], strict=True))


def _showing(links: tuple[Link, ...], passed: bool) -> Link:
    """The first repeat with that verdict (a scenario found by the comparison has one)."""
    return next((x for x in links if x.passed == passed), links[0])


def _findings(ids: Sequence[str], i: int, j: int, a: RunAnswers, b: RunAnswers,
              regressed: bool) -> tuple[Finding, ...]:
    out = []
    for sid in ids:
        la, lb = _links(i, a, sid), _links(j, b, sid)
        out.append(Finding(id=sid, a=_showing(la, regressed), b=_showing(lb, not regressed),
                           a_all=la, b_all=lb))
    return tuple(out)


def comparisons(suites: Sequence[str], labels: Sequence[str], answers: Answers,
                method: str = "bh", q: float = 0.1) -> tuple[Comparison, ...]:
    """One entry per pair (A = the first run of a suite, B = each later run of it), with the
    regressed and improved scenarios, or why the pair has none. ``answers(i)``: run i's
    final-match verdicts."""
    if len(set(suites)) == len(suites):  # no two runs of one suite: no pair
        return ()
    from butterfly.analysis.compare import compare  # scipy: only for a pair

    out = []
    first: dict[str, int] = {}
    for j, sha in enumerate(suites):
        if sha not in first:
            first[sha] = j
            continue
        i = first[sha]
        try:
            a, b = answers(i), answers(j)
            res = compare(a, b, method, q)
        except UserError as e:
            out.append(Comparison(a=labels[i], b=labels[j], method=method, q=q, result=None,
                                  error=str(e)))
            continue
        out.append(Comparison(a=labels[i], b=labels[j], method=method, q=q, result=res,
                              error=None,
                              regressed=_findings(res.regressed, i, j, a, b, regressed=True),
                              improved=_findings(res.improved, i, j, a, b, regressed=False)))
    return tuple(out)
