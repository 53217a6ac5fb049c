"""The report's size budget (issue 25, item 4; docs/report.md, "Size"): 10 runs of butterfly-40
in one self-contained page under 2 MB."""

from __future__ import annotations

from pathlib import Path

import pytest

from butterfly import api
from butterfly.analysis.report import report_data
from butterfly.present.report import render_html

AGENTS = ("oracle", "noop", "last-edit", "lifo", "no-coupling", "noisy:p=0.1", "noisy:p=0.3",
          "noisy:p=0.5", "drift:p=0.1", "drift:p=0.3")
BUDGET = 2_000_000
"""Bytes (2 MB, as ``butterfly report`` counts them when it says what it wrote)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("ten")
    return [api.run(model=f"script/{a}", out=tmp / a.replace(":", "-"), cache=None).path
            for a in AGENTS]


def test_ten_runs_of_butterfly_40_fit_in_2_mb(runs: list[Path]) -> None:
    model = report_data(runs)  # what write_report writes: render_html(report_data(runs))
    assert len(model.runs) == 10 and len(model.conversations) == 10 * 40
    assert sum(len(c.turns) for c in model.conversations) == 10 * 176  # every turn carried
    assert len(render_html(model).encode("utf-8")) < BUDGET
