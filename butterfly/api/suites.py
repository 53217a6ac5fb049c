"""The API's commands on suites and answers, which call no model: ``generate``, ``validate``
(and its audit of second readings), ``oracle``, ``parse``, and the project's own files
(``schema``, ``notebook``). Each returns a typed result."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from butterfly.core.parse import main_parse
from butterfly.core.pooling import Result
from butterfly.core.vocab import TRACKS, Track
from butterfly.errors import UserError
from butterfly.suite.builder import GenerationError
from butterfly.suite.chains import parse_mix
from butterfly.suite.deep_chains import asked_of, depth_rows
from butterfly.suite.few_shot import few_shot_clash
from butterfly.suite.generate import GENERATOR_VERSION, paraphrase_variants
from butterfly.suite.horizon_chains import generate_horizon
from butterfly.suite.load import (
    BUILTINS,
    SuiteError,
    build_builtin,
    dumps_suite,
    load_manifest,
    load_suite,
    resolve_suite,
    sha256_text,
)
from butterfly.suite.tracks import suite_track
from oracle import ASKED_MAX_TURNS, MAX_TURNS, Scenario, SuiteManifest, replay
from oracle.depth import DepthViolation, chain_depth, depth_guarded, summarise
from oracle.depth import violation as depth_violation
from oracle.readings import Tally, audit
from oracle.records import DepthRow


class Generated(Result):
    """A generated suite: its scenarios, and the manifest of a frozen suite rebuilt."""

    scenarios: list[Scenario]
    manifest: SuiteManifest | None = None


def generate(*, suite: str | None = None, count: int | None = None, seed: int | None = None,
             lengths: str | list[int] | None = None, per_length: int | None = None,
             ops: str | None = None, paraphrase_variants: int | None = None,
             track: Track = "spec", ask_at: str | list[int] | None = None) -> Generated:
    """``butterfly generate``: a frozen suite rebuilt byte for byte (``suite``), a seeded mix of
    ``count`` scenarios, or chains of exactly ``lengths`` turns (``per_length`` each, op
    weights ``ops``); ``paraphrase_variants`` poses each scenario K times re-worded. ``track``
    "code" draws over the code catalogue (docs/code-track.md, "The suite"). ``ask_at`` (with
    ``lengths``): the suite's default ask points; its chains, up to 10,000 turns, are drawn
    by the planner of butterfly-horizon (hard ops at every length), and the result carries a
    manifest that names the ask points (a suite longer than 200 turns loads only with it)."""
    _track_given(track, suite, paraphrase_variants)
    if suite is not None:
        if any(x is not None for x in (count, seed, lengths, ops, per_length, ask_at)):
            raise UserError("generate: --suite rebuilds a frozen suite; it takes no "
                            "--count/--seed/--lengths/--per-length/--ops/--ask-at")
        scenarios, manifest = build_builtin(suite)
        return Generated(scenarios=scenarios, manifest=manifest)
    s = 0 if seed is None else seed
    try:
        if ask_at is not None:
            return _asked(lengths, per_length, ops, count, s, track, ask_at, paraphrase_variants)
        if lengths is not None:
            if count is not None:
                raise UserError("generate: --lengths builds chains by length; give --per-length "
                                "K instead of --count")
            mix = None if ops is None else parse_mix(ops)
            per = 12 if per_length is None else per_length
            drawn = suite_track(track).chains(_lengths(lengths), per, s, prefix=f"s{s}", mix=mix)
        elif count is None:
            raise UserError("generate: give --suite NAME, --count N or --lengths L,.. "
                            "(with --seed S)")
        elif ops is not None or per_length is not None:
            raise UserError("generate: --ops and --per-length go with --lengths")
        else:
            drawn = suite_track(track).mixed(count, s)
        return Generated(scenarios=_variants(drawn, paraphrase_variants))
    except GenerationError as e:
        raise UserError(f"generate: {e}") from None


def _track_given(track: str, suite: str | None, variants: int | None) -> None:
    """Refuse (one line) a track that is none, or that does not go with the other arguments."""
    if track not in TRACKS:
        raise UserError(f"generate: --track takes {' or '.join(TRACKS)}, not {track!r}")
    kind = suite_track(track)
    if suite is not None and suite in BUILTINS and kind.rule is not None \
            and suite_track(BUILTINS[suite].track) is not kind:  # its rules are not this one's
        raise UserError(f"generate: {suite} is a suite of the {BUILTINS[suite].track} track, "
                        f"not the {track} track")
    if not kind.variants and variants is not None:
        raise UserError(f"generate: --paraphrase-variants is not built for the {track} track "
                        "yet")


def _variants(scenarios: list[Scenario], k: int | None) -> list[Scenario]:
    if k is None:
        return scenarios
    if not 1 <= k <= 3:
        raise UserError("--paraphrase-variants takes 1 to 3 (the smallest family has "
                        "three paraphrases)")
    return [v for s in scenarios for v in paraphrase_variants(s, k)]


def _asked(lengths: str | list[int] | None, per_length: int | None, ops: str | None,
           count: int | None, seed: int, track: Track, ask_at: str | list[int],
           variants: int | None) -> Generated:
    """Chains with default ask points: the horizon planner's, and their manifest."""
    if lengths is None or count is not None:
        raise UserError("generate: --ask-at goes with --lengths (chains asked at chosen turns)")
    if ops is not None or not suite_track(track).asked or variants is not None:
        raise UserError("generate: --ask-at draws its own op mix (the horizon planner, "
                        "docs/ladder.md); it takes no --ops, --track code or "
                        "--paraphrase-variants")
    points = _whole_numbers(ask_at, "--ask-at", ASKED_MAX_TURNS, "10,100,1000")
    chain_lengths = _lengths(lengths, ASKED_MAX_TURNS)
    per = 12 if per_length is None else per_length
    scenarios = generate_horizon(chain_lengths, per, seed, prefix=f"s{seed}", ask_at=points)
    manifest = SuiteManifest(
        name=f"s{seed}", version=1, file="-", generator_version=GENERATOR_VERSION, seed=seed,
        handwritten=None, n_scenarios=len(scenarios), max_turns=ASKED_MAX_TURNS,
        counts=dict(Counter(x.category for x in scenarios)),
        lengths={str(n): per for n in chain_lengths}, ask_at=sorted(set(points)),
        depth=depth_rows(scenarios, points), sha256=sha256_text(dumps_suite(scenarios)),
    )
    return Generated(scenarios=scenarios, manifest=manifest)


