"""trackio's project databases: `<project>.db`, one SQLite file per project (in
`~/.cache/huggingface/trackio/`, or `$TRACKIO_DIR`).

One database is one source holding every run of its project. `metrics` holds one row per
`trackio.log` call: the run, its step, an ISO timestamp and the logged values as one JSON object
(NaN and +-inf written as the strings "NaN", "Infinity", "-Infinity"); `configs` one JSON object
per run, the `config` given to `trackio.init`, which becomes the run's settings (`audit` links
findings to them; the `_Username`, `_Created`, `_Group` keys trackio adds are left out). Only
numeric values are curves: media, tables and histograms logged beside them are passed over.

A run is named by its run name, as trackio's dashboard names it (the run id's prefix is added
when two runs share a name). Databases written before trackio 0.24 have no `run_id` column and
identify a run by its name alone. trackio deletes a deleted run's rows, so every run left in the
database is one to read.

A `.db` file that SQLite cannot read now (locked by a writer for longer than a read waits,
damaged past its first page) is taken here too, whoever wrote it, so that the one line saying why
is not lost (MLflow's `mlflow.db` is taken by name before).
"""
from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

from ..model import Run, tidy
from . import Claim, ReadError, Source
from .hparams import flatten
from .sqlite_db import claim_databases, has_tables, read_runs

#: Tables and columns that make a database trackio's.
_SIGNATURE = {
    "metrics": {"run_name", "step", "timestamp", "metrics"},
    "configs": {"run_name", "config"},
}
#: `trackio.log` rows turned into points at a time: a million rows' Python objects at once cost 1.3 GB.
_BATCH = 100_000
#: A row's ISO timestamp in Unix seconds, parsed by SQLite (a stamp without offset is UTC; 40 us precision).
_EPOCH = "(julianday(timestamp) - 2440587.5) * 86400.0"
#: How trackio writes the values JSON has no number for.
_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def is_trackio(tables: dict[str, set[str]]) -> bool:
    return has_tables(tables, _SIGNATURE)


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    # any database SQLite cannot read is taken here too, so its reason is said, not passed over
    return claim_databases(
        folder,
        filenames,
        "trackio",
        lambda name, tables, problem: problem is not None or (tables is not None and is_trackio(tables)),
        owned=lambda path: {f"{path.stem}.lock"},
    )


def read(source: Source) -> list[Run]:
    path = Path(source.path)
    return read_runs(path, "trackio", _SIGNATURE, lambda conn, tables: _runs(conn, path, tables))


def _runs(conn: sqlite3.Connection, path: Path, tables: dict[str, set[str]]) -> list[Run]:
    """Every run in the project, in the order they first logged (config-only runs last)."""
    ident = lambda table: "run_id" if "run_id" in tables[table] else "run_name"  # noqa: E731
    configs = {
        rid: (name, blob)
        for rid, name, blob in conn.execute(f"SELECT {ident('configs')}, run_name, config FROM configs ORDER BY id")
    }
    cursor = conn.execute(f"SELECT {ident('metrics')}, run_name, step, {_EPOCH}, metrics FROM metrics ORDER BY id")
    names: dict[str, str] = {}
    unreadable: Counter = Counter()
    parts = []
    while batch := cursor.fetchmany(_BATCH):
        parts.append(_points(batch, names, unreadable))
    for rid, (name, _) in configs.items():
        names.setdefault(rid, name)
    if not names:
        raise ReadError(f"{path}: trackio database holds no runs")
    shared = Counter(names.values())
    points = pl.concat(parts) if parts else None
    frames = {str(key[0]): part.drop("run") for key, part in points.partition_by("run", as_dict=True).items()} if points is not None else {}
    runs = []
    for rid, name in names.items():
        shown = f"{name}-{rid[:8]}" if shared[name] > 1 else name
        warnings = [f"{path}: run '{shown}': {unreadable[rid]} logged row(s) not readable as JSON"] if unreadable.get(rid) else []
        config = _config(configs.get(rid, (name, None))[1], warnings, path, shown)
        frame = frames.get(rid)
        if frame is None:
            warnings.append(f"{path}: trackio run '{shown}' has no numeric metric values")
        scalars = tidy(frame) if frame is not None else tidy(pl.DataFrame({"metric": [], "step": [], "value": []}))
        runs.append(Run(name=shown, path=str(path), format="trackio", scalars=scalars, config=config, warnings=warnings,
                        notes=[f"trackio project '{path.stem}', run {rid}"]))
    return runs


def _points(rows: list[tuple], names: dict[str, str], unreadable: Counter) -> pl.DataFrame:
    """The numeric values of `metrics` rows as (run, metric, step, value, wall_time) columns; adds
    to `names` (run id -> run name, first-logged order) and counts each run's unreadable rows."""
    run, metric, step, value, wall = [], [], [], [], []
    for rid, name, at, seconds, blob in rows:
        names.setdefault(rid, name)
        try:
            logged = json.loads(blob)
        except (TypeError, ValueError):
            logged = None
        if not isinstance(logged, dict):
            unreadable[rid] += 1
            continue
        for key, v in logged.items():
            if isinstance(v, str):
                v = _SPECIAL.get(v)
            if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            run.append(rid)
            metric.append(key)
            step.append(at)
            value.append(float(v))
            wall.append(seconds)
    frame = pl.DataFrame(
        {"run": run, "metric": metric, "step": step, "value": value, "wall_time": wall},
        schema={"run": pl.String, "metric": pl.String, "step": pl.Int64, "value": pl.Float64, "wall_time": pl.Float64},
    )
    return frame.with_columns(pl.col("run", "metric").cast(pl.Categorical))


def _config(blob: str | None, warnings: list[str], path: Path, name: str) -> dict[str, Any]:
    """A run's `config` JSON as flat settings, trackio's own `_` keys left out."""
    if blob is None:
        return {}
    try:
        config = json.loads(blob)
    except (TypeError, ValueError):
        config = None
    if not isinstance(config, dict):
        warnings.append(f"{path}: run '{name}': config not readable as a JSON object")
        return {}
    return flatten({k: v for k, v in config.items() if not str(k).startswith("_")})
