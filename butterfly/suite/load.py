"""Suites on disk: resolve a name, load and validate a JSON Lines file, write one.

:func:`resolve` names a suite once: a :class:`ResolvedSuite` holds its file, its manifest (read
once) and what the manifest says (track, version, default ask points), and loads its scenarios
once when they are first read; a run passes it whole to where each part is used.

Every problem with a suite file is a :class:`SuiteError` whose message is one line naming the
file, the line, the scenario id when known, the turn when it applies, and the reason.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from butterfly.core.vocab import Track
from butterfly.errors import UserError
from butterfly.files import SUITE_MAX_BYTES, open_regular, read_input
from butterfly.suite.chains import generate_chains
from butterfly.suite.code import CODE_COUNTS, generate_code
from butterfly.suite.deep_chains import depth_rows
from butterfly.suite.generate import DEFAULT_COUNTS, GENERATOR_VERSION, generate
from butterfly.suite.hard import generate_hard
from butterfly.suite.horizon_chains import generate_horizon
from butterfly.suite.tracks import suite_track
from oracle import (
    ASKED_MAX_TURNS,
    CATEGORIES,
    MAX_TURNS,
    OPS,
    Scenario,
    SuiteManifest,
    check,
    turn_limit,
)
from oracle.replay import played_before_v2

ROOT: Final = Path(__file__).resolve().parents[2]
SCENARIOS_DIR: Final = ROOT / "scenarios"


class SuiteError(UserError):
    """A suite file is missing or malformed; the message is one line for the user."""


def _there(path: Path) -> bool:
    """Whether something is at ``path`` (or may be: a directory on its way cannot be
    searched)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def resolve_suite(name_or_path: str) -> Path:
    """A path to an existing file, or the name of a suite under ``scenarios/``."""
    path = Path(name_or_path)
    try:
        if path.is_file():
            return path
    except OSError:  # a directory on its way this user may not search: said below
        pass
    named = SCENARIOS_DIR / f"{name_or_path}.jsonl"
    if "/" not in name_or_path and named.is_file():
        return named
    if _there(path):  # but not a regular file this user may read: say why
        open_regular(path, str(path), SUITE_MAX_BYTES, SuiteError).close()
    known = sorted(p.stem for p in SCENARIOS_DIR.glob("*.jsonl") if p.stem != "handwritten")
    raise SuiteError(
        f"{name_or_path}: no such file, and no suite of that name (known names: {', '.join(known)})"
    )


