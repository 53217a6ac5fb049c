"""litellm's process-wide state, noted before each test and put back after it (the autouse
fixture in tests/conftest.py), so that no test sees what an earlier one left in litellm.

litellm keeps its settings in module globals that a call changes for the whole process: a
``litellm.Router`` registers its deployments' models in the price map (``litellm.model_cost``),
after which litellm prices a model it does not know at $0 instead of refusing it; a provider
whose ``api_base`` carries ``user:password@`` sets ``disable_aiohttp_transport``; the first
Gemini call adds ``"cache"`` to three callback lists. Put back: the price map's entries, every
callback list's items, and every public setting (a name without a leading underscore) that holds
a bool, a number, a string or None. Left alone: the objects litellm creates on first use
(clients, provider configs) and its private flags and counters of work done once (such as
``_async_client_cleanup_registered``: put back, it would register its exit handler again).

This module never imports litellm: a test that does not use it pays nothing. A test that is
the first to import it (through ``butterfly.models.litellm_seam``, the one importer, which tests
use too) is put back to the state right after that import, noted by :class:`FirstImport`.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

SEAM = "butterfly.models.litellm_seam"
SETTING_TYPES = (bool, int, float, str, type(None))
_MISSING = object()


@dataclass(frozen=True)
class State:
    """What :func:`restore` puts back: each container with a copy of its items."""

    settings: dict[str, object]
    lists: dict[str, tuple[list[Any], list[Any]]]
    prices: tuple[dict[str, Any], dict[str, Any]]


def note() -> State | None:
    """litellm's state now; None when litellm is not imported (nothing is imported here)."""
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return None
    names = vars(litellm)
    settings = {k: v for k, v in names.items()
                if isinstance(v, SETTING_TYPES) and not k.startswith("_")}
    lists = {k: (v, list(v)) for k, v in names.items() if "callback" in k and isinstance(v, list)}
    return State(settings, lists, (litellm.model_cost, dict(litellm.model_cost)))


def _same_items(now: Sequence[Any], then: Sequence[Any]) -> bool:
    return len(now) == len(then) and all(a is b for a, b in zip(now, then, strict=True))


def _restore_settings(litellm: ModuleType, settings: dict[str, object]) -> None:
    """Each setting back to its value, unless litellm has since put an object there."""
    for name, value in settings.items():
        now = getattr(litellm, name, _MISSING)
        if now is _MISSING or (isinstance(now, SETTING_TYPES)
                               and (type(now), now) != (type(value), value)):
            setattr(litellm, name, value)


def _restore_lists(litellm: ModuleType, lists: dict[str, tuple[list[Any], list[Any]]]) -> None:
    for name, (items, then) in lists.items():
        if getattr(litellm, name, None) is not items:
            setattr(litellm, name, items)
        if not _same_items(items, then):
            items[:] = then


def _restore_prices(litellm: ModuleType, prices: dict[str, Any], then: dict[str, Any]) -> None:
    """The price map's entries back, and litellm's lower-case index of it dropped if changed."""
    if litellm.model_cost is not prices:
        litellm.model_cost = prices
    if prices == then:
        return
    prices.clear()
    prices.update(then)
    invalidate = getattr(sys.modules.get("litellm.utils"), "_invalidate_model_cost_lowercase_map",
                         None)
    if invalidate is not None:
        invalidate()


def restore(state: State) -> None:
    """Put litellm back to ``state`` (litellm must be imported)."""
    litellm = sys.modules["litellm"]
    _restore_settings(litellm, state.settings)
    _restore_lists(litellm, state.lists)
    _restore_prices(litellm, *state.prices)


class FirstImport(importlib.abc.MetaPathFinder):
    """On ``sys.meta_path``: notes litellm's state once the seam's first import has run (its
    own settings, such as telemetry off, included), for a test that was that first import."""

    def __init__(self) -> None:
        self.state: State | None = None

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != SEAM:
            return None
        spec = self._spec_from_the_others(fullname, path, target)
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            self.state = note()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec

    def _spec_from_the_others(self, fullname: str, path: Sequence[str] | None,
                              target: ModuleType | None) -> ModuleSpec | None:
        for finder in sys.meta_path:
            find = None if finder is self else getattr(finder, "find_spec", None)
            spec = None if find is None else find(fullname, path, target)
            if spec is not None:
                return spec
        return None


@contextlib.contextmanager
def preserved(first: FirstImport) -> Iterator[None]:
    """litellm's state after the block is its state before it (or, when the block imported
    the seam, its state right after that import)."""
    before = note()
    try:
        yield
    finally:
        state = before if before is not None else first.state
        if state is not None and "litellm" in sys.modules:
            restore(state)
