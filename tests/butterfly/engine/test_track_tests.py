"""Tracks as objects (issue 35, item 3): outside the track registry (``butterfly/engine/
tracks.py``) at most three places test which track a run is on; every other difference between
the tracks is asked of the run's ``Track`` (docs/design.md, "The track registry", lists the three
and why they stay)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[3]
REGISTRY: Final = Path("butterfly/engine/tracks.py")
MOST: Final = 3

NAME = r"[\w.\]\[]*track\b(?!\s*\()"
"""A track's name: ``track``, ``params.track``, ``TRACK``, ``chosen_track`` (not a call:
``track(name)`` is the registry's lookup)."""
TESTS: Final = re.compile(rf"(?i){NAME}\s*(==|!=)|(==|!=)\s*{NAME}")
LITERAL: Final = re.compile(
    r"""["'](spec|code)["']\s*(==|!=)|(==|!=)\s*["'](spec|code)["']"""
    r"""|\bin\s*[(\[{][^)\]}]*["'](spec|code)["']""")
"""A track's name compared with a literal one (on a line that speaks of a track)."""

def track_tests(text: str) -> list[tuple[int, str]]:
    """(line, text) of each test of a track's name in a module's source."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if TESTS.search(code) or ("track" in code.lower() and LITERAL.search(code)):
            out.append((n, line.strip()))
    return out


def found() -> list[str]:
    hits = []
    for folder in ("butterfly", "butterflybench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel == REGISTRY:
                continue
            hits += [f"{rel}:{n}: {line}" for n, line in track_tests(path.read_text("utf-8"))]
    return hits


def test_the_scan_finds_a_test_of_a_track_however_it_is_written() -> None:
    for line in ('if params.track == "code":', "x = 1 if TRACK != 'spec' else 2",
                 'if "code" == run.params.track:', "if chosen_track in ('spec', 'code'):",
                 "if BUILTINS[suite].track != track:", "x = a.track == b.track"):
        assert track_tests(line), line
    for line in ('if kind == "code":', "if old.sha != track(params.track).sha256(params):",
                 "t = track(params.track)  # == 'code'", "if name not in TRACKS:"):
        assert not track_tests(line), line


def test_at_most_three_tests_of_a_track_outside_the_registry() -> None:
    hits = found()
    assert len(hits) <= MOST, "ask the run's Track instead:\n" + "\n".join(hits)
