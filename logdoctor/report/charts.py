"""A run's figure description as JSON for the HTML report, where uPlot draws it in the browser.

`figure.panels_for` decides what a run's figure shows (panels, lines, each
finding's marks, scales); this module only packs that description for the
page: each line thinned with the min/max-preserving `plots.downsample` (spikes
survive) to `CHART_POINTS` points, values rounded to `DIGITS` significant
digits, integer steps sent as gaps (`dx`), so a 1,000-run report stays a few MB. The page's script
(`assets/report.js`) reads the JSON when a run's card is opened.

`script_json` is the one way data enter the page: JSON in a
`<script type="application/json">` with `<`, `>` and `&` written as
`\\u003c`-style escapes, so no log-derived string (a run named
`</script><script>...`) can close the element or become markup.

Public API: `chart_spec(rd, compact=False) -> dict | None`, `panels_spec(panels)`, `overlay_key(line)`, `script_json(obj) -> str`.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..model import RunDiagnosis
from .figure import Line, Mark, Panel, panels_for
from .plots import downsample_index

#: Points per line at most (min and max of CHART_POINTS / 2 buckets): enough for a card's width.
CHART_POINTS = 300
#: Significant digits kept per value (what TensorBoard shows; a 0.32 -> 0.41 rise and a 1e-7 LR both survive).
DIGITS = 4


def chart_spec(rd: RunDiagnosis, compact: bool = False) -> dict | None:
    """The run's panels as plain data for the page, or None when nothing is drawable.
    `compact` keeps the loss panel alone (healthy runs in a big report)."""
    return panels_spec(panels_for(rd, compact=compact))


def panels_spec(panels: list[Panel]) -> dict | None:
    """Any figure description (a run's, a comparison's) as the page's chart JSON, or None when empty."""
    return {"panels": [_panel(p) for p in panels]} if panels else None


def script_json(obj) -> str:
    """`obj` as JSON that is safe inside `<script type="application/json">` (no `<`, `>`, `&` left raw)."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def overlay_key(line: Line) -> str:
    """What "Compare runs" offers this line as: its role ("train loss") where it has one, else its metric name
    (so runs that name their loss differently still overlay)."""
    return line.series.name if line.role in ("metric", "other") else line.role.replace("_", " ")


def _panel(p: Panel) -> dict:
    return {
        "key": p.key,
        "ylabel": p.ylabel,
        "scale": p.scale,
        "twinScale": p.twin_scale,
        "ylim": [_finite(v) for v in p.ylim] if p.ylim else None,
        "lines": [_line(line) for line in p.lines],
        "marks": [_mark(m) for m in p.marks],
    }


def _line(line: Line) -> dict:
    steps, values = line.series.steps, line.series.values
    idx = downsample_index(values, CHART_POINTS)
    # a run that is NaN / inf before its first or after its last finite point still spans all its steps
    # (a gap there), so the x-axis never stops at step 20 of a 300-step run that blew up
    if len(steps) and not line.series.finite[-1]:
        idx = np.append(idx, len(steps) - 1)
    if len(steps) and not line.series.finite[0]:
        idx = np.insert(idx, 0, 0)
    out = {
        "key": overlay_key(line),
        "label": line.label,
        "color": line.color,
        "twin": line.twin,
        **_steps(steps[idx]),
        "y": [float(f"{v:.{DIGITS}g}") if math.isfinite(v) else None for v in values[idx]],
    }
    if line.elapsed is not None:  # seconds since the run's start, for "Compare runs" along time
        out["t"] = [round(float(v), 1) if math.isfinite(v) else None for v in line.elapsed[idx]]
    return out


def _steps(x: np.ndarray) -> dict:
    """Integer steps as their first value and the gaps after it ("dx": about half the characters); others as they are."""
    if len(x) and np.all(np.mod(x, 1) == 0):
        return {"dx": np.diff(np.asarray(x, dtype=np.int64), prepend=0).tolist()}
    return {"x": [float(v) for v in x]}


def _mark(m: Mark) -> dict:
    out = {"kind": m.kind, "label": m.label, "color": m.color, "dashed": m.dashed}
    for key in ("x0", "x1", "y"):
        value = _finite(getattr(m, key))
        if value is not None:
            out[key] = value
    if m.xs:
        out["xs"] = [v for v in (_finite(x) for x in m.xs) if v is not None]
    return out


def _finite(value) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None
