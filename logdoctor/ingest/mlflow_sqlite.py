"""MLflow's SQLite tracking store: `mlflow.db` (MLflow's default store since 3.7, any
`sqlite:///<name>.db` before that).

One database is one source holding every run of every experiment in it. A run is named
`<experiment name>/<run name>` (the run name MLflow's UI shows: `runs.name`, else the
`mlflow.runName` tag, else the run id; the id's prefix is added when two runs of an experiment
share a name). Its params are its settings (`audit` links findings to them); its metrics are the
`metrics` table's rows in the order they were logged. Runs MLflow marks deleted, and the runs of
a deleted experiment, are left out, as MLflow's UI leaves them out.

The store keeps a NaN as value 0 with `is_nan` set, and +-inf as +-1.7976931348623157e308 (the
largest double); both are read back as they were logged. `log_metric` without a step writes step 0,
read as the file store's are (`mlflow.drop_closing_summaries`, `stepless.number_stepless`).

Schema: the columns read here (`experiments`: experiment_id, name, lifecycle_stage; `runs`:
run_uuid, name, experiment_id, lifecycle_stage, status; `tags`, `params`: run_uuid, key, value;
`metrics`: run_uuid, key, value, timestamp, step, is_nan) have not changed in any MLflow migration
since `is_nan` came in 2019 (migration 181f10493468); the migrations since the database became the default
(3.7) added a `workspace` column to `experiments` and an index on `metrics`, and tables this
reader does not read.
"""
from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

from ..model import Run, tidy
from . import Claim, ReadError, Source
from .hparams import parse_scalar
from .mlflow import drop_closing_summaries
from .sqlite_db import claim_databases, has_tables, read_runs
from .stepless import number_stepless

#: The file name MLflow gives its database: claimed by name, so a damaged or locked one is reported.
DEFAULT_NAME = "mlflow.db"
#: Tables and columns that make a database MLflow's.
_SIGNATURE = {
    "experiments": {"experiment_id", "name"},
    "runs": {"run_uuid", "experiment_id", "lifecycle_stage"},
    "metrics": {"run_uuid", "key", "value", "timestamp", "step", "is_nan"},
    "params": {"run_uuid", "key", "value"},
}
#: How the store writes an infinite value.
_LARGEST = 1.7976931348623157e308


def is_mlflow(tables: dict[str, set[str]]) -> bool:
    return has_tables(tables, _SIGNATURE)


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    return claim_databases(
        folder, filenames, "mlflow_sqlite", lambda name, tables, _: name == DEFAULT_NAME or (tables is not None and is_mlflow(tables))
    )


def read(source: Source) -> list[Run]:
    path = Path(source.path)
    return read_runs(path, "MLflow", _SIGNATURE, lambda conn, tables: _runs(conn, path, tables))


def _runs(conn: sqlite3.Connection, path: Path, tables: dict[str, set[str]]) -> list[Run]:
    experiments = {
        str(eid): (name, stage)
        for eid, name, stage in conn.execute("SELECT experiment_id, name, lifecycle_stage FROM experiments")
    }
    listed = conn.execute("SELECT run_uuid, name, experiment_id, lifecycle_stage, status FROM runs").fetchall()
    tagged = dict(conn.execute("SELECT run_uuid, value FROM tags WHERE key = 'mlflow.runName'")) if "tags" in tables else {}
    kept = [row for row in listed if row[3] != "deleted" and experiments.get(str(row[2]), ("", ""))[1] != "deleted"]
    if not kept:
        deleted = f" ({len(listed)} deleted, left out)" if listed else ""
        raise ReadError(f"{path}: MLflow database holds no runs{deleted}")
    params = _params(conn, {row[0] for row in kept})
    metrics = _metrics(conn)
    # a Databricks-style experiment name is a path (`/Users/me/sweep`): it names the run from below the database
    names = [(str(experiments.get(str(eid), (eid, ""))[0]).strip("/"), name or tagged.get(uuid) or uuid) for uuid, name, eid, _, _ in kept]
    shared = Counter(names)
    runs = []
    for (uuid, _, _, _, state), (experiment, name) in zip(kept, names):
        if shared[(experiment, name)] > 1:
            name = f"{name}-{uuid[:8]}"
        notes = [f"MLflow experiment '{experiment}', run {uuid}"]
        if state and state != "FINISHED":
            notes.append(f"MLflow run status {state}")
        runs.append(_run(path, f"{experiment}/{name}", metrics.get(uuid), params.get(uuid, {}), notes))
    return runs


def _params(conn: sqlite3.Connection, uuids: set[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for uuid, key, value in conn.execute("SELECT run_uuid, key, value FROM params"):
        if uuid in uuids and value is not None:
            out.setdefault(uuid, {})[key] = parse_scalar(str(value))
    return out


#: Rows read by one SELECT: the shared lock a SELECT holds makes MLflow's commit wait (up to its
#: busy_timeout of 20 s, then "database is locked" in the training script), so a large table is
#: read in short statements (0.1-0.3 s each), each taking up where the last stopped, and the writer
#: commits between them. Also what bounds memory: a million rows' Python tuples at once cost
#: 500 MB, in batches 180 MB.
_BATCH = 100_000
_ROW_SCHEMA = {
    "rowid": pl.Int64, "run": pl.String, "metric": pl.String, "value": pl.Float64, "wall_time": pl.Float64, "step": pl.Int64,
    "is_nan": pl.Boolean,
}


def _metrics(conn: sqlite3.Connection) -> dict[str, pl.DataFrame]:
    """Each run's metric rows in logging order (rowid), as tidy columns."""
    parts, last = [], 0
    query = "SELECT rowid, run_uuid, key, value, timestamp, step, is_nan FROM metrics WHERE rowid > ? ORDER BY rowid LIMIT ?"
    while batch := conn.execute(query, (last, _BATCH)).fetchall():
        last = batch[-1][0]
        parts.append(pl.DataFrame(batch, schema=_ROW_SCHEMA, orient="row").drop("rowid").with_columns(pl.col("run", "metric").cast(pl.Categorical)))
    if not parts:
        return {}
    raw = pl.concat(parts)
    value = (
        pl.when(pl.col("is_nan")).then(float("nan"))
        .when(pl.col("value") >= _LARGEST).then(float("inf"))
        .when(pl.col("value") <= -_LARGEST).then(float("-inf"))
        .otherwise(pl.col("value"))
    )
    frame = raw.with_columns(value.alias("value"), pl.col("wall_time") / 1000.0).drop("is_nan")
    return {str(key[0]): part.drop("run") for key, part in frame.partition_by("run", as_dict=True).items()}


def _run(path: Path, name: str, frame: pl.DataFrame | None, config: dict[str, Any], notes: list[str]) -> Run:
    if frame is None:
        return Run(name=name, path=str(path), format="mlflow_sqlite", config=config, notes=notes,
                   warnings=[f"{path}: MLflow run '{name}' has no metric values"])
    scalars = number_stepless(tidy(drop_closing_summaries(frame, notes)), notes)
    return Run(name=name, path=str(path), format="mlflow_sqlite", scalars=scalars, config=config, notes=notes)
