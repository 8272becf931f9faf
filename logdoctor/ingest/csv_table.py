"""Plain CSV logs: wide (a step column + one column per metric) or long (metric, step, value)."""
from __future__ import annotations

from pathlib import Path

import polars as pl

from ..model import Run, tidy
from . import Claim, ReadError, Source

_STEP_COLUMNS = ("step", "global_step", "_step", "iteration", "iter", "epoch", "Step", "Epoch")


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    csvs = [f for f in filenames if f.lower().endswith(".csv")]
    if not csvs:
        return None
    return Claim(sources=[Source("csv_table", folder / f, [folder / f]) for f in csvs], files=set(csvs))


def read(source: Source) -> list[Run]:
    path = source.path
    try:
        frame = pl.read_csv(path, infer_schema_length=10000, null_values=["", "nan", "NaN"])
    except Exception as exc:  # noqa: BLE001 - polars raises many kinds for garbage input
        raise ReadError(f"{path}: not a readable CSV ({type(exc).__name__})") from None
    frame = frame.rename({c: c.strip() for c in frame.columns})
    if frame.height == 0:
        raise ReadError(f"{path}: CSV has a header but no rows")
    if {"metric", "step", "value"} <= set(frame.columns):
        scalars = tidy(frame.select("metric", "step", "value"))
        return [Run(name="", path=str(path), format="csv", scalars=scalars)]
    step_col = next((c for c in _STEP_COLUMNS if c in frame.columns), None)
    if step_col is None:
        frame = frame.with_row_index("step")
        step_col = "step"
    metrics = [c for c in frame.columns if c != step_col and frame.schema[c].is_numeric()]
    if not metrics:
        raise ReadError(f"{path}: CSV has no numeric metric columns")
    long = frame.select(pl.col(step_col).cast(pl.Int64).alias("step"), *[pl.col(m).cast(pl.Float64) for m in metrics])
    long = long.unpivot(index="step", variable_name="metric", value_name="value").drop_nulls("value")
    return [Run(name="", path=str(path), format="csv", scalars=tidy(long))]
