"""The results of ``compare``, ``sequential`` and ``calibrate`` as typed, frozen records.

``--json`` prints their dump (field order is key order); their JSON Schemas are published in
docs/schemas/. A per-scenario row of compare and sequential stays an open mapping: its
statistic's key is ``p_value_*`` or ``e_value_*`` by method (docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, RootModel, with_config
from typing_extensions import TypedDict

from butterfly.core.pooling import Result


class Bootstrap(Result):
    reps: int
    seed: int


class PairedDifference(Result):
    """B - A in final match over the scenarios both runs answered, with its intervals."""

    a: float
    b: float
    diff: float
    ci: list[float] | None = Field(description="Clustered-SE 95% interval of diff.")
    ci_bootstrap: list[float] | None
    bootstrap: Bootstrap
    n_scenarios: int
    sign_p: float | None = Field(
        None, description="Two-sided exact sign test over the scenarios' differences: with few "
        "scenarios, or differences all equal, the clustered interval has no variance and can "
        "exclude zero on one scenario; this p says how surprising the split is. Null in results "
        "written before it was added.")


class CostRatio(Result):
    """B's cost over A's, paired by scenario (contract v4, section 9; docs/metrics.md,
    "Efficiency"): per scenario both runs answered, each run's mean cost per complete
    conversation; the ratio of their sums (B over A) with a seeded bootstrap 95% interval that
    resamples scenarios (``core.stats.ratio_bootstrap``). Null figures, with a note, when either
    run has an unpriced call there or A spent nothing."""

    ratio: float | None = Field(description="sum over scenarios of B's mean cost per complete "
                                "conversation / the same of A's; null with a note when none.")
    ci: list[float] | None = Field(description="Bootstrap 95% interval (percentile, scenarios "
                                   "resampled); null with the ratio.")
    a_usd: float | None = Field(description="A's sum over the paired scenarios of its mean cost "
                                "per complete conversation.")
    b_usd: float | None = Field(description="The same of B's.")
    n_scenarios: int = Field(description="The scenarios paired (both runs have a complete "
                             "conversation of them).")
    bootstrap: Bootstrap
    note: str | None = Field(None, description="Why there is no ratio.")


class CompareResult(Result):
    """``butterfly compare --json``: regressed and improved scenarios from run A to run B."""

    method: str
    q: float
    run_a: str
    run_b: str
    model_a: str
    model_b: str
    layout: str
    n_scenarios: int
    pairs_available: int
    k: int | None
    cap: int | None
    stop_fine: bool | None
    regressed: list[str]
    improved: list[str]
    answers_used: int
    answers_available: int
    final_match: PairedDifference
    scenarios: list[dict[str, Any]]
    ask_at_a: tuple[int, ...] | None = Field(
        None, description="Run A's ask points (--ask-at); null: every turn asked. Final match "
        "is the answer at each chain's last turn, which every run asks.")
    ask_at_b: tuple[int, ...] | None = Field(None, description="Run B's ask points.")
    can_flag: bool = Field(
        True, description="Whether the method, with the pairs it reads (k or cap of "
        "pairs_available), can flag any scenario at q: false when even A passing and B failing "
        "every pair would not reach q, so that regressed and improved are empty whatever the "
        "answers say.")
    pairs_needed: int | None = Field(
        None, description="The fewest pairs per scenario with which the method, reading every "
        "pair, can flag a scenario at q (null: more than 1000).")
    methods_that_can: list[str] = Field(
        default_factory=list, description="The methods that can flag a scenario at q with "
        "pairs_available pairs per scenario (each reading every pair).")
    cost_ratio: CostRatio | None = Field(
        None, description="B's cost over A's, paired by scenario, with its interval; null in "
        "results written before it was added.")


class SequentialResult(Result):
    """``butterfly sequential --json``: the regressions found and the answers spent."""

    method: str
    q: float
    cap: int
    stop_fine: bool | None
    model_a: str
    model_b: str
    run_a: str
    run_b: str
    n_scenarios: int
    regressed: list[str]
    answers_used: int
    answers_cap: int
    rounds: int
    scenarios: list[dict[str, Any]]


@with_config(ConfigDict(extra="forbid"))
class Rates(TypedDict):
    """One method on one configuration: means per suite over the study's replications."""

    fdr: float | None
    power: float | None
    false_alarms: float | None
    answers: float | None
    reps: int
    m: int


class MethodCalibration(Result):
    model_config = ConfigDict(populate_by_name=True)
    label: str
    null: Rates
    drop_03: Rates = Field(alias="0.3")
    drop_06: Rates = Field(alias="0.6")
    study: dict[str, Any] = Field(description="How the study was made (real or simulated).")


class Calibration(RootModel[dict[str, MethodCalibration]]):
    """``butterfly calibrate --json``: one entry per regression method."""

    model_config = ConfigDict(frozen=True)

    @classmethod
    def of(cls, rows: Mapping[str, Mapping[str, object]],
           meta: Mapping[str, object]) -> Calibration:
        """From a study (``real_study`` / ``simulated_study``): its meta in every row."""
        return cls.model_validate({name: {**row, "study": meta} for name, row in rows.items()})
