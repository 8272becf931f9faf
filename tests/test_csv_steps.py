"""The step checks of a wide CSV (csv_steps) say what their polars definitions say, on any column."""
from __future__ import annotations

import numpy as np
import polars as pl

from logdoctor.ingest.csv_steps import EPOCH_GRAIN, _restarts_each_epoch, _usable


def _usable_by_definition(values: pl.Series, grain_: int) -> bool:
    values = values.drop_nulls().cast(pl.Float64)
    if values.is_empty() or not (values % 1 == 0).all():
        return False
    if grain_ != EPOCH_GRAIN:
        return True
    rising = bool((values.diff().drop_nulls() >= 0).all())
    return not (rising and values.n_unique() < values.len())


def _restarts_by_definition(frame: pl.DataFrame, counter: str, epoch: str) -> bool:
    pair = frame.select(pl.col(counter).cast(pl.Float64), pl.col(epoch).cast(pl.Float64)).drop_nulls()
    moves = pair.select(
        back=pl.col(counter).diff() < 0, same=pl.col(counter).diff() == 0,
        rise=pl.col(epoch).diff() > 0, fall=pl.col(epoch).diff() < 0,
    )
    restarts = moves.filter(pl.col("rise") & (pl.col("back") | pl.col("same"))).height
    stray = moves.filter(pl.col("back") & ~pl.col("rise")).height
    return restarts > 0 and not stray and not moves.get_column("fall").any()


def _column(rng: np.random.Generator, n: int) -> pl.Series:
    """A counter-like column: restarting or rising whole numbers, now and then a fraction, a NaN, an
    infinity or a blank, as integers or floats."""
    kind = rng.integers(4)
    if kind == 0:
        v = np.tile(np.arange(n // 3 + 1), 3)[:n].astype(float)  # restarts
    elif kind == 1:
        v = np.sort(rng.integers(0, 4, n)).astype(float)  # an epoch: rises, repeats
    elif kind == 2:
        v = np.arange(n, dtype=float)
    else:
        v = rng.integers(-3, 5, n).astype(float)
    odd = rng.random(n)
    v[odd < 0.05] += 0.5
    v[(odd >= 0.05) & (odd < 0.08)] = rng.choice([np.nan, np.inf, -np.inf])
    series = pl.Series("c", v)
    if rng.random() < 0.4 and np.isfinite(v).all() and (v == np.floor(v)).all():
        series = series.cast(pl.Int64)
    if rng.random() < 0.5 and n:
        series = series.scatter(rng.integers(0, n, rng.integers(1, 3)), None)
    return series


def test_usable_and_restarts_agree_with_their_polars_definitions():
    rng = np.random.default_rng(11)
    for _ in range(1500):
        n = int(rng.integers(0, 30))
        counter, epoch = _column(rng, n), _column(rng, n).alias("e")
        frame = pl.DataFrame([counter, epoch])
        for grain_ in (0, EPOCH_GRAIN):
            assert _usable(counter, grain_) == _usable_by_definition(counter, grain_), (counter.to_list(), grain_)
        assert _restarts_each_epoch(frame, "c", "e") == _restarts_by_definition(frame, "c", "e"), frame
