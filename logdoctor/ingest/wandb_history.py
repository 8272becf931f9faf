"""W&B history rows -> the tidy scalar table.

A W&B history is a sequence of rows, one per `wandb.log` call: `_step`,
`_timestamp`, `_runtime` plus whatever the user logged, nested dicts included
(shown as `a.b` in the W&B UI), media and histograms as dicts tagged `_type`.
Local run folders store it as `wandb-history.jsonl`, the public API dumps it
as JSONL or CSV, and the binary `run-*.wandb` file as history records: all of
them end here so every W&B source yields the same metric names and steps.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

from ..model import tidy

#: Columns W&B adds to every history row; bookkeeping, not metrics.
INTERNAL_PREFIX = "_"


def numeric_items(row: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """(dotted name, value) for every number in a history row; media, strings and lists are skipped."""
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            yield name, float(value)
        elif isinstance(value, dict) and "_type" not in value:
            yield from numeric_items(value, f"{name}.")


def frame_from_rows(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """History rows -> tidy (metric, step, value, wall_time); rows without `_step` count up from 0."""
    metric: list[str] = []
    step: list[int] = []
    value: list[float] = []
    wall: list[float | None] = []
    for index, row in enumerate(rows):
        raw_step = row.get("_step", index)
        if isinstance(raw_step, float) and raw_step.is_integer():
            raw_step = int(raw_step)
        if not isinstance(raw_step, int) or isinstance(raw_step, bool):
            continue
        stamp = row.get("_timestamp")
        stamp = float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else None
        for name, v in numeric_items(row):
            if name.startswith(INTERNAL_PREFIX):
                continue
            metric.append(name)
            step.append(raw_step)
            value.append(v)
            wall.append(stamp)
    return tidy(
        pl.DataFrame(
            {"metric": metric, "step": step, "value": value, "wall_time": wall},
            schema={"metric": pl.Utf8, "step": pl.Int64, "value": pl.Float64, "wall_time": pl.Float64},
        )
    )


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """JSON objects, one per line; returns (rows, lines that were not a JSON object).

    A killed run leaves a half-written last line: it is counted, not fatal.
    """
    rows: list[dict[str, Any]] = []
    bad = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(row, dict):
                rows.append(row)
            else:
                bad += 1
    return rows, bad


def first_json_object(path: Path) -> dict[str, Any] | None:
    """The first line of a .jsonl file as a dict, or None (for cheap format sniffing)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            line = fh.readline(1 << 20)
        row = json.loads(line)
    except (OSError, ValueError):
        return None
    return row if isinstance(row, dict) else None

