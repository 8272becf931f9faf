"""Per-run figures for the Markdown report (matplotlib, Agg, imported lazily).

What a figure shows comes from `figure.panels_for` (the same description the
HTML report draws in the browser): the loss panel (train and validation
loss, the LR on a twin axis), grad-norm and loss-scale panels where logged, a
panel for the metric a finding or its fix names, and each finding's evidence
(its step range, best validation step, LR floor, epoch boundaries, spikes,
first NaN, clip threshold). Labels go in the legend above each panel, never
over the data; a marker sits on every finite point with no finite neighbour
(a lone value between NaNs draws no line).

Scale: a 1,000-run report must take seconds, not minutes. Long series are
downsampled for drawing with min/max per bucket (`downsample`), which keeps
every spike visible; a `RunPlotter` reuses one Agg figure per panel layout
with fixed margins (a layout engine would measure every text box and double
the drawing time); figures are small 100-dpi PNGs, and a compact figure (the
loss panel alone at `COMPACT_DPI`, for healthy runs in a big report) a
quarter of that.

From `POOL_MIN_RUNS` runs on, `draw_all` spreads the figures over worker
processes (spawned: fork is unsafe once polars' thread pool exists), each
with its own plotter; below that the start-up (about a second of imports per
worker) costs more than it saves.

Public API: `downsample`, `RunPlotter` (`.png(rd) -> bytes | None`), `draw_all(runs, progress)`.
"""
from __future__ import annotations

import io
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import NamedTuple

import numpy as np

from ..model import RunDiagnosis, Series
from .figure import LINE_COLOR, Mark, Panel, panels_for
from .text import fmt_num

#: Points drawn per line at most (min and max of MAX_POINTS / 2 buckets).
MAX_POINTS = 1200


