"""W&B history rows -> the tidy scalar table.

A W&B history is a sequence of rows, one per `wandb.log` call: `_step`,
`_timestamp`, `_runtime` plus whatever the user logged, nested dicts included
(shown as `a.b` in the W&B UI), media and histograms as dicts tagged `_type`.
Local run folders store it as `wandb-history.jsonl`, the public API dumps it
as JSONL or CSV, and the binary `run-*.wandb` file as history records: all of
them end here so every W&B source yields the same metric names and steps.

JSONL files are parsed by polars' native reader (`read_history`), a few
million cells a second and no Python per row; the per-row path
(`read_jsonl` + `frame_from_rows`) is the reference and takes over for
files the native reader cannot type (see `read_history`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

from ..model import empty_scalars, printable, tidy
from .csv_table import wide_to_tidy
from .limits import MAX_WIDTH, TooDeep, loads, within_limits

#: A UTF-8 byte-order mark, which Windows editors and PowerShell put before the first line.
_BOM = b"\xef\xbb\xbf"
#: Lines `first_json_object` looks through for an object (a stray first line is not the format).
_SNIFF_LINES = 8
#: Columns W&B adds to every history row; bookkeeping, not metrics.
INTERNAL_PREFIX = "_"
STEP, TIMESTAMP, MEDIA_TAG = "_step", "_timestamp", "_type"


def _marker(token: bytes) -> tuple[re.Pattern[bytes], bytes]:
    """The bare token as a value -> the JSON string "\\u0000<token>" (a re template: its backslash doubled)."""
    return re.compile(re.escape(token) + rb"(?=\s*[,\]}])"), b'"\\\\u0000' + token + b'"'


#: Python's json (which W&B writes with) emits bare NaN / Infinity / -Infinity; JSON has no such
#: tokens, so they become strings polars can carry, marked with a NUL no logger writes ("\u0000NaN").
#: A value token is followed by `,` `]` or `}`; one matched inside a string breaks that string's
#: quotes, so the parse fails and the per-row reading takes over: never a wrong number.
#: Entries: (the word to look for, the rewrites from its first occurrence on); -Infinity before Infinity.
_NONFINITE = [(b"NaN", [_marker(b"NaN")]), (b"Infinity", [_marker(b"-Infinity"), _marker(b"Infinity")])]
_SENTINEL_VALUE = {"\x00NaN": float("nan"), "\x00Infinity": float("inf"), "\x00-Infinity": float("-inf")}
#: Schema sample: lines spread over the file, plus its first and last lines; small files are read whole.
_SAMPLE_LINES, _SAMPLE_ENDS, _SAMPLE_ALL_BYTES = 2000, 200, 1 << 20
#: The native reader makes one column per key and one row per line. A sparse history (loss every
#: step, 1,000 per-class metrics every 1,000 steps) would be a dense frame of mostly nulls (a 10 MB
#: file -> 800 MB): past this many cells, and this many times the values the file holds, it is
#: read per row, which keeps only the values.
_DENSE_CELLS, _SPARSE_RATIO = 10_000_000, 8
#: Dicts nested deeper than this are read per row: the key count's expressions grow with the square
#: of the depth (a 100-deep line took minutes and 2 GB); W&B's own nesting is a few levels.
_MAX_NESTING = 16


class _Untyped(Exception):
    """The native reader's columns cannot reproduce the per-row reading exactly."""


