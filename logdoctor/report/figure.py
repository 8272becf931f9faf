"""What a run's figure shows, as data: its panels, their lines, and the marks each finding asks for.

One description, two drawers: `plots.py` draws it with matplotlib (the
Markdown report's PNGs) and `html.py` hands it to the page as JSON (drawn
by uPlot in the browser). So both reports show the same evidence.

The loss panel shows the train and validation loss, and where a loss is logged
in parts (YOLO's box / cls / dfl losses, a GAN's, PPO's), every part in a shade
of its role's colour, so one part never stands for the whole.

Finding-first: a finding draws its own evidence, read from what the rule
wrote (nothing is measured here):

* its step range (`Finding.steps`) as a shaded band on the panel of its metric;
* evidence steps as marks: `val_best_step` (a point at `val_best` and a level
  line after it, so the gap above the best shows), `floor_step` (where the LR
  reached its floor), `onset_step`, `first_nonfinite_step`, `boundary_steps`
  (epoch boundaries), `spike_steps` (ticks along the top);
* `clip_threshold` as a level line on the grad-norm panel, whose scale then
  turns logarithmic if the threshold sits decades below the norms (every drawer
  keeps level lines inside the axis);
* `chance_level` (ln K) as a level line, so a loss stuck at chance shows it;
* the task metric the evidence names (`task_metric`) and any other metric a
  finding is about (accuracy, reward) on a panel of their own, not on the loss axis.

Scales are chosen so the evidence is visible: a panel spanning decades is
logarithmic, unless a finding's own range (a validation rise of 0.32 -> 0.41)
would shrink to a sliver there; then the panel is linear and its limits frame
that range (`Panel.ylim`). A panel whose curve a `flat` finding is about is
linear from zero, so noise around a level that never moves keeps its size.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..curves import first_nonfinite
from ..model import Finding, RunDiagnosis, Series
from ..view import RunView
from .text import fmt_num

SEVERITY_COLOR = {"critical": "#d62728", "warning": "#ff9f1c", "info": "#4a90d9"}
LINE_COLOR = {
    "train_loss": "#1f4e9c",
    "val_loss": "#e8710a",
    "lr": "#7f7f7f",
    "grad_norm": "#7b3fa0",
    "loss_scale": "#2a9d5c",
    "metric": "#0f8b8d",
    "other": "#444444",
}
NONFINITE_COLOR = "#b00020"
#: Shades for the other parts of a loss logged in parts, per role (the first part has the role's colour).
PART_COLORS = {"train_loss": ["#5b8fd6", "#0b2a66", "#93b8ea", "#2f6db5"], "val_loss": ["#f4a259", "#a34a00", "#f7c08a", "#c96b1a"]}
#: Parts of one loss drawn beside its primary metric at most.
MAX_PARTS = 4
#: How a logger names the same loss aggregated another way (per step, per epoch, averaged).
_AGGREGATE = re.compile(r"[_/.-]?(step|epoch|avg|mean|ema|smoothed?)$", re.I)
#: A panel spanning more than this ratio (max / min, all values positive) is drawn on a log scale.
LOG_SPAN = 100
#: ... unless the focused finding's own range would take less than this share of its height.
MIN_EVIDENCE_SHARE = 0.15


@dataclass
class Line:
    """One curve: the full series (each drawer thins it its own way), on the main or the LR axis."""

    role: str
    series: Series
    label: str
    color: str
    twin: bool = False
    #: Seconds since the run's first logged point at each of the series' steps (NaN where a step has
    #: no time), for a time axis; None when the run logs no wall time.
    elapsed: np.ndarray | None = None


@dataclass
class Mark:
    """A piece of evidence drawn over a panel.

    kind: "band" (x0..x1 shaded), "vline" (at x0), "level" (y from x0 to x1),
    "point" (x0, y), "ticks" (each of xs, along the top). `label` goes in the
    legend, never over the data.
    """

    kind: str
    label: str
    color: str
    x0: float | None = None
    x1: float | None = None
    y: float | None = None
    xs: list[float] = field(default_factory=list)
    dashed: bool = False


@dataclass
class Panel:
    """One axes' worth: lines, marks, the value scale ("linear", "log", "log2") and, where a
    finding must stay visible, the y limits that frame it."""

    key: str
    ylabel: str
    lines: list[Line] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    scale: str = "linear"
    ylim: tuple[float, float] | None = None
    twin_scale: str = "linear"

    @property
    def metrics(self) -> set[str]:
        return {line.series.name for line in self.lines}

    @property
    def main(self) -> list[Line]:
        return [line for line in self.lines if not line.twin]

    @property
    def twin(self) -> list[Line]:
        return [line for line in self.lines if line.twin]


def _label(role: str, name: str) -> str:
    split = {"train_loss": "train", "val_loss": "val"}.get(role)
    if role == "lr":
        return name if name.lower() in ("lr", "learning_rate") else f"lr: {name}"
    return f"{split}: {name}" if split and split != name else name


def panels_for(rd: RunDiagnosis, compact: bool = False) -> list[Panel]:
    """The run's panels, top to bottom, with every finding's marks; [] when nothing is drawable.
    `compact` keeps the loss panel alone (a thumbnail)."""
    view = RunView(rd.run)

    def get(name: str | None) -> Series | None:
        series = view.metric(name) if name else None
        return series if series is not None and len(series) else None

    start = _first_time(rd.run)

    def line(role: str, s: Series, twin: bool = False, color: str | None = None) -> Line:
        color = color or LINE_COLOR.get(role, LINE_COLOR["other"])
        return Line(role, s, _label(role, s.name), color, twin, _elapsed(rd.run, s, start))

    loss = Panel("loss", "loss")
    for role in ("train_loss", "val_loss"):
        s = get(rd.roles.get(role))
        if s is not None:
            loss.lines.append(line(role, s))
        # a loss logged in parts (YOLO's box, cls and dfl; a GAN's; PPO's) shows every part, not the first alone
        parts = [get(n) for n in _loss_parts(rd.roles.get(role), view.all_roles.get(role, []))]
        for n, s in enumerate(p for p in parts if p is not None):
            part = line("other", s, color=PART_COLORS[role][n % len(PART_COLORS[role])])
            part.label = _label(role, s.name)
            loss.lines.append(part)
    panels = [loss]
    for role, ylabel in (("grad_norm", "grad norm"), ("loss_scale", "loss scale")):
        s = get(rd.roles.get(role))
        if s is not None:
            panels.append(Panel(role, ylabel, [line(role, s)]))
    lr = get(rd.roles.get("lr"))
    placed = {n for p in panels for n in p.metrics} | ({lr.name} if lr is not None else set())
    # metrics the findings are about (a task metric the fix names, a reward) get a panel of their own
    for name in _finding_metrics(rd.findings):
        s = get(name) if name not in placed else None
        if s is not None:
            metric_panel = next((p for p in panels if p.key == "metric"), None)
            if metric_panel is None:
                metric_panel = Panel("metric", "metric")
                panels.append(metric_panel)
            metric_panel.lines.append(line("metric", s))
            placed.add(name)
    panels = [p for p in panels if p.lines]
    if not panels:
        return []
    if lr is not None:
        panels[0].lines.append(line("lr", lr, twin=True))
    if compact:
        panels = panels[:1]
    for f in rd.findings:
        _mark(f, panels)
    for p in panels:
        _nonfinite_marks(p)
        _choose_scales(p, rd.findings)
    return panels


def _first_time(run) -> float | None:
    """The run's first logged wall time (seconds), or None when it logs none."""
    if run.scalars.is_empty() or "wall_time" not in run.scalars.columns:
        return None
    first = run.scalars.get_column("wall_time").min()
    return float(first) if first is not None and np.isfinite(first) else None


