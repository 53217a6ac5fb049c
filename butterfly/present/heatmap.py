"""The report's category x run heatmap: each cell's colour is the run's final match in that
category on the cividis scale (readable with the common colour-vision deficiencies and in grey),
and the cell says the share and the count (matches / conversations) in words too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict


class Cell(TypedDict):
    """One category of one run: final match (None without a complete conversation), its
    count, the background and the text colour that stays readable on it."""

    final_match: float | None
    matches: int
    n: int
    bg: str
    fg: str


def colour(share: float) -> tuple[str, str]:
    """The cividis colour of a share in [0, 1] and a text colour readable on it."""
    import matplotlib

    r, g, b, _ = matplotlib.colormaps["cividis"](share)
    light = 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5
    return f"#{round(255 * r):02x}{round(255 * g):02x}{round(255 * b):02x}", (
        "#000" if light else "#fff")


def cell(by_category: Mapping[str, Mapping[str, object]], category: str) -> Cell:
    """A run's cell for ``category`` (grey, no count, when the run has no such scenario)."""
    x = by_category.get(category)
    fm = None if x is None else x.get("final_match")
    matches, n = (0, 0) if x is None else (x.get("final_matches"), x.get("n_conversations"))
    if not isinstance(fm, int | float):
        return Cell(final_match=None, matches=0, n=int(n) if isinstance(n, int) else 0,
                    bg="#eeeeee", fg="#555")
    bg, fg = colour(float(fm))
    return Cell(final_match=float(fm), matches=int(matches) if isinstance(matches, int) else 0,
                n=int(n) if isinstance(n, int) else 0, bg=bg, fg=fg)


def grid(by_category: Sequence[Mapping[str, Mapping[str, object]]],
         categories: Sequence[str]) -> list[list[Cell]]:
    """One row per category, one cell per run (in the runs' order)."""
    return [[cell(b, c) for b in by_category] for c in categories]