def _lengths(text: str | list[int], most: int = MAX_TURNS) -> list[int]:
    """``--lengths``: 1 to 200 turns, or to 10,000 with ``--ask-at``."""
    hint = "" if most > MAX_TURNS else (f" (up to {ASKED_MAX_TURNS:,} with --ask-at: a suite "
                                        "asked at chosen turns)")
    return _whole_numbers(text, "--lengths", most, "5,10,20", hint)


def _whole_numbers(text: str | list[int], flag: str, most: int, example: str,
                   hint: str = "") -> list[int]:
    try:
        numbers = [int(x) for x in (text.split(",") if isinstance(text, str) else text)]
    except ValueError:
        numbers = []
    if not numbers or not all(1 <= n <= most for n in numbers):
        raise UserError(f"generate: {flag} takes whole numbers 1 to {most}, comma-separated "
                        f"(e.g. {example}){hint}")
    return numbers


class SuiteCheck(Result):
    """A suite file found valid: its path and size."""

    path: Path
    scenarios: int
    turns: int


def validate(files: list[str], track: Track | None = None) -> list[SuiteCheck]:
    """``butterfly validate``: each suite (a file or a frozen suite's name) checked; the first
    violation is one clear line. A turn worded like the few-shot example is refused too. A
    suite of the code track (its manifest's ``track``, or ``track="code"``) is also held to the
    code track's rules (``butterfly.suite.code_rules``). A suite with chains of 40 turns or more
    is held to the depth guard (contract v4, section 8; :func:`audit_depth`)."""
    checks = []
    for path in (resolve_suite(f) for f in files):
        scenarios = load_suite(path)  # held to the rules of its manifest's track
        if track is not None:  # and to those of the track asked for
            suite_track(track).check(path, scenarios, SuiteError)
        seen: dict[str, str | None] = {}
        for s in scenarios:
            _few_shot_free(path, s, seen)
        report = _depth_of(path, scenarios)
        if report.violation is not None:
            raise UserError(f"{path}: {report.violation} (the depth guard, contract v4 "
                            f"section 8; butterfly validate --depth {path} prints the table)")
        checks.append(SuiteCheck(path=path, scenarios=len(scenarios),
                                  turns=sum(len(s.turns) for s in scenarios)))
    return checks