def _elapsed(run, series: Series, start: float | None) -> np.ndarray | None:
    """Seconds since `start` at each step of `series`: the last wall time logged at that step, as
    the series keeps the last value (NaN for a step with none); None without wall times."""
    if start is None:
        return None
    rows = run.scalars.filter(pl.col("metric") == series.name).select("step", "wall_time").drop_nulls()
    if rows.is_empty():
        return None
    steps, times = rows.get_column("step").to_numpy(), rows.get_column("wall_time").to_numpy()
    order = np.argsort(steps, kind="stable")
    steps, times = steps[order], times[order]
    last = np.r_[steps[1:] != steps[:-1], True]
    steps, times = steps[last], times[last]
    at = np.clip(np.searchsorted(steps, series.steps), 0, len(steps) - 1)
    return np.where(steps[at] == series.steps, times[at] - start, np.nan)


def _loss_parts(primary: str | None, names: list[str]) -> list[str]:
    """The other metrics of a loss role that are parts of the loss beside the primary one (at most
    `MAX_PARTS`), not the same loss aggregated another way (`train_loss_epoch` beside
    `train_loss_step`, `Loss/Train` beside `Loss/Train_Step`)."""
    if primary is None:
        return []
    base = _AGGREGATE.sub("", primary)
    return [n for n in names if n != primary and _AGGREGATE.sub("", n) != base][:MAX_PARTS]


