"""Small pieces of hand-written inline SVG shared by the report's dot charts (the headline, the
change-radius dot plot, undo recovery by op): escaping, a linear scale, an axis with ticks,
baselines as labelled reference lines, a dot on its interval. No chart library:
each point carries its figures in data- attributes, so tests read the chart's data."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
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


def baseline_lines(scale: Scale, base: Mapping[str, float], height: int) -> list[str]:
    """Each baseline's dashed reference line, top to ``height``, its figure in data- attributes."""
    return [f'<line class="baseline" data-baseline="{esc(name)}" data-value="{v:.6f}" '
            f'x1="{scale.x(v)}" x2="{scale.x(v)}" y1="0" y2="{height}" stroke="#888" '
            'stroke-dasharray="3 3"/>' for name, v in base.items()]


def baseline_labels(scale: Scale, base: Mapping[str, float], names: Mapping[str, str],
                    fmt: Callable[[float], str]) -> list[str]:
    """Each baseline's name and figure over its line (two rows, so close ones do not overlap),
    left of the middle read from the line rightwards, right of it leftwards."""
    out = []
    for k, (name, v) in enumerate(sorted(base.items(), key=lambda kv: kv[1])):
        anchor = "start" if v < scale.top / 2 else "end"
        out.append(f'<text class="baseline-label" x="{scale.x(v)}" y="{10 + 11 * (k % 2)}" '
                   f'font-size="11" text-anchor="{anchor}" fill="#666">'
                   f'{esc(names.get(name, name))} {fmt(v)}</text>')
    return out


def whisker(scale: Scale, value: float, lo: float, hi: float, y: float, colour: str) -> str:
    """A dot at ``value`` on its interval's line from ``lo`` to ``hi``, at height ``y``."""
    return (f'<line x1="{scale.x(lo)}" x2="{scale.x(hi)}" y1="{y}" y2="{y}" '
            f'stroke="{colour}" stroke-width="2"/>'
            f'<circle cx="{scale.x(value)}" cy="{y}" r="5" fill="{colour}"/>')
