"""The report's data: every figure the page of ``butterfly report`` shows, as frozen records
built before any markup (docs/report.md). :func:`butterfly.analysis.report.report_data` builds
one :class:`ReportData`; ``present/report.py`` (the page), its template and
``present/charts.py`` (the SVG) word and draw it and compute nothing.

The scores are kept as ``score_run`` made them (:class:`RunScore`, :class:`BaselineScore`),
typed; what the page shows beside them (the headline's rows and what its sentences rest on,
each chart's marks, the compare section's findings, the transcripts as the page carries them)
is computed here. Words are not: a label is data, a sentence is the page's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from butterfly.analysis.flips import FlipGrid
from butterfly.analysis.results import CompareResult
from butterfly.core.scores import BaselineScore, HorizonResult, RunScore
from butterfly.runs.records import BudgetSweep, RunParams

FDT_BINS: Final = (*[str(t) for t in range(1, 11)], "none")
"""The first-divergent-turn chart's bins: turns 1 to 10, then "none" (matched throughout)."""


@dataclass(frozen=True, slots=True)
class RunEntry:
    """A run as the page shows it: its label (the model, the options that are not the
    defaults, a shard, its ask points, its prompt version when the runs differ in it, its
    directory when two labels clash), its directory and status, its parameters, its suite's
    file and sha256, its prompt version, and its score (``score --json``'s)."""

    label: str
    path: str
    status: str
    params: RunParams
    suite_path: str
    suite_sha256: str
    prompt: str
    score: RunScore
    budget_sweep: BudgetSweep | None = None
    """The budget sweep the run is one budget of (``butterfly sweep``), if any."""


@dataclass(frozen=True, slots=True)
class BaselineEntry:
    """A trivial agent (``noop``, ``last-edit``, ``window:k=K``), scored on the first run's
    complete conversations, and its effective final match (final match x coverage)."""

    name: str
    score: BaselineScore
    effective_final_match: float | None


@dataclass(frozen=True, slots=True)
class HeadRow:
    """A run as the headline shows it: final match and its 95% interval (shares in [0, 1];
    None where the run has no figure), effective final match, cost, conversations."""

    label: str
    final_match: float | None
    lo: float | None
    hi: float | None
    effective: float | None
    cost_usd: float | None
    n: int


@dataclass(frozen=True, slots=True)
class Headline:
    """The headline's rows, the baselines' final match (by name), and what its sentences rest
    on: the pairs ``(i, j)`` where run i's final match is above run j's with the statistics'
    support, and which runs played the baselines' scenarios."""

    rows: tuple[HeadRow, ...]
    baselines: Mapping[str, float]
    above: frozenset[tuple[int, int]]
    on_baseline_scenarios: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class HeatCell:
    """One category of one run: final match (None: no complete conversation, or no scenario
    of the category), its count (final matches of n conversations)."""

    final_match: float | None
    matches: int
    n: int


UndoState = Literal["point", "not-played", "not-scored"]
"""point: the op's undo recovery, k of n; not-played: the run has no turn of the op;
not-scored: it has, but none came after a matching turn (neither is a 0)."""


@dataclass(frozen=True, slots=True)
class UndoCell:
    """A run's undo recovery for one op: of the op's turns whose previous turn matched
    (``n``), the share that still matched (``share``, ``k`` of them)."""

    op: str
    state: UndoState
    share: float | None
    k: int
    n: int


@dataclass(frozen=True, slots=True)
class UndoPanels:
    """Undo recovery by op: the undo ops some run played, and per run one cell per op."""

    ops: tuple[str, ...]
    rows: tuple[tuple[UndoCell, ...], ...]


@dataclass(frozen=True, slots=True)
class RadiusRow:
    """A run's mean change radius with its 95% interval (None: no complete conversation) and
    its count of conversations."""

    value: float | None
    lo: float | None
    hi: float | None
    n: int


@dataclass(frozen=True, slots=True)
class Radius:
    """The change-radius dot plot: one row per run, the baselines' change radius by name."""

    rows: tuple[RadiusRow, ...]
    baselines: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class FirstDivergent:
    """Per run, the share (%) of its conversations whose first divergent turn is each of
    :data:`FDT_BINS` (all 0 for a run with none); ``asked``: some run asked at chosen turns
    (its turns are the asked ones)."""

    bins: tuple[str, ...]
    shares: tuple[tuple[float, ...], ...]
    asked: bool


@dataclass(frozen=True, slots=True)
class HorizonSeries:
    """A run over two chain lengths or more, as the horizon chart draws it: final match (%)
    by tested length, the fitted curve over the tested lengths (empty without a fit), the
    Kaplan-Meier steps (% matched at every turn so far, from 100% at turn 0), and the typed
    horizon (its crossing, or where it is censored)."""

    run: int
    """The run's index among the page's runs."""
    label: str
    horizon: HorizonResult
    points: tuple[tuple[int, float], ...]
    curve: tuple[tuple[float, float], ...]
    survival: tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class ModePair:
    """One model on one suite asked in chat mode (it sees its own answers) and in restate mode
    (each turn afresh, with the initial spec and every edit): memory against history."""

    chat: RunEntry
    restate: RunEntry


@dataclass(frozen=True, slots=True)
class Link:
    """A transcript of the page: run index, scenario, layout, repeat, whether it ended in a
    final match."""

    run: int
    id: str
    layout: str
    repeat: int
    passed: bool

    @property
    def href(self) -> str:
        """The page's anchor that opens this transcript."""
        return f"#t/{self.run}/{self.id}/{self.layout}/{self.repeat}"


