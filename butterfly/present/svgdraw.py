"""The one module that writes the report's SVG: every chart on the page (the headline, undo
recovery by op, change radius, the first divergent turn, the horizon and its survival curves)
is drawn from these pieces by ``present/charts.py``, and the heatmap's colours come from here
too. No chart library: each mark carries its figures in data- attributes (and an id where a
chart has several series), so tests read what was drawn, not its pixels.

The pieces: escaping, numbers as SVG writes them, linear and log scales and a log axis's
ticks, elements (line, circle, rect, text, path, group), an axis with ticks, baselines as
labelled reference lines, a dot on its interval (across or upright, filled or a ring), an
arrow, a legend that flows into rows, the series palette, and the cividis colour scale."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

NS = 'xmlns="http://www.w3.org/2000/svg"'

PALETTE: Final = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                  "#7f7f7f", "#bcbd22", "#17becf")
"""The series' colours, run i's the i-th (cycling): Tableau's 10 categorical colours, as
matplotlib's ``tab10`` (the colours the matplotlib charts drew with before)."""

CIVIDIS: Final = (
    "00224e00234f00245100255300255400265600275800285900285b00295d002a5f002a61002b62002c64002c66002d68"
    "002e6a002e6c002f6d00306f0030700031700031710132710533710833700c34700f357012357014367016377018376f"
    "1a386f1c396f1e3a6f203a6f213b6e233c6e243c6e263d6e273e6e293f6e2a3f6d2b406d2d416d2e416d2f426d31436d"
    "32436d33446d34456c35456c36466c38476c39486c3a486c3b496c3c4a6c3d4a6c3e4b6c3f4c6c404c6c414d6c424e6c"
    "434e6c444f6c45506c46516c47516c48526c49536c4a536c4b546c4c556c4d556c4e566c4f576c50576c51586d52596d"
    "535a6d545a6d555b6d555c6d565c6d575d6d585e6d595e6e5a5f6e5b606e5c616e5d616e5e626e5e636f5f636f60646f"
    "61656f62656f636670646770656870656870666970676a71686a71696b716a6c716b6d726c6d726c6e726d6f726e6f73"
    "6f70737071737172747272747273747374757474757575757676767777767777777878777979777a7a787b7a787c7b78"
    "7d7c787e7c787e7d787f7e78807f78817f788280798381798482798582798683798784788885788985788a86788b8778"
    "8c88788d88788e89788f8a78908b78918b78928c78928d78938e78948e77958f779690779791779892779992779a9376"
    "9b94769c95769d95769e96769f9775a09875a19975a29975a39a74a49b74a59c74a69c74a79d73a89e73a99f73aaa073"
    "aba072aca172ada272aea371afa471b0a571b1a570b3a670b4a76fb5a86fb6a96fb7a96eb8aa6eb9ab6dbaac6dbbad6d"
    "bcae6cbdae6cbeaf6bbfb06bc0b16ac1b26ac2b369c3b369c4b468c5b568c6b667c7b767c8b866c9b965cbb965ccba64"
    "cdbb63cebc63cfbd62d0be62d1bf61d2c060d3c05fd4c15fd5c25ed6c35dd7c45cd9c55cdac65bdbc75adcc859ddc858"
    "dec958dfca57e0cb56e1cc55e2cd54e4ce53e5cf52e6d051e7d150e8d24fe9d34eead34cebd44bedd54aeed649efd748"
    "f0d846f1d945f2da44f3db42f5dc41f6dd3ff7de3ef8df3cf9e03afbe138fce236fde334fee434fee535fee636fee838"
)
"""The cividis colour map: 256 RGB stops, dark blue to yellow, as one string of hex (6 digits a
stop): Nuñez,
Anderton and Renslow, "Optimizing colormaps with consideration for color vision deficiency to
enable accurate interpretation of scientific data", PLOS ONE 13(7): e0199239 (2018), as
matplotlib ships it (``_cividis_data`` in ``matplotlib/_cm_listed.py``), each channel rounded
to 8 bits: the colours the heatmap had when matplotlib looked them up."""



def cividis(share: float) -> str:
    """The cividis colour of a share in [0, 1] (``#rrggbb``), looked up as matplotlib looks up
    its 256 stops (the share times 256, cut to a whole stop; 1.0 is the last)."""
    i = min(max(int(share * 256), 0), 255)
    return "#" + CIVIDIS[6 * i:6 * i + 6]


def ink_on(colour: str) -> str:
    """Black or white: the text colour readable on ``colour`` (``#rrggbb``), by its relative
    luminance."""
    r, g, b = (int(colour[k:k + 2], 16) / 255 for k in (1, 3, 5))
    return "#000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "#fff"


