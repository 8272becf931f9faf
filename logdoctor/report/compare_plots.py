"""One PNG per compared metric (matplotlib, for the Markdown report): the panel `compare_figure`
describes, with the band filled between its edges."""
from __future__ import annotations

import io

from ..compare import Comparison, MetricComparison
from .compare_figure import BAND_COLOR, metric_panel


def metric_png(cmp: Comparison, m: MetricComparison) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    panel = metric_panel(cmp, m)
    fig = Figure(figsize=(7.5, 3.2), dpi=100)
    ax = fig.add_subplot()
    edges = [line for line in panel.lines if line.color == BAND_COLOR]
    if len(edges) == 2:
        ax.fill_between(edges[0].series.steps, edges[0].series.values, edges[1].series.values, color=BAND_COLOR, alpha=0.35, lw=0, label="band")
    for line in panel.lines:
        if line.color != BAND_COLOR:
            width = {"metric": 1.8, "logged": 0.7}.get(line.role, 1.2)
            ax.plot(line.series.steps, line.series.values, color=line.color, lw=width, label=None if line.role == "logged" else line.label)
    for mark in panel.marks:
        if mark.kind == "band":
            ax.axvspan(mark.x0, mark.x1, color=mark.color, alpha=0.08, lw=0)
        elif mark.kind == "vline":
            ax.axvline(mark.x0, color=mark.color, ls="--", lw=1, label=mark.label)
    ax.set_title(panel.ylabel, fontsize=9)
    ax.set_xlabel("step", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return out.getvalue()
