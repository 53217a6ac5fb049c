"""The text of each analysis the command line prints: the list of runs, flips and audit,
compare, calibrate, sequential, and export's CSV. Each takes the typed result an analysis (or
:mod:`butterfly.api`) computed and returns text; nothing here reads a run or computes a
statistic."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence

from butterfly.analysis.flips import AuditItem, FlipGrid
from butterfly.analysis.listing import RunLine
from butterfly.analysis.results import (
    Calibration,
    CompareResult,
    CostRatio,
    SequentialResult,
)
from butterfly.analysis.tidy import Level, Row, columns
from butterfly.core.asking import ask_label
from butterfly.core.efficiency_text import money, per_correct_cell
from butterfly.core.printable import printable
from butterfly.core.vocab import ErrorClass
from butterfly.present.bill import table
from butterfly.runs.play import wait_note


def _cached(x: RunLine) -> str:
    """Cached prompt tokens, and what they saved when the run is priced."""
    saved = "" if x.saved_usd is None else f" (${x.saved_usd:.4f})"
    return f"{x.cached_tokens or 0}{saved}"


SHOWN_POINTS = 4
"""``runs`` writes out at most this many ask points; more are shown as the first two, ``...``
and the last (``--json`` has every one)."""


def mode_cell(mode: str | None, ask_at: Sequence[int] | None) -> str:
    """A run's mode with its ask points, compactly: ``chat``, ``restate`` (every turn),
    ``restate@5,10,20+last``, ``restate@last``, ``restate@10,20,...,5000+last``; no spaces, so
    that a row splits into its cells on whitespace."""
    if ask_at is None:
        return mode or ""
    if not ask_at:
        return f"{mode}@last"
    if len(ask_at) <= SHOWN_POINTS:
        return f"{mode}@{','.join(map(str, ask_at))}+last"
    return f"{mode}@{ask_at[0]},{ask_at[1]},...,{ask_at[-1]}+last"


def runs_text(lines: list[RunLine]) -> str:
    if not lines:
        return "no run directories found"
    head = ("run", "model", "suite", "sha", "prompt", "layouts", "rep", "mode", "source",
            "status", "final match", "cost", "per correct", "cached (saved)", "reasoning")
    rows: list[tuple[str, ...]] = [head]
    for x in lines:
        if x.error is not None:
            rows.append((x.path, *["-"] * 8, "unreadable", "-", x.error[:60], "", "", ""))
            continue
        fm = "-" if x.final_match is None else f"{100 * x.final_match:.1f}% ({x.n_conversations})"
        cost = "-" if x.cost_usd is None else f"${x.cost_usd:.4f}"
        cost += " (user price)" if x.user_price and x.cost_usd is not None else ""
        notes = [text for on, text in ((x.shard is not None, f"shard {x.shard}"),
                                       (x.sealed is False, "unsealed"),
                                       (x.repaired > 0, "repaired"),
                                       (x.unobserved > 0, f"{x.unobserved} unobserved")) if on]
        status = (x.status or "") + (f" ({', '.join(notes)})" if notes else "")
        prompt = "unknown" if x.prompt_version is None else f"v{x.prompt_version}"
        suite = (x.suite or "") + ("" if x.suite_version is None else f" v{x.suite_version}")
        rows.append((x.path, x.model or "", suite, (x.suite_sha256 or "")[:12], prompt,
                     x.layouts or "", str(x.repeats), mode_cell(x.mode, x.ask_at),
                     "butterfly" if x.imported_from is None else "inspect", status, fm, cost,
                     "-" if x.efficiency is None else per_correct_cell(x.efficiency),
                     _cached(x),
                     str(x.reasoning_tokens or 0)))
    cells = [[printable(c, newlines=False) for c in r] for r in rows]  # paths, names: data
    return "\n".join(table(cells, left=len(head)))


def flips_text(grid: FlipGrid) -> str:
    cols = grid.columns
    width = max([len("scenario"), *(len(r.id) for r in grid.scenarios)])
    cw = {c: max(len(c), grid.repeats[c]) for c in cols}
    head = f"{'scenario':{width}}  " + "  ".join(f"{c:{cw[c]}}" for c in cols) + "  class"
    lines = [head]
    for r in grid.scenarios:
        cells = "  ".join(f"{r.cells[c]:{cw[c]}}" for c in cols)
        lines.append(f"{r.id:{width}}  {cells}  {r.class_}")
    counts = grid.counts
    lines.append("")
    lines.append("  ".join(f"{k} {v}" for k, v in counts.items()))
    rates = grid.pass_rate_by_column
    lines.append("pass rate: " + "  ".join(
        f"{c} {'-' if v is None else f'{100 * v:.1f}%'}" for c, v in rates.items()))
    lines.append("P pass, F fail, A abstained, - incomplete; one character per repeat")
    return "\n".join(lines)


def audit_text(items: list[AuditItem]) -> str:
    if not items:
        return "no scenario flips between pass and fail across repeats of the same layout"
    lines = []
    for it in items:
        lines.append(f"{it.id} ({it.category}) under {it.column}: {it.verdicts}; "
                     f"answers split at turn {it.split_turn} ({it.op})")
        lines.append(f'  user: "{it.text}"')
        for a in it.answers:
            lines.append(f"  {a.repeats} x {a.answer}")
    return "\n".join(lines)


def pct(x: float | None, none: str = "-") -> str:
    """A share as a percentage with one decimal (``none`` where there is no figure): the one
    way the terminal, the texts and the report write a share."""
    return none if x is None else f"{100 * x:.1f}%"


def compare_asked_line(result: CompareResult) -> str:
    """What a comparison of runs asked at chosen turns compares: the last turns, asked in both."""
    def how(ask_at: tuple[int, ...] | None) -> str:
        return ask_label(ask_at) or "every turn asked"
    return (f"asking: A {how(result.ask_at_a)}, B {how(result.ask_at_b)}; final match is the "
            "answer at each chain's last turn, asked in both runs (only those calls are compared)")


def _pairs(n: int) -> str:
    return f"{n} pair{'' if n == 1 else 's'}"


def cannot_flag_note(result: CompareResult, option: str = "--method") -> str | None:
    """Why a comparison found nothing whatever its answers (its method cannot reach q with the
    pairs it reads), how many pairs it needs, and which method can with these pairs (named by
    ``option``, the flag that chooses it: ``--method``, or the report's ``--compare-method``);
    None when the method can flag a scenario. The terminal and the report say the same."""
    if result.can_flag:
        return None
    n, method, need = result.pairs_available, result.method, result.pairs_needed
    read = result.k if result.k is not None else result.cap
    limit = "--k" if result.k is not None else "--cap"
    used = f"{limit} {read} of {_pairs(n)}" if read is not None and read < n else _pairs(n)
    line = (f"{method} cannot flag any scenario with {used} per scenario at q = {result.q} "
            "(not even one that A passes and B fails every time)")
    if need is None:
        line += f"; it needs more than {_pairs(1000)}"
    elif need <= n:
        line += f"; it needs {_pairs(need)}: raise {limit} to {need} or more"
    else:
        line += (f"; it needs {_pairs(need)} per scenario: both runs made with --repeats {need} "
                 "or more")
    others = [m for m in result.methods_that_can if m != method]
    if others:
        named = ", ".join(f"{option} {m}" + (" (the first pair alone, no error control)"
                                              if m == "diff" else "") for m in others)
        line += f"; with {_pairs(n)}, {named} can"
    return line


def cost_ratio_line(c: CostRatio) -> str:
    """B's cost over A's with its interval, or why there is none."""
    if c.ratio is None or c.ci is None:
        return f"cost B / A: none ({c.note})"
    return (f"cost B / A: {c.ratio:.3g}x, 95% CI [{c.ci[0]:.3g}, {c.ci[1]:.3g}] (mean cost per "
            f"complete conversation, paired over {c.n_scenarios} scenarios: A "
            f"{money(c.a_usd or 0.0)}, B {money(c.b_usd or 0.0)}; bootstrap over scenarios)")


def compare_text(result: CompareResult) -> str:
    """The comparison as text."""
    r = result.model_dump()
    fm = r["final_match"]
    detail = {"diff": "first pair only", "fixed": f"k = {r['k']}, each scenario at level q",
              "bh": f"k = {r['k']}, Fisher exact + Benjamini-Hochberg",
              "ebh": f"sequential e-BH, cap {r['cap']}" + (", stop-fine" if r["stop_fine"]
                                                           else ""),
              "gs": f"group-sequential exact + BH, cap {r['cap']}"}[r["method"]]
    lines = [
        f"A: {r['model_a']} ({r['run_a']})",
        f"B: {r['model_b']} ({r['run_b']})",
        f"{r['n_scenarios']} scenarios, layout {r['layout']}, {_pairs(r['pairs_available'])} each; "
        f"method {r['method']} ({detail}), q = {r['q']}",
    ]
    if r["ask_at_a"] is not None or r["ask_at_b"] is not None:
        lines.append(compare_asked_line(result))
    if fm["ci"] is not None:
        lines.append(
            f"final match: A {pct(fm['a'])}, B {pct(fm['b'])}, B - A = "
            f"{100 * fm['diff']:+.1f} points, 95% CI [{100 * fm['ci'][0]:+.1f}, "
            f"{100 * fm['ci'][1]:+.1f}] (clustered by scenario; bootstrap "
            f"[{100 * fm['ci_bootstrap'][0]:+.1f}, {100 * fm['ci_bootstrap'][1]:+.1f}])"
            + ("" if fm.get("sign_p") is None else
               f"; sign test over scenarios p = {fm['sign_p']:.3g}"))
    if result.cost_ratio is not None:
        lines.append(cost_ratio_line(result.cost_ratio))
    note = cannot_flag_note(result)
    if note is not None:
        lines.append(f"note: {note}")
    stat = "e" if r["method"] == "ebh" else "p"
    by_id = {row["id"]: row for row in r["scenarios"]}
    for label, key, suffix in (("REGRESSED", "regressed", "regressed"),
                               ("improved", "improved", "improved")):
        ids = r[key]
        lines.append(f"{label} ({len(ids)}):")
        for sid in ids:
            row = by_id[sid]
            value = row[("e_value_" if stat == "e" else "p_value_") + suffix]
            shown = f"e = {value:.3g}" if stat == "e" else f"p = {value:.3g}"
            lines.append(f"  {sid:32s} A {row['a_pass']}/{row['pairs_available']}  "
                         f"B {row['b_pass']}/{row['pairs_available']}  {shown}  "
                         f"({row['pairs_used']} pairs read)")
    lines.append(f"answers used: {r['answers_used']} of {r['answers_available']}")
    return "\n".join(lines)


def calibration_text(result: Calibration, title: str) -> str:
    """The study as a table: one row per method, per configuration false alarms / FDR / power /
    answers."""
    rows = [m.model_dump(by_alias=True) for m in result.root.values()]
    meta = rows[0]["study"] if rows else {}
    head = (f"{title}: m = {meta.get('m')} scenarios, {meta.get('pairs')} pairs available per "
            f"scenario, {meta.get('reps')} replications, q = {meta.get('q')}, seed "
            f"{meta.get('seed')}")
    lines = [head,
             "| method | null: false alarms | null: FDR | 0.3: FDR | 0.3: power | 0.3: answers "
             "| 0.6: FDR | 0.6: power | 0.6: answers | null: answers |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def f(x: float | None, d: int = 3) -> str:
        return "-" if x is None else f"{x:.{d}f}"

    pairs = meta.get("pairs")
    if isinstance(pairs, int) and pairs < 10:
        lines.insert(1, f"note: only {pairs} pair(s) per scenario: no per-scenario test can "
                        "find a regression with so few answers; calibrate a run made with "
                        "--repeats 20 or more (or --simulate)")
    for row in rows:
        n, lo, hi = row["null"], row["0.3"], row["0.6"]
        lines.append(
            f"| {row['label']} | {f(n['false_alarms'], 2)} | {f(n['fdr'])} | {f(lo['fdr'])} | "
            f"{f(lo['power'])} | {lo['answers']:.0f} | {f(hi['fdr'])} | {f(hi['power'])} | "
            f"{hi['answers']:.0f} | {n['answers']:.0f} |")
    return "\n".join(lines)


def sequential_text(result: SequentialResult) -> str:
    r = result.model_dump()
    stat = "e_value" if r["method"] == "ebh" else "p_value"
    lines = [f"A: {r['model_a']} ({r['run_a']})", f"B: {r['model_b']} ({r['run_b']})",
             f"{r['n_scenarios']} scenarios, method {r['method']}, cap {r['cap']} pairs, "
             f"q = {r['q']}" + (", stop-fine" if r["stop_fine"] else ""),
             f"REGRESSED ({len(r['regressed'])}):"]
    for row in r["scenarios"]:
        if row["verdict"] == "REGRESSED":
            lines.append(f"  {row['id']:32s} A {row['a_pass']}/{row['pairs']}  "
                         f"B {row['b_pass']}/{row['pairs']}  {stat[0]} = {row[stat]:.3g}")
    stops = Counter(row["stopped"] for row in r["scenarios"])
    lines.append("stopped: " + ", ".join(f"{k} {v}" for k, v in sorted(stops.items())))
    lines.append(f"answers used: {r['answers_used']} (a fixed design at the cap: "
                 f"{r['answers_cap']})")
    return "\n".join(lines)


def to_csv(rows: Sequence[Row], level: Level) -> str:
    """CSV text with a header; an empty cell is a null."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns(level), lineterminator="\n")
    w.writeheader()
    w.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)
    return buf.getvalue()


def round_line(r: int, active: int, decided: int, fine: int, answers: int) -> str:
    """``sequential``'s progress line after round ``r`` (counted from 0)."""
    return (f"round {r + 1}: {active} scenario(s) sampled, {decided} decided, {fine} fine, "
            f"{answers} answers")


def wait_line(model: str, seconds: float, kind: ErrorClass) -> str:
    """``model``'s calls wait ``seconds`` before a retry after a ``kind`` error."""
    return f"{printable(model)}: {wait_note(seconds, kind)}"