class DepthReport(Result):
    """``butterfly validate --depth`` of one suite: its depth per ask point and the guard's
    verdict (contract v4, section 8; docs/ladder.md, "Depth")."""

    path: Path
    guarded: bool
    """Some chain reaches 40 turns: the guard concerns the suite."""
    ask_at: list[int] | None
    """The ask points read (the manifest's; None: each chain's last turn)."""
    rows: list[DepthRow]
    violation: DepthViolation | None


def audit_depth(files: list[str]) -> list[DepthReport]:
    """The depth of each suite at its ask points of 40 turns or more: how old the changes that
    show are, and how often a recency window (the last t/2 or t/10 messages) matches."""
    return [_depth_of(path, load_suite(path, readings=False)) for path in map(resolve_suite, files)]


def _depth_of(path: Path, scenarios: list[Scenario]) -> DepthReport:
    manifest = load_manifest(path)
    ask_at = None if manifest is None else manifest.ask_at
    if not depth_guarded(scenarios):
        return DepthReport(path=path, guarded=False, ask_at=ask_at, rows=[], violation=None)
    rows = [r for s in scenarios
            for r in chain_depth(s, replay(s), asked_of(len(s.turns), ask_at))]
    return DepthReport(path=path, guarded=True, ask_at=ask_at, rows=summarise(rows),
                       violation=depth_violation(rows))


def _few_shot_free(path: Path, s: Scenario, seen: dict[str, str | None]) -> None:
    """``seen``: each distinct text's clash, measured once (a 5,000-turn chain repeats its
    few hundred wordings)."""
    for t, turn in enumerate(s.turns, 1):
        if turn.text not in seen:
            seen[turn.text] = few_shot_clash(turn.text)
        example = seen[turn.text]
        if example is not None:
            raise UserError(f"{path}: scenario {s.id}, turn {t}: its wording is too close to "
                            f"the few-shot example {example!r} (a few-shot run would show the "
                            "model this turn's answer): reword it")


class ReadingsAudit(Result):
    """``butterfly validate --readings`` of one suite: what each second reading changes."""

    path: Path
    scenarios: list[Scenario]
    tallies: list[Tally]


def audit_readings(files: list[str]) -> list[ReadingsAudit]:
    """What each second reading of ``oracle.readings`` would change in each suite
    (docs/readings.md); the suites are loaded without that guard."""
    out = []
    for path in (resolve_suite(f) for f in files):
        scenarios = load_suite(path, readings=False)
        out.append(ReadingsAudit(path=path, scenarios=scenarios,
                                 tallies=audit((s, replay(s)) for s in scenarios)))
    return out


class OracleSpec(Result):
    """The oracle's spec of scenario ``id`` after turn ``turn`` (0: the initial spec)."""

    id: str
    turn: int
    spec: dict[str, str]


def oracle(file: str) -> Iterator[OracleSpec]:
    """``butterfly oracle``: the oracle's spec after every turn of every scenario."""
    for s in load_suite(file):
        for t, spec in enumerate(replay(s)):
            yield OracleSpec(id=s.id, turn=t, spec=spec)


class ParseOutcome(Result):
    """``butterfly parse``: exit status (0 a spec, 3 an abstention, 2 a bad mode) and text."""

    code: int
    text: str


def parse(answer: str, parse: str = "structured", protocol: str | None = None) -> ParseOutcome:
    """Parse one raw answer as a run would (docs/parser.md)."""
    code, text = main_parse(parse, answer, protocol)
    return ParseOutcome(code=code, text=text)


def schema(out_dir: str | Path) -> list[Path]:
    """``butterfly schema``: write the JSON Schema of every record format; the files written."""
    from butterfly.present.schemas import write_schemas

    if not str(out_dir).strip():
        raise UserError("--out-dir must name a directory, got ''")
    return write_schemas(Path(out_dir))


class NotebookBuild(Result):
    """The Kaggle notebook built: where, its size, and whether it was only checked."""

    path: Path
    size: int
    checked: bool


def notebook(out: str | None = None, check: bool = False) -> NotebookBuild:
    """``butterfly notebook build``: write the notebook (``check``: write nothing, refuse in one
    line when the file differs from a fresh build)."""
    from butterfly.kaggle.notebook import build_notebook

    path, size = build_notebook(out, check)
    return NotebookBuild(path=path, size=size, checked=check)
