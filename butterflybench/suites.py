"""A task's parameters checked as ``butterfly run`` checks its flags, and the suite it plays.

The task parameters become a :class:`~butterfly.core.options.RunOptions` and then the run's
:class:`~butterfly.runs.records.RunParams` through butterfly's own checks (``run_params``), so a
task accepts exactly what ``butterfly run`` accepts and refuses, in one line, what it refuses.
Every parameter a task takes is played as ``butterfly run`` plays it (self-consistency, the
response-size cap included): nothing is refused for inspect's sake.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from butterfly.api.running import run_params
from butterfly.core.options import RunOptions
from butterfly.core.prompts import PROMPT_VERSION
from butterfly.runs.inspect_log import ButterflyMeta
from butterfly.runs.records import RunParams
from butterfly.runs.scope import select
from butterfly.suite.load import load_suite, resolve_suite
from oracle import Scenario

META: Final = "butterfly"
"""The key of our metadata: in the task's metadata, and in each user message's."""
TURNS: Final = "butterfly_turns"
"""The sample store's key of the turns played (docs/inspect.md, "The log")."""
SCORER: Final = "butterfly_scorer"
"""The scorer's name: the key of its score in each sample's scores."""


@dataclass(frozen=True)
class Played:
    """What a task plays: the suite file, its sha256, its selected scenarios, the run's
    parameters."""

    suite_path: Path
    suite_sha256: str
    scenarios: tuple[Scenario, ...]
    params: RunParams

    def metadata(self) -> dict[str, Any]:
        """The task's metadata under :data:`META` (the log's ``eval.metadata``): what the import
        reads back (``runs.inspect_log.ButterflyMeta``: the suite, the run's parameters as the
        ``params`` dump has them), then that dump."""
        dumped = self.params.model_dump(mode="json")
        given = {**dumped, "prompt_version": PROMPT_VERSION, "suite": self.suite_path.stem,
                 "suite_path": str(self.suite_path), "suite_sha256": self.suite_sha256}
        return {META: {**{k: given[k] for k in ButterflyMeta.model_fields}, "params": dumped}}


def as_list(value: str | int | Sequence[Any] | None) -> str | list[Any] | None:
    """A task argument given as ``-T layout=E,Q`` (a string) or a YAML list, as RunOptions
    takes it."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return [value]
    return list(value)


def prepare(suite: str, **task_args: Any) -> Played:
    """The suite and parameters of a task (``task_args``: names of RunOptions), checked."""
    layouts = as_list(task_args.pop("layouts", None)) or "E"
    ask_at = as_list(task_args.pop("ask_at", None))
    opts = RunOptions(suite=suite, layouts=layouts, ask_at=ask_at, **task_args)
    params = run_params(opts)
    path = resolve_suite(suite).resolve()
    return Played(path, sha256_of(path), tuple(select(scenarios_of(str(path)), params)),
                  params)


def sha256_of(path: Path) -> str:
    """The suite file's sha256, as a run's manifest records it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.lru_cache(maxsize=8)
def scenarios_of(path: str) -> tuple[Scenario, ...]:
    """The scenarios of the suite file ``path`` (loaded once per process)."""
    return tuple(load_suite(Path(path)))


@functools.lru_cache(maxsize=8)
def by_id(path: str) -> dict[str, Scenario]:
    """The scenarios of the suite file ``path`` by id."""
    return {s.id: s for s in scenarios_of(path)}
