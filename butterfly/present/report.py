"""``butterfly report RUN [RUN ...] --html FILE``: one self-contained HTML report.

Built from run records only (``load_run`` and ``score_run``), in two steps: ``build``
makes a JSON-able report model, ``render_html`` turns it into one file with its CSS, script,
charts (SVG: ``present/charts.py``) and data inline, so it opens from a file URL with no network.

Model answers are untrusted text. The page is rendered by Jinja2 with autoescape and strict
undefined variables; the transcripts travel as gzip-compressed JSON (base64) and the page's
script puts every string into the DOM with ``textContent``, never as HTML. Transcripts are
decompressed once and rendered lazily, one page of the list and one conversation at a time, so
a report of 5 runs x 2,000 scenarios stays usable (``bench/report.py`` measures it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, NotRequired, TypedDict

from butterfly import __version__
from butterfly.analysis.flips import FlipGrid, flip_grid, load_columns
from butterfly.analysis.scoring import score_run
from butterfly.analysis.transcripts import with_reasoning
from butterfly.core.agents import baseline_label
from butterfly.core.asking import ask_label, asked_line
from butterfly.core.horizon_text import horizon_words
from butterfly.core.metric_registry import aggregate_fields
from butterfly.core.transcript import TranscriptTurn, conversation_of
from butterfly.errors import UserError
from butterfly.files import write_text_atomic
from butterfly.present.board import board_columns
from butterfly.present.charts import charts
from butterfly.present.code_view import code_turns
from butterfly.present.compare_view import Comparison, compare_view
from butterfly.present.display import suite_name
from butterfly.present.headline import Headline, head_row, headline
from butterfly.present.heatmap import grid
from butterfly.present.packing import pack
from butterfly.present.radius_chart import radius_chart, radius_row
from butterfly.present.undo_chart import undo_chart, undo_row
from butterfly.runs.reader import Run, check_same_scenarios, load_run
from butterfly.runs.versions import version_name
from oracle import CATEGORIES, KEYS, OPS, UNDO_OPS, Scenario, replay

TEMPLATES: Final = Path(__file__).parent / "templates"
REPORT_SCHEMA_VERSION: Final = 1


def _label(manifest: Any, path: Path) -> str:
    p = manifest.params  # a shard's figures are its conversations only: its label says so
    extras = [text for on, text in (
        (p.strategy != "zero-shot", p.strategy + (f" x{p.samples}" if p.samples > 1 else "")),
        (p.protocol != "schema", p.protocol), (p.mode != "chat", p.mode),
        (p.shard is not None, f"shard {p.shard}"),
        (p.ask_at is not None, ask_label(p.ask_at) or "")) if on]
    return str(manifest.model) + (f" [{', '.join(extras)}]" if extras else "")


class ScenarioData(TypedDict):
    """A scenario as the page shows it: the initial spec and, per turn, [op, user text, the
    settings the oracle changed and their new values]."""

    category: str
    initial: dict[str, str]
    turns: list[list[Any]]


class ConversationData(TypedDict):
    """A conversation on the page: run index, scenario, layout, repeat, verdict, first
    divergent turn, and its turns compacted by :func:`_compact_turn`."""

    r: int
    id: str
    l: str  # noqa: E741
    k: int
    v: str
    fd: int | None
    t: list[list[Any]]
    c: NotRequired[list[list[Any]]]  # the code track: present/code_view.py


RunEntry = dict[str, Any]
"""A run's (or a baseline's) row on the page: open data for the template. Its metrics are the
score's (``score --json``), picked by :func:`_metrics`; besides them label, path, model,
status, params, suite, prompt (its version), horizon (and its words, as ``score`` prints
them), by_category, by_layout, by_op."""


class ReportModel(TypedDict):
    """Everything the page shows (the report's data, JSON-able). A run's entry is open: its
    metrics are the score's, picked by :func:`_metrics`."""

    schema_version: int
    butterfly_version: str
    title: str
    runs: list[RunEntry]
    baselines: list[RunEntry]
    baselines_on: str
    categories: list[str]
    flips: FlipGrid | None
    compare: list[Comparison]
    headline: Headline
    scenarios: dict[str, ScenarioData]
    conversations: list[ConversationData]
    modes: list[ModePair]


class ModePair(TypedDict):
    """One model on one suite asked in chat mode (it sees its own answers) and in restate mode
    (each turn afresh, with the initial spec and every edit): memory against history."""

    model: str
    suite: str
    chat: str
    restate: str
    chat_final_match: float | None
    restate_final_match: float | None
    chat_turn_match: float | None
    restate_turn_match: float | None


def mode_pairs(entries: Sequence[RunEntry]) -> list[ModePair]:
    """Runs that differ only in ``--mode``, paired (the first of each mode per model, suite and
    prompt version)."""
    def key(e: RunEntry) -> tuple[Any, ...]:
        p = e["params"]
        return (e["model"], e["suite_sha256"], e["prompt"], tuple(p["layouts"]), p["strategy"],
                p["protocol"], p["temperature"], p["seed"])

    by: dict[tuple[Any, ...], dict[str, RunEntry]] = {}
    for e in entries:
        by.setdefault(key(e), {}).setdefault(e["params"]["mode"], e)
    return [ModePair(model=m["chat"]["model"], suite=m["chat"]["suite"],
                     chat=m["chat"]["label"], restate=m["restate"]["label"],
                     chat_final_match=m["chat"]["final_match"],
                     restate_final_match=m["restate"]["final_match"],
                     chat_turn_match=m["chat"]["turn_match"],
                     restate_turn_match=m["restate"]["turn_match"])
            for m in by.values() if "chat" in m and "restate" in m]


def _metrics(agg: RunEntry) -> RunEntry:
    """An aggregate's figures (``score --json``'s): every registered metric's fields."""
    return {name: agg[name] for name, _, _ in aggregate_fields()}


REASONING_SHOWN: Final = 4000
"""The most of a turn's reasoning the report carries, in characters (``butterfly show --full``
prints all of it): reasoning can run to the response-size cap, and the page carries every
transcript."""
STATUS_LETTER: Final = {"match": "m", "wrong": "w", "abstained": "a", "missing": "x",
                        "not_asked": "n"}
"""A turn's status as the page's transcripts read it (n: not asked, ``--ask-at``)."""


def _compact_turn(row: TranscriptTurn) -> list[Any]:
    """One turn for the page: [status, raw, {wrong key: model value}, collateral, missed,
    abstention, detail, samples, {moved key: model value}], then [reasoning (its first
    :data:`REASONING_SHOWN` characters), reasoning tokens, its whole length] when the provider
    returned reasoning."""
    wrong = {k: row["spec"][k] for k in row["wrong"]} if row["spec"] is not None else {}
    moved_right = [k for k in row["collateral"] if k not in row["wrong"]]
    out: list[Any] = [STATUS_LETTER[row["status"]], row["raw"], wrong, row["collateral"],
                      row["missed"], row["abstention"], row["detail"], row["samples"],
                      {k: row["spec"][k] for k in moved_right} if row["spec"] is not None
                      else {}]
    reasoning, tokens = row.get("reasoning"), row.get("reasoning_tokens")
    if reasoning or tokens:
        out += [(reasoning or "")[:REASONING_SHOWN], tokens, len(reasoning or "")]
    return out


def build(runs: Sequence[Path | Run], title: str | None = None, compare_method: str = "bh",
          q: float = 0.1) -> ReportModel:
    """The report model: every figure and transcript the page shows, JSON-able. Runs of one
    suite are compared (``compare_method``, ``q``: as ``butterfly compare``)."""
    if not runs:
        raise UserError("report: give at least one run directory")
    entries: list[RunEntry] = []
    scen_data: dict[str, ScenarioData] = {}
    convs_out: list[ConversationData] = []
    baselines: dict[str, RunEntry] | None = None
    baseline_ids: list[str] | None = None
    loaded = [r if isinstance(r, Run) else load_run(r) for r in runs]
    check_same_scenarios(loaded)  # scenarios are keyed by id: one id, one scenario
    for i, run in enumerate(loaded):
        path, manifest, params = run.path, run.manifest, run.params
        chosen, answered = run.scenarios, run.turns()
        run_score = score_run(run)
        score: RunEntry = run_score.to_json()
        for s in chosen:
            _add_scenario(scen_data, s)
        by_id = {s.id: s for s in chosen}  # a shard's own conversations, one at a time
        convs = (with_reasoning(conversation_of(by_id[k.scenario], answered, k.layout,
                                                k.repeat, params.ask_at), run.records)
                 for k in run.conversations())
        for c in convs:
            convs_out.append(ConversationData(
                r=i, id=c["id"], l=c["layout"], k=c["repeat"], v=c["verdict"],
                fd=c["first_divergent"], t=[_compact_turn(row) for row in c["turns"]],
                **code_turns(c, by_id[c["id"]], run.track.view)))
        ids = sorted({s["id"] for s in score["scenarios"]})
        if baselines is None:
            baselines, baseline_ids = score["baselines"], ids
        entries.append({
            "label": _label(manifest, path),
            "path": str(path),
            "model": manifest.model,
            "status": manifest.status,
            "params": {"layouts": list(params.layouts), "repeats": params.repeats,
                       "strategy": params.strategy, "samples": params.samples,
                       "protocol": params.protocol, "mode": params.mode,
                       "temperature": params.temperature, "seed": params.seed,
                       "ask_at": params.ask_at},
            "asked": asked_line(params.ask_at),
            "suite": f"{suite_name(run_score.suite)} ({manifest.suite.path})",
            "suite_sha256": manifest.suite.sha256,
            "prompt": version_name(run_score.prompt.version, run_score.prompt.track),
            "horizon": score["horizon"],
            "horizon_words": (None if run_score.horizon is None
                              else horizon_words(run_score.horizon)),
            "incomplete": score["incomplete"],
            "n_total": score["n_total"],
            **_metrics(score),
            "by_category": {c: _metrics(v) for c, v in score["by_category"].items()},
            "by_layout": {lay: _metrics(v) for lay, v in score["by_layout"].items()},
            "by_op": score["by_op"],
            "same_scenarios_as_baselines": ids == baseline_ids,
            "effective_final_match": score["effective_final_match"],
            "abstention_by_reason": score["abstention_by_reason"],
            "usage": score["usage"],
            "code": score["code"],
        })
    if len({e["prompt"] for e in entries}) > 1:  # runs asked with other prompts say which
        for e in entries:
            e["label"] = f"{e['label']} [{e['prompt']}]"
    labels = [e["label"] for e in entries]
    for e in entries:  # runs with the same label are told apart by their directory
        if labels.count(e["label"]) > 1:
            e["label"] = f"{e['label']} ({Path(e['path']).name or e['path']})"
    labels = [e["label"] for e in entries]
    if len(set(labels)) != len(labels):
        raise UserError("report: give each run directory once")
    assert baselines is not None
    base_rows = [{"label": f"baseline: {baseline_label(name)}", "baseline": True, **_metrics(b),
                  "by_category": {c: _metrics(v) for c, v in b["by_category"].items()}}
                 for name, b in baselines.items()]
    flips = None
    several = [p for p, e in zip(runs, entries, strict=True) if len(e["params"]["layouts"]) > 1]
    common = set.intersection(*({s.to_json() for s in r.scenarios} for p, r in
                                zip(runs, loaded, strict=True) if p in several)) if several else ()
    if common:  # the runs posed several ways share scenarios: their flips
        scenarios, columns = load_columns(several)
        flips = flip_grid(scenarios, columns)
    comparisons = compare_view(loaded, [e["suite_sha256"] for e in entries], labels,
                               compare_method, q)
    return ReportModel(
        headline=headline(loaded, [head_row(e) for e in entries],
                          {k: b["final_match"] for k, b in baselines.items()}),
        modes=mode_pairs(entries),
        schema_version=REPORT_SCHEMA_VERSION,
        butterfly_version=__version__,
        title=title or "ButterflyBench report",
        runs=entries,
        baselines=base_rows,
        baselines_on=entries[0]["label"],
        categories=[c for c in CATEGORIES if any(c in e["by_category"] for e in entries)],
        flips=flips,
        compare=comparisons,
        scenarios=scen_data,
        conversations=convs_out,
    )


def _add_scenario(out: dict[str, ScenarioData], s: Scenario) -> None:
    if s.id in out:
        return
    o = replay(s)
    out[s.id] = ScenarioData(
        category=s.category,
        initial=o[0],
        turns=[[t.op, t.text, {k: o[i][k] for k in KEYS if o[i][k] != o[i - 1][k]}]
               for i, t in enumerate(s.turns, 1)],
    )


# ---------------------------------------------------------------------------------------------
# HTML


LONG_PIECE: Final = 24
"""A piece of a name (between ``/``, ``:`` and spaces) longer than this may break after a
hyphen; a shorter one is kept on one line."""


def breakable(name: str) -> Any:
    """A name as the page shows it (the ``name`` filter): a line may break after each ``/`` and
    ``:`` (a ``<wbr>``) and at a space, and nowhere else in a piece of up to
    :data:`LONG_PIECE` characters (``span.nb``, nowrap: ``script/last-edit`` breaks at its
    ``/``, not its hyphen); a longer piece may also break after a hyphen, never between two
    other characters (``script/noisy:p=0.2`` broke as ``script/noisy:p`` / ``=0.2`` under
    ``overflow-wrap: anywhere``). The whole is ``span.name``, which the tests measure."""
    from markupsafe import Markup, escape

    out = []
    for piece in re.split(r"(?<=[/: ])", str(name)):
        word = piece.rstrip(" ")
        kept = len(word) <= LONG_PIECE and re.search(r"[^\w.=]", word)
        out.append((f'<span class="nb">{escape(word)}</span>' if kept else str(escape(word)))
                   + ("<wbr>" if word.endswith(("/", ":")) and word == piece else "")
                   + piece[len(word):])
    return Markup(f'<span class="name">{"".join(out)}</span>')


def render_html(model: ReportModel) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined,
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["pct"] = lambda x: "–" if x is None else f"{100 * x:.1f}%"
    env.filters["num"] = lambda x: "–" if x is None else f"{x:.3f}"
    env.filters["name"] = breakable
    env.filters["ci"] = lambda c, scale=100: "" if c is None else (
        f"[{scale * c[0]:.1f}, {scale * c[1]:.1f}]" if scale == 100
        else f"[{c[0]:.2f}, {c[1]:.2f}]")
    template = env.get_template("report.html.j2")
    page_data = {"scenarios": model["scenarios"], "conversations": model["conversations"],
                 "runs": [r["label"] for r in model["runs"]], "keys": list(KEYS)}
    return template.render(
        m=model,
        css=(TEMPLATES / "report.css").read_text(encoding="utf-8"),
        js=(TEMPLATES / "report.js").read_text(encoding="utf-8"),
        svgs=charts(model),
        radius=radius_chart([radius_row(r) for r in model["runs"]],
                            [radius_row(b) for b in model["baselines"]]),
        undo=undo_chart([undo_row(r) for r in model["runs"]]),
        data=pack(page_data),
        board=board_columns(),
        heat=grid([r["by_category"] for r in model["runs"]], model["categories"]),
        ops=[op for op in OPS if any(op in r["by_op"] for r in model["runs"])],
        undo_ops=list(UNDO_OPS),
    )


def write_report(runs: Sequence[Path | Run], html: Path, title: str | None = None,
                 compare_method: str = "bh", q: float = 0.1) -> int:
    """Build and write the report; returns its size in bytes."""
    text = render_html(build(runs, title, compare_method, q))
    write_text_atomic(html, text, f"--html {html}")
    return len(text.encode("utf-8"))