def _finding_metrics(findings: list[Finding]) -> list[str]:
    names = []
    for f in findings:
        for name in (f.metric, f.evidence.get("task_metric")):
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


def _home(f: Finding, panels: list[Panel]) -> int:
    """Index of the panel that shows the finding's metric (the first panel otherwise)."""
    return next((i for i, p in enumerate(panels) if f.metric in p.metrics), 0)


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value) else None


def _mark(f: Finding, panels: list[Panel]) -> None:
    """Add the finding's band and its evidence marks to the panels they belong on."""
    color = SEVERITY_COLOR.get(f.severity, SEVERITY_COLOR["info"])
    home = panels[_home(f, panels)]
    ev = f.evidence
    if f.steps:
        a, b = (float(x) for x in f.steps)
        where = f"steps {fmt_num(a)}–{fmt_num(b)}" if a != b else f"step {fmt_num(a)}"
        home.marks.append(Mark("band" if a != b else "vline", f"{f.code} ({where})", color, a, b))
    best_step, best = _num(ev.get("val_best_step")), _num(ev.get("val_best"))
    if best_step is not None and best is not None:
        end = float(f.steps[1]) if f.steps else None
        home.marks.append(Mark("point", f"best val {fmt_num(best)} (step {fmt_num(best_step)})", color, best_step, y=best))
        home.marks.append(Mark("level", "best validation level", color, best_step, end, y=best, dashed=True))
        for p in panels:
            if p.key == "metric" and ev.get("task_metric") in p.metrics:
                p.marks.append(Mark("vline", f"best validation step {fmt_num(best_step)}", color, best_step, dashed=True))
    for key, text in (("floor_step", "LR at its floor"), ("onset_step", "blow-up starts"), ("first_nonfinite_step", "first {kind}")):
        at = _num(ev.get(key))
        if at is not None:
            what = text.format(kind=ev.get("kind") or "non-finite value")
            target = panels[0] if key == "floor_step" else home
            target.marks.append(Mark("vline", f"{what} at step {fmt_num(at)}", color, at, dashed=key != "first_nonfinite_step"))
    for key, text, kind in (("boundary_steps", "epoch boundaries", "vlines"), ("spike_steps", "spikes", "ticks")):
        xs = [float(x) for x in ev.get(key) or [] if _num(x) is not None]
        if xs:
            home.marks.append(Mark("ticks" if kind == "ticks" else "vlines", f"{text} ({len(xs)})", color, xs=xs, dashed=True))
    chance = _num(ev.get("chance_level"))
    if chance is not None:
        home.marks.append(Mark("level", f"chance level {fmt_num(chance)} (ln K)", "#888888", y=chance, dashed=True))
    threshold = _num(ev.get("clip_threshold"))
    if threshold is not None:
        target = next((p for p in panels if p.key == "grad_norm"), home)
        target.marks.append(Mark("level", f"clip threshold {fmt_num(threshold)}", color, y=threshold, dashed=True))


