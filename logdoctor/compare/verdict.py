"""Behind, level or ahead: one metric of the run against its baselines' band.

The verdict is read at the end of the shared step range, where the question "did my
change make training worse?" is answered: a run outside the band there, on the worse
side, is behind; on the better side, ahead; inside, level. A run whose metric stops
being a number (NaN, inf) for good while the baselines' is still one is behind from
that step, whatever it did before (`curves.nonfinite`). A run that is behind (or
ahead) departs at the first step from which it stays outside the band on that side to
the end. "How much" is said twice: at the end (the run's closing level against the
baselines' mean) and at each side's best (the lowest loss, the highest accuracy).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import curve, nonfinite
from ..model import Series
from ..roles import higher_is_better
from .band import Band, band

BEHIND, LEVEL, AHEAD = "behind", "level", "ahead"
#: Roles that are shares counted on examples (their sampling error widens the band; `band.counting_noise`).
COUNTED = ("val_acc", "train_acc", "val_err")


@dataclass(frozen=True)
class Level:
    """Where the run and the baselines stand at one point of comparison (the end, or each one's best)."""

    run: float
    baseline: float
    run_step: int
    baseline_step: int

    @property
    def change(self) -> float:
        return self.run - self.baseline

    @property
    def relative(self) -> float | None:
        return self.change / abs(self.baseline) if self.baseline else None


@dataclass(frozen=True)
class MetricComparison:
    """One shared metric: the verdict, where the run departs, and by how much, with the band it was read on."""

    role: str
    run_metric: str
    baseline_metrics: tuple[str, ...]
    higher_is_better: bool
    verdict: str
    #: The run's step from which it stays outside the band on the verdict's side (None when level).
    departs: int | None
    end: Level
    best: Level
    #: How far the end may sit from the baselines' mean and still be level (the band's half-width there, worse side).
    tolerance: float
    band: Band
    #: The first and last step compared: the range every side logged (the band's grid is its bucket centres).
    steps: tuple[int, int]


def compare_metric(role: str, run: Series, baselines: list[Series]) -> MetricComparison | None:
    """The verdict for one metric, or None when the sides share too few points to compare.

    Every side is cut to the steps all of them logged before it is smoothed: a run that goes on
    after its baseline stopped would otherwise be read, at the common end, through points the
    baseline never had."""
    lo = max(int(s.steps[0]) for s in (run, *baselines))
    hi = min(int(s.steps[-1]) for s in (run, *baselines))
    run, baselines = _within(run, lo, hi), [_within(b, lo, hi) for b in baselines]
    base_curves = [c for c in (curve(b) for b in baselines) if c is not None]
    if not base_curves:
        return None
    broken = _broken_at(run, base_curves)
    run_curve = curve(run)
    if run_curve is None and broken is None:
        return None
    counted = role in COUNTED
    b = band(run_curve, base_curves, counted)
    if b is None and run_curve is not None and broken is not None:
        b = band(None, base_curves, counted)  # too few numbers before it broke: the band alone
    if b is None:
        return None
    up = higher_is_better(role)
    worse = b.run < b.lo if up else b.run > b.hi
    better = b.run > b.hi if up else b.run < b.lo
    if broken is not None:
        verdict = BEHIND
        departs = _step(b, _stays_from(worse)) if len(worse) and worse[-1] else broken
        end = Level(float(run.values[-1]), float(b.centre[-1]), int(run.steps[-1]), _step(b, -1))
    else:
        verdict = BEHIND if worse[-1] else AHEAD if better[-1] else LEVEL
        outside = worse if verdict == BEHIND else better if verdict == AHEAD else None
        departs = None if outside is None else _step(b, _departure(b, outside, up if verdict == AHEAD else not up))
        end = Level(float(b.run[-1]), float(b.centre[-1]), _step(b, -1), _step(b, -1))
    pick = np.nanargmax if up else np.nanargmin
    run_best = int(pick(b.run)) if np.isfinite(b.run).any() else None
    base_best = int(pick(b.centre))
    best = Level(
        float(b.run[run_best]) if run_best is not None else end.run, float(b.centre[base_best]),
        _step(b, run_best) if run_best is not None else end.run_step, _step(b, base_best),
    )
    return MetricComparison(
        role=role,
        run_metric=run.name,
        baseline_metrics=tuple(dict.fromkeys(s.name for s in baselines)),
        higher_is_better=up,
        verdict=verdict,
        departs=departs,
        end=end,
        best=best,
        tolerance=float((b.centre[-1] - b.lo[-1]) if up else (b.hi[-1] - b.centre[-1])),
        band=b,
        steps=(lo, hi),
    )


def _within(series: Series, lo: int, hi: int) -> Series:
    """The part of a series logged at steps lo..hi."""
    keep = (series.steps >= lo) & (series.steps <= hi)
    return series if keep.all() else Series(series.name, series.steps[keep], series.values[keep])


def _broken_at(run: Series, baselines: list) -> int | None:
    """The step from which the run's metric is no number to its end (NaN, inf) while every baseline
    still logs numbers there, or None."""
    bad = nonfinite(run)
    if bad is None or not bad.tail or not all(c.last_step >= bad.step for c in baselines):
        return None
    return bad.step


def _stays_from(outside: np.ndarray) -> int:
    """First index from which every later one is outside (the last one is)."""
    inside = np.flatnonzero(~outside)
    return int(inside[-1]) + 1 if len(inside) else 0


def _departure(b: Band, outside: np.ndarray, above: bool) -> int:
    """Where the run departs: the first index from which its smoothed level stays outside the band,
    moved on to the first point logged there outside it too. A rolling median near the start already
    reads the points after it, so two runs that start from one loss part, smoothed, at step 0; what
    was logged says when they part (the run's point beyond every baseline's point there by the band's
    margin)."""
    i = _stays_from(outside)
    logged = np.vstack([np.interp(b.steps[i:], steps, values) for steps, values in b.baseline_points])
    if above:
        beyond = b.run_points[i:] > logged.max(axis=0) + (b.hi - np.vstack(b.baselines).max(axis=0))[i:]
    else:
        beyond = b.run_points[i:] < logged.min(axis=0) - (np.vstack(b.baselines).min(axis=0) - b.lo)[i:]
    return i + int(np.argmax(beyond)) if beyond.any() else i


def _step(b: Band, i: int) -> int:
    return int(round(b.steps[i]))