def _where(e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    loc = list(err["loc"])
    parts: list[str] = []
    if len(loc) >= 2 and loc[0] == "turns" and isinstance(loc[1], int):
        parts.append(f"turn {loc[1] + 1}")
        loc = loc[3:] if len(loc) > 2 and isinstance(loc[2], str) and loc[2] in OPS else loc[2:]
    field = ".".join(str(x) for x in loc)
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "missing":
        msg = "missing field"
    elif err["type"] == "extra_forbidden":
        msg = "unknown field"
    if field:
        parts.append(f"{field}: {msg}")
    else:
        parts.append(msg)
    return ": ".join(parts)



def parse_line(line: str, where: str, played: bool = False, readings: bool = True,
               limit: int | None = None) -> Scenario:
    """One scenario from one JSON line; ``where`` is ``file:line`` for messages.

    ``played``: the line comes from a run's copy of the suite it played; a butterfly-40 v1
    record that only a v2 guard rejects is then accepted (``oracle.replay.PLAYED_BEFORE_V2``),
    and second readings (v3) are not checked: they reject wordings, never change a spec.
    ``limit``: the suite's turn limit, checked before the guards (a long record is refused
    before it is replayed).
    """
    try:
        scenario = Scenario.model_validate_json(line)
    except ValidationError as e:
        raise SuiteError(_describe(line, where, e)) from None
    if limit is not None and len(scenario.turns) > limit:
        raise SuiteError(f"{where}: scenario {scenario.id}: {len(scenario.turns)} turns, but the "
                         f"suite's turn limit is {limit}{_asked_hint(limit, len(scenario.turns))}")
    violation = check(scenario, readings=readings and not played)
    if violation is not None and not (
        played and violation.since == 2 and played_before_v2(scenario)
    ):
        raise SuiteError(f"{where}: {violation}")
    return scenario


def _describe(line: str, where: str, e: ValidationError) -> str:
    """The one-line message for a record that failed validation (the slow path)."""
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as je:
        return f"{where}:{je.colno}: malformed JSON: {je.msg}"
    except RecursionError:
        return f"{where}: JSON nested too deeply for a scenario"
    if not isinstance(raw, dict):
        return f"{where}: a scenario must be a JSON object, not {type(raw).__name__}"
    sid = raw.get("id")
    label = f"{where}: scenario {sid}" if isinstance(sid, str) else where
    return f"{label}: {_where(e)}"


@dataclass
class Sharer:
    """Holds equal parts of a suite's scenarios once: equal turns are one (frozen) object, equal
    initial specs one dict, and every scenario shares one set of its field names.

    A generated suite repeats itself: 10,000 scenarios of ``butterfly generate`` have one
    initial spec and about 750 distinct turns among 45,000. As separate pydantic records they
    took about 7 KB a scenario (over half of it the 728-byte set of field names pydantic keeps
    per instance); shared, about 0.7 KB (docs/performance.md). The records are validated first
    and rebuilt with ``model_construct``: equal, and dumped to the same JSON. Never mutate a
    scenario's ``initial``: it is shared with the scenarios that start from the same spec.
    """

    _turns: dict[Any, Any] = field(default_factory=dict)
    _initials: dict[tuple[tuple[str, str], ...], dict[str, str]] = field(default_factory=dict)
    _fields: dict[frozenset[str], set[str]] = field(default_factory=dict)

    def scenario(self, s: Scenario) -> Scenario:
        values = dict(s.__dict__)
        values["turns"] = tuple(self._turn(t) for t in s.turns)
        values["initial"] = self._initials.setdefault(tuple(s.initial.items()), s.initial)
        fields = self._fields.setdefault(frozenset(s.model_fields_set), s.model_fields_set)
        return Scenario.model_construct(fields, **values)

    def _turn(self, turn: Any) -> Any:
        try:
            return self._turns.setdefault(turn, turn)  # frozen records hash by their fields
        except TypeError:  # a field that cannot be hashed: the turn is held as it is
            return turn


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a suite file, read line by line (a torn last line included)."""
    raw = open_regular(path, str(path), SUITE_MAX_BYTES, SuiteError)  # a regular file, 1 GiB
    try:
        with io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as f:
            for n, line in enumerate(f, 1):
                yield n, line.removesuffix("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise SuiteError(f"{path}: cannot read: {e}") from None


def load_suite(path: Path | str, played: bool = False, readings: bool = True) -> list[Scenario]:
    """Load and fully validate a suite; raise :class:`SuiteError` at the first problem. The
    file is read line by line and equal parts of its scenarios are held once (:class:`Sharer`).

    ``played``: a run's copy of its suite (see :func:`parse_line`); ``readings=False``: the
    v3 guard is not checked (``butterfly validate --readings`` audits it instead)."""
    path = Path(path)
    return _load(path, load_manifest(path), played, readings)


def _load(path: Path, manifest: SuiteManifest | None, played: bool = False,
          readings: bool = True) -> list[Scenario]:
    """:func:`load_suite` of ``path``, whose manifest (None: it has none) is given."""
    scenarios: list[Scenario] = []
    seen: dict[str, int] = {}
    sharer = Sharer()
    limit = suite_turn_limit(path, manifest, played)
    for n, line in _lines(path):
        where = f"{path}:{n}"
        if not line.strip():
            raise SuiteError(f"{where}: blank line (a suite has one scenario per line)")
        scenario = sharer.scenario(parse_line(line, where, played, readings, limit))
        if scenario.id in seen:
            raise SuiteError(
                f"{where}: scenario {scenario.id}: duplicate id (first on line {seen[scenario.id]})"
            )
        seen[scenario.id] = n
        scenarios.append(scenario)
    if not scenarios:
        raise SuiteError(f"{path}: the suite is empty")
    if manifest is not None:  # the rules of the manifest's track (the code track's)
        suite_track(manifest.track).check(path, scenarios, SuiteError)
    return scenarios


@dataclass(frozen=True)
class ResolvedSuite:
    """A suite named once (:func:`resolve`): its file and its manifest, read once, and what
    they say; its scenarios are loaded and checked once, when first read."""

    path: Path
    manifest: SuiteManifest | None
    """The manifest beside the file (a frozen suite's, or one ``generate --ask-at`` wrote)."""

    @cached_property
    def scenarios(self) -> tuple[Scenario, ...]:
        """Every scenario, in file order, validated (:func:`load_suite`)."""
        return tuple(_load(self.path, self.manifest))

    @property
    def track(self) -> str:
        """The track its manifest names; ``spec`` without one."""
        return "spec" if self.manifest is None else self.manifest.track

    @property
    def version(self) -> int | None:
        """Its version, as its manifest says; None without one."""
        return None if self.manifest is None else self.manifest.version

    @property
    def label(self) -> str:
        """``butterfly-40 v4`` (its manifest's name and version), else the file's name."""
        m = self.manifest
        return self.path.stem if m is None else f"{m.name} v{m.version}"

    @property
    def ask_at(self) -> tuple[int, ...] | None:
        """Its default ask points (contract v3, section 4; None: it names none)."""
        return None if self.manifest is None or self.manifest.ask_at is None \
            else tuple(self.manifest.ask_at)

    @property
    def by_length(self) -> bool:
        """Built by chain length (its manifest counts chains per length)."""
        return self.manifest is not None and bool(self.manifest.lengths)


def resolve(name_or_path: str | Path) -> ResolvedSuite:
    """The suite a name or a file names (:func:`resolve_suite`), with its manifest."""
    path = resolve_suite(str(name_or_path))
    return ResolvedSuite(path, load_manifest(path))


def suite_turn_limit(path: Path, manifest: SuiteManifest | None, played: bool = False) -> int:
    """The most turns a scenario of the suite at ``path`` may have: its manifest's
    ``max_turns`` (above 200 only with default ask points), else :func:`oracle.turn_limit` of
    its name (200; 10 for butterfly-40). A run's copy of the suite it played (``played``) was
    held to its suite's limit when the run started: only the record's own limit applies."""
    if played:
        return ASKED_MAX_TURNS
    return turn_limit(path.stem) if manifest is None else manifest.max_turns


def _asked_hint(limit: int, turns: int) -> str:
    if limit >= ASKED_MAX_TURNS or turns <= MAX_TURNS:
        return ""
    return (f" (up to {ASKED_MAX_TURNS:,} only in a suite whose manifest names default ask "
            "points, ask_at)")


def track_of(suite: Path | str) -> str:
    """The track of a suite (a file or a frozen suite's name): its manifest's, "spec" when it
    has none (:attr:`ResolvedSuite.track`)."""
    return resolve(suite).track


def ask_at_of(suite: Path | str) -> list[int] | None:
    """A suite's default ask points (contract v3, section 4): its manifest's ``ask_at``, None
    when it names none (or has no manifest)."""
    points = resolve(suite).ask_at
    return None if points is None else list(points)


def dumps_suite(scenarios: list[Scenario]) -> str:
    return "".join(s.to_json() + "\n" for s in scenarios)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_manifest(suite_path: Path) -> SuiteManifest | None:
    """The manifest beside a frozen suite (``NAME.manifest.json``), if there is one."""
    mpath = suite_path.with_name(suite_path.stem + ".manifest.json")
    if not mpath.is_file():
        return None
    try:
        return SuiteManifest.model_validate_json(read_input(mpath, str(mpath)))
    except ValidationError as e:
        raise SuiteError(f"{mpath}: {_where(e)}") from None


HORIZON_LENGTH: Final = 5000
HORIZON_CHAINS: Final = 12
HORIZON_ASK_AT: Final = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
"""butterfly-horizon's default ask points (contract v3, section 2)."""


@dataclass(frozen=True, slots=True)
class Builtin:
    """A frozen suite the generator rebuilds byte for byte."""

    seed: int
    version: int
    """The suite's own version; docs/suite-changelog.md lists what changed and why."""
    track: Track = "spec"
    ask_at: tuple[int, ...] | None = None
    """The suite's default ask points (contract v3, section 4), written in its manifest."""
    asked_only: bool = False
    """Chains longer than 200 turns, meant to be asked at chosen turns only: the manifest's
    turn limit is 10,000 (butterfly-long names ask points too, and keeps the limit of 200)."""
    window_k: int | None = None
    """The second K of the recency baseline its tables show (contract v4, section 8)."""


BUILTINS: Final = {
    "butterfly-40": Builtin(seed=40, version=4),
    "butterfly-long": Builtin(seed=4080, version=3, ask_at=(5, 10, 20, 40, 80), window_k=40),
    "butterfly-hard": Builtin(seed=1315, version=3),
    "butterfly-code": Builtin(seed=1414, version=2, track="code"),
    "butterfly-horizon": Builtin(seed=5000, version=2, ask_at=HORIZON_ASK_AT, asked_only=True,
                                 window_k=200),
}

RETIRED: Final = {
    "3a6c7a9abb6b92c8a9e8f408cdd51ac5b83b28ce3d9ac71a246e736de4e52ae9": ("butterfly-40", 1),
    "c795c65f4b72360df0b056b6340642d652a8a92eff499d188da3ed29833a8ddd": ("butterfly-40", 2),
    "fe74dfedb5ea284c64b7714722bd6651fdbb689999636de5d322fc53cb7b4808": ("butterfly-long", 1),
    "f8891a02cc2e5d0f3d45f3c531e5532841ef930e7a446d9fbb2516ccfdc697c3": ("butterfly-hard", 1),
    "4b3c2db13d0305a458b3a2a0f5d72ade38ac19c2589cfe24f2e8a198a23cb4a9": ("butterfly-40", 3),
    "8b49f2adb62444def9e2eb678e1670fb563c77bb9446873499bc2876db9939b9": ("butterfly-hard", 2),
    "69c751d0bf83d869822e7005e13532d4f01820ae5e27a73a95deeb843799bc21": ("butterfly-code", 1),
    "5d3d9ed532525e2f4ea86aee93a15e14e8caa2782d097f6eaa28cb8e0aba8b48": ("butterfly-long", 2),
    "699a7c4251ba9b158563811046dbba3555d098b6f262cc3c371d2d31bb6557cd": ("butterfly-horizon", 1),
}
"""sha256 -> (name, version) of frozen suites replaced by a later version (runs on them stay
readable and are labelled with their version; docs/suite-changelog.md)."""


def _shipped(sha256: str) -> tuple[str, SuiteManifest] | None:
    """The frozen suite we ship whose content has this sha256, if any: (its name, manifest)."""
    for name in BUILTINS:
        manifest = load_manifest(SCENARIOS_DIR / f"{name}.jsonl")
        if manifest is not None and manifest.sha256 == sha256:
            return name, manifest
    return None


def frozen_version(sha256: str) -> tuple[str, int] | None:
    """The frozen suite (name, version) whose content has this sha256, if it is one we ship or
    shipped."""
    if sha256 in RETIRED:
        return RETIRED[sha256]
    shipped = _shipped(sha256)
    return None if shipped is None else (shipped[0], BUILTINS[shipped[0]].version)


def suite_manifest_of(sha256: str, path: Path) -> SuiteManifest | None:
    """The manifest of the suite whose content has ``sha256``: a frozen suite's we ship, or
    the one beside ``path`` when it describes that content; None otherwise (a retired
    version's, a suite without one)."""
    if (shipped := _shipped(sha256)) is not None:
        return shipped[1]
    try:
        manifest = load_manifest(path)
    except SuiteError:
        return None
    return manifest if manifest is not None and manifest.sha256 == sha256 else None


LONG_LENGTHS: Final = (5, 10, 20, 40, 80)
LONG_PER_LENGTH: Final = 12
HARD_PER_CONSTRUCTION: Final = 8


def build_builtin(name: str) -> tuple[list[Scenario], SuiteManifest]:
    """Rebuild a frozen suite and its manifest from its seed."""
    if name not in BUILTINS:
        raise SuiteError(f"no built-in suite named {name!r} (known: {', '.join(BUILTINS)})")
    b = BUILTINS[name]
    seed = b.seed
    handwritten_file: str | None = None
    lengths: dict[str, int] | None = None
    if name == "butterfly-40":
        handwritten_file = "scenarios/handwritten.jsonl"
        handwritten = load_suite(ROOT / handwritten_file)
        counts = dict(DEFAULT_COUNTS)
        for s in handwritten:
            counts[s.category] -= 1
        generated = generate(counts, seed)
        ordered = [
            s for c in CATEGORIES for s in (*handwritten, *generated) if s.category == c
        ]
    elif name == "butterfly-code":
        ordered = generate_code(CODE_COUNTS, seed)
    elif name == "butterfly-long":
        ordered = generate_chains(LONG_LENGTHS, LONG_PER_LENGTH, seed, ask_at=LONG_LENGTHS)
        lengths = {str(n): LONG_PER_LENGTH for n in LONG_LENGTHS}
    elif name == "butterfly-horizon":
        ordered = generate_horizon([HORIZON_LENGTH], HORIZON_CHAINS, seed,
                                   ask_at=HORIZON_ASK_AT)
        lengths = {str(HORIZON_LENGTH): HORIZON_CHAINS}
    else:
        ordered = generate_hard(HARD_PER_CONSTRUCTION, seed)
    limit = (suite_track(b.track).max_turns
             or (ASKED_MAX_TURNS if b.asked_only else turn_limit(name)))
    too_long = next((s for s in ordered if len(s.turns) > limit), None)
    if too_long is not None:  # pragma: no cover - the builders respect the limit
        raise SuiteError(f"{name}: {too_long.id} has {len(too_long.turns)} turns (limit {limit})")
    text = dumps_suite(ordered)
    manifest = SuiteManifest(
        name=name,
        version=b.version,
        track=b.track,
        file=f"scenarios/{name}.jsonl",
        generator_version=GENERATOR_VERSION,
        seed=seed,
        handwritten=handwritten_file,
        n_scenarios=len(ordered),
        max_turns=limit,
        counts=dict(Counter(s.category for s in ordered)),
        lengths=lengths,
        ask_at=None if b.ask_at is None else list(b.ask_at),
        window_k=b.window_k,
        depth=depth_rows(ordered, b.ask_at),
        sha256=sha256_text(text),
    )
    return ordered, manifest
