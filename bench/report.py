"""Scale of the HTML report: 5 runs x 2,000 scenarios.

Generates a 2,000-scenario suite, runs five scripted agents on it (oracle, noop, last-edit,
lifo, noisy:p=0.3) through the real CLI, builds one report of the five runs, and opens it in
headless Chromium (networking off) to time what a reader waits for: the page ready with its
transcripts unpacked, the "failed only" filter over all 10,000 conversations, a full-text
search, and opening one transcript. Prints the file size and those times, measured in this run,
each beside a baseline timed in the same run: the build beside ``butterfly score`` of each of the
five runs (reading and scoring the same records), and the page's readiness beside a static page
of the same size (the report's text in a ``<pre>``, no script) loaded in the same browser.

    .venv/bin/python bench/report.py [--count 2000] [--keep DIR] [--answers pretty]

``--answers pretty`` rewrites every recorded answer, after the runs, into what a chatty model
sends: a sentence naming the turn, the spec as indented JSON (22 lines, like SmolLM2's
answers), and a closing sentence, so the file size is measured on answers of realistic
length rather than the scripted agents' compact one-line JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from html import escape as html_escape
from pathlib import Path
from typing import Any

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]
ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "tests"))

from browser import chrome, missing, wait_ready  # noqa: E402

AGENTS = ("oracle", "noop", "last-edit", "lifo", "noisy:p=0.3")


def cli(*args: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "butterfly.cli", *args], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"butterfly {' '.join(args)} failed:\n{r.stderr}")
    return time.perf_counter() - t0


def wait_loaded(d: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while d.execute_script("return document.readyState") != "complete":
        if time.monotonic() > deadline:
            raise SystemExit("the static baseline page did not load")
        time.sleep(0.01)


def pretty(run: Path) -> None:
    """Rewrite each record's raw answer as a chatty model's answer with the same spec, as the
    run of such a model records it: linked into the digest, the manifest sealed again (a
    reader refuses records edited any other way: docs/running.md, "Tamper evidence")."""
    from butterfly.runs.digest import Chain, LinkedLog
    from butterfly.runs.records import CallRecord, RunManifest
    from butterfly.runs.store import CALLS, MANIFEST, write_manifest

    recs = []
    for line in (run / CALLS).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["spec"] is not None:
            rec["raw"] = (f"Sure! Here is the complete spec after turn {rec['turn']} of "
                          f"{rec['scenario']}:\n```json\n{json.dumps(rec['spec'], indent=2)}"
                          "\n```\nI changed only what you asked for; everything else is as "
                          "before.")
        recs.append(CallRecord.model_validate(rec))
    (run / CALLS).unlink()
    chain = Chain()
    log = LinkedLog(run / CALLS, chain)
    for r in recs:
        log.append(r)
    log.close()
    write_manifest(run, RunManifest.model_validate_json((run / MANIFEST).read_bytes()), chain)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--keep", help="keep the runs and the report in this directory")
    ap.add_argument("--answers", choices=("scripted", "pretty"), default="scripted")
    a = ap.parse_args()
    why = missing()
    if why:
        raise SystemExit(why)
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    suite = work / "suite.jsonl"
    cli("generate", "--count", str(a.count), "--seed", "2026", "--out", str(suite))
    runs = []
    for agent in AGENTS:
        out = work / agent.split(":")[0]
        if not (out / "manifest.json").exists():
            cli("run", "--model", f"script/{agent}", "--suite", str(suite), "--out", str(out),
                "--no-cache", "--temperature", "0.7")
        runs.append(str(out))
    if a.answers == "pretty":
        for run in runs:
            pretty(Path(run))
    html = work / "report.html"
    build_s = cli("report", *runs, "--html", str(html))
    score_s = sum(cli("score", run) for run in runs)
    size = html.stat().st_size
    print(f"{len(runs)} runs x {a.count} scenarios: report {size / 1e6:.2f} MB, "
          f"built in {build_s:.1f} s (CLI, includes interpreter start); baseline: "
          f"`butterfly score` of each run {score_s:.1f} s in all: the report costs "
          f"{build_s / score_s:.2f}x that")
    static = work / "static.html"
    static.write_text("<!doctype html><pre>" + html_escape(html.read_text(encoding="utf-8"))
                      + "</pre>", encoding="utf-8")
    from selenium.webdriver.common.by import By

    with chrome(work / "profile") as d:
        t0 = time.perf_counter()
        d.get(static.as_uri())
        wait_loaded(d)
        static_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        d.get(html.as_uri())
        state = wait_ready(d, timeout=300)
        ready = time.perf_counter() - t0
        total = d.find_element(By.ID, "t-status").text
        t0 = time.perf_counter()
        d.find_element(By.ID, "f-failed").click()
        failed = d.find_element(By.ID, "t-status").text
        filt = time.perf_counter() - t0
        t0 = time.perf_counter()
        d.find_element(By.ID, "f-search").send_keys("undo the earliest")
        found = d.find_element(By.ID, "t-status").text
        search = time.perf_counter() - t0
        t0 = time.perf_counter()
        d.find_elements(By.CSS_SELECTOR, "#t-list tbody tr")[0].click()
        turns = len(d.find_elements(By.CSS_SELECTOR, "#t-view .turn"))
        view = time.perf_counter() - t0
        heap = d.execute_script("return performance.memory ? performance.memory.usedJSHeapSize "
                                ": null")
        rows = len(d.find_elements(By.CSS_SELECTOR, "#t-list tbody tr"))
    print(f"browser: ready ({state}) in {ready:.2f} s: {total}; list shows {rows} rows a page; "
          f"baseline: a static page of the same size {static_s:.2f} s: {ready / static_s:.1f}x")
    print(f"  'failed only': {filt:.2f} s ({failed}); search 'undo the earliest': "
          f"{search:.2f} s ({found}); open one transcript ({turns} turns): {view:.2f} s")
    if heap:
        print(f"  JS heap after use: {heap / 1e6:.0f} MB")
    print(f"files kept in {work}" if a.keep else "")


if __name__ == "__main__":
    main()
