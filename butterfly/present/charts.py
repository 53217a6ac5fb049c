"""The report's charts below the headline and the heatmap, as inline SVG (docs/report.md,
"Charts"): matplotlib draws the first-divergent-turn distribution and the horizon (text kept as
text, no timestamps, fixed ids); the change-radius dot plot and undo recovery by op are
hand-written SVG with each point's figures in data- attributes (``present/radius_chart.py``,
``present/undo_chart.py``), like the headline."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Final

from butterfly.core.printable import printable
from butterfly.core.results import HorizonResult
from butterfly.present.horizon_chart import horizon_figure

if TYPE_CHECKING:  # report.py imports this module
    from butterfly.present.report import ReportModel

FDT_BINS: Final = (*[str(t) for t in range(1, 11)], "none")


def chart_label(text: str) -> str:
    """A run's label as matplotlib draws it: control characters escaped (matplotlib has no
    glyph for them, and its warning printed the raw byte on the terminal)."""
    return printable(text, newlines=False)


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def fdt_shares(run: Any) -> list[float]:
    """A run's first-divergent-turn distribution: the share (%) of its conversations in each of
    :data:`FDT_BINS`, all 0 for a run with none."""
    hist = run["first_divergent_turn"]
    total = sum(hist.values()) or 1
    return [100 * hist.get(b, 0) / total for b in FDT_BINS]


def first_divergent_figure(plt: Any, runs: list[Any]) -> Any:
    """The first-divergent-turn distribution (share of each run's conversations); run i's bars
    carry the gids ``fdt-I-BIN``, so tests read the drawn heights."""
    fig, ax = plt.subplots(figsize=(7, 3.0))
    width = 0.8 / max(1, len(runs))
    for i, r in enumerate(runs):
        bars = ax.bar([x + i * width for x in range(len(FDT_BINS))], fdt_shares(r), width,
                      label=chart_label(r["label"]))
        for b, bar in zip(FDT_BINS, bars, strict=True):
            bar.set_gid(f"fdt-{i}-{b}")
    ax.set_xticks([x + width * (len(runs) - 1) / 2 for x in range(len(FDT_BINS))],
                  list(FDT_BINS))
    asked = " (over asked turns only where a run asked at chosen turns)" if any(
        r.get("asked") for r in runs) else ""
    ax.set_xlabel(f"first divergent turn{asked} (none = matched throughout)")
    ax.set_ylabel("conversations (%)")
    ax.legend(fontsize=7)
    ax.set_title("Where conversations first go wrong")
    return fig


def laddered(runs: list[Any]) -> list[tuple[str, HorizonResult]]:
    """The runs over two chain lengths or more, with their typed horizons."""
    return [(chart_label(r["label"]), HorizonResult.model_validate(r["horizon"])) for r in runs
            if r["horizon"] and len(r["horizon"]["by_length"]) > 1]


def pyplot() -> Any:
    """matplotlib's pyplot, drawing to no screen, text kept as text in the SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "butterfly",
                                "font.size": 9})
    return plt


def charts(model: ReportModel) -> dict[str, str]:
    """The matplotlib charts of the report model, by name (``horizon`` only when a run is
    laddered)."""
    plt = pyplot()
    runs = model["runs"]
    out = {"first_divergent": _svg(first_divergent_figure(plt, runs))}
    ladder = laddered(runs)
    if ladder:
        out["horizon"] = _svg(horizon_figure(ladder))
    return out
