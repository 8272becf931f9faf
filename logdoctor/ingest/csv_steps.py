"""Which column of a wide CSV is the step, and how to make it a global step.

Writers name their step column in many ways (`step`, `global_step`,
`train/global_step` from HF + W&B, `trainer/global_step` from Lightning + W&B,
`time/total_timesteps` from Stable-Baselines3, `Step`, `iteration`, `iter`,
`batch`, `epoch`), so a column is a counter by the tokens of its name, split
the way roles splits metric names: its last token names a counter and the
name has no metric role (`train_loss_step` is a loss). Counters differ in
grain: a step beats an iteration or batch count, which beats the epoch, which
beats a pandas index column.

Some counters are not a global step as written, and reading them as one would
merge distinct rows into one point:

* a counter that restarts every epoch (`epoch,iter,...`, `epoch,batch,loss`):
  the step becomes epoch index x period + counter, the period being the
  counter's span in an epoch plus one stride: the true global step when epochs
  have equal length, monotone either way;
* an epoch column that is fractional (0.25, 0.5...) or repeats while rising:
  it is no step, the row order is (and the epoch stays a metric).

Rows with a blank step but an epoch (Lightning validation rows, epoch-end
rows) are placed at the last step logged in their epoch; a finer counter that
still leaves most rows blank, where the epoch is given on more rows, yields
the step to the epoch.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..roles import classify, tokens

#: Last name tokens that make a column a counter, by grain (finer first).
_GRAIN = {
    "step": 0, "steps": 0, "timestep": 0, "timesteps": 0, "updates": 0,
    "iteration": 1, "iterations": 1, "iter": 1, "iters": 1, "batch": 1,
    "epoch": 2, "epochs": 2,
}
EPOCH_GRAIN = 2
#: Index columns pandas writes (`df.to_csv()` without index=False): the row number in all but name.
INDEX_COLUMNS = ("", "Unnamed: 0", "index")
_INDEX_GRAIN = 3
#: Counters that only count within something else: they do not make a CSV a training log on their own
#: (a data table may well have a `batch` column).
_INNER_ONLY = {"batch"}
#: The private name of a built global step (a metric may itself be called anything else).
_BUILT = "__ld_global_step"


def grain(name: str) -> int | None:
    """How fine a counter the column name names (0 step, 1 iteration/batch, 2 epoch, 3 pandas index); None: no counter."""
    if name in INDEX_COLUMNS:
        return _INDEX_GRAIN
    toks = tokens(name)
    if not toks or toks[-1] not in _GRAIN or classify(name) not in (None, "epoch"):
        return None
    return _GRAIN[toks[-1]]


def names_step(name: str) -> bool:
    """True when the column name alone says the CSV is a log over steps or epochs."""
    return grain(name) in (0, 1, EPOCH_GRAIN) and tokens(name)[-1] not in _INNER_ONLY


def finer_than_epoch(columns: list[str]) -> bool:
    """True when some column counts steps, iterations or batches (not just epochs)."""
    return any(grain(c) in (0, 1) for c in columns)


#: The note a run read without a step counter carries (its steps are row numbers: where its lines
#: sit in the run, and how long the run is, are unknown).
ROW_STEP_NOTE = "row number used as the step"


@dataclass
class StepPlan:
    """How a wide frame's rows get their step."""

    frame: pl.DataFrame
    #: The step column of `frame`; None: the row number is the step.
    column: str | None
    #: Columns that are not metrics (the step, a counter folded into it).
    exclude: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def hand_over(self) -> pl.DataFrame:
        """The frame, no longer held here: `wide_to_tidy` then lets a long log's wide columns go
        one by one as they become tidy, instead of holding both tables whole."""
        frame, self.frame = self.frame, pl.DataFrame()
        return frame


def plan(frame: pl.DataFrame) -> StepPlan:
    """The step of each row: the finest usable counter, rebuilt when it restarts every epoch."""
    counters = sorted((g, i, c) for i, (c, dtype) in enumerate(frame.schema.items()) if dtype.is_numeric() and (g := grain(c)) is not None)
    epoch = next((c for g, _, c in counters if g == EPOCH_GRAIN), None)
    for g, _, name in counters:
        if not _usable(frame.get_column(name), g):
            continue
        if g < EPOCH_GRAIN and epoch is not None and _restarts_each_epoch(frame, name, epoch):
            got = _global_step(frame, name, epoch)
        else:
            got = StepPlan(frame, name, {name})
        if g < EPOCH_GRAIN and epoch is not None:
            _place_by_epoch(got, epoch, name)
            if _epoch_places_more(got, frame, epoch):
                continue
        return got
    fractional = [c for g, _, c in counters if g == EPOCH_GRAIN]
    why = f"{fractional[0]} is fractional or repeats (no step)" if fractional else "no step column"
    return StepPlan(frame, None, notes=[f"{why}: {ROW_STEP_NOTE}"])


