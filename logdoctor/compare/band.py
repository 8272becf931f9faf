"""The noise band a run must leave to count as behind or ahead of its baseline.

Each curve is read as `curves.curve` reads it for the rules (bucketed, rolling-median
smoothed); its local scatter is the Hampel filter's rolling robust sigma around that
median (`curves.hampel`), so a training loss noisy at 2.3 and quiet at 0.02 gets a band
as wide as its noise where it is.

An accuracy is also as uncertain as the number of examples it was counted on
(`counting_noise`), which its scatter alone does not show.

* Several baselines (seeds of one recipe): the band spans their smoothed curves (lowest
  to highest at each step) widened by `Z` times the point noise: where seeds disagree,
  the band is as wide as their disagreement.
* One baseline: the band is that baseline widened by `Z` times the two runs' own noise
  (the run's and the baseline's point scatter added in quadrature).

Seeds also differ in pace: on a curve still falling fast at the last step, one seed stands
where another stood a few evaluations earlier. The band is widened (in quadrature) by how
far the baselines move in `LAG` of the steps around each step (`lag_allowance`): a
char-level LM's validation loss at step 400, falling 0.04 per 25 steps, read 4 of 12 seed
pairs as apart with the noise alone; a converged curve gets nothing from it.

Either way the band is never narrower than `MIN_SHARE` of the distance the baselines
travelled (the range of their mean curve): a validation loss evaluated on a fixed set
scatters far less from one evaluation to the next than from one seed to another (two
seeds of a digits MLP end 0.047 and 0.054 with 0.003 of scatter), and a change that
small next to what training achieved is no verdict on a change of code.

Everything is measured on the run's own grid (its bucket steps inside the step range
both sides logged), so a run's departure is one of its own steps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..curves import Curve, hampel

#: How many noise sigmas of scatter the band allows either side.
Z = 2.0
#: The least half-width of the band, as a share of the distance the baselines travelled.
MIN_SHARE = 0.01
#: A lag, as a share of the step, that is no verdict: a run at step t level with where the baselines
#: stood between (1 - LAG) t and (1 + LAG) t, on a curve still falling fast.
LAG = 0.15


@dataclass(frozen=True)
class Band:
    """The run's level and the baselines' band on the run's grid (all arrays of one length)."""

    steps: np.ndarray  # the run's bucket steps inside the shared range
    run: np.ndarray  # the run's smoothed level
    centre: np.ndarray  # the baselines' mean smoothed level
    lo: np.ndarray
    hi: np.ndarray
    baselines: tuple[np.ndarray, ...]  # each baseline's smoothed level
    #: What was logged, before smoothing: the run's points on the grid (NaN with no run curve) and each
    #: baseline's (steps, values) inside the shared range (bucket medians of a long series).
    run_points: np.ndarray
    baseline_points: tuple[tuple[np.ndarray, np.ndarray], ...]
    #: "seeds" when several baselines span the band, "noise" when one baseline and the runs' noise do.
    source: str


def point_noise(c: Curve) -> np.ndarray:
    """Local scatter (sigma) of a curve's bucket medians around their rolling median, floored by the rounding."""
    return hampel(c.y, floor=c.quantum / math.sqrt(12.0)).sigma