@dataclass(frozen=True, slots=True)
class Finding:
    """A scenario that regressed (or improved): the transcripts that show it (``a``, ``b``)
    and every compared repeat of each run (``a_all``, ``b_all``)."""

    id: str
    a: Link
    b: Link
    a_all: tuple[Link, ...]
    b_all: tuple[Link, ...]


@dataclass(frozen=True, slots=True)
class Comparison:
    """The first run of a suite (A) against a later one (B), as ``butterfly compare`` finds
    them: its result, or why the pair could not be compared (``error``)."""

    a: str
    b: str
    method: str
    q: float
    result: CompareResult | None
    error: str | None
    regressed: tuple[Finding, ...] = ()
    improved: tuple[Finding, ...] = ()


PackedTurn = tuple[Any, ...]
"""A turn as the page's script reads it (``templates/report.js``): [status letter, raw answer,
{wrong key: model value}, collateral, missed, abstention, detail, samples, {moved key: model
value}], then [reasoning, reasoning tokens, its whole length] when the provider returned
reasoning (``analysis/report/pages.py``)."""


@dataclass(frozen=True, slots=True)
class PageScenario:
    """A scenario as the page shows it: its category, the initial spec and, per turn, the op,
    the user's text and the settings the oracle changed with their new values."""

    category: str
    initial: Mapping[str, str]
    turns: tuple[tuple[str, str, Mapping[str, str]], ...]

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "initial": self.initial,
                "turns": [list(t) for t in self.turns]}


@dataclass(frozen=True, slots=True)
class PageConversation:
    """A conversation on the page: run index, scenario, layout, repeat, verdict (P, F, A or
    -), first divergent turn, its turns packed; for a code-track run, per turn [the program's
    diff as one text ("" unchanged; None: no program), the broken settings]."""

    run: int
    id: str
    layout: str
    repeat: int
    verdict: str
    first_divergent: int | None
    turns: tuple[PackedTurn, ...]
    code: tuple[tuple[str | None, tuple[str, ...]], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The page's object (its keys are short: the page carries every conversation)."""
        out: dict[str, Any] = {"r": self.run, "id": self.id, "l": self.layout,
                               "k": self.repeat, "v": self.verdict, "fd": self.first_divergent,
                               "t": self.turns}
        if self.code is not None:
            out["c"] = self.code
        return out


XMetric = Literal["cost", "tokens"]
"""The frontier's x: cost or tokens per conversation."""
YMetric = Literal["final match", "horizon"]
"""The frontier's y."""


@dataclass(frozen=True, slots=True)
class FrontierPoint:
    """A run on the chart: its index and label, x (USD or tokens per conversation), y with its
    95% interval (a share, or turns for the horizon), whether no other run beats it, and its
    budget when it is one budget of a sweep (``SweepLine`` joins a sweep's runs)."""

    run: int
    label: str
    x: float
    y: float
    lo: float
    hi: float
    pareto: bool
    budget: str | None = None


@dataclass(frozen=True, slots=True)
class SweepLine:
    """A budget sweep's runs (indices into the page's runs), in budget order."""

    name: str
    key: str
    runs: tuple[int, ...]
    budgets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CostClaim:
    """What a sentence may say: run ``cheaper`` costs ``ratio`` times run ``dearer`` (paired
    over ``scenarios`` scenarios, 95% interval ``lo``-``hi``, below 1) and either matches as
    often (``better`` False: the headline does not separate them) or more often (``better``:
    the headline says it is above); ``fraction``: k when 1/k is inside the interval (k >= 2)."""

    cheaper: int
    dearer: int
    ratio: float
    lo: float
    hi: float
    scenarios: int
    better: bool
    fraction: int | None


@dataclass(frozen=True, slots=True)
class Frontier:
    """The chart's figures, what its sentences rest on, and the runs it cannot place."""

    x_metric: XMetric
    y_metric: YMetric
    points: tuple[FrontierPoint, ...]
    sweeps: tuple[SweepLine, ...]
    claims: tuple[CostClaim, ...]
    apart: tuple[tuple[str, str], ...]
    """(label, why) of each run the chart does not draw."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """The leaderboard's order (indices into the page's runs) and whether cost decided the
    order of some runs whose final-match intervals overlap."""

    order: tuple[int, ...]
    by_cost: bool


@dataclass(frozen=True, slots=True)
class ReportData:
    """Everything the page shows. ``runs`` in the order given, then ``baselines`` (scored on
    the first run's scenarios); the categories and ops some run played; the headline; each
    chart's figures (``heat``: one row per category, one cell per run); the chat/restate
    pairs; the flip grid of the runs posed under several layouts (None: none share
    scenarios); the compare section; the transcripts."""

    title: str
    butterfly_version: str
    runs: tuple[RunEntry, ...]
    baselines: tuple[BaselineEntry, ...]
    categories: tuple[str, ...]
    ops: tuple[str, ...]
    headline: Headline
    heat: tuple[tuple[HeatCell, ...], ...]
    undo: UndoPanels | None
    radius: Radius
    first_divergent: FirstDivergent
    horizon: tuple[HorizonSeries, ...]
    frontier: Frontier | None
    """The efficiency frontier (None: fewer than two runs placed, or no difference in cost)."""
    ranking: Ranking
    """The leaderboard's order."""
    modes: tuple[ModePair, ...]
    flips: FlipGrid | None
    compare: tuple[Comparison, ...]
    scenarios: Mapping[str, PageScenario]
    conversations: tuple[PageConversation, ...]
