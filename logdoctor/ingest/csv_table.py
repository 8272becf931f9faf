"""CSV training logs, recognised by their header.

Layouts, most specific first (the header decides, file names only confirm):

* ``lightning``: PyTorch Lightning ``CSVLogger`` ``metrics.csv`` (``step`` and
  ``epoch`` columns; train and validation metrics on different rows, blanks
  elsewhere) with ``hparams.yaml`` beside it. The run is the version folder.
  A TensorBoardLogger sharing the folder writes the same scalars again: those
  event files are claimed here and not read twice (see ingest.FORMATS),
  unless the CSV is unusable (header only when training was killed before
  its first flush, damaged): then the event files are read instead.
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
user gets one line naming them. Which column is the step: see csv_steps.

Reading uses polars' native reader with the dialect sniffed from the first
lines: `,` `;` or tab (with `;` or tab, `0,5` is a decimal comma, as Excel and
pandas write it in much of Europe), leading `# ...` banner lines, gzip
(`metrics.csv.gz`). Padded or text-typed numbers (``nan``, `` 1.5``) are
coerced column-wise, never per row; a cell that is no number in a numeric
column (``diverged``) becomes a blank with a warning rather than costing the
column, and header rows repeated by appending (`to_csv(mode='a')`) are dropped.
"""
from __future__ import annotations

import csv
import gzip
import io
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ..model import Run, empty_scalars, no_wall_times, printable, tidy
from ..roles import classify
from . import Claim, ReadError, Source, tensorboard
from .csv_steps import INDEX_COLUMNS, finer_than_epoch, names_step, plan
from .fs import is_file, polars_source, read_regular
from .limits import MAX_WIDTH
from .hparams import load_config_file

#: File names a CSV log may have; gzip is read as is (`metrics.csv.gz`).
_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
#: Delimiters sniffed from the header line; with ; or tab, `0,5` is a decimal comma.
_SEPARATORS = (",", ";", "\t")
_DECIMAL_COMMA = re.compile(r"\d,\d")
_SNIFF_BYTES = 64 * 1024
_MAX_HEADER_BYTES = 8 * 1024 * 1024
#: Above this share of undecodable or control characters a file is binary, not a text CSV
#: (a latin-1 accent in a UTF-8 read is one odd character, random bytes are half of them).
_BINARY_SHARE = 0.05
#: Control characters other than tab / newlines, and the mark of an undecodable byte.
_ODD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffd]")
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


@dataclass(frozen=True)
class Dialect:
    """How a CSV is written, sniffed from its first lines."""

    separator: str = ","
    decimal_comma: bool = False
    #: Leading `# ...` lines before the header (a script's banner).
    comment_lines: int = 0