def _nonfinite_marks(panel: Panel) -> None:
    """Where a drawn curve first turns NaN / inf, unless a finding already marks it (label in the legend)."""
    marked = {m.x0 for m in panel.marks if m.kind == "vline"}
    for line in panel.main:
        bad = first_nonfinite(line.series.values)
        if bad is not None and float(line.series.steps[bad]) not in marked:
            at = float(line.series.steps[bad])
            panel.marks.append(Mark("vline", f"{line.series.values[bad]} in {line.series.name} from step {fmt_num(at)}", NONFINITE_COLOR, at))


def _finite_range(lines: list[Line], extra: list[float]) -> tuple[float, float] | None:
    parts = [line.series.values[line.series.finite] for line in lines] + [np.asarray(extra, dtype=float)]
    values = np.concatenate(parts) if parts else np.array([])
    if not len(values):
        return None
    return float(values.min()), float(values.max())


def _choose_scales(panel: Panel, findings: list[Finding]) -> None:
    """Log where the panel spans decades, unless that hides the focused finding's range (then linear, framed)."""
    levels = [m.y for m in panel.marks if m.kind == "level" and m.y is not None]
    span = _finite_range(panel.main, levels)
    twin = _finite_range(panel.twin, [])
    if twin and twin[0] > 0 and twin[1] / twin[0] > 1000:
        panel.twin_scale = "log"
    if span is None or span[0] <= 0:
        return
    lo, hi = span
    if _flat_here(panel, findings):
        # a loss that does not move, drawn from zero: its noise keeps its true size instead of
        # filling the height like an oscillation
        panel.ylim = (0.0, hi * 1.08)
        return
    if panel.key == "loss_scale":
        panel.scale = "log2"
        return
    if hi / lo <= LOG_SPAN:
        return
    focus = _focus(panel, findings)
    if focus is not None:
        f_lo, f_hi = focus
        share = np.log(f_hi / f_lo) / np.log(hi / lo) if f_lo > 0 else 0.0
        if share < MIN_EVIDENCE_SHARE:
            pad = max(f_hi - f_lo, 1e-12 * max(abs(f_hi), 1.0))
            bottom = f_lo - 2 * pad
            # from zero when that costs little height (the train curve then stays in view below)
            panel.ylim = (0.0 if bottom < 0.5 * f_lo else bottom, f_hi + 0.5 * pad)
            return
    panel.scale = "log"


def _flat_here(panel: Panel, findings: list[Finding]) -> bool:
    """Whether a warning or critical `flat` finding is about a curve on this panel."""
    return any(f.code == "flat" and f.severity in ("critical", "warning") and f.metric in panel.metrics for f in findings)


def _focus(panel: Panel, findings: list[Finding]) -> tuple[float, float] | None:
    """The value range of the first warning or critical finding on this panel whose range starts
    after its curve does (a late event: the rise after the best validation step, the blow-up)."""
    for f in findings:
        if f.severity not in ("critical", "warning") or not f.steps:
            continue
        line = next((ln for ln in panel.main if ln.series.name == f.metric), None)
        if line is None:
            continue
        s = line.series
        if f.steps[0] <= s.steps[0]:
            continue
        inside = (s.steps >= f.steps[0]) & (s.steps <= f.steps[1]) & s.finite
        if inside.sum() >= 2:
            return float(s.values[inside].min()), float(s.values[inside].max())
    return None
