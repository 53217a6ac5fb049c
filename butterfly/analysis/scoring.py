"""Score a run: its complete conversations through the metrics of ``butterfly.core.metrics``,
with honest denominators (incomplete and never-played conversations counted apart) and the
flip counts. ``butterfly score`` prints the :class:`RunScore`; ``--json`` its dump.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from butterfly.analysis.code_score import code_score
from butterfly.analysis.flips import Column, flip_grid
from butterfly.core.efficiency import scored
from butterfly.core.metrics import effective_final_match, recency_ks, score_conversations
from butterfly.core.scores import FlipCounts, RunScore, SuiteLabel
from butterfly.core.turns import ConversationKey, Turn, TurnKey
from butterfly.core.vocab import ParseMode, Protocol
from butterfly.runs.reader import Run, load_run
from butterfly.runs.scope import asked, conversation_keys, select
from butterfly.runs.usage import spent_of, total_usage
from butterfly.runs.versions import prompt_label
from butterfly.suite.load import frozen_version, suite_manifest_of
from oracle import Spec


def score_run(run: Run | Path | str, parse_mode: ParseMode | None = None,
              protocol: Protocol | None = None) -> RunScore:
    """Score a run (a loaded :class:`Run` or its directory); ``parse_mode`` or ``protocol``
    re-parse the raw answers. Conversations without any call record were never played (a run
    stopped before them, or a sequential comparison that stopped their scenario early): counted as
    ``not_played``, not as incomplete. A run asked at chosen turns is scored on its asked turns
    (contract v3, section 4): a turn not asked has no answer and is not scored. A code run's
    conversation holding a program not yet observed (and no failed call) is counted apart
    (``code.unobserved_conversations``): reading never runs a program."""
    if not isinstance(run, Run):
        run = load_run(run)
    params = run.params
    done = run.turns(parse_mode, protocol)
    attempted = run.attempted
    in_run = run.scenarios
    answers: dict[ConversationKey, list[Spec | None]] = {}
    incomplete: list[ConversationKey] = []
    unobserved: list[ConversationKey] = []  # a code run's programs not yet observed: apart
    not_played = 0
    reasons: Counter[str] = Counter()
    by_id = {s.id: s for s in in_run}
    for key in run.conversations():
        if key not in attempted:
            not_played += 1
            continue
        turns: list[Turn] = []
        waiting = False
        for t in asked(by_id[key.scenario], params):  # a turn not asked has no answer
            turn_key = TurnKey(key.scenario, t, key.layout, key.repeat)
            turn = done.get(turn_key)
            if turn is None and turn_key in run.unobserved:
                waiting = True
                continue
            if turn is None:
                incomplete.append(key)
                break
            turns.append(turn)
        else:
            if waiting:
                unobserved.append(key)
            else:
                answers[key] = [x.spec for x in turns]
                reasons.update(x.abstention for x in turns
                               if x.spec is None and x.abstention is not None)
    windows = recency_ks(in_run, params.ask_at, suite_window_k(run))
    overall, totals, horizon = score_conversations(in_run, answers, incomplete, params.layouts,
                                                   params.ask_at, windows)
    calls = [x for x in map(spent_of, run.records.values()) if x is not None]
    efficiency, verdicts = scored(calls, totals.scenarios, incomplete)
    totals = totals.model_copy(update={"scenarios": verdicts})
    shard, sweep = shard_of(run)
    grid = flip_grid(in_run, [Column("", lay, params.repeats, done, attempted, 0, params.ask_at)
                              for lay in params.layouts])
    return RunScore(model=run.model, **dict(overall), **dict(totals), not_played=not_played,
                       flips=FlipCounts.model_validate(grid.counts), run=str(run.path),
                       parse=parse_mode or params.parse, suite=suite_label(run),
                       prompt=prompt_label(run.manifest),
                       horizon=horizon, effective_final_match=effective_final_match(overall),
                       abstention_by_reason=dict(sorted(reasons.items())),
                       usage=total_usage(run.records.values(), params.price, run.manifest.model),
                       efficiency=efficiency if run.records else None,
                       shard=shard,
                       sweep_conversations=sweep, ask_at=params.ask_at,
                       asked_turns_only=params.ask_at is not None,
                       code=code_score(run, answers, done, len(unobserved))
                       if run.track.observes else None)


def shard_of(run: Run) -> tuple[str | None, int | None]:
    """A shard's ``I/N`` and the conversations of its whole sweep; (None, None) for a whole
    run."""
    if run.params.shard is None:
        return None, None
    whole = run.params.model_copy(update={"shard": None})
    return str(run.params.shard), len(conversation_keys(select(run.suite, whole), whole))


def suite_window_k(run: Run) -> int | None:
    """The second K of the recency baseline that the run's suite names in its manifest (a
    frozen suite's, or the one beside the suite file the run played, when its content is the
    run's), or None."""
    manifest = suite_manifest_of(run.manifest.suite.sha256, Path(run.manifest.suite.path))
    return None if manifest is None else manifest.window_k


def suite_label(run: Run) -> SuiteLabel:
    """The suite the run played: a frozen suite's name and version, or its file's name."""
    sha = run.manifest.suite.sha256
    known = frozen_version(sha)
    if known is not None:
        return SuiteLabel(name=known[0], version=known[1], sha256=sha)
    return SuiteLabel(name=Path(run.manifest.suite.path).stem, version=None, sha256=sha)