def series(i: int) -> str:
    """Series i's colour (the palette, cycling)."""
    return PALETTE[i % len(PALETTE)]


def esc(text: str) -> str:
    """Text for an SVG element or attribute."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def num(v: float) -> str:
    """A coordinate as the SVG writes it: at most two decimals, no trailing zeros."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


Attr = str | int | float | None


def _attr(v: str | int | float) -> str:
    if isinstance(v, str):
        return esc(v)
    return num(v) if isinstance(v, float) else str(v)


def attrs(values: Mapping[str, Attr]) -> str:
    """`` name="value"`` for each attribute, in order (``_`` in a name written ``-``; a None
    value left out; text escaped)."""
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{_attr(v)}"'
                   for k, v in values.items() if v is not None)


def element(tag: str, inner: str = "", /, **values: Attr) -> str:
    """One element: ``<tag a="v"/>``, or with ``inner`` markup ``<tag ...>inner</tag>``."""
    return f"<{tag}{attrs(values)}/>" if not inner else f"<{tag}{attrs(values)}>{inner}</{tag}>"


def group(inner: str, data: Mapping[str, Attr] | None = None, /, **values: Attr) -> str:
    """``<g>`` around ``inner``, its attributes then ``data-`` ones (the figures a test reads)."""
    extra = {f"data-{k}": v for k, v in (data or {}).items()}
    return f"<g{attrs(values)}{attrs(extra)}>{inner}</g>"


def text(x: float, y: float, words: str, size: int = 11, anchor: str = "start",
         fill: str = "#333", **values: Attr) -> str:
    """Words at (x, y), escaped, after the attributes in ``values`` (a class, data- ones);
    ``rotate``: turned by that many degrees about (x, y)."""
    rotate = values.pop("rotate", None)
    transform = None if rotate is None else f"rotate({rotate} {num(x)} {num(y)})"
    return element("text", esc(words) or " ", **values, x=float(x), y=float(y),
                   font_size=size, text_anchor=anchor, fill=fill, transform=transform)


def line(x1: float, x2: float, y1: float, y2: float, stroke: str = "#555",
         **values: Attr) -> str:
    return element("line", x1=float(x1), x2=float(x2), y1=float(y1), y2=float(y2),
                   stroke=stroke, **values)


def path(d: str, stroke: str, width: float = 1.5, **values: Attr) -> str:
    """An unfilled path (``d``: its commands)."""
    return element("path", d=d, fill="none", stroke=stroke, stroke_width=float(width),
                   **values)


def polyline(points: Sequence[tuple[float, float]]) -> str:
    """The commands of a path through ``points``."""
    return " ".join(f"{'M' if i == 0 else 'L'}{num(x)} {num(y)}"
                    for i, (x, y) in enumerate(points))


def steps(points: Sequence[tuple[float, float]]) -> str:
    """The commands of a step path through ``points`` (level until the next point's x, then
    down or up to it: a survival curve)."""
    out = [f"M{num(points[0][0])} {num(points[0][1])}"]
    for x, y in points[1:]:
        out.append(f"H{num(x)} V{num(y)}")
    return " ".join(out)


def open_svg(width: int, height: int, cls: str, label: str) -> str:
    return (f'<svg class="{cls}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" {NS} role="img" aria-label="{esc(label)}">')


def svg(width: int, height: int, cls: str, label: str, parts: Sequence[str]) -> str:
    """One whole SVG of ``parts``, labelled for a screen reader."""
    return "".join([open_svg(width, height, cls, label), *parts, "</svg>"])


@dataclass(frozen=True, slots=True)
class Scale:
    """Values in [0, top] onto pixels [pad, width - pad] (the dot charts' rows)."""

    top: float
    width: int
    pad: int = 12

    def x(self, v: float) -> float:
        share = 0.0 if self.top <= 0 else min(max(v / self.top, 0.0), 1.0)
        return round(self.pad + share * (self.width - 2 * self.pad), 2)


