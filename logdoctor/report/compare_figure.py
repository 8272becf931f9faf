"""What a comparison's figure shows, as data: one panel per compared metric.

Each panel overlays what the verdict read (`compare.band.Band`): the run's smoothed level,
each baseline's, and the band's edges, on the run's steps, with what each side logged
drawn faint behind; where the run departs, a
vertical mark, and the stretch from there to the end shaded. The HTML page draws it with
uPlot (`charts.panels_spec`); the Markdown PNGs (`compare_plots`) draw the same arrays.
"""
from __future__ import annotations

import numpy as np

from ..compare import BEHIND, Comparison, MetricComparison
from ..model import Series
from .compare_text import role_label
from .figure import Line, Mark, Panel

RUN_COLOR = "#d62728"
BASELINE_COLORS = ("#1f77b4", "#4a90d9", "#6baed6", "#2c7fb8", "#08519c")
BAND_COLOR = "#9ecae1"
#: The logged points are drawn faint behind the smoothed levels the verdict read (hex alpha).
LOGGED_ALPHA = "55"
DEPARTS_COLOR = {BEHIND: "#d62728", "ahead": "#2e7d32"}


def _series(name: str, steps: np.ndarray, values: np.ndarray) -> Series:
    """A level on the run's steps; points that are no number (a run that broke) are not drawn."""
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    return Series(name, np.asarray(np.rint(steps), dtype=np.int64)[ok], values[ok])


def metric_panel(cmp: Comparison, m: MetricComparison) -> Panel:
    b = m.band
    colors = [BASELINE_COLORS[i % len(BASELINE_COLORS)] for i in range(len(cmp.baselines))]
    lines = [Line("logged", _series(m.run_metric, b.steps, b.run_points), f"run: {cmp.run.run.name}, logged", RUN_COLOR + LOGGED_ALPHA)]
    for rd, (steps, values), color in zip(cmp.baselines, b.baseline_points, colors):
        lines.append(Line("logged", _series(rd.run.name, steps, values), f"baseline: {rd.run.name}, logged", color + LOGGED_ALPHA))
    lines.append(Line("metric", _series(m.run_metric, b.steps, b.run), f"run: {cmp.run.run.name}", RUN_COLOR))
    for rd, level, color in zip(cmp.baselines, b.baselines, colors):
        lines.append(Line("other", _series(rd.run.name, b.steps, level), f"baseline: {rd.run.name}", color))
    lines.append(Line("other", _series("band low", b.steps, b.lo), "band low", BAND_COLOR))
    lines.append(Line("other", _series("band high", b.steps, b.hi), "band high", BAND_COLOR))
    marks = []
    if m.departs is not None:
        color = DEPARTS_COLOR[m.verdict]
        marks.append(Mark("band", f"{m.verdict} from step {m.departs:,} to the end", color, x0=m.departs, x1=m.steps[1]))
        marks.append(Mark("vline", f"departs at step {m.departs:,}", color, x0=m.departs, dashed=True))
    return Panel(key=m.role, ylabel=f"{role_label(m.role)}: {m.verdict}", lines=lines, marks=marks)


def comparison_panels(cmp: Comparison) -> list[Panel]:
    return [metric_panel(cmp, m) for m in cmp.metrics]
