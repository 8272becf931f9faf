"""Tiny curve pictures for tables: a unicode sparkline (terminal, Markdown) and an inline SVG one (HTML).

Each is a glance at the shape of the main loss, not a measurement: values are
bucketed to the width (bucket mean of the finite values, so one noisy point
does not hide the trend; a bucket holding any NaN/inf is drawn as '×' in the
unicode line and marked with a red dot in the SVG one), and drawn on a log scale when the
positive curve spans more than two decades, so a divergence does not flatten
the rest into one line. Full height is at least a 10% change of the curve's
level, so a flat loss with noise looks flat.
"""
from __future__ import annotations

import numpy as np

from ..model import Series

BLOCKS = "▁▂▃▄▅▆▇█"
#: Full height means at least this change relative to the curve's level: a loss going 4.577 → 4.578
#: with noise is a flat line, not a mountain range.
MIN_RELATIVE_SPAN = 0.1


def _buckets(values: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per bucket: mean of its finite values (NaN when none) and whether it held a non-finite value."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    edges = np.linspace(0, n, min(width, n) + 1).astype(int)
    means = np.full(len(edges) - 1, np.nan)
    bad = np.zeros(len(edges) - 1, dtype=bool)
    for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        chunk = values[a:b]
        ok = np.isfinite(chunk)
        bad[i] = not ok.all()
        if ok.any():
            means[i] = chunk[ok].mean()
    return means, bad


def _scaled(means: np.ndarray) -> np.ndarray:
    """Bucket means mapped to [0, 1] (log scale when they span > 2 decades), NaN where empty."""
    finite = means[np.isfinite(means)]
    if finite.size == 0:
        return means
    vals = means
    if finite.min() > 0 and finite.max() / finite.min() > 100:
        vals = np.log10(means)
        finite = np.log10(finite)
    span = np.abs(finite).max()
    if span > 1e300:  # values near the float maximum: their differences would overflow to inf
        vals, finite = vals / span, finite / span
    lo, hi = finite.min(), finite.max()
    floor = MIN_RELATIVE_SPAN * max(abs(lo), abs(hi))
    if hi - lo < floor:  # a curve that barely moves is drawn nearly flat, not stretched to full height
        lo, hi = (lo + hi - floor) / 2, (lo + hi + floor) / 2
    if hi - lo <= 1e-300:
        return np.where(np.isfinite(vals), 0.5, np.nan)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(vals), (vals - lo) / (hi - lo), np.nan)  # a bucket whose mean overflowed is blank


def sparkline(series: Series | None, width: int = 24) -> str:
    """Unicode sparkline of a series, '' when there is nothing to draw."""
    if series is None or len(series) == 0:
        return ""
    means, bad = _buckets(series.values, width)
    scaled = _scaled(means)
    chars = []
    for s, b in zip(scaled, bad):
        if b:
            chars.append("×")
        elif np.isnan(s):
            chars.append(" ")
        else:
            chars.append(BLOCKS[min(len(BLOCKS) - 1, int(s * len(BLOCKS)))])
    return "".join(chars)


def svg_sparkline(series: Series | None, width: int = 120, height: int = 24, color: str = "#555") -> str:
    """A small inline SVG polyline of a series (no text from the log goes into it), '' when empty."""
    if series is None or len(series) == 0:
        return ""
    means, bad = _buckets(series.values, width // 2)
    scaled = _scaled(means)
    n = len(scaled)
    xs = np.linspace(1, width - 1, n) if n > 1 else np.array([width / 2])
    segments: list[list[str]] = [[]]
    for x, s in zip(xs, scaled):
        if np.isnan(s):
            segments.append([])
            continue
        segments[-1].append(f"{x:.1f},{height - 2 - s * (height - 4):.1f}")
    lines = "".join(
        f'<polyline points="{" ".join(seg)}" fill="none" stroke="{color}" stroke-width="1.3"/>'
        for seg in segments
        if len(seg) > 1
    )
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="3" r="1.8" fill="#c0392b"/>' for x, b in zip(xs, bad) if b
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="curve">{lines}{dots}</svg>'
    )
