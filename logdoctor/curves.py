"""Shared curve mathematics: every rule calls these, none re-implements them.

Scale-free by design: statistics are expressed relative to a series' own
range and noise so one threshold works for a loss of 11.0 and one of 0.002.
"""
from __future__ import annotations

import numpy as np


def first_nonfinite(values: np.ndarray) -> int | None:
    """Index of the first NaN/inf value, or None."""
    bad = np.flatnonzero(~np.isfinite(values))
    return int(bad[0]) if len(bad) else None


# --- relational helpers ---
# Relating one series to another (LR to loss, per-epoch validation to per-step
# training): values of one series at another's steps, windowed levels, and the
# step from which a series has settled at its final value.


def values_at(series, steps: np.ndarray) -> np.ndarray:
    """`series` linearly interpolated at `steps` (finite points only; NaN outside its step range)."""
    steps = np.asarray(steps, dtype=np.float64)
    ok = np.isfinite(series.values)
    if ok.sum() == 0:
        return np.full(len(steps), np.nan)
    xs, ys = series.steps[ok].astype(np.float64), series.values[ok]
    out = np.interp(steps, xs, ys)
    out[(steps < xs[0]) | (steps > xs[-1])] = np.nan
    return out


def window_level(series, lo: float, hi: float) -> float:
    """Median of the finite values logged at steps in [lo, hi] (NaN when there are none)."""
    mask = (series.steps >= lo) & (series.steps <= hi) & np.isfinite(series.values)
    return float(np.median(series.values[mask])) if mask.any() else float("nan")


def settle_index(values: np.ndarray, tol: float) -> int | None:
    """First index from which `values` stay within `tol` x (peak - final) of the final value.

    "When did the LR reach its floor": for a schedule that decays and then sits
    at its last value this is where the sitting starts. None when the series
    never moved (peak == final) or has no finite values.
    """
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return None
    final, peak = finite[-1], np.max(finite)
    span = peak - final
    if span <= 0:
        return None
    far = np.flatnonzero(~(np.abs(values - final) <= tol * span))
    return 0 if len(far) == 0 else int(far[-1]) + 1 if far[-1] + 1 < len(values) else None
