"""Runs for the frontier's tests (issue 37, item 3): three runs of one budget sweep, priced, and
two scripted baselines with no price.

Scripted agents have no price: each sweep run's calls are given tokens and a cost (what a
priced model would have reported, more per call at a higher budget, varying by call so the
paired cost ratio has an interval), rewritten as the harness writes them
(``conftest.rewrite_calls``), and its manifest is linked into the sweep
(``conftest.rewrite_manifest`` with ``budget_sweep``), as ``butterfly sweep`` links its runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from conftest import rewrite_calls, rewrite_manifest
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

SWEEP = (("low", "script/noisy:p=0.4", 0.0002), ("medium", "script/oracle", 0.001),
         ("high", "script/oracle", 0.005))
"""(budget, agent, USD per call): the medium budget matches as often as the high one at a
fifth of the cost; the low one is cheaper still and matches less often."""
BASELINES = ("script/last-edit", "script/noop")


def _jitter(line: dict[str, object], run: str) -> float:
    """A call's cost factor in [0.8, 1.2), fixed by its run, scenario and turn."""
    h = hashlib.sha256(f"{run}/{line['scenario']}/{line['turn']}".encode()).digest()
    return 0.8 + 0.4 * h[0] / 256


def priced(out: Path, usd: float) -> None:
    """Give every call of a run tokens and a cost near ``usd``."""
    lines = []
    for text in (out / "calls.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(text)
        f = _jitter(d, out.name)
        d["tokens"] = {"prompt": round(1e6 * usd * f), "completion": 40, "cached": None,
                       "reasoning": round(2e5 * usd), "cache_write": None}
        d["cost_usd"] = round(usd * f, 8)
        lines.append(json.dumps(d))
    rewrite_calls(out, lines)


def make_runs(base: Path, limit: int = 20) -> list[Path]:
    """The three sweep runs (low, medium, high) then the two baselines."""
    made = []
    values = [b for b, _, _ in SWEEP]
    for k, (budget, agent, usd) in enumerate(SWEEP):
        out = base / f"sweep-{budget}"
        r = run_cli("run", "--model", agent, "--out", str(out), "--no-cache", "--limit",
                    str(limit), "-M", f"reasoning_effort={budget}")
        assert r.returncode == 0, r.stderr
        priced(out, usd)
        rewrite_manifest(out, budget_sweep={"name": "effort", "key": "reasoning_effort",
                                            "values": values, "index": k})
        made.append(out)
    for agent in BASELINES:
        out = base / agent.split("/")[1]
        r = run_cli("run", "--model", agent, "--out", str(out), "--no-cache", "--limit",
                    str(limit))
        assert r.returncode == 0, r.stderr
        made.append(out)
    return made
