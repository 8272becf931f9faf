"""Put a baseline's metric on the run's step axis, so both are read at the same point of training.

By default runs are aligned on their steps. Two runs whose steps mean different things
(another batch size, another gradient accumulation) are aligned on a counter both log:
the epoch (the `epoch` role) or the tokens or samples seen (`num_input_tokens_seen`,
`train/tokens`, `samples_seen`). A baseline's point logged at counter value c is then
placed at the run's step where the run's counter reads c; everything after that is
measured on the run's steps, so every step a report names is one of the run's.
"""
from __future__ import annotations

import numpy as np

from ..model import Series
from ..roles import tokens
from ..view import RunView

AXES = ("step", "epoch", "tokens", "samples")
#: Name words of a tokens-seen or samples-seen counter, and words that make such a name a rate.
_COUNTER_WORDS = {"tokens": {"tokens", "token", "toks"}, "samples": {"samples", "sample", "examples"}}
_RATE_WORDS = {"per", "second", "seconds", "sec", "s", "rate", "throughput", "runtime", "time"}


class AlignError(ValueError):
    """A run lacks the counter its alignment needs; str() is the one line shown."""


def counter(view: RunView, axis: str) -> Series | None:
    """The series that counts training progress on `axis` for this run (None on the step axis)."""
    if axis == "step":
        return None
    if axis == "epoch":
        return view.series("epoch")
    for name in view.counts:
        words = set(tokens(name))
        if words & _COUNTER_WORDS[axis] and not words & _RATE_WORDS:
            series = view.metric(name)
            if series is not None and _increasing(series) is not None:
                return series
    return None


def on_run_steps(series: Series, own: Series | None, run: Series | None) -> Series | None:
    """`series` (logged by a baseline whose counter is `own`) with its points placed at the run's steps
    where the run's counter `run` reads the same value; unchanged on the step axis (both None).

    Points outside the run's counter range are left out; points that land on one run step keep
    the last one logged there (as a re-logged step reads). None when no point lands."""
    if own is None and run is None:
        return series
    own_counter, run_counter = _increasing(own), _increasing(run)
    if own_counter is None or run_counter is None:
        return None
    at = _counter_at(series.steps.astype(np.float64), *own_counter)
    xs, steps = run_counter
    inside = np.isfinite(at) & (at >= xs[0]) & (at <= xs[-1])
    if not inside.any():
        return None
    placed = np.rint(np.interp(at[inside], xs, steps)).astype(np.int64)
    values = series.values[inside]
    last = np.r_[placed[1:] != placed[:-1], True]  # placed is non-decreasing: a counter never runs back
    return Series(series.name, placed[last], values[last])


def _counter_at(steps: np.ndarray, values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The counter read at `steps` between the steps where each of its values was first logged
    (NaN outside them): an epoch counted 0, 0, 1, 1, … reads 0.5 halfway through epoch 0, so the
    points of one epoch keep their order instead of collapsing onto its first step."""
    out = np.interp(steps, first, values)
    out[(steps < first[0]) | (steps > first[-1])] = np.nan
    return out


def _increasing(series: Series | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The counter's distinct values and the first step at which each was logged (a per-step epoch
    count 0, 0, 1, 1, … becomes the step where each epoch begins), or None when the counter runs
    backwards or has fewer than two values."""
    if series is None:
        return None
    ok = np.isfinite(series.values)
    values, steps = series.values[ok], series.steps[ok].astype(np.float64)
    if len(values) < 2 or np.any(np.diff(values) < 0):
        return None
    distinct, first = np.unique(values, return_index=True)
    return (distinct, steps[first]) if len(distinct) >= 2 else None