def downsample(steps: np.ndarray, values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Finite points thinned to at most `max_points`, keeping each bucket's min and max (so spikes survive)."""
    idx = downsample_index(values, max_points)
    return np.asarray(steps)[idx], np.asarray(values, dtype=np.float64)[idx]


def downsample_index(values: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """The positions `downsample` keeps (so other columns of the same points, such as their wall
    times, thin alike)."""
    values = np.asarray(values, dtype=np.float64)
    ok = np.flatnonzero(np.isfinite(values))
    n = len(ok)
    if n <= max_points:
        return ok
    size = int(np.ceil(n / (max_points // 2)))
    rows = int(np.ceil(n / size))
    padded = np.full(rows * size, np.nan)
    padded[:n] = values[ok]
    grid = padded.reshape(rows, size)
    base = np.arange(rows) * size
    return ok[np.unique(np.concatenate([base + np.nanargmin(grid, axis=1), base + np.nanargmax(grid, axis=1)]))]


class RunPlotter:
    """Draws run figures as PNG bytes, reusing one figure and its axes per layout.

    A layout is (number of panels, LR twin axis or not). Between runs the axes
    are emptied and their scales reset rather than rebuilt: building axes
    creates every tick object anew, which was about half the cost of a figure.
    """

    def __init__(self, width_in: float = 8.0, dpi: int = 100):
        from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state
        from matplotlib.ticker import FuncFormatter

        self._step_ticks = FuncFormatter(_steps_label)
        #: value-axis tick formatters, by kind
        self._ticks = {"number": FuncFormatter(_number_label), "pow2": FuncFormatter(_pow2_label)}
        self._Figure = Figure
        self.width_in = width_in
        self.dpi = dpi
        self._layouts: dict[tuple[int, bool, bool, int], tuple[object, list, object]] = {}

    def _layout(self, n: int, twin: bool, compact: bool = False, legend_rows: int = 1):
        """(figure, panel axes, twin axes or None), empty and ready to draw on, with room above the
        first panel for `legend_rows` rows of its legend."""
        cached = self._layouts.get((n, twin, compact, legend_rows))
        if cached is not None:
            fig, axes, tw = cached
            for ax in axes + ([tw] if tw is not None else []):
                _empty(ax)
            return cached
        extra = LEGEND_ROW_IN * (legend_rows - 1)
        height = 2.7 + 1.45 * (n - 1) + extra
        fig = self._Figure(figsize=(self.width_in, height), dpi=COMPACT_DPI if compact else self.dpi)
        # fixed margins in inches (room for the LR twin axis and the legends above each panel):
        # a layout engine would measure every text box per figure and double the drawing time
        fig.subplots_adjust(
            left=0.75 / self.width_in, right=1 - 0.85 / self.width_in,
            bottom=0.5 / height, top=1 - (0.3 + extra) / height, hspace=0.35 * 2.0 / max(n, 1),
        )
        heights = [2.0] + [1.0] * (n - 1)
        axes = list(fig.subplots(n, 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0])
        for ax in axes:
            ax.tick_params(labelsize=8)
            ax.grid(True, alpha=0.25)
        axes[-1].set_xlabel("step")
        axes[-1].xaxis.set_major_formatter(self._step_ticks)
        tw = None
        if twin:
            tw = axes[0].twinx()
            tw.set_ylabel("learning rate", fontsize=9, color=LINE_COLOR["lr"])
            tw.tick_params(labelsize=8, colors=LINE_COLOR["lr"])
        self._layouts[(n, twin, compact, legend_rows)] = (fig, axes, tw)
        return fig, axes, tw

    def png(self, rd: RunDiagnosis, compact: bool = False) -> bytes | None:
        """The run's figure as PNG bytes, or None when it logs nothing drawable; `compact` draws
        the loss panel alone, smaller (a thumbnail for a healthy run in a big report)."""
        panels = panels_for(rd, compact)
        if not panels:
            return None
        rows = -(-(len(panels[0].lines) + len(panels[0].marks)) // LEGEND_COLUMNS)
        fig, axes, twin = self._layout(len(panels), bool(panels[0].twin), compact, max(1, rows))
        for i, (ax, panel) in enumerate(zip(axes, panels)):
            handles, labels = _draw_panel(ax, panel, self._ticks, twin if panel.twin else None)
            h, lab = _draw_marks(ax, panel.marks)
            for other in axes[:i] + axes[i + 1 :]:  # a faint copy of each band keeps the eye aligned
                for m in panel.marks:
                    if m.kind == "band":
                        other.axvspan(m.x0, m.x1, color=m.color, alpha=0.06, lw=0)
            _legend(ax, handles + h, labels + lab)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=fig.dpi)
        return buf.getvalue()


def _empty(ax) -> None:
    """Remove what the last run drew and undo its scale and limits; keep ticks, grid and styling."""
    for artist in [*ax.lines, *ax.patches, *ax.texts, *ax.collections]:
        artist.remove()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.set_yscale("linear")  # also restores the default tick locators and formatters
    ax.relim()
    ax.autoscale(True)


def _number_label(x: float, _pos=None) -> str:
    """Value ticks as the report writes numbers: 3e-4 rather than 0.00030, 65,536 rather than 2^16."""
    return fmt_num(float(x))


def _pow2_label(x: float, _pos=None) -> str:
    """Loss-scale ticks as powers of two (2^16), the way AMP scales move; short at any magnitude."""
    if x <= 0:
        return fmt_num(float(x))
    k = float(np.log2(x))
    return f"2^{round(k)}" if abs(k - round(k)) < 1e-6 else fmt_num(float(x))


def _steps_label(x: float, _pos=None) -> str:
    """Step ticks as 0, 500, 50k, 1.2M: short enough that a 300k-step run keeps readable ticks."""
    a = abs(x)
    if a >= 1e6:
        return f"{x / 1e6:g}M"
    if a >= 1e4:
        return f"{x / 1e3:g}k"
    return f"{x:g}"


def _log_y(ax, formatter, base: float = 10) -> None:
    """Log y scale with plain-number labels and no minor ticks (mathtext labels and minor ticks triple the drawing time)."""
    from matplotlib.ticker import NullLocator

    ax.set_yscale("log", base=base)
    ax.yaxis.set_major_formatter(formatter)
    ax.yaxis.set_minor_locator(NullLocator())


def _draw_panel(ax, panel: Panel, ticks: dict, twin=None) -> tuple[list, list]:
    """Draw a panel's lines on `ax` (its LR on `twin`) at the scale the panel chose; returns the legend's (handles, labels)."""
    for line in panel.main:
        x, y = downsample(line.series.steps, line.series.values)
        style = {"marker": "o", "markersize": 3} if len(x) <= 60 and line.role == "val_loss" else {}
        ax.plot(x, y, color=line.color, lw=1.2, label=line.label, **style)
        _mark_isolated(ax, line.series, line.color)
    if panel.scale == "log2":
        _log_y(ax, ticks["pow2"], base=2)
    elif panel.scale == "log":
        _log_y(ax, ticks["number"])
    else:
        ax.yaxis.set_major_formatter(ticks["number"])
    if panel.ylim:
        ax.set_ylim(*panel.ylim)
    ax.set_ylabel(panel.ylabel, fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    for line in panel.twin[:1]:
        x, y = downsample(line.series.steps, line.series.values)
        twin.plot(x, y, color=LINE_COLOR["lr"], lw=1.0, ls="--", label=line.label)
        if panel.twin_scale == "log":
            _log_y(twin, ticks["number"])
        else:
            twin.yaxis.set_major_formatter(ticks["number"])
            if len(y) and y.min() >= 0 and y.max() > 0:
                # from zero (a constant LR is a flat line, not scaled noise), headroom for the legend
                twin.set_ylim(0, y.max() * 1.25)
        h, lab = twin.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    return handles, labels


def _draw_marks(ax, marks: list[Mark]) -> tuple[list, list]:
    """Draw the panel's evidence marks; returns their legend (handles, labels), one per mark."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles, labels = [], []
    for m in marks:
        ls = "--" if m.dashed else "-"
        if m.kind == "band":
            ax.axvspan(m.x0, m.x1, color=m.color, alpha=0.13, lw=0)
            for edge in (m.x0, m.x1):
                ax.axvline(edge, color=m.color, lw=0.8, alpha=0.6)
            handles.append(Patch(color=m.color, alpha=0.35))
        elif m.kind in ("vline", "vlines"):
            for x in m.xs or [m.x0]:
                ax.axvline(x, color=m.color, lw=1.3, ls=":" if m.dashed else "-", alpha=0.85)
            handles.append(Line2D([], [], color=m.color, lw=1.3, ls=":" if m.dashed else "-"))
        elif m.kind == "level":
            if m.x0 is None:
                ax.axhline(m.y, color=m.color, ls=ls, lw=1.2)
            else:
                ax.plot([m.x0, m.x1 if m.x1 is not None else ax.get_xlim()[1]], [m.y, m.y], color=m.color, ls=ls, lw=1.2)
            handles.append(Line2D([], [], color=m.color, lw=1.2, ls=ls))
        elif m.kind == "point":
            ax.plot([m.x0], [m.y], ls="", marker="*", markersize=11, color=m.color, markeredgecolor="black", markeredgewidth=0.5)
            handles.append(Line2D([], [], ls="", marker="*", markersize=9, color=m.color))
        elif m.kind == "ticks":
            ax.vlines(m.xs, 0.9, 1.0, transform=ax.get_xaxis_transform(), color=m.color, lw=1.5)
            handles.append(Line2D([], [], color=m.color, lw=1.5))
        else:
            continue
        labels.append(m.label)
    return handles, labels


def _mark_isolated(ax, s: Series, color: str) -> None:
    """Markers on finite points with no finite neighbour: a line needs two points, so a value
    between NaNs (or a one-point series) would otherwise not be drawn at all."""
    ok = s.finite
    before = np.concatenate([[False], ok[:-1]])
    after = np.concatenate([ok[1:], [False]])
    alone = ok & ~before & ~after
    if alone.any():
        ax.plot(s.steps[alone], s.values[alone], ls="", marker="o", markersize=4, color=color)


#: Legend entries per row above a panel, and the height one more row takes (inches).
LEGEND_COLUMNS = 3
LEGEND_ROW_IN = 0.17


def _legend(ax, handles: list, labels: list) -> None:
    """The legend above the axes, so it never hides a curve; findings' codes are in it too."""
    if handles:
        ax.legend(
            handles, [_short(lab) for lab in labels], fontsize=7.5, loc="lower right", bbox_to_anchor=(1.0, 1.0),
            ncol=min(LEGEND_COLUMNS, len(handles)), frameon=False, borderaxespad=0.1,
        )


def _short(label: str, limit: int = 48) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


#: Resolution of a compact figure (the loss panel alone, for healthy runs in a big report).
COMPACT_DPI = 50
#: Draw in worker processes from this many runs on.
POOL_MIN_RUNS = 64
#: Runs handed to a worker at a time.
_CHUNK = 16


class Plot(NamedTuple):
    """A run's figure: PNG bytes, or None with the reason there is none ('' = nothing to draw)."""

    png: bytes | None
    error: str = ""


_WORKER_PLOTTER: RunPlotter | None = None


def _draw(rd: RunDiagnosis, compact: bool = False, plotter: RunPlotter | None = None) -> Plot:
    """One run's figure; a plotting failure costs that run's figure, not the report."""
    global _WORKER_PLOTTER
    if plotter is None:
        _WORKER_PLOTTER = _WORKER_PLOTTER or RunPlotter()
        plotter = _WORKER_PLOTTER
    try:
        return Plot(plotter.png(rd, compact))
    except Exception as exc:  # noqa: BLE001 - shown in the report next to the run
        return Plot(None, f"plot failed ({type(exc).__name__}: {exc})")


def _init_worker() -> None:
    for var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def draw_all(
    runs: list[RunDiagnosis],
    progress: Callable[[int, int], None] | None = None,
    jobs: int | None = None,
    compact: list[bool] | None = None,
) -> Iterator[Plot]:
    """Each run's Plot, in order; many runs are drawn in a process pool (`jobs` workers, default:
    one per core). `compact[i]` draws run i as a loss-only thumbnail (`RunPlotter.png`)."""
    n = len(runs)
    compact = compact or [False] * n
    jobs = min(jobs or os.cpu_count() or 1, max(1, n // _CHUNK))
    done = 0
    if n >= POOL_MIN_RUNS and jobs >= 2:
        try:
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_init_worker) as pool:
                for plot in pool.map(_draw, runs, compact, chunksize=_CHUNK):
                    done += 1
                    yield plot
                    if progress:
                        progress(done, n)
        except (BrokenProcessPool, OSError):
            pass  # workers could not start or died: draw the rest here
    plotter = RunPlotter() if done < n else None
    for rd, small in zip(runs[done:], compact[done:]):
        done += 1
        yield _draw(rd, small, plotter)
        if progress:
            progress(done, n)
