"""Headless Chromium for the report's browser tests (Debian's chromium and chromium-driver).

Started with networking off: the browser's own background traffic is disabled by flags, and
every page request goes through DevTools' offline network emulation, so a report that tried to
fetch anything would fail to load it (and log the failure, which the tests check)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("BUTTERFLY_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("BUTTERFLY_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1800")


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).exists() or shutil.which(path)):
            return (f"{path} not found: the browser tests need Debian's chromium and "
                    "chromium-driver (make test installs them when run as root)")
    return None


@contextmanager
def chrome(profile: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get("about:blank")
        driver.set_network_conditions(offline=True, latency=0, download_throughput=0,
                                      upload_throughput=0)
        yield driver
    finally:
        driver.quit()


def wait_ready(driver: Any, timeout: float = 60) -> str:
    """Wait for the report's script to finish loading its transcripts."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        state = driver.execute_script("return document.body && document.body.dataset.ready")
        if state:
            return str(state)
        time.sleep(0.05)
    raise AssertionError("the report did not finish loading")


def viewport(driver: Any, w: int, h: int) -> None:
    """Size the window so that the page's viewport is w x h."""
    driver.set_window_size(w, h)
    iw, ih = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    driver.set_window_size(2 * w - iw, 2 * h - ih)


def fresh(driver: Any, w: int = 1400, h: int = 1800) -> Any:
    """The shared browser (the ``chromium`` fixture) made ready for a test: its window at
    w x h (the size it starts at), and the console's messages so far read and dropped, so that
    a test's check of the log sees its own pages' only."""
    driver.set_window_size(w, h)
    driver.get_log("browser")
    return driver
