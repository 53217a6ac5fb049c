"""Small pieces of hand-written inline SVG shared by the report's dot charts (the change-radius
dot plot, undo recovery by op): escaping, a linear scale, an axis with ticks. No chart library:
each point carries its figures in data- attributes, so tests read the chart's data."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

NS = 'xmlns="http://www.w3.org/2000/svg"'


def esc(text: str) -> str:
    """Text for an SVG element or attribute."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


@dataclass(frozen=True, slots=True)
class Scale:
    """Values in [0, top] onto pixels [pad, width - pad]."""

    top: float
    width: int
    pad: int = 12

    def x(self, v: float) -> float:
        share = 0.0 if self.top <= 0 else min(max(v / self.top, 0.0), 1.0)
        return round(self.pad + share * (self.width - 2 * self.pad), 2)


def nice_top(values: Sequence[float]) -> float:
    """The smallest of 1, 2, 5 x 10^k at or above every value (at least 1)."""
    top = max([1.0, *values])
    k = 10 ** math.floor(math.log10(top))
    return float(next(m * k for m in (1, 2, 5, 10) if m * k >= top - 1e-12))


def open_svg(width: int, height: int, cls: str, label: str) -> str:
    return (f'<svg class="{cls}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" {NS} role="img" aria-label="{esc(label)}">')


def axis(scale: Scale, ticks: Sequence[float], fmt: str, height: int, cls: str,
         label: str) -> str:
    """An axis SVG: tick marks and their labels along the bottom (``fmt`` formats a tick)."""
    parts = [open_svg(scale.width, height, cls, label)]
    for t in ticks:
        x = scale.x(t)
        parts.append(f'<text x="{x}" y="{height - 4}" font-size="11" text-anchor="middle" '
                     f'fill="#555">{fmt.format(t)}</text><line x1="{x}" x2="{x}" '
                     f'y1="{height - 16}" y2="{height - 12}" stroke="#555"/>')
    return "".join(parts)
