"""The suites of each track: how ``butterfly generate`` draws them and what their scenarios keep.

A track (``butterfly.engine.tracks.Track``: what a run plays, reads and judges) that keeps suites
of its own has an entry here, by its name: its generators (a seeded mix, chains by length), the
rule each of its scenarios keeps (checked whenever a suite whose manifest names the track is
loaded, and by ``validate --track``), the turn limit of its frozen suites, and what it does not
draw yet. This layer cannot see the Track objects (``suite`` imports ``core`` only, never the
code track's modules), so the suite side of a track is this table. A track with no entry plays
the spec track's suites (a toy track that keeps the spec in another format, say).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from butterfly.errors import UserError
from butterfly.suite.chains import generate_chains
from butterfly.suite.code import CODE_MAX_TURNS, generate_code_chains, generate_code_mixed
from butterfly.suite.code_rules import code_violation
from butterfly.suite.generate import generate_mixed
from oracle import Scenario


class Chains(Protocol):
    """Chains of exactly these lengths, ``per_length`` each (ids ``prefix-...``)."""

    def __call__(self, lengths: Sequence[int], per_length: int, seed: int, prefix: str = ...,
                 mix: dict[str, int] | None = None) -> list[Scenario]: ...


@dataclass(frozen=True)
class SuiteTrack:
    """What the suites of one track are made of and held to."""

    name: str
    mixed: Callable[[int, int], list[Scenario]]
    """``generate --count N --seed S``."""
    chains: Chains
    """``generate --lengths L,.. --per-length K``."""
    rule: Callable[[Scenario], str | None] | None = None
    """Why a scenario cannot be in a suite of this track (one line), or None; None: no rule
    beyond the oracle's."""
    max_turns: int | None = None
    """The turn limit of its frozen suites; None: the suite's own (:func:`oracle.turn_limit`)."""
    asked: bool = True
    """It draws chains with default ask points (``generate --ask-at``)."""
    variants: bool = True
    """It poses scenarios re-worded (``generate --paraphrase-variants``)."""

    def check(self, path: Path, scenarios: Sequence[Scenario], error: type[UserError]) -> None:
        """Raise ``error`` (one line) at the first scenario that breaks :attr:`rule`."""
        if self.rule is None:
            return
        for n, s in enumerate(scenarios, 1):
            reason = self.rule(s)
            if reason is not None:
                raise error(f"{path}:{n}: scenario {s.id}: {reason} (a {self.name}-track suite)")


SUITE_TRACKS: Final[dict[str, SuiteTrack]] = {
    "spec": SuiteTrack("spec", generate_mixed, generate_chains),
    "code": SuiteTrack("code", generate_code_mixed, generate_code_chains, rule=code_violation,
                       max_turns=CODE_MAX_TURNS, asked=False, variants=False),
}
"""The suite side of each track, by the track's name (a manifest's ``track``)."""


def suite_track(name: str) -> SuiteTrack:
    """The suites of the track ``name``: its own entry, else the spec track's."""
    return SUITE_TRACKS.get(name, SUITE_TRACKS["spec"])
