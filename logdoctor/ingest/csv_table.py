"""CSV training logs, recognised by their header.

Layouts, most specific first (the header decides, file names only confirm):

* ``lightning``: PyTorch Lightning ``CSVLogger`` ``metrics.csv`` (``step`` and
  ``epoch`` columns; train and validation metrics on different rows, blanks
  elsewhere) with ``hparams.yaml`` beside it. The run is the version folder.
  A TensorBoardLogger sharing the folder writes the same scalars again: those
  event files are claimed here and not read twice (see ingest.FORMATS).
* ``ultralytics``: YOLO ``results.csv`` (header padded with spaces, ``epoch``
  plus ``train/...``, ``val/...``, ``metrics/...``, ``lr/pg0``...; newer
  versions add a ``time`` column, kept as wall time) with ``args.yaml``
  (YOLOv5: ``opt.yaml`` + ``hyp.yaml``). The run is the training folder.
* ``keras_csv``: Keras ``CSVLogger`` or a saved ``history.history``
  (``epoch,loss,val_loss,...``, or no epoch column at all: the row is the
  epoch); also under a ``.log`` / ``.txt`` name when the header starts with
  ``epoch`` and names a loss (the CSVLogger docs call it ``training.log``).
* ``csv``: long ``metric,step,value`` or any wide table with a step column;
  also TensorBoard's "Download CSV" (``Wall time,Step,Value``, one tag per
  file named ``run-<run>-tag-<tag>.csv``): the tag is the metric, and the
  files of one run in a folder are read as one run (Keras ``train`` /
  ``validation`` runs join as ``train/…``, ``validation/…``, as in the
  TensorBoard reader).

Which CSVs are claimed: a folder walk meets users' data files too, so a CSV is
only taken as a log when its header has a step-like column or a column whose
name has a metric role (loss, lr, accuracy...); other CSVs are left alone
quietly. Files that cannot be CSV at all (0 bytes, binary) are claimed so the
user gets one line naming them. Reading uses polars' native reader; padded or
text-typed numbers (``nan``, `` 1.5``) are coerced column-wise, never per row.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import polars as pl

from ..model import Run, tidy
from ..roles import classify
from . import Claim, ReadError, Source
from .hparams import load_config_file

STEP_COLUMNS = ("step", "global_step", "_step", "iteration", "iter", "epoch", "Step", "Epoch", "Epochs", "epochs")
#: Index columns pandas writes (`df.to_csv()` without index=False).
_INDEX_COLUMNS = ("", "Unnamed: 0", "index")
_SNIFF_BYTES = 64 * 1024
_MAX_HEADER_BYTES = 8 * 1024 * 1024
_EVENTS_PREFIX = "events.out.tfevents"
#: Config files a layout's writer leaves beside its CSV (YOLOv5 wrote opt.yaml + hyp.yaml, v8+ args.yaml).
_SIDECARS = {"lightning": ("hparams.yaml",), "ultralytics": ("args.yaml", "opt.yaml", "hyp.yaml")}
#: Wall-clock columns some writers add (seconds): kept as wall_time, not as a metric.
_WALL_COLUMNS = {"lightning": "created_at", "ultralytics": "time"}
#: Keras' CSVLogger is often given a `.log` / `.txt` name (its docs use 'training.log').
_KERAS_SUFFIXES = (".log", ".txt")
#: TensorBoard UI "Download CSV": the metric is only in the file name, so the header alone decides the layout.
_TB_DOWNLOAD_HEADER = ["Wall time", "Step", "Value"]
_TB_DOWNLOAD_NAME = re.compile(r"run-(?P<run>.*)-tag-(?P<tag>.+)\.csv", re.IGNORECASE)
#: A Keras TensorBoard callback writes `train` and `validation` runs: splits of one training, not two runs.
_TB_DOWNLOAD_SPLIT = re.compile(r"(?:^|[_.-])(?P<split>train|validation)$")


def header(path: Path) -> list[str] | None:
    """The stripped column names of a CSV's first line; [] for an empty file; None if not text."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
            # a W&B export of hundreds of runs has a very long header line: read on to its end
            while head and b"\n" not in head and len(head) < _MAX_HEADER_BYTES:
                more = fh.read(_SNIFF_BYTES)
                if not more:
                    break
                head += more
    except OSError:
        return None
    if not head:
        return []
    if b"\x00" in head:
        return None
    first_line = head.split(b"\n", 1)[0]
    try:
        first = first_line.decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError:
        return None
    try:
        row = next(csv.reader(io.StringIO(first)), [])
    except csv.Error:
        return None
    return [c.strip() for c in row]


