"""Series logged without a step: every point at one step, numbered by the order they were logged.

`SummaryWriter.add_scalar(tag, v)` without `global_step` and `mlflow.log_metric(k, v)` without
`step` store step 0 on every point. Read as they are, the series collapses to one point (the last
value wins at a shared step) and a run that clearly learned looks like a single number. When
(nearly) all points of a metric share one step, that step carries no information, while the
order of logging does: the points are ordered by wall time (file order breaks ties, and stands
alone when there is no wall time) and numbered 0, 1, 2... as their steps, with a note saying so.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ..model import metric_codes

#: A metric is stepless when at least this share of its points sits on its most common step...
SHARED_STEP_SHARE = 0.9
#: ...and that is at least this many points (two values at one step are a re-log, not a series).
MIN_SHARED_POINTS = 3


def stepless_metrics(scalars: pl.DataFrame) -> list[str]:
    """Metrics whose points (nearly) all share one step, in first-logged order."""
    if scalars.is_empty() or not _may_share_steps(scalars):
        return []
    # a cheap necessary condition first, grouped on the metric's integer code rather than its
    # text (hashing 2M strings with their steps costs hundreds of MB): so many points on one step
    # leave at most a tenth of them for every other step
    coded = scalars.select(pl.col("metric").cast(pl.Categorical).to_physical().alias("code"), "metric", "step")
    counts = coded.group_by("code").agg(pl.col("metric").first(), pl.col("step").n_unique().alias("u"), pl.len().alias("n"))
    candidates = counts.filter(
        (pl.col("n") >= MIN_SHARED_POINTS) & (pl.col("u") <= (1 - SHARED_STEP_SHARE) * pl.col("n") + 1)
    ).get_column("metric")
    if candidates.is_empty():
        return []
    per_step = scalars.filter(pl.col("metric").is_in(candidates.implode())).group_by("metric", "step").agg(pl.len().alias("n"))
    per_metric = per_step.group_by("metric").agg(pl.col("n").max().alias("top"), pl.col("n").sum().alias("total"))
    found = set(
        per_metric.filter((pl.col("top") >= MIN_SHARED_POINTS) & (pl.col("top") >= SHARED_STEP_SHARE * pl.col("total")))
        .get_column("metric")
        .to_list()
    )
    return [m for m in scalars.get_column("metric").unique(maintain_order=True).to_list() if m in found]


def _may_share_steps(scalars: pl.DataFrame) -> bool:
    """Whether some metric might be stepless, from one linear pass: with a share s of its n points
    on one step, its points at that step fall into at most (1 - s) n + 1 stretches of its own
    points in file order, so at least (2 s - 1) n - 1 of its points repeat the step of its point
    before. A run logged with steps repeats none (3-4 ms of grouping saved on every small run)."""
    metric = scalars.get_column("metric")
    physical = (metric if metric.dtype == pl.Categorical else metric.cast(pl.Categorical)).to_physical()
    top = int(physical.max() or 0) + (1 if physical.null_count() else 0)  # rows without a name: a group of their own
    code = metric_codes(physical, top)
    if top >= 1 << 20:  # codes of a process that has seen many names: made dense
        code = np.unique(code, return_inverse=True)[1]
        top = int(code.max())
    step = scalars.get_column("step").to_numpy()
    # each metric's points in file order: a stable sort on codes cast to their smallest type, which
    # numpy sorts by radix for 8- and 16-bit integers (2M rows: linear, not n log n)
    order = np.argsort(code.astype(np.min_scalar_type(top), copy=False), kind="stable")
    code, step = code[order], step[order]
    repeats = np.flatnonzero((code[1:] == code[:-1]) & (step[1:] == step[:-1]))
    if not len(repeats):
        return False
    n = np.bincount(code)
    repeated = np.bincount(code[repeats + 1], minlength=len(n))
    return bool(np.any((n >= MIN_SHARED_POINTS) & (repeated >= (2 * SHARED_STEP_SHARE - 1) * n - 1)))


def number_stepless(scalars: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """Give the points of stepless metrics their ordinal as step; other rows are untouched."""
    names = stepless_metrics(scalars)
    if not names:
        return scalars
    rows = scalars.with_row_index("_row")
    ordinal = (
        rows.filter(pl.col("metric").is_in(names))
        .sort("metric", "wall_time", "_row", nulls_last=True)
        .select("_row", pl.int_range(pl.len(), dtype=pl.Int64).over("metric").alias("_ordinal"))
    )
    out = (
        rows.join(ordinal, on="_row", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_ordinal", "step").alias("step"))
        .drop("_row", "_ordinal")
    )
    timed = scalars.filter(pl.col("metric").is_in(names)).get_column("wall_time").null_count() == 0
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    notes.append(
        f"logged without a step (all points at one step): {shown}; points ordered by "
        f"{'wall time' if timed else 'file order'} and numbered 0, 1, 2... as steps"
    )
    return out