def _epoch_places_more(got: StepPlan, frame: pl.DataFrame, epoch: str) -> bool:
    """A finer counter that leaves most rows without a step, where the epoch gives one to more rows
    (a pasted Keras log that begins with a cut progress bar holds one batch count, then only
    `Epoch N/M` records): the epoch is the step, not the count of one stray row."""
    step = got.frame.get_column(got.column)
    given = step.len() - step.null_count()
    return step.null_count() > given and _usable(frame.get_column(epoch), EPOCH_GRAIN) and frame.get_column(epoch).count() > given


def _usable(values: pl.Series, grain_: int) -> bool:
    """A counter usable as the step: whole numbers, and an epoch only when it tells every row apart
    (an epoch that is fractional or repeats while rising would merge distinct rows)."""
    v = _floats(values, values.is_not_null() if values.null_count() else None)
    if not len(v) or not (np.isfinite(v).all() and (v == np.floor(v)).all()):
        return False
    if grain_ != EPOCH_GRAIN:
        return True
    rising = bool((np.diff(v) >= 0).all())
    return not (rising and len(np.unique(v)) < len(v))


def _restarts_each_epoch(frame: pl.DataFrame, counter: str, epoch: str) -> bool:
    """True when the counter fails to advance (goes back, or repeats: a progress bar's `50/50` at
    every epoch's end) where the epoch goes up, goes back nowhere else, and the epoch never goes
    back. A repeat inside an epoch is a progress bar redrawn at the same batch, no restart."""
    c, e = frame.get_column(counter), frame.get_column(epoch)
    both = c.is_not_null() & e.is_not_null() if c.null_count() or e.null_count() else None
    with np.errstate(invalid="ignore"):  # inf - inf: no move either way, as polars has it
        dc, de = np.diff(_floats(c, both)), np.diff(_floats(e, both))
    back, rise = dc < 0, (de > 0) | np.isnan(de)  # polars orders NaN above every number
    restarts = np.count_nonzero(rise & (back | (dc == 0)))
    stray = np.count_nonzero(back & ~rise)
    return restarts > 0 and not stray and not (de < 0).any()


def _floats(values: pl.Series, rows: pl.Series | None) -> np.ndarray:
    """A numeric column as float64, only `rows` (a mask) where given: the step checks run in numpy,
    since every polars expression on a small log's column cost 40-190 us (a sweep audit reads
    thousands of such logs)."""
    return (values if rows is None else values.filter(rows)).cast(pl.Float64).to_numpy()


def _global_step(frame: pl.DataFrame, counter: str, epoch: str) -> StepPlan:
    """epoch index x period + counter, the period being the counter's span in an epoch plus one stride."""
    values = frame.get_column(counter).drop_nulls().cast(pl.Float64)
    strides = values.diff().filter(values.diff() > 0)
    period = float(values.max()) + (float(strides.min()) if strides.len() else 1.0)
    index = pl.col(epoch).rank("dense").cast(pl.Float64) - 1
    built = frame.with_columns((index * period + pl.col(counter).cast(pl.Float64)).alias(_BUILT))
    note = f"{counter} restarts every {epoch}: step = {epoch} index x {period:g} + {counter}"
    return StepPlan(built, _BUILT, {counter, _BUILT}, [note])


def _place_by_epoch(got: StepPlan, epoch: str, label: str) -> None:
    """Rows with a blank step but an epoch go to the last step logged in their epoch (Lightning's
    validation and epoch-end rows), instead of being dropped unseen."""
    step = pl.col(got.column).cast(pl.Float64)
    blank = got.frame.select((step.is_null() & pl.col(epoch).is_not_null()).sum()).item()
    if not blank:
        return
    got.frame = got.frame.with_columns(step.fill_null(step.max().over(epoch)).alias(got.column))
    placed = blank - got.frame.select((pl.col(got.column).is_null() & pl.col(epoch).is_not_null()).sum()).item()
    if placed:
        got.notes.append(f"{placed} row(s) without a {label} placed at the last {label} logged in their {epoch}")
