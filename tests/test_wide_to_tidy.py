"""`csv_table.wide_to_tidy`: one column per metric becomes tidy rows, the same whichever way it is built.

Short metrics with blanks are tidied together (a console line of 20,000 values was 20,000 one-row
frames); the result must equal the plain definition: per metric in the given order, its rows with a
step and a value, in row order.
"""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from logdoctor.ingest.csv_table import wide_to_tidy
from logdoctor.model import SCALAR_SCHEMA


def by_definition(frame: pl.DataFrame, step: str, metrics: list[str]) -> list[tuple]:
    out = []
    for m in metrics:
        for s, v in zip(frame[step].to_list(), frame[m].to_list()):
            if s is not None and v is not None:
                out.append((m, int(s), float(v)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_metrics_with_and_without_blanks_keep_their_order_and_rows(seed):
    rng = np.random.default_rng(seed)
    rows, names = 40, [f"m{i}" for i in range(int(rng.integers(1, 60)))]
    steps = [None if rng.random() < 0.1 else i for i in range(rows)]
    columns = {"step": steps}
    for name in names:
        blank = rng.random() * rng.choice([0.0, 0.5, 0.97])  # full, half blank, nearly all blank
        columns[name] = [None if rng.random() < blank else float(rng.normal()) for _ in range(rows)]
    frame = pl.DataFrame(columns, schema={"step": pl.Int64, **{n: pl.Float64 for n in names}})
    order = list(rng.permutation(names))
    got = wide_to_tidy(frame.clone(), "step", order)
    assert list(zip(got["metric"].cast(pl.String), got["step"], got["value"])) == by_definition(frame, "step", order)


def test_a_line_of_thousands_of_one_value_metrics_is_tidied_whole():
    names = [f"m{i}" for i in range(5000)]
    frame = pl.DataFrame({"step": list(range(10)), **{n: [None] * 9 + [float(i)] for i, n in enumerate(names)}})
    got = wide_to_tidy(frame, "step", names)
    assert got.height == 5000 and got["metric"].cast(pl.String).to_list() == names and set(got["step"]) == {9}


@pytest.mark.parametrize("seed", range(6))
def test_a_table_with_every_metric_on_every_row_reads_as_by_definition_wall_time_and_nan_kept(seed):
    """The dense path (no blank anywhere): metric by metric, every row, NaN values kept, the wall
    time repeated with its own blanks, in the tidy schema."""
    rng = np.random.default_rng(seed)
    rows, names = int(rng.integers(1, 50)), [f"m{i}" for i in range(int(rng.integers(1, 8)))]
    columns = {"step": list(range(rows)), "time": [None if rng.random() < 0.2 else float(i) for i in range(rows)]}
    for name in names:
        columns[name] = [float("nan") if rng.random() < 0.1 else float(rng.normal()) for _ in range(rows)]
    frame = pl.DataFrame(columns, schema={"step": pl.Int64, "time": pl.Float64, **{n: pl.Float64 for n in names}})
    got = wide_to_tidy(frame.clone(), "step", names, "time")
    want = [(m, s, v, w) for m in names for s, v, w in zip(columns["step"], columns[m], columns["time"])]
    assert list(got.schema.items()) == list(SCALAR_SCHEMA.items())
    assert repr(list(zip(got["metric"].cast(pl.String), got["step"], got["value"], got["wall_time"]))) == repr(want)
