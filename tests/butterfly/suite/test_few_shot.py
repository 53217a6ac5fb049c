"""Contract v2: few-shot examples share no wording with any turn of a shipped suite.

The shipped suites are the files under scenarios/ when the test runs (so every new suite or
version is checked once committed), and the paraphrase templates suites are generated from.
Equality is not enough: v1's example "Only log warnings and errors from now on." was no turn of
butterfly-40, yet nearly repeated "From now on I'd like logging of warnings and errors only."
(gen-undo-ref-04 has its sibling). Two measures, both bounded, on lower-cased text: the difflib
ratio (shared character runs) and the Jaccard index of word sets (shared vocabulary).
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT
from conftest import run_inproc as run_cli  # in this process: no interpreter start per call
from hypothesis import given, settings
from hypothesis import strategies as st

from butterfly.core.prompts import FEW_SHOT_TURNS
from butterfly.suite import few_shot
from butterfly.suite.few_shot import FEW_SHOT_MAX_JACCARD as MAX_JACCARD
from butterfly.suite.few_shot import FEW_SHOT_MAX_RATIO as MAX_RATIO
from butterfly.suite.few_shot import few_shot_clash, similarity
from butterfly.suite.load import BUILTINS, load_suite
from butterfly.suite.templates import FAMILIES

SUITES = sorted((ROOT / "scenarios").glob("*.jsonl"))


@cache
def shipped_texts() -> tuple[str, ...]:
    texts = {t.text for path in SUITES for s in load_suite(path) for t in s.turns}
    # the templates themselves, placeholders blanked: future generated suites use them too
    texts |= {re.sub(r"\{\w+\}", "", t) for family in FAMILIES.values() for t in family}
    return tuple(sorted(texts))


def test_the_shipped_suites_are_all_checked() -> None:
    """Every file under scenarios/ is read at test time, so a new suite or a new version of one
    is checked as soon as it is committed; and every frozen suite the package names is there."""
    names = {p.stem for p in SUITES}
    assert {"butterfly-40", "butterfly-long", "butterfly-hard", "handwritten", *BUILTINS} <= names


@pytest.mark.parametrize("example", [t[3] for t in FEW_SHOT_TURNS])
def test_few_shot_example_is_far_from_every_shipped_turn(example: str) -> None:
    worst_ratio = max(shipped_texts(), key=lambda t: similarity(example, t)[0])
    worst_words = max(shipped_texts(), key=lambda t: similarity(example, t)[1])
    assert similarity(example, worst_ratio)[0] < MAX_RATIO, (example, worst_ratio)
    assert similarity(example, worst_words)[1] < MAX_JACCARD, (example, worst_words)


def test_the_measure_catches_the_v1_near_repeat() -> None:
    v1 = "Only log warnings and errors from now on."
    texts = shipped_texts()
    assert v1 not in texts  # not equal to any turn ...
    assert any(similarity(v1, t)[0] >= MAX_RATIO or similarity(v1, t)[1] >= MAX_JACCARD
               for t in texts)  # ... but too close


def test_validate_rejects_a_turn_near_a_few_shot_example(tmp_path: Path) -> None:
    line = (ROOT / "scenarios" / "butterfly-40.jsonl").read_text().splitlines()[0]
    scenario = json.loads(line)
    example = FEW_SHOT_TURNS[0][3]
    scenario["turns"][0]["text"] = example.rstrip(".") + ", please."
    assert few_shot_clash(scenario["turns"][0]["text"]) == example
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(scenario) + "\n")
    r = run_cli("validate", str(path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"scenario {scenario['id']}, turn 1" in r.stderr and "few-shot example" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert run_cli("validate", str(ROOT / "scenarios" / "butterfly-40.jsonl")).returncode == 0


def _naive_clash(text: str) -> str | None:
    """The definition: :func:`similarity` against each example, in full."""
    for example in (t[3] for t in FEW_SHOT_TURNS):
        ratio, jaccard = similarity(text, example)
        if ratio >= MAX_RATIO or jaccard >= MAX_JACCARD:
            return example
    return None


WORDS = st.sampled_from(["quieter", "logs", "please", "nothing", "below", "the", "warning",
                         "level", "tsv", "read", "those", "cancel", "that", "request", "of",
                         "mine", "hmm", "zebra", "K", "İ", "x9", "Our", "supplier"])
TEXTS = st.lists(WORDS, max_size=60).map(" ".join) | st.text(max_size=80) | st.sampled_from(
    [t[3] for t in FEW_SHOT_TURNS])


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(text=TEXTS, repeat=st.integers(1, 40), chunk=st.sampled_from([7, 64, 1 << 20]))
def test_the_bounded_clash_is_the_definitions(text: str, repeat: int, chunk: int) -> None:
    """Issue 34: few_shot_clash decides as similarity's thresholds do (the bounds only skip
    work whose verdict is already known), on texts read in chunks as short as 7 characters."""
    long_text = " ".join([text] * repeat)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(few_shot, "WORDS_CHUNK", chunk)
        assert few_shot_clash(text) == _naive_clash(text)
        assert few_shot_clash(long_text) == _naive_clash(long_text)


def test_difflib_never_reads_a_long_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: one 200 MB turn took ``validate`` over 300 s in difflib (3 s/MB). difflib now
    sees only texts short enough to reach the ratio; a 5 MB turn is decided without it, and a
    long repeat of an example's words is still caught (by its word set)."""
    seen: list[int] = []
    real = difflib.SequenceMatcher

    def matcher(isjunk: object, a: str, b: str) -> difflib.SequenceMatcher[str]:
        seen.append(max(len(a), len(b)))
        return real(None, a, b)

    monkeypatch.setattr(difflib, "SequenceMatcher", matcher)
    far = "Please keep the spreadsheet exactly as it was before this. " * 90_000
    assert few_shot_clash(far) is None
    example = FEW_SHOT_TURNS[0][3]
    assert few_shot_clash((example + " ") * 100_000) == example
    assert max(seen, default=0) < 1000, max(seen)
