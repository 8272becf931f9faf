"""Files exported from W&B: UI chart CSVs, API history dumps, runs tables.

* UI "Export CSV" of a chart: an x-axis column (`Step`) and one column per
  run and metric, `<run> - <metric>`, with `__MIN` / `__MAX` companions (the
  band of the sampled bucket, not a separate series: skipped). Several runs in
  one file become several runs; shorter runs leave blanks. The UI exports one
  chart (about one metric) per file, so the exports of one folder that share
  an x axis are one source: a run's columns are joined by its name across them
  (as TensorBoard "Download CSV" files of one run are, in `csv_table`).
* API history dumps (`run.history()` / `scan_history()` saved as CSV or JSONL):
  `_step`, `_runtime`, `_timestamp` and sparse metric columns.
* Runs-table export: one row per run, final values only (`Name`, `State`,
  `Runtime`...). There is no curve in it, so it is reported as such instead
  of being misread as one run with a step per row.
"""
from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from ..model import Run
from . import Claim, ReadError, Source
from .csv_table import header, load_table, numeric_columns, wide_to_tidy
from .limits import MAX_WIDTH, limits_line
from .wandb_history import INTERNAL_PREFIX, first_json_object, read_history

#: `<run> - <metric>` with an optional band suffix; run names may contain " - " themselves, metric names hardly ever.
_UI_COLUMN = re.compile(r"^(?P<run>.+) - (?P<metric>.+?)(?P<band>__MIN|__MAX)?$")
_HISTORY_KEYS = {"_step", "_runtime", "_timestamp"}
_RUNS_TABLE_KEYS = {"State", "Runtime", "Created", "Sweep", "User", "Tags", "ID"}
_STEP_KEYS = {"Step", "_step", "step", "epoch", "global_step"}


def kind_of(columns: list[str]) -> str | None:
    """'ui', 'history' or 'runs_table' for a W&B CSV header, else None."""
    cols = set(columns)
    if "Name" in cols and (len(cols & _RUNS_TABLE_KEYS) >= 2 or (columns[0] == "Name" and not cols & _STEP_KEYS)):
        return "runs_table"  # the runs table always leads with Name, whatever columns were shown
    if "_step" in cols or len(cols & _HISTORY_KEYS) >= 2:
        return "history"
    if len(columns) >= 2 and all(_UI_COLUMN.match(c) for c in columns[1:]) and not _UI_COLUMN.match(columns[0]):
        return "ui"
    return None


def _jsonl_is_history(path: Path) -> bool:
    row = first_json_object(path)
    return row is not None and bool(_HISTORY_KEYS & set(row))


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    got = Claim()
    charts: dict[str, list[Path]] = {}
    for name in filenames:
        path = folder / name
        lower = name.lower()
        if lower.endswith(".csv"):
            columns = header(path)
            kind = kind_of(columns[:MAX_WIDTH]) if columns else None  # a wider one is refused when read
            if kind is None:
                continue
            if kind == "ui":
                got.files.add(name)
                charts.setdefault(columns[0], []).append(path)
                continue
        elif not (lower.endswith(".jsonl") and _jsonl_is_history(path)):
            continue
        got.files.add(name)
        got.sources.append(Source("wandb_csv", path, [path]))
    for paths in charts.values():
        got.sources.append(Source("wandb_csv", folder if len(paths) > 1 else paths[0], paths))
    return got if got.sources else None


def read(source: Source) -> list[Run]:
    if len(source.files) > 1:
        return _join_ui_exports(source)
    path = source.path
    if path.name.lower().endswith(".jsonl"):
        scalars, bad, refused = read_history(path)
        warnings = [f"{path.name}: skipped {bad} unreadable line(s)"] if bad else []
        warnings += [limits_line(path.name, refused)] if refused else []
        return [Run(name="", path=str(path), format="wandb_csv", scalars=scalars, warnings=warnings)]
    table = load_table(path)
    frame = table.frame
    kind = kind_of(frame.columns)
    if kind == "runs_table":
        raise ReadError(
            f"{path}: W&B runs-table export ({frame.height} runs, final values only): no history to diagnose;"
            " export each run's history (chart 'Export CSV' or run.history()) instead"
        )
    if kind == "history":
        step = "_step" if "_step" in frame.columns else None
        wall = "_timestamp" if "_timestamp" in frame.columns else None
        metrics = [c for c in numeric_columns(frame) if not c.startswith(INTERNAL_PREFIX)]
        if not metrics:
            raise ReadError(f"{path}: W&B history export has no numeric metric columns")
        return [Run(name="", path=str(path), format="wandb_csv", scalars=wide_to_tidy(frame, step, metrics, wall), warnings=table.warnings)]
    runs = _read_ui_export(path, frame)
    for run in runs:
        run.warnings.extend(table.warnings)
    return runs


def _read_ui_export(path: Path, frame: pl.DataFrame) -> list[Run]:
    """One run per `<run> - ...` prefix, each with its own metrics; bands skipped."""
    x_axis = frame.columns[0]
    if not frame.schema[x_axis].is_numeric():
        raise ReadError(f"{path}: W&B chart export whose '{x_axis}' column is not numeric")
    by_run: dict[str, list[tuple[str, str]]] = {}
    for column, dtype in list(frame.schema.items())[1:]:
        match = _UI_COLUMN.match(column)
        if match and not match["band"] and dtype.is_numeric():
            name, copy = match["run"], 1
            while any(m == match["metric"] for _, m in by_run.get(name, [])):  # two runs share a display name
                copy += 1
                name = f"{match['run']} ({copy})"
            by_run.setdefault(name, []).append((column, match["metric"]))
    runs = []
    for run_name, columns in by_run.items():
        part = frame.select(x_axis, *[pl.col(c).alias(m) for c, m in columns])
        scalars = wide_to_tidy(part, x_axis, [m for _, m in columns])
        notes = [] if x_axis in ("Step", "step", "_step") else [f"x axis of the export is '{x_axis}', used as the step"]
        runs.append(Run(name=run_name, path=str(path), format="wandb_csv", scalars=scalars, notes=notes))
    if not runs:
        raise ReadError(f"{path}: W&B chart export with no numeric run columns")
    return runs


def _join_ui_exports(source: Source) -> list[Run]:
    """Chart exports of one folder: each run's metrics from every file, joined by run name.

    A damaged export costs only its own columns (a warning on every run); the exported
    runs differ per chart, so a run absent from one file simply lacks that metric.
    """
    parts: dict[str, list[pl.DataFrame]] = {}
    origins: dict[str, list[str]] = {}
    axis_notes: list[str] = []  # the claim grouped files by x axis: the same note for every file
    warnings: list[str] = []
    for path in sorted(source.files):
        try:
            table = load_table(path)
            runs = _read_ui_export(path, table.frame)
        except ReadError as exc:
            warnings.append(str(exc))
            continue
        warnings.extend(table.warnings)
        for run in runs:
            parts.setdefault(run.name, []).append(run.scalars)
            origins.setdefault(run.name, []).append(f"{path.name} ({', '.join(run.metrics)})")
            axis_notes = run.notes
    if not parts:
        more = f" (and {len(warnings) - 1} more unreadable export(s))" if len(warnings) > 1 else ""
        raise ReadError(warnings[0] + more)
    return [
        Run(
            name=name,
            path=str(source.path),
            format="wandb_csv",
            scalars=pl.concat(frames).unique(maintain_order=True),
            warnings=list(warnings),
            notes=[*axis_notes, f"joined from {len(frames)} chart export(s): {'; '.join(origins[name])}"],
        )
        for name, frames in parts.items()
    ]