def numeric_items(row: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """(dotted name, value) for every number in a history row; media, strings and lists are skipped."""
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            yield name, float(value)
        elif isinstance(value, dict) and MEDIA_TAG not in value:
            yield from numeric_items(value, f"{name}.")


def frame_from_rows(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """History rows -> tidy (metric, step, value, wall_time); rows without `_step` count up from 0."""
    metric: list[str] = []
    step: list[int] = []
    value: list[float] = []
    wall: list[float | None] = []
    for index, row in enumerate(rows):
        raw_step = row.get(STEP, index)
        if isinstance(raw_step, float) and raw_step.is_integer():
            raw_step = int(raw_step)
        if not isinstance(raw_step, int) or isinstance(raw_step, bool):
            continue
        stamp = row.get(TIMESTAMP)
        stamp = float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else None
        for name, v in numeric_items(row):
            if name.startswith(INTERNAL_PREFIX):
                continue
            metric.append(name)
            step.append(raw_step)
            value.append(v)
            wall.append(stamp)
    if any(printable(name) != name for name in set(metric)):  # a "\udce9" key: polars refuses lone surrogates
        metric = [printable(name) for name in metric]
    return tidy(
        pl.DataFrame(
            {"metric": metric, "step": step, "value": value, "wall_time": wall},
            schema={"metric": pl.Utf8, "step": pl.Int64, "value": pl.Float64, "wall_time": pl.Float64},
        )
    )


def read_history(path: Path) -> tuple[pl.DataFrame, int, int]:
    """A history JSONL file -> (tidy frame, lines that were not a JSON object, lines left out
    for a limit of `limits`: nested too deep or holding too many keys).

    Native path: polars parses the file against a schema inferred from a
    few thousand lines spread over it (inferring over every line costs more
    than parsing them all); a count of the keys in the raw bytes then proves
    the parsed frame holds every key of every line, else the schema is
    inferred over the whole file (a key first logged in one line mid-run).
    Nested dicts become dotted names; dicts tagged `_type` (media,
    histograms, tables), lists, strings and booleans are skipped. Two things
    Python's json writes but polars rejects are repaired on the bytes first:
    a half-written last line (a killed run) is cut off and counted, and the
    bare NaN / Infinity / -Infinity tokens become marked strings that turn
    back into NaN / inf column-wise. Files it still cannot type the way the
    per-row reading would (a key holding numbers in some rows and dicts,
    booleans or text in others; non-object lines mid-file; undecodable
    bytes) are read per row, and so are sparse histories that would make a frame of
    mostly nulls (see _SPARSE_RATIO). One difference is accepted: in a column that
    also holds NaN or Infinity, a number logged as text ("0.5") counts as a
    number. Polars never infers a schema over lines past the limits (a line nested 1,000
    deep took 10.9 GB): such a file is read per row, which leaves those lines out.
    """
    try:
        frame, bad = _native_frame(path)
        return (empty_scalars() if frame is None else _tidy_history(frame)), bad, 0
    except (_Untyped, pl.exceptions.PolarsError, ValueError, OverflowError):
        rows, bad, refused = read_jsonl(path)
        return frame_from_rows(rows), bad, refused


def _native_frame(path: Path) -> tuple[pl.DataFrame | None, int]:
    """The file as one wide frame (a column per top-level key; None if it has no line) and its cut lines.

    Only this function holds the file's bytes, so a rewritten copy replaces
    them instead of doubling the memory. PolarsError when polars cannot read it.
    """
    data, bad = _cut_broken_tail(path.read_bytes().removeprefix(_BOM))
    if not data or data.isspace():
        return None, bad
    schema = _sample_schema(data)
    if schema is None:  # a diverged run's NaN lines are in the sample (its tail): mark them first
        data, marked = _mark_nonfinite(data)
        schema = _sample_schema(data) if marked else None
    if schema is not None:
        if max((_nesting(dtype) for dtype in schema.values()), default=0) > _MAX_NESTING:
            raise _Untyped("dicts nested too deep: read per row")
        cells = len(schema) * (data.count(b"\n") + 1)
        if cells > _DENSE_CELLS and cells > _SPARSE_RATIO * data.count(b":"):
            raise _Untyped("a sparse history: read per row")
    try:
        return _parse(data, schema), bad
    except pl.exceptions.PolarsError:
        data, marked = _mark_nonfinite(data)  # NaN only in lines the sample missed
        if not marked:
            raise
    return _parse(data, _sample_schema(data)), bad


def _mark_nonfinite(data: bytes) -> tuple[bytes, int]:
    """The bytes with every non-finite token marked, and how many were."""
    marked = 0
    for token, patterns in _NONFINITE:
        lead = data.find(token[:1])  # one byte is found at memchr speed, a word much slower
        first = -1 if lead < 0 else data.find(token, lead)
        if first < 0:
            continue
        start = data.rfind(b"\n", 0, first) + 1  # a run turns NaN late: only the rest is searched
        rest = data[start:]
        for pattern, mark in patterns:
            rest, count = pattern.subn(mark, rest)
            marked += count
        data = b"".join((memoryview(data)[:start], rest))
    return data, marked


def _sample_schema(data: bytes) -> pl.Schema | None:
    """The schema polars infers from a sample of the lines; None when the sample does not parse."""
    sample = _sample_lines(data)
    if not within_limits(sample):
        raise _Untyped("a line nested too deep or too wide: read per row")
    try:
        return pl.read_ndjson(sample, infer_schema_length=None).schema
    except pl.exceptions.PolarsError:
        return None


def _parse(data: bytes, schema: pl.Schema | None) -> pl.DataFrame:
    """Parse against the sampled schema when it provably fits every line, else infer over all of them."""
    if schema is not None:
        try:
            frame = pl.read_ndjson(data, schema=schema)
            if _holds_every_key(frame, data):
                return frame
        except pl.exceptions.PolarsError:
            pass  # a type the sample did not show (an int column turning float), a line too deep for polars
    if not within_limits(data):  # scanned only here: a schema inferred over every line must not meet such a line
        raise _Untyped("a line nested too deep or too wide: read per row")
    return pl.read_ndjson(data, infer_schema_length=None)


def _sample_lines(data: bytes) -> bytes:
    """The first and last _SAMPLE_ENDS lines and _SAMPLE_LINES lines evenly spaced between, joined."""
    if len(data) <= _SAMPLE_ALL_BYTES:
        return data
    head = 0
    for _ in range(_SAMPLE_ENDS):
        head = data.find(b"\n", head) + 1
        if head == 0:
            return data
    tail = len(data)
    for _ in range(_SAMPLE_ENDS):
        tail = data.rfind(b"\n", 0, tail - 1) + 1
        if tail <= head:
            return data
    parts = [data[:head]]
    for offset in range(head, tail, max(1, (tail - head) // _SAMPLE_LINES)):
        start = data.rfind(b"\n", 0, offset) + 1
        stop = data.find(b"\n", offset)
        parts.append(data[start : stop + 1 if stop >= 0 else len(data)])
    parts.append(data[tail:])
    return b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts)


def _holds_every_key(frame: pl.DataFrame, data: bytes) -> bool:
    """Whether the frame parsed against a sampled schema kept every non-null key of every line.

    Polars drops keys the schema does not name, silently; the raw bytes say
    how many there were. Every key is followed by a colon, so colons bound
    the keys from above and a frame holding as many values as the text has
    colons lost nothing (one fast byte count). Otherwise count more exactly:
    `"name":` less those followed by null. Colons inside strings only make
    the counts too high, so the check can fail needlessly, never pass wrongly.
    """
    values = _keys_in(frame)
    if values is None:
        return False
    if values == data.count(b":"):
        return True
    return values == data.count(b'":') - data.count(b'": null') - data.count(b'":null')


def _keys_in(frame: pl.DataFrame) -> int | None:
    """Non-null values at every nesting level of the frame; None when a list holds dicts (not counted)."""
    counts: list[pl.Expr] = []

    def walk(expr: pl.Expr, dtype: pl.DataType, present: pl.Expr) -> bool:
        here = present & expr.is_not_null()
        counts.append(here.sum())
        if isinstance(dtype, pl.Struct):
            return all(walk(expr.struct.field(f.name), f.dtype, here) for f in dtype.fields)
        return not _struct_in_list(dtype)

    if not all(walk(pl.col(name), dtype, pl.lit(True)) for name, dtype in frame.schema.items()):
        return None
    return int(frame.select(pl.sum_horizontal(counts)).item()) if counts else 0


def _nesting(dtype: pl.DataType) -> int:
    """How many dicts and lists deep a column's type goes."""
    if isinstance(dtype, pl.Struct):
        return 1 + max((_nesting(f.dtype) for f in dtype.fields), default=0)
    if isinstance(dtype, (pl.List, pl.Array)):
        return 1 + _nesting(dtype.inner)
    return 0


def _struct_in_list(dtype: pl.DataType) -> bool:
    """A list (at any depth) whose items are or hold dicts."""
    if isinstance(dtype, (pl.List, pl.Array)):
        return isinstance(dtype.inner, pl.Struct) or _struct_in_list(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(_struct_in_list(f.dtype) for f in dtype.fields)
    return False


def _cut_broken_tail(data: bytes) -> tuple[bytes, int]:
    """Drop the last line when it is not a whole JSON object (a writer killed mid-line)."""
    end = len(data)
    while end and data[end - 1 : end].isspace():
        end -= 1
    start = data.rfind(b"\n", 0, end) + 1
    try:
        whole = end == 0 or isinstance(loads(data[start:end]), dict)
    except ValueError:
        whole = False
    return (data, 0) if whole else (data[:start], 1)


def _tidy_history(frame: pl.DataFrame) -> pl.DataFrame:
    """The native reader's wide frame (one column per top-level key) -> tidy rows."""
    metrics: dict[str, pl.Expr] = {}
    for name in frame.columns:
        if not name.startswith(INTERNAL_PREFIX):
            _collect(frame.get_column(name), pl.col(name), name, pl.lit(True), metrics)
    index = pl.int_range(0, pl.len(), dtype=pl.Int64)
    if STEP in frame.columns:
        raw = _as_float(frame.get_column(STEP), pl.col(STEP), keep_text=False)
        if raw is None:
            raise _Untyped(STEP)
        # a float step counts when whole; a missing one is the row number (as in frame_from_rows)
        step = pl.when(raw.is_null()).then(index).when(raw == raw.round()).then(raw.cast(pl.Int64, strict=False))
    else:
        step = index
    wall = _as_float(frame.get_column(TIMESTAMP), pl.col(TIMESTAMP), keep_text=False) if TIMESTAMP in frame.columns else None
    if not metrics:
        return empty_scalars()
    wide = frame.select(
        step.alias("__ld_step"),
        (wall if wall is not None else pl.lit(None, dtype=pl.Float64)).alias("__ld_wall"),
        *[expr.alias(name) for name, expr in metrics.items()],
    )
    return wide_to_tidy(wide, "__ld_step", list(metrics), "__ld_wall")


def _collect(column: pl.Series, expr: pl.Expr, name: str, keep: pl.Expr, out: dict[str, pl.Expr]) -> None:
    """Add one float expression per numeric leaf of `column` to `out` (dotted names).

    `keep` masks rows where an enclosing dict is a media value (`_type`).
    """
    dtype = column.dtype
    if isinstance(dtype, pl.Struct):
        fields = [f.name for f in dtype.fields]
        if MEDIA_TAG in fields:
            keep = keep & expr.struct.field(MEDIA_TAG).is_null()
        for field in fields:
            if field != MEDIA_TAG:
                _collect(column.struct.field(field), expr.struct.field(field), f"{name}.{field}", keep, out)
        return
    value = _as_float(column, expr, keep_text=True)
    if value is None:
        return
    if name in out:  # "a.b" logged both flat and nested: the per-row reading keeps both, in row order
        raise _Untyped(name)
    out[name] = pl.when(keep).then(value)


def _as_float(column: pl.Series, expr: pl.Expr, keep_text: bool) -> pl.Expr | None:
    """A column as Float64 (NaN / inf restored), None when it holds no numbers.

    Raises _Untyped when text and numbers share the column in a way only the
    per-row reading can tell apart.
    """
    dtype = column.dtype
    if dtype.is_numeric():
        return expr.cast(pl.Float64)
    if dtype != pl.String:
        return None  # booleans, lists, all-null
    marked = column.is_in(list(_SENTINEL_VALUE))
    if not marked.any():
        text = column.drop_nulls()
        if text.len() and text.cast(pl.Float64, strict=False).null_count() == text.len():
            return None  # words only ("train", a path): not a metric
        raise _Untyped(column.name)  # numbers mixed with text, or numbers logged as text
    if not keep_text:
        raise _Untyped(column.name)
    mapped = expr.replace_strict(_SENTINEL_VALUE, default=None, return_dtype=pl.Float64)
    return pl.when(mapped.is_not_null()).then(mapped).otherwise(expr.cast(pl.Float64, strict=False))


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    """JSON objects, one per line; returns (rows, lines that were not a JSON object, lines left
    out for a limit: nested deeper than MAX_DEPTH, or more colons than MAX_WIDTH, which bound the keys).

    A killed run leaves a half-written last line: it is counted, not fatal.
    """
    rows: list[dict[str, Any]] = []
    bad = refused = 0
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            if line.count(":") > MAX_WIDTH:
                refused += 1
                continue
            try:
                row = loads(line)
            except TooDeep:
                refused += 1
                continue
            except ValueError:
                bad += 1
                continue
            if isinstance(row, dict):
                rows.append(row)
            else:
                bad += 1
    return rows, bad, refused


def first_json_object(path: Path) -> dict[str, Any] | None:
    """The first JSON object among a .jsonl file's first lines, or None (cheap format sniffing;
    a byte-order mark or one damaged opening line must not hide a history)."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            lines = [fh.readline(1 << 20) for _ in range(_SNIFF_LINES)]
    except OSError:
        return None
    for line in lines:
        try:
            row = loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            return row
    return None