def _head(path: Path) -> bytes | None:
    """The first bytes of a file (decompressed for .gz), on to the end of a long header line; None if unreadable."""
    try:
        with (gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")) as fh:
            head = fh.read(_SNIFF_BYTES)
            # a W&B export of hundreds of runs has a very long header line: read on to its end
            while head and b"\n" not in head and len(head) < _MAX_HEADER_BYTES:
                more = fh.read(_SNIFF_BYTES)
                if not more:
                    break
                head += more
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError; a corrupt stream is zlib.error
        return None
    return head


def _is_binary(text: str) -> bool:
    """True when too many characters are undecodable or control characters for a text file."""
    sample = text[:4096]
    return "\x00" in sample or len(_ODD_CHARS.findall(sample)) > _BINARY_SHARE * len(sample)


def sniff(path: Path) -> tuple[list[str], Dialect] | None:
    """The stripped column names and dialect of a CSV; ([], Dialect()) for an empty file; None if not text."""
    head = _head(path)
    if head is None:
        return None
    text = head.decode("utf-8-sig", errors="replace")
    if not text:
        return [], Dialect()
    if _is_binary(text):
        return None
    comments, first, data = _header_line(text)
    separator = max(_SEPARATORS, key=first.count)  # ties (no separator at all) go to the comma
    decimal_comma = separator != "," and bool(_DECIMAL_COMMA.search(data))
    try:
        row = next(csv.reader(io.StringIO(first), delimiter=separator), [])
    except csv.Error:
        return None
    return [c.strip() for c in row], Dialect(separator, decimal_comma, comments)


def _header_line(text: str) -> tuple[int, str, str]:
    """(leading `#` lines, the header line, the text after it) of a CSV's head, found line by line:
    discovery sniffs every CSV twice (W&B's claim, then the table's), and splitting the whole head
    into lines cost 30 us of each sniff's 100."""
    pos = comments = 0
    while True:
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if not line.startswith("#"):
            return comments, line.rstrip("\r"), "" if end < 0 else text[end + 1 :]
        comments += 1
        if end < 0:
            return comments, "", ""
        pos = end + 1


def header(path: Path) -> list[str] | None:
    """The stripped column names of a CSV's header line; [] for an empty file; None if not text."""
    got = sniff(path)
    return None if got is None else got[0]


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
    if "loss" in cols and not finer_than_epoch(columns):
        return "keras_csv"
    if any(names_step(c) for c in columns) or any(classify(c) for c in columns):
        return "csv"
    return None


def _plain_name(name: str) -> str:
    """The name a compressed CSV had before gzip (`metrics.csv.gz` is a Lightning `metrics.csv`)."""
    return name[:-3] if name.lower().endswith(".gz") else name


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
        if lower.endswith(_SUFFIXES):
            columns = header(folder / name)  # a header past MAX_WIDTH is judged by its first names, and refused when read
            kind = "csv" if not columns else layout(_plain_name(name), columns[:MAX_WIDTH], present)  # unreadable: claim to report it
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
        sides = [f for f in _SIDECARS.get(kind, ()) if is_file(folder / f)]  # also when the CSV is named alone
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
    parts, warnings = [], []
    for path in source.files:
        _, split, tag = _tb_download_parts(path.name)
        # escaped as every name from a log is: polars refuses the lone surrogates that carry a
        # Latin-1 file name's accented tag (the run was lost)
        metric = printable(f"{split}/{tag}" if split else tag)
        table = load_table(path)
        warnings += table.warnings
        parts.append(wide_to_tidy(table.frame.rename({"Value": metric}), "Step", [metric], "Wall time"))
    scalars = tidy(pl.concat(parts))
    if scalars.is_empty():
        raise ReadError(f"{source.path}: no row has both a numeric step and a value")
    return [Run(name="", path=str(source.path), format="csv", scalars=scalars, warnings=warnings)]


@dataclass
class Table:
    """A CSV's frame, with what reading it had to skip (warnings) or normalise (notes)."""

    frame: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def load_table(path: Path, sniffed: tuple[list[str], Dialect] | None = None) -> Table:
    """A CSV as a Table: polars' native reader with the sniffed dialect, repeated header rows
    (logs appended with `to_csv(mode='a')`) dropped, text columns that are mostly numbers made
    numeric column-wise; ReadError if unusable. `sniffed`: what `sniff` already said of the
    file, so its head is not read again."""
    try:
        read_regular(path, 0)  # opened, not only looked at: a file another user keeps is not "binary data"
        if path.stat().st_size == 0:
            raise ReadError(f"{path}: empty file (0 bytes)")
    except OSError as exc:
        raise ReadError(f"{path}: cannot read ({exc.strerror})") from None
    sniffed = sniffed or sniff(path)
    if sniffed is None:
        raise ReadError(f"{path}: not a text CSV (binary data)")
    if len(sniffed[0]) > MAX_WIDTH:
        raise ReadError(f"{path}: {len(sniffed[0]):,} columns, more than the {MAX_WIDTH:,} a log is read with")
    dialect = sniffed[1]
    frame = _read_csv(path, dialect)
    stripped = [c.strip() for c in frame.columns]
    if len(set(stripped)) == len(stripped):  # padding removed unless it is all that tells two columns apart
        frame = frame.rename(dict(zip(frame.columns, stripped)))
    table = Table(frame)
    kept = _drop_repeated_headers(table)
    if table.frame.height == 0:
        raise ReadError(f"{path}: CSV has a header but no rows")
    first_line = 2 + dialect.comment_lines
    table.frame = table.frame.with_columns(
        _numbers(table, c, kept, first_line, dialect.decimal_comma) for c, dtype in table.frame.schema.items() if dtype == pl.String
    )
    return table


def _read_csv(path: Path, dialect: Dialect) -> pl.DataFrame:
    """polars' reader; a bad cell past the type-inference window makes it re-read all as text (coerced after)."""
    options = dict(
        separator=dialect.separator, decimal_comma=dialect.decimal_comma, truncate_ragged_lines=True,
        comment_prefix="#" if dialect.comment_lines else None, encoding="utf8-lossy",
        glob=False,  # a folder named `lr=[0.1]` or `run*` is a path, not a pattern
    )
    try:
        source = polars_source(path)
        try:
            return pl.read_csv(source, infer_schema_length=10000, **options)
        except pl.exceptions.ComputeError:
            return pl.read_csv(source, infer_schema=False, **options)
    except Exception as exc:  # noqa: BLE001 - polars raises many kinds for garbage input
        raise ReadError(f"{path}: not a readable CSV ({type(exc).__name__})") from None


def _drop_repeated_headers(table: Table) -> pl.Series | None:
    """Drop rows that repeat the header (each append of `to_csv(mode='a')` writes one); says so in
    the notes. Returns the original row numbers of the rows kept (None when none was dropped), so
    that skipped cells are reported at their line in the file."""
    frame = table.frame
    if not all(dtype == pl.String for dtype in frame.schema.values()):  # one number column: no header row
        return None
    repeat = frame.select(
        pl.all_horizontal(pl.col(c).is_null() if not c.strip() else pl.col(c).str.strip_chars() == c.strip() for c in frame.columns)
    ).to_series()
    count = int(repeat.sum())
    if not count:
        return None
    table.frame = frame.filter(~repeat)
    table.notes.append(f"{count} repeated header row(s) dropped (a log appended to)")
    return (~repeat).arg_true()


def _numbers(table: Table, column: str, kept: pl.Series | None, first_line: int, decimal_comma: bool) -> pl.Expr:
    """A text column as numbers when most of its filled cells are numbers (padded ` 1.5`, `nan`, `inf`);
    the odd cell out (`diverged`) becomes null with a warning naming it. A column of words stays text."""
    text = table.frame.get_column(column).str.strip_chars()
    number = (text.str.replace(",", ".", literal=True) if decimal_comma else text).cast(pl.Float64, strict=False)
    filled = text.is_not_null() & (text != "")
    bad = filled & number.is_null()
    n_filled, n_bad = int(filled.sum()), int(bad.sum())
    if n_filled == 0 or 2 * n_bad >= n_filled:
        return pl.col(column)
    if n_bad:
        row = int(bad.arg_true()[0])
        line = first_line + (int(kept[row]) if kept is not None else row)
        table.warnings.append(f"{column}: {n_bad} non-numeric cell(s) skipped, e.g. {text[row]!r} at line {line}")
    return pl.lit(number).alias(column)


def stepless_rows(frame: pl.DataFrame, step: str, metrics: list[str], sparse: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> list[str]:
    """A warning for rows that hold values but no step (nor an epoch to place them by): they cannot
    be put on the curve, and dropping them unsaid would hide a metric. `sparse`: metrics kept aside
    as (rows, values), see `wide_to_tidy`."""
    sparse = sparse or {}
    dense = [m for m in metrics if m not in sparse]
    blank = pl.col(step).is_null()
    if not sparse:
        return _lost_rows(frame.select((blank & pl.any_horizontal(pl.col(m).is_not_null() for m in dense)).sum()).item())
    lost = frame.select(blank & pl.any_horizontal(pl.lit(False), *(pl.col(m).is_not_null() for m in dense))).to_series().to_numpy().copy()
    blank_rows = frame.select(blank).to_series().to_numpy()
    for m in metrics:
        if m in sparse:
            rows = sparse[m][0]
            lost[rows[blank_rows[rows]]] = True
    return _lost_rows(int(lost.sum()))


def _lost_rows(lost: int) -> list[str]:
    return [f"{lost} row(s) with values but no step skipped"] if lost else []


def step_restarts(frame: pl.DataFrame, step: str) -> list[str]:
    """A step column that goes back down: two logs appended into one file, or a run restarted
    into the same CSV. Sorting by step then interleaves them and a repeated step keeps the later
    value, so say it where `analyze` shows it, not only in `inspect`'s per-metric counts."""
    values = frame.get_column(step).cast(pl.Float64, strict=False).drop_nulls().to_numpy()
    if len(values) < 2:
        return []
    back = np.flatnonzero(values[1:] < np.maximum.accumulate(values)[:-1])
    starts = back[np.r_[True, np.diff(back) > 1]] if len(back) else back
    if not len(starts):
        return []
    first = int(starts[0]) + 1
    return [
        f"'{step}' goes back {len(starts)} time(s) (first from {values[first - 1]:.10g} to {values[first]:.10g}): "
        "logs appended or a restarted run in one file? rows are sorted by step, a repeated step keeps the later value"
    ]


def numeric_columns(frame: pl.DataFrame, exclude: set[str] = frozenset()) -> list[str]:
    # the schema is built once: frame.schema[c] per column rebuilds it each time (3,000 columns: 17 s)
    return [c for c, dtype in frame.schema.items() if c not in exclude and dtype.is_numeric() and c not in INDEX_COLUMNS]


def wide_to_tidy(
    frame: pl.DataFrame, step_col: str | None, metrics: list[str], wall_col: str | None = None,
    sparse: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> pl.DataFrame:
    """One column per metric -> tidy rows; blanks (metrics logged on other rows) are dropped.
    A metric in `sparse` is no column of `frame` but its rows (ascending) and values there.

    Built so that a long table is held about once: a metric with a value on every row that has a
    step keeps its own column as its values and shares one step column with the others (no copy);
    only a metric with blanks is filtered, one at a time, and each wide column is let go as it
    becomes tidy. So the caller should hand `frame` over without holding it elsewhere (a 315 MB
    console log: the wide and the tidy table held at once peaked 1.0 GB)."""
    if not metrics:
        return empty_scalars()
    if step_col is None:
        step = pl.int_range(0, pl.len(), dtype=pl.Int64)
    else:
        step = pl.col(step_col).cast(pl.Float64, strict=False).round().cast(pl.Int64, strict=False)
    wall = pl.col(wall_col).cast(pl.Float64, strict=False) if wall_col else None
    # private names: a metric may itself be called "step", "value" or "wall_time"; each column taken
    # as a Series, since a select on the wide frame costs time in its width (6,000 per-layer columns
    # went quadratic: 58 s -> 2 s)
    sparse = sparse or {}
    columns = frame.select(
        step.alias("__ld_step"), *([wall.alias("__ld_wall")] if wall is not None else []),
        *[pl.col(m).cast(pl.Float64, strict=False) for m in metrics if m not in sparse],
    ).get_columns()
    del frame
    step_s = columns.pop(0).alias("step")
    wall_s = columns.pop(0).alias("wall_time") if wall is not None else None
    stepped = step_s.is_not_null()
    if not sparse and not step_s.null_count() and not any(c.null_count() for c in columns):
        return _dense(metrics, step_s, wall_s, columns)
    # the rows with a step, shared by every metric that has a value on each of them
    n_stepped = int(stepped.sum())
    shared = [step_s, wall_s] if n_stepped == len(step_s) else [s.filter(stepped) if s is not None else None for s in (step_s, wall_s)]
    # metric by metric, not one unpivot: that holds every blank cell of a sparse table at once (a long
    # console log: 35 million cells for 14 million values)
    parts = []
    blanks: list[tuple[str, pl.Series]] = []  # consecutive metrics with blanks, tidied together
    for m in metrics:
        if blanks and len(blanks) * len(step_s) >= _CELLS_AT_ONCE:
            parts.append(_blank_part(blanks, step_s, wall_s, stepped))
            blanks = []
        if m in sparse:  # its rows' steps gathered, the rows without a step dropped
            at = pl.Series(sparse[m][0])
            value = pl.Series(sparse[m][1], dtype=pl.Float64)
            step_at = step_s.gather(at)
            kept = step_at.is_not_null() & value.is_not_null()
            got = [step_at.filter(kept), value.filter(kept), wall_s.gather(at).filter(kept) if wall_s is not None else None]
        else:
            value = columns.pop(0)
            kept = stepped & value.is_not_null()
            if int(kept.sum()) == n_stepped:
                got = [shared[0], value if n_stepped == len(value) else value.filter(stepped), shared[1]]
            elif len(value) < _CELLS_AT_ONCE:
                blanks.append((m, value))
                continue
            else:
                got = [step_s.filter(kept), value.filter(kept), wall_s.filter(kept) if wall_s is not None else None]
        del value
        if blanks:  # rows stay in the metrics' order
            parts.append(_blank_part(blanks, step_s, wall_s, stepped))
            blanks = []
        part = pl.DataFrame([s.alias(n) for s, n in zip(got, ("step", "value", "wall_time")) if s is not None])
        parts.append(part.with_columns(metric=pl.lit(m, dtype=pl.Categorical)))
    if blanks:
        parts.append(_blank_part(blanks, step_s, wall_s, stepped))
    return tidy(pl.concat(parts))


def _dense(metrics: list[str], step: pl.Series, wall: pl.Series | None, values: list[pl.Series]) -> pl.DataFrame:
    """A table with every metric on every row (a step on each) as tidy rows in one go: its columns
    end to end, the step (and wall time) repeated, each metric's name once per row. What the
    metric-by-metric path builds, without its per-metric polars calls (a 500-row log of 5 metrics: 1.6 -> 0.6 ms)."""
    n = len(step)
    codes = np.repeat(np.arange(len(metrics), dtype=np.uint32), n)
    parts = [
        pl.Series("metric", metrics, dtype=pl.Categorical).gather(codes),
        pl.Series("step", np.tile(step.to_numpy(), len(metrics))),
        pl.Series("value", np.concatenate([v.to_numpy() for v in values])),
    ]
    parts.append(no_wall_times(n * len(metrics)) if wall is None else pl.concat([wall.alias("wall_time")] * len(metrics)))
    return tidy(pl.DataFrame(parts))


#: Cells of short metrics with blanks tidied in one unpivot: a console line of 20,000 values made
#: 20,000 one-row frames (6 s); a long column with blanks is still filtered on its own, since one
#: unpivot of a long log's sparse columns holds every blank at once.
_CELLS_AT_ONCE = 2_000_000


def _blank_part(blanks: list[tuple[str, pl.Series]], step_s: pl.Series, wall_s: pl.Series | None, stepped: pl.Series) -> pl.DataFrame:
    """Metrics with blanks, in order, as one tidy part: their rows with a step and a value."""
    index = [step_s.alias("step")] + ([wall_s.alias("wall_time")] if wall_s is not None else [])
    wide = pl.DataFrame(index + [v.alias(f"__ld_{i}") for i, (_, v) in enumerate(blanks)])
    names = {f"__ld_{i}": m for i, (m, _) in enumerate(blanks)}
    long = wide.filter(stepped).unpivot(
        on=list(names), index=[s.name for s in index], variable_name="metric", value_name="value"
    ).filter(pl.col("value").is_not_null())
    return long.select(
        "step", "value", *(["wall_time"] if wall_s is not None else []),
        metric=pl.col("metric").replace_strict(names, return_dtype=pl.String).cast(pl.Categorical),
    )


def read(source: Source) -> list[Run]:
    """One CSV run; a Lightning or Ultralytics CSV that cannot be read (header only, damaged) gives
    way to the TensorBoard event files its folder holds, which carry the same scalars."""
    path = source.files[0]
    sniffed = sniff(path)
    if sniffed is not None and sniffed[0] == _TB_DOWNLOAD_HEADER:
        return _read_tb_downloads(source)
    twins = [f for f in source.files if f.name.startswith(_EVENTS_PREFIX)]
    try:
        run = _read_csv_run(source, path, sniffed)
    except ReadError as exc:
        if not twins:
            raise
        return _read_twins(source, twins, exc)
    if twins:
        run.notes.append(f"{len(twins)} TensorBoard event file(s) here repeat these scalars; read {path.name} instead")
    return [run]


def _read_twins(source: Source, twins: list[Path], why: ReadError) -> list[Run]:
    """The TensorBoard copy of an unusable CSV, read by the TensorBoard reader (with the folder's hparams.yaml)."""
    configs = [f for f in source.files if f.name.endswith(".yaml")]
    runs = tensorboard.read(Source("tensorboard", source.path, twins + configs))
    for run in runs:
        run.notes.append(f"read the TensorBoard event files instead of the CSV: {why}")
    return runs


def _read_csv_run(source: Source, path: Path, sniffed: tuple[list[str], Dialect] | None) -> Run:
    """A wide or long CSV (its layout from the header) as one run."""
    table = load_table(path, sniffed)
    frame = table.frame
    kind = layout(_plain_name(path.name), frame.columns, {f.name for f in source.files}) or "csv"
    if path.name.lower().endswith(_KERAS_SUFFIXES):
        kind = "keras_csv"
    warnings, notes = table.warnings, table.notes
    config = {}
    for side in source.files[1:]:
        if side.name.endswith(".yaml"):
            config.update(load_config_file(side, warnings))
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
        return Run(name="", path=str(source.path), format="csv", scalars=tidy(long), config=config, warnings=warnings, notes=notes)
    steps = plan(frame)
    wall = _WALL_COLUMNS.get(kind) if _WALL_COLUMNS.get(kind) in frame.columns else None
    metrics = numeric_columns(steps.frame, steps.exclude | {wall})
    if not metrics:
        raise ReadError(f"{path}: CSV has no numeric metric columns")
    scalars = wide_to_tidy(steps.frame, steps.column, metrics, wall)
    if scalars.is_empty():
        raise ReadError(f"{path}: no row has both a numeric step and a metric value")
    notes.extend(steps.notes)
    if steps.column is not None:
        warnings.extend(stepless_rows(steps.frame, steps.column, metrics))
        warnings.extend(step_restarts(steps.frame, steps.column))
    return Run(name="", path=str(source.path), format=kind, scalars=scalars, config=config, warnings=warnings, notes=notes)