def layout(name: str, columns: list[str], folder_files: set[str] | frozenset = frozenset()) -> str | None:
    """Which CSV layout a header belongs to, or None when it does not look like a training log."""
    cols = set(columns)
    if columns == _TB_DOWNLOAD_HEADER:
        return "tb_download"
    if {"metric", "step", "value"} <= cols:
        return "csv"
    if name == "metrics.csv" and "step" in cols and ("epoch" in cols or "hparams.yaml" in folder_files):
        return "lightning"
    if "epoch" in cols and any(c.startswith(("train/", "val/", "metrics/")) for c in columns) and (
        name == "results.csv" or folder_files & set(_SIDECARS["ultralytics"])
    ):
        return "ultralytics"
    if "loss" in cols and not cols & {"step", "global_step", "_step", "iteration", "iter"}:
        return "keras_csv"
    if any(c in cols for c in STEP_COLUMNS) or any(classify(c) for c in columns):
        return "csv"
    return None


def _keras_log(columns: list[str] | None) -> bool:
    """A CSVLogger file under a .log/.txt name: its header starts with `epoch` and has a loss."""
    return bool(columns) and columns[0] == "epoch" and len(columns) > 1 and any("loss" in c for c in columns)


def _tb_download_parts(name: str) -> tuple[str, str, str]:
    """(run, split, tag) of a TensorBoard download's file name; split is '' unless the run is a Keras split."""
    match = _TB_DOWNLOAD_NAME.fullmatch(name)
    if match is None:
        return "", "", Path(name).stem
    run, tag = match.group("run"), match.group("tag")
    split = _TB_DOWNLOAD_SPLIT.search(run)
    if split is None:
        return run.strip("."), "", tag
    return run[: split.start()].strip("."), split.group("split"), tag


def claim(folder: Path, dirnames: list[str], filenames: list[str]) -> Claim | None:
    present = set(filenames)
    got = Claim()
    downloads: dict[str, list[Path]] = {}
    for name in filenames:
        lower = name.lower()
        if lower.endswith(".csv"):
            columns = header(folder / name)
            kind = "csv" if not columns else layout(name, columns, present)  # unreadable: claim to report it
        elif lower.endswith(_KERAS_SUFFIXES) and _keras_log(header(folder / name)):
            kind = "keras_csv"
        else:
            continue
        if kind is None:
            continue
        path = folder / name
        got.files.add(name)
        if kind == "tb_download":
            downloads.setdefault(_tb_download_parts(name)[0], []).append(path)
            continue
        sides = [f for f in _SIDECARS.get(kind, ()) if (folder / f).is_file()]  # also when the CSV is named alone
        if kind in _SIDECARS:
            # the training's own folder: its config, and TensorBoard copies of the same scalars
            twins = sorted(f for f in filenames if f.startswith(_EVENTS_PREFIX))
            got.files |= set(twins) | set(sides)
            got.sources.append(Source("csv_table", folder, [path] + [folder / f for f in sides + twins]))
        else:
            got.sources.append(Source("csv_table", path, [path]))
    for run, paths in downloads.items():
        where = folder / run if run and len(downloads) > 1 else (paths[0] if len(paths) == 1 else folder)
        got.sources.append(Source("csv_table", where, paths))
    return got if got.sources else None


def _read_tb_downloads(source: Source) -> list[Run]:
    """TensorBoard 'Download CSV' files of one run: each file's tag is a metric."""
    parts = []
    for path in source.files:
        _, split, tag = _tb_download_parts(path.name)
        metric = f"{split}/{tag}" if split else tag
        parts.append(wide_to_tidy(read_table(path).rename({"Value": metric}), "Step", [metric], "Wall time"))
    scalars = tidy(pl.concat(parts))
    if scalars.is_empty():
        raise ReadError(f"{source.path}: no row has both a numeric step and a value")
    return [Run(name="", path=str(source.path), format="csv", scalars=scalars)]


def read_table(path: Path) -> pl.DataFrame:
    """A CSV as a frame with stripped names and numeric columns numeric; ReadError if unusable."""
    try:
        if path.stat().st_size == 0:
            raise ReadError(f"{path}: empty file (0 bytes)")
        frame = pl.read_csv(path, infer_schema_length=10000, truncate_ragged_lines=True, encoding="utf8-lossy")
    except ReadError:
        raise
    except Exception as exc:  # noqa: BLE001 - polars raises many kinds for garbage input
        raise ReadError(f"{path}: not a readable CSV ({type(exc).__name__})") from None
    stripped = [c.strip() for c in frame.columns]
    if len(set(stripped)) == len(stripped):  # padding removed unless it is all that tells two columns apart
        frame = frame.rename(dict(zip(frame.columns, stripped)))
    if frame.height == 0:
        raise ReadError(f"{path}: CSV has a header but no rows")
    return frame.with_columns(
        _to_number(frame, c) for c in frame.columns if frame.schema[c] == pl.String and _parses(frame, c)
    )


