"""Rebuild the example report and the README's pictures from the committed runs.

    .venv/bin/python tools/screenshots.py

- docs/report-butterfly-40.html: `butterfly report` of the committed SmolLM2 and scripted runs;
- docs/img/report.png, docs/img/report-transcript.png: that report in headless Chromium (and
  its first screen at 1400 x 900 and 1024 x 768, report-1400x900.png, report-1024x768.png), and
  its charts: report-undo.png, report-radius.png, report-horizon.png, report-frontier.png;
- docs/img/show.svg: `butterfly show` of one SmolLM2 conversation, as the terminal draws it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "tests"))

from browser import chrome, missing, viewport, wait_ready  # noqa: E402

RUNS = ["runs/local-smollm2__butterfly-40__v1-layouts-repeats-2",
        "runs/local-smollm2__butterfly-40__v1-sc3-per-category-1",
        "runs/script-oracle__butterfly-40__v1", "runs/script-last-edit__butterfly-40__v1",
        "runs/script-lifo__butterfly-40__v1", "runs/script-no-coupling__butterfly-40__v1",
        "runs/script-noisy-p-0.2__butterfly-40__v1-layouts-repeats-2"]
REPORT = ROOT / "docs" / "report-butterfly-40.html"
SHOW = ("runs/local-smollm2__butterfly-40__v1-layouts-repeats-2", "hw-undo-earliest-after-undo")
VIEWPORTS = ((1400, 900), (1024, 768))
CHARTS = (("report-undo.png", "chart-undo"), ("report-radius.png", "chart-change-radius"),
          ("report-horizon.png", "chart-horizon"), ("report-frontier.png", "chart-frontier"))


def main() -> None:
    subprocess.run([sys.executable, "-m", "butterfly.cli", "report", *RUNS, "--html",
                    str(REPORT), "--title", "ButterflyBench on butterfly-40: SmolLM2-135M "
                    "beside the scripted agents"], cwd=ROOT, check=True)
    from rich.console import Console

    from butterfly import api
    from butterfly.present.show import print_shown

    console = Console(record=True, width=110, force_terminal=True, color_system="truecolor",
                      file=open("/dev/null", "w"))  # noqa: SIM115
    shown = api.show(ROOT / SHOW[0], SHOW[1])
    print_shown(shown.info, shown.conversations, shown.one, lines=3, console=console)
    console.save_svg(str(ROOT / "docs" / "img" / "show.svg"),
                     title=f"butterfly show {SHOW[0]} --scenario {SHOW[1]} --lines 3")
    why = missing()
    if why:
        raise SystemExit(why)
    from selenium.webdriver.common.by import By

    with chrome(ROOT / "build" / "chrome-profile") as d:
        d.set_window_size(1400, 1250)
        d.get(REPORT.as_uri())
        wait_ready(d)
        d.save_screenshot(str(ROOT / "docs" / "img" / "report.png"))
        for w, h in VIEWPORTS:  # what a person sees first, at the two sizes the tests check
            viewport(d, w, h)
            d.save_screenshot(str(ROOT / "docs" / "img" / f"report-{w}x{h}.png"))
        d.set_window_size(1400, 700)
        for name, anchor in CHARTS:
            d.execute_script(f"document.getElementById('{anchor}').scrollIntoView()")
            d.save_screenshot(str(ROOT / "docs" / "img" / name))
        d.set_window_size(1400, 1250)
        from selenium.webdriver.support.select import Select

        Select(d.find_element(By.ID, "f-run")).select_by_index(len(RUNS))
        d.find_element(By.ID, "f-failed").click()
        d.find_elements(By.CSS_SELECTOR, "#t-list tbody tr")[0].click()
        d.execute_script("document.getElementById('transcripts').scrollIntoView()")
        d.save_screenshot(str(ROOT / "docs" / "img" / "report-transcript.png"))
    print(f"wrote {REPORT}, docs/img/report.png, docs/img/report-transcript.png, "
          "docs/img/show.svg, docs/img/report-1400x900.png, docs/img/report-1024x768.png, "
          f"{', '.join('docs/img/' + name for name, _ in CHARTS)}")


if __name__ == "__main__":
    main()