@dataclass(frozen=True, slots=True)
class Span:
    """Values in [lo, hi] onto pixels [start, end] (end below start for a y axis, whose pixels
    grow downwards), on a log scale when ``log``; a value outside is drawn outside."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def at(self, v: float) -> float:
        f: Callable[[float], float] = math.log if self.log else float
        share = (f(v) - f(self.lo)) / (f(self.hi) - f(self.lo))
        return round(self.start + share * (self.end - self.start), 2)


def nice_top(values: Sequence[float]) -> float:
    """The smallest of 1, 2, 5 x 10^k at or above every value (at least 1)."""
    top = max([1.0, *values])
    k = 10 ** math.floor(math.log10(top))
    return float(next(m * k for m in (1, 2, 5, 10) if m * k >= top - 1e-12))


def axis(scale: Scale, ticks: Sequence[float], fmt: str, height: int, cls: str, label: str,
         extra: Sequence[str] = ()) -> str:
    """An axis SVG: tick marks and their labels along the bottom (``fmt`` formats a tick), then
    ``extra`` (a chart's baselines over it)."""
    parts = []
    for t in ticks:
        x = scale.x(t)
        parts.append(f'<text x="{x}" y="{height - 4}" font-size="11" text-anchor="middle" '
                     f'fill="#555">{fmt.format(t)}</text><line x1="{x}" x2="{x}" '
                     f'y1="{height - 16}" y2="{height - 12}" stroke="#555"/>')
    return svg(scale.width, height, cls, label, [*parts, *extra])


def x_ticks(span: Span, ticks: Sequence[tuple[float, str]], y: float) -> str:
    """Tick marks below a plot's bottom edge at ``y``, each labelled."""
    return "".join(line(span.at(v), span.at(v), y, y + 4)
                   + text(span.at(v), y + 16, words, anchor="middle", fill="#444")
                   for v, words in ticks)


def y_ticks(span: Span, ticks: Sequence[tuple[float, str]], x: float, right: float) -> str:
    """Tick marks left of a plot's left edge at ``x``, each labelled, and a faint grid line
    across to ``right``."""
    return "".join(line(x, right, span.at(v), span.at(v), "#eee")
                   + line(x - 4, x, span.at(v), span.at(v))
                   + text(x - 7, span.at(v) + 4, words, anchor="end", fill="#444")
                   for v, words in ticks)


def frame(left: float, top: float, right: float, bottom: float) -> str:
    """A plot's box."""
    return element("rect", x=float(left), y=float(top), width=float(right - left),
                   height=float(bottom - top), fill="none", stroke="#999")


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


def arrow(x1: float, x2: float, y: float, colour: str, **values: Attr) -> str:
    """A horizontal arrow from ``x1`` to its head at ``x2``."""
    back = 7 if x2 > x1 else -7
    head = f"M{num(x2)} {num(y)} L{num(x2 - back)} {num(y - 4)} L{num(x2 - back)} {num(y + 4)} Z"
    return group(line(x1, x2 - back / 2, y, y, colour, stroke_width=1.5)
                 + element("path", d=head, fill=colour), **values)


TEXT_WIDTH: Final = 0.6
"""A character's width as a share of the font size (a generous mean for the page's sans-serif
fonts): how much room a legend gives a label."""


def legend(entries: Sequence[tuple[str, str]], left: float, top: float, width: float,
           size: int = 11, rows: bool = False) -> tuple[str, float]:
    """Each (colour, words) as a swatch and its words, flowing left to right into rows no
    wider than ``width`` (``rows``: one entry a row); the SVG and the height it takes."""
    parts, x, y, row = [], left, top, size + 6
    for colour, words in entries:
        w = 18 + TEXT_WIDTH * size * len(words) + 14
        if x > left and (rows or x + w > left + width):
            x, y = left, y + row
        parts.append(element("rect", x=float(x), y=float(y + 2), width=12, height=float(size - 2),
                             fill=colour)
                     + text(x + 17, y + size, words, size=size, fill="#333"))
        x += w
    return "".join(parts), y + row - top


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis over [lo, hi]: the 1, 2, 5 x 10^k inside it, thinned to 1 x 10^k
    when there are more than eight; at least the two ends when none falls inside."""
    if lo <= 0 or hi <= lo:
        return [lo, hi] if lo != hi else [lo]
    out = []
    for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = float(f"{m}e{k}")
            if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                out.append(v)
    if len(out) > 8:
        out = [v for v in out if f"{v:e}".startswith("1")]
    return out if len(out) >= 2 else [lo, hi]


def point(x: float, y: float, lo_y: float, hi_y: float, colour: str, filled: bool) -> str:
    """A dot at (x, y) on its vertical interval from ``lo_y`` to ``hi_y`` (pixels): filled, or
    a ring."""
    return (line(x, x, lo_y, hi_y, colour, stroke_width=2.0)
            + element("circle", cx=float(x), cy=float(y), r=5.5 if filled else 4.5,
                      fill=colour if filled else "#fff", stroke=colour, stroke_width=2.0))