def _to_number(frame: pl.DataFrame, column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().cast(pl.Float64, strict=False)


def _parses(frame: pl.DataFrame, column: str) -> bool:
    """True when every non-blank cell of a text column is a number (nan/inf included)."""
    text = frame.get_column(column).str.strip_chars()
    filled = text.filter(text.is_not_null() & (text != ""))
    return filled.len() > 0 and filled.cast(pl.Float64, strict=False).null_count() == 0


def numeric_columns(frame: pl.DataFrame, exclude: set[str] = frozenset()) -> list[str]:
    return [c for c in frame.columns if c not in exclude and frame.schema[c].is_numeric() and c not in _INDEX_COLUMNS]


def wide_to_tidy(frame: pl.DataFrame, step_col: str | None, metrics: list[str], wall_col: str | None = None) -> pl.DataFrame:
    """One column per metric -> tidy rows; blanks (metrics logged on other rows) are dropped."""
    if step_col is None:
        step = pl.int_range(0, pl.len(), dtype=pl.Int64)
    else:
        step = pl.col(step_col).cast(pl.Float64, strict=False).round().cast(pl.Int64, strict=False)
    wall = pl.col(wall_col).cast(pl.Float64, strict=False) if wall_col else pl.lit(None, dtype=pl.Float64)
    # private names: a metric may itself be called "step", "value" or "wall_time"
    wide = frame.select(step.alias("__ld_step"), wall.alias("__ld_wall"), *[pl.col(m).cast(pl.Float64, strict=False) for m in metrics])
    wide = wide.filter(pl.col("__ld_step").is_not_null())
    long = wide.unpivot(index=["__ld_step", "__ld_wall"], variable_name="__ld_metric", value_name="__ld_value").drop_nulls("__ld_value")
    return tidy(long.rename({"__ld_step": "step", "__ld_wall": "wall_time", "__ld_metric": "metric", "__ld_value": "value"}))


def _step_column(frame: pl.DataFrame) -> str | None:
    """The column that holds the step; None means the row number is the step."""
    for name in (*STEP_COLUMNS, *_INDEX_COLUMNS):
        if name in frame.columns and frame.schema[name].is_numeric():
            values = frame.get_column(name).drop_nulls()
            if values.len() and (values.cast(pl.Float64) % 1 == 0).all():
                return name
    return None


def read(source: Source) -> list[Run]:
    path = source.files[0]
    if header(path) == _TB_DOWNLOAD_HEADER:
        return _read_tb_downloads(source)
    frame = read_table(path)
    kind = layout(path.name, frame.columns, {f.name for f in source.files}) or "csv"
    if path.name.lower().endswith(_KERAS_SUFFIXES):
        kind = "keras_csv"
    warnings: list[str] = []
    config = {}
    notes = []
    for side in source.files[1:]:
        if side.name.endswith(".yaml"):
            config.update(load_config_file(side, warnings))
    twins = [f.name for f in source.files if f.name.startswith(_EVENTS_PREFIX)]
    if twins:
        notes.append(f"{len(twins)} TensorBoard event file(s) here repeat these scalars; read {path.name} instead")
    if kind == "csv" and {"metric", "step", "value"} <= set(frame.columns):
        wall = next((c for c in ("wall_time", "timestamp") if c in frame.columns), None)
        long = frame.select(
            pl.col("metric").cast(pl.Utf8),
            pl.col("step").cast(pl.Float64, strict=False).round().cast(pl.Int64, strict=False),
            pl.col("value").cast(pl.Float64, strict=False),
            (pl.col(wall).cast(pl.Float64, strict=False) if wall else pl.lit(None, dtype=pl.Float64)).alias("wall_time"),
        ).drop_nulls(["metric", "step", "value"])
        if long.is_empty():
            raise ReadError(f"{path}: long-format CSV without a numeric step and value in any row")
        return [Run(name="", path=str(source.path), format="csv", scalars=tidy(long), config=config, warnings=warnings, notes=notes)]
    step_col = "step" if kind == "lightning" else _step_column(frame)
    if kind in ("ultralytics", "keras_csv") and "epoch" in frame.columns:
        step_col = "epoch"
    wall = _WALL_COLUMNS.get(kind) if _WALL_COLUMNS.get(kind) in frame.columns else None
    exclude = ({step_col} if step_col is not None and kind != "lightning" else {"step"}) | {wall}
    metrics = numeric_columns(frame, exclude)
    if not metrics:
        raise ReadError(f"{path}: CSV has no numeric metric columns")
    scalars = wide_to_tidy(frame, step_col, metrics, wall)
    if scalars.is_empty():
        raise ReadError(f"{path}: no row has both a numeric step and a metric value")
    if step_col is None:
        notes.append("no step column: row number used as the step")
    return [Run(name="", path=str(source.path), format=kind, scalars=scalars, config=config, warnings=warnings, notes=notes)]