def counting_noise(values: np.ndarray) -> np.ndarray:
    """The sampling error of a share counted on n examples, sqrt(p (1 - p) / n), at each value; zeros when
    the values are no such share.

    An accuracy evaluated on one fixed set of n examples moves in steps of 1/n and barely scatters from
    one evaluation to the next (the same examples every time), yet which examples a model gets right
    changes with the seed: on 450 examples, 0.98 is 0.98 +- 0.0066, two seeds 2 examples apart are
    level. n is read off the grid the values lie on (every value a whole number of 1/n apart; percents
    too); a metric on no such grid (a loss, an F1) gets no floor from here."""
    v = np.asarray(values, dtype=float)
    scale = 100.0 if np.nanmax(np.abs(v)) > 1.0 else 1.0
    p = v / scale
    distinct = np.unique(p[np.isfinite(p)])
    if len(distinct) < 5 or distinct[0] < 0 or distinct[-1] > 1:
        return np.zeros_like(v)
    grain = float(np.min(np.diff(distinct)))
    units = (distinct - distinct[0]) / grain
    # the closest two values may be some examples apart (3/n): the grid is the grain over m <= 20 (five
    # values off any grid land within 0.02 of one by chance 7 times in 10,000, six or more never in 3,000)
    m = next((m for m in range(1, 21) if np.max(np.abs(units * m - np.round(units * m))) <= 0.02), None)
    n = round(m / grain) if m is not None else 0
    if not 10 <= n <= 1_000_000:
        return np.zeros_like(v)
    return scale * np.sqrt(np.clip(p * (1 - p), 0, None) / n)


def _noise(c: Curve, counted: bool) -> np.ndarray:
    """A curve's noise at each of its points: its scatter and, for a counted share, its sampling error."""
    return np.hypot(point_noise(c), counting_noise(c.y)) if counted else point_noise(c)


def lag_allowance(c: Curve, grid: np.ndarray) -> np.ndarray:
    """How far the curve moves in `LAG` x t steps around each step t of `grid`: its local slope
    times that many steps. The slope is a central difference of the logged points (bucket medians)
    over a twentieth of them each side, at least two: the rolling median flattens at the ends,
    where a curve still falling fast at the last step matters most."""
    n = len(c.steps)
    if n < 3:
        return np.zeros(len(grid))
    k = max(2, n // 20)
    ahead, behind = np.minimum(np.arange(n) + k, n - 1), np.maximum(np.arange(n) - k, 0)
    slope = np.abs(c.y[ahead] - c.y[behind]) / np.maximum(c.steps[ahead] - c.steps[behind], 1e-12)
    return np.interp(grid, c.steps, slope) * LAG * np.abs(grid)


def band(run: Curve | None, baselines: list[Curve], counted: bool = False) -> Band | None:
    """The run against the baselines over the steps all of them logged; None when they share fewer
    than 3 of the run's points. With no run curve (a run whose metric was never a number for long),
    the band alone on the first baseline's steps, the run's level NaN there. `counted`: the metric is
    a share counted on examples (an accuracy, an error rate), whose sampling error counts too."""
    sides = [c for c in (run, *baselines) if c is not None]
    lo_step = max(c.first_step for c in sides)
    hi_step = min(c.last_step for c in sides)
    own = run if run is not None else baselines[0]
    inside = (own.steps >= lo_step) & (own.steps <= hi_step)
    if inside.sum() < 3:
        return None
    grid = own.steps[inside]
    levels = tuple(np.interp(grid, b.steps, b.smooth) for b in baselines)
    noise_base = np.mean([np.interp(grid, b.steps, _noise(b, counted)) for b in baselines], axis=0)
    noise_run = _noise(run, counted)[inside] if run is not None else 0.0
    stack = np.vstack(levels)
    centre = stack.mean(axis=0)
    lag = np.mean([lag_allowance(b, grid) for b in baselines], axis=0)
    margin = np.maximum(np.hypot(Z * np.hypot(noise_run, noise_base), lag), MIN_SHARE * float(np.ptp(centre)))
    return Band(
        steps=grid,
        run=run.smooth[inside] if run is not None else np.full(len(grid), np.nan),
        centre=centre,
        lo=stack.min(axis=0) - margin,
        hi=stack.max(axis=0) + margin,
        baselines=levels,
        source="seeds" if len(baselines) > 1 else "noise",
        run_points=run.y[inside] if run is not None else np.full(len(grid), np.nan),
        baseline_points=tuple((b.steps[k], b.y[k]) for b in baselines for k in [(b.steps >= lo_step) & (b.steps <= hi_step)]),
    )
