"""Scalars (and hparams) out of TensorBoard `Event` records, fast and by the book.

What counts as a scalar (both paths implement exactly this):

* a summary value with ``simple_value`` (legacy: torch/tensorboardX
  SummaryWriter, TF1) — always a scalar;
* a summary value with a ``tensor`` of float dtype (float32, float64, half,
  bfloat16) holding one element, whose metadata names the ``scalars`` plugin
  (TF2 ``tf.summary.scalar``, Keras, ``add_scalar(new_style=True)``). A tensor
  without metadata inherits the plugin of the first value of its tag that had
  metadata (TF1 writers strip repeated metadata), as TensorBoard does.

Everything else (histograms, images, text, graphs) is skipped; hparams-plugin
values fill the run's config.

`read_event_file(path, fast=True)` decodes the common single-value layouts of
a whole batch of records at once with numpy (no per-record protobuf parse; in
a large batch most records by the shape of one already parsed, `event_shapes`),
skips records that hold no summary (the file version, graphs) where protobuf
would read them without fault, and hands any other record to the reference
extractor (`Event.FromString`). `fast=False` runs the reference extractor on
every record: tests compare the two on every file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..model import empty_scalars
from . import event_shapes, tfrecord
from .event_rows import ACCEPT, PENDING, Decoded
_DT_FLOAT, _DT_DOUBLE, _DT_BFLOAT16, _DT_HALF = 1, 2, 14, 19
_SCALARS, _HPARAMS = b"scalars", b"hparams"


@dataclass
class EventScalars:
    """One event file's scalars as a tidy frame (metric, step, value, wall_time), in file order."""

    frame: pl.DataFrame
    config: dict[str, Any] = field(default_factory=dict)
    damage: tfrecord.Damage = field(default_factory=tfrecord.Damage)
    #: Records with a valid CRC that still did not parse as an Event.
    undecodable: int = 0

    def __len__(self) -> int:
        return self.frame.height


_VBITS = 20  # a value's order key: record index << _VBITS | index of the value in its event


def order_key(rec: np.ndarray, vidx: np.ndarray | int = 0) -> np.ndarray:
    return (rec.astype(np.int64) << _VBITS) | vidx


class _Collector:
    """Accumulates values from both paths, batch by batch, into compact polars chunks.

    A large file holds millions of values, so each batch becomes a frame of
    int32 tag id, int64 step, float64 value and wall time (and an int8 state)
    at once; the chunks are concatenated without copying and tag ids turn
    into names only at the end.
    """

    _DTYPES = {"key": np.int64, "tag": np.int32, "step": np.int64, "value": np.float64, "wall_time": np.float64, "state": np.int8}

    def __init__(self) -> None:
        self.tag_ids: dict[str, int] = {}
        self.parts: list[dict[str, np.ndarray]] = []
        self.chunks: list[pl.DataFrame] = []
        #: tag id -> (order key, names the scalars plugin?) of its first value carrying metadata
        self.first_md: dict[int, tuple[int, bool]] = {}
        self.config: dict[str, Any] = {}
        self.undecodable = 0

    def tag_id(self, tag: str) -> int:
        got = self.tag_ids.get(tag)
        if got is None:
            got = self.tag_ids[tag] = len(self.tag_ids)
        return got

    def add(self, **cols: np.ndarray) -> None:
        self.parts.append({k: np.asarray(v, dtype=self._DTYPES[k]) for k, v in cols.items()})

    def add_md(self, key: np.ndarray, tag: np.ndarray, is_scalars: np.ndarray) -> None:
        """Values that carried metadata: the first per tag decides its metadata-less tensors."""
        order = np.argsort(key, kind="stable")
        tags, first = np.unique(np.asarray(tag)[order], return_index=True)
        for t, k, sc in zip(tags.tolist(), np.asarray(key)[order][first].tolist(), np.asarray(is_scalars)[order][first].tolist()):
            if t not in self.first_md or k < self.first_md[t][0]:
                self.first_md[t] = (k, sc)

    def flush(self) -> None:
        """Close a batch: its values (fast and reference-decoded) in file order, as one chunk."""
        if not self.parts:
            return
        cols = {k: np.concatenate([p[k] for p in self.parts]) for k in self._DTYPES}
        self.parts = []
        key = cols.pop("key")
        if len(key) > 1 and not np.all(key[1:] > key[:-1]):
            order = np.argsort(key, kind="stable")
            cols = {k: v[order] for k, v in cols.items()}
        self.chunks.append(pl.DataFrame(cols))

    def finish(self, damage: tfrecord.Damage, prefix: str) -> EventScalars:
        self.flush()
        if not self.chunks:
            return EventScalars(empty_scalars(), self.config, damage, self.undecodable)
        frame = pl.concat(self.chunks, how="vertical", rechunk=False)
        self.chunks = []
        scalar_tags = [t for t, (_, sc) in self.first_md.items() if sc]
        if (frame.get_column("state") == PENDING).any():
            frame = frame.filter((pl.col("state") == ACCEPT) | pl.col("tag").is_in(scalar_tags))
        names = pl.Series("metric", [f"{prefix}{t}" for t in self.tag_ids], dtype=pl.Categorical)
        frame = frame.select(names.gather(frame.get_column("tag")).alias("metric"), "step", "value", "wall_time")
        return EventScalars(frame, self.config, damage, self.undecodable)


# --------------------------------------------------------------------------- reference extractor


def _proto():
    """The Event / hparams protobuf classes (imported on first use: tensorboard is heavy)."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2

    return event_pb2.Event, plugin_data_pb2.HParamsPluginData


def leading_tags(path: Path, limit: int = 1 << 16) -> set[str]:
    """Summary tags of the records in the first `limit` bytes of an event file: enough to tell
    what wrote a folder (add_scalars, add_hparams) without reading the whole file."""
    event_cls, _ = _proto()
    tags: set[str] = set()
    for data in tfrecord.iter_records(path, tfrecord.Damage(), limit=limit):
        try:
            event = event_cls.FromString(data)
        except Exception:  # noqa: BLE001 - protobuf raises DecodeError (and others) on garbage
            continue
        tags.update(value.tag for value in event.summary.value)
    return tags


def _tensor_scalar(tensor) -> float | None:
    """The single float a scalar-shaped float tensor holds, else None."""
    dtype = tensor.dtype
    if dtype not in (_DT_FLOAT, _DT_DOUBLE, _DT_HALF, _DT_BFLOAT16):
        return None
    if any(d.size != 1 for d in tensor.tensor_shape.dim):
        return None
    if tensor.tensor_content:
        np_dtype = {_DT_FLOAT: "<f4", _DT_DOUBLE: "<f8", _DT_HALF: "<f2", _DT_BFLOAT16: "<u2"}[dtype]
        arr = np.frombuffer(tensor.tensor_content, dtype=np_dtype)
    elif dtype == _DT_FLOAT:
        arr = np.array(tensor.float_val, dtype=np.float32)
    elif dtype == _DT_DOUBLE:
        arr = np.array(tensor.double_val, dtype=np.float64)
    else:
        arr = np.array(tensor.half_val, dtype=np.int64).astype(np.uint16)
        if dtype == _DT_HALF:
            arr = arr.view(np.float16)
    if arr.size != 1:
        return None
    if dtype == _DT_BFLOAT16:
        arr = (arr.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return float(arr[0])


def _hparams(content: bytes, parser) -> dict[str, Any]:
    """hparams-plugin content -> {name: value} from its session_start_info (empty for other parts)."""
    try:
        data = parser.FromString(content)
    except Exception:  # noqa: BLE001 - a damaged hparams blob costs only the config
        return {}
    if not data.HasField("session_start_info"):
        return {}
    out: dict[str, Any] = {}
    for key, val in data.session_start_info.hparams.items():
        kind = val.WhichOneof("kind")
        if kind == "number_value":
            num = val.number_value
            out[key] = int(num) if float(num).is_integer() and abs(num) < 2**53 else num
        elif kind in ("string_value", "bool_value"):
            out[key] = getattr(val, kind)
    return out


def _extract(records: list[tuple[int, bytes]], col: _Collector) -> None:
    """Reference extraction: parse each (index, bytes) record with protobuf and collect its values."""
    event_cls, hparams_cls = _proto()
    rows: list[tuple] = []
    mds: list[tuple] = []
    for rec, data in records:
        try:
            event = event_cls.FromString(data)
        except Exception:  # noqa: BLE001 - protobuf raises DecodeError (and others) on garbage
            col.undecodable += 1
            continue
        if not event.HasField("summary"):
            continue
        for vidx, value in enumerate(event.summary.value):
            has_md = value.HasField("metadata")
            plugin = value.metadata.plugin_data.plugin_name if has_md else None
            tag = col.tag_id(value.tag)
            if has_md:
                mds.append((rec, vidx, tag, plugin == "scalars"))
            if plugin == "hparams":
                col.config.update(_hparams(value.metadata.plugin_data.content, hparams_cls))
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                rows.append((rec, vidx, event.step, event.wall_time, value.simple_value, tag, ACCEPT))
            elif kind == "tensor" and plugin in (None, "scalars"):
                num = _tensor_scalar(value.tensor)
                if num is not None:
                    state = ACCEPT if plugin == "scalars" else PENDING
                    rows.append((rec, vidx, event.step, event.wall_time, num, tag, state))
    if rows:
        rec, vidx, step, wall, val, tag, state = (np.array(c) for c in zip(*rows))
        col.add(key=order_key(rec, vidx), step=step, wall_time=wall, value=val, tag=tag, state=state)
    if mds:
        rec, vidx, tag, is_sc = (np.array(c) for c in zip(*mds))
        col.add_md(order_key(rec, vidx), tag, is_sc)


# --------------------------------------------------------------------------- vectorised decoder


def _varint(buf: np.ndarray, pos: np.ndarray, lim: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Base-128 varints at `pos` (each must end before `lim`): (value, position after, ok)."""
    ok = pos < lim
    first = _byte(buf, pos, lim)
    val = (first & 0x7F).astype(np.uint64)
    nxt = pos + 1
    live = np.flatnonzero(first >= 0x80)  # most varints here are one byte: only the rest loop
    shift = 7
    while len(live):
        if shift > 63:
            ok[live] = False
            break
        inside = nxt[live] < lim[live]
        if not inside.all():
            ok[live[~inside]] = False
            live = live[inside]
        b = buf[nxt[live]]
        val[live] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        nxt[live] += 1
        live = live[b >= 0x80]
        shift += 7
    return val, nxt, ok


def _gather(buf: np.ndarray, pos: np.ndarray, dtype: str) -> np.ndarray:
    """Little-endian numbers of `dtype` (its width in bytes) at arbitrary (unaligned) offsets."""
    return tfrecord.unaligned(buf, dtype)[pos]


def _byte(buf: np.ndarray, pos: np.ndarray, end: np.ndarray) -> np.ndarray:
    """buf[pos] where pos < end, else 0 (0 is never a valid field key)."""
    inside = pos < end
    if inside.all():
        return buf[pos]
    out = np.zeros(len(pos), dtype=np.uint8)
    out[inside] = buf[pos[inside]]
    return out


def _field(buf, pos, end, key):
    """Length-delimited field `key` at pos: (present, content start, content end)."""
    present = _byte(buf, pos, end) == key
    length, start, ok = _varint(buf, pos + 1, end)
    stop = start + length.astype(np.int64)
    present &= ok & (length < (1 << 31)) & (stop <= end)
    # absent fields collapse to an empty range at `pos`, so later reads stay inside the record
    return present, np.where(present, start, pos), np.where(present, stop, pos)


def _names_equal(buf, start, stop, *names: bytes) -> list[np.ndarray]:
    """Per name (each shorter than 8 bytes): does buf[start:stop] equal it, per row?

    A length-delimited string is preceded by its one-byte length, so the 8
    bytes ending at `stop` are `len(name), name` exactly when it matches.
    """
    fits = (stop - start) == len(names[0])
    word = np.zeros(len(start), dtype=np.uint64)
    word[fits] = _gather(buf, stop[fits] - 8, "<u8")
    return [fits & (word == np.uint64(int.from_bytes(bytes([len(n)]) + n, "little"))) for n in names]


def _factorize(buf: np.ndarray, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
    """Distinct byte strings buf[start:stop] -> (code per row, the distinct strings in order of
    first appearance).

    Each string is read as 8-byte words (the last one read so that it ends at
    `stop`, then shifted, so nothing outside the string or the buffer is read),
    hashed, grouped by hash and then checked word by word against its group's
    first row: equal hashes of different strings cannot merge tags.
    """
    u64 = tfrecord.unaligned(buf, "<u8")
    length = stop - start
    h = length.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    words = []
    with np.errstate(over="ignore"):
        for w in range(max(1, int(-(-length.max() // 8)))):
            rem = length - 8 * w  # bytes of the string from this word on
            full = rem >= 8
            part = (rem > 0) & ~full
            word = np.zeros(len(start), dtype=np.uint64)
            word[full] = u64[start[full] + 8 * w]
            if part.any():
                shift = (8 * (8 - rem[part])).astype(np.uint64)
                word[part] = u64[stop[part] - 8] >> shift
            h = (h ^ word) * np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
            words.append(word)
    first, inv = _unique(h)
    rep = first[inv]
    exact = (length == length[rep]).all() and all((word == word[rep]).all() for word in words)
    if not exact:  # a hash collision (practically never): group the bytes themselves
        seen: dict[bytes, int] = {}
        codes = [seen.setdefault(buf[a:b].tobytes(), len(seen)) for a, b in zip(start.tolist(), stop.tolist())]
        return np.array(codes, np.int64), list(seen)
    order = np.argsort(first)  # codes by first appearance
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank[inv], [buf[start[i] : stop[i]].tobytes() for i in first[order]]


#: Rows of a batch whose distinct hashes `_unique` tries first.
_UNIQUE_HEAD = 4096


def _unique(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(h, return_index=True, return_inverse=True)`'s first index and inverse. A file
    logs its few tags from its first rows on: the distinct hashes of the first `_UNIQUE_HEAD` rows,
    looked up for every row, are the same answer without sorting every row (2M rows: sorting was
    a tenth of reading); a hash first seen later sends the batch to the full sort."""
    values, first = np.unique(h[:_UNIQUE_HEAD], return_index=True)
    at = np.searchsorted(values, h)
    np.minimum(at, len(values) - 1, out=at)
    if len(values) and bool((values[at] == h).all()):
        return first, at
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    return first, inverse


def _decode_batch(batch: tfrecord.Batch, col: _Collector) -> np.ndarray:
    """Decode a batch's single-value scalar records; returns the record rows left for the reference path."""
    return _collect(_decode_records(batch.buf, batch.offsets, batch.lengths), col, batch.first)


def _decode_records(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> Decoded:
    """Every record of a batch. The parser reads the first `event_shapes.HEAD` records not yet
    decoded, the records of their shapes are decoded by shape, and so on for a few rounds (a
    file's shapes change as its steps grow a varint byte); the parser reads whatever is left. A
    batch too small to gain (`event_shapes.MIN_RECORDS`) is parsed whole."""
    ends = starts + lengths
    head = event_shapes.HEAD
    if len(starts) < event_shapes.MIN_RECORDS:
        return _parse(buf, starts, ends)
    out = Decoded.empty(len(starts))
    todo = np.ones(len(starts), bool)
    for _ in range(event_shapes.ROUNDS):
        parsed = np.flatnonzero(todo)[:head]
        out.put(parsed, _parse(buf, starts[parsed], ends[parsed]))
        todo[parsed] = False
        shapes = event_shapes.templates(buf, starts, lengths, out, parsed)
        if not shapes:
            break
        event_shapes.fill(buf, starts, lengths, out, shapes, todo)
        if not todo.any():
            return out
    left = np.flatnonzero(todo)
    out.put(left, _parse(buf, starts[left], ends[left]))
    return out


def _collect(rows: Decoded, col: _Collector, first: int) -> np.ndarray:
    """Hand a batch's decoded values (tags named, in file order) to the collector; returns the
    records left for the reference path (including those whose tag is not ASCII: protobuf
    judges its UTF-8)."""
    idx = np.flatnonzero(rows.tagged)
    if len(idx):
        names = [raw.decode("ascii") if raw.isascii() else None for raw in rows.names]
        if any(nm is None for nm in names):
            bad = idx[np.isin(rows.code[idx], [i for i, nm in enumerate(names) if nm is None])]
            rows.fallback[bad] = True
            rows.take[bad] = False
            rows.tagged[bad] = False
        lut = np.array([col.tag_id(nm) if nm is not None else -1 for nm in names], np.int64)
        tag = np.where(rows.tagged, lut[np.maximum(rows.code, 0)], -1)
        key = order_key(np.arange(len(tag)) + first)
        mdrows = rows.tagged & rows.has_md
        if mdrows.any():
            col.add_md(key[mdrows], tag[mdrows], rows.is_scalars[mdrows])
        take = rows.take
        if take.any():
            col.add(key=key[take], step=rows.step[take], wall_time=rows.wall[take], value=rows.value[take], tag=tag[take], state=rows.state[take])
    return np.flatnonzero(rows.fallback)


def _parse(buf: np.ndarray, o: np.ndarray, e: np.ndarray) -> Decoded:
    """The field parser: the common single-value layouts of records buf[o:e], vectorised. Records
    of other layouts are marked `fallback` (the reference path reads them)."""
    n = len(o)
    out = Decoded.empty(n)
    rows = np.arange(n)
    fallback = out.fallback
    start = o

    # Event: wall_time (1, fixed64), step (2, varint), summary (5, bytes) = the last field.
    has_wall = (_byte(buf, o, e) == 0x09) & (o + 9 <= e)
    wall = np.zeros(n)
    wall[has_wall] = _gather(buf, o[has_wall] + 1, "<f8")
    out.wall_at[has_wall] = 1
    p = o + 9 * has_wall
    has_step = _byte(buf, p, e) == 0x10
    step = np.zeros(n, dtype=np.int64)
    if has_step.any():
        v, q, ok = _varint(buf, p[has_step] + 1, e[has_step])
        step[has_step] = v.view(np.int64)
        out.step_at[has_step] = p[has_step] + 1 - o[has_step]
        out.step_end[has_step] = q - o[has_step]
        p[has_step] = q
        fallback[np.flatnonzero(has_step)[~ok]] = True
    # Summary holding exactly one Value (1, bytes) that holds the tag (1, bytes).
    good, s0, s1 = _field(buf, p, e, 0x2A)
    good &= s1 == e
    good2, v0, v1 = _field(buf, s0, e, 0x0A)
    good &= good2 & (v1 == e)
    good3, t0, t1 = _field(buf, v0, e, 0x0A)
    good &= good3 & (t1 < e)
    odd = np.flatnonzero(~good)
    fallback[odd[~_without_summary(buf, p[odd], e[odd])]] = True
    sel = np.flatnonzero(good)
    o, e, wall, step, t0, t1 = o[sel], e[sel], wall[sel], step[sel], t0[sel], t1[sel]
    rows = rows[sel]

    # Value payload: simple_value (2, fixed32) or tensor (8, bytes); then optional metadata (9, bytes).
    key = buf[t1]
    simple = key == 0x15
    tens, x0, x1 = _field(buf, t1, e, 0x42)
    after = np.where(simple, t1 + 5, x1)
    has_md, m0, m1 = _field(buf, after, e, 0x4A)
    good = (simple | tens) & np.where(has_md, m1 == e, after == e) & (after <= e)
    # plugin name: metadata.plugin_data (1).plugin_name (1)
    pd, d0, d1 = _field(buf, m0, m1, 0x0A)
    pn, n0, n1 = _field(buf, d0, d1, 0x0A)
    pn &= pd & has_md
    n0, n1 = np.where(pn, n0, 0), np.where(pn, n1, 0)
    is_scalars, is_hparams = (pn & eq for eq in _names_equal(buf, n0, n1, _SCALARS, _HPARAMS))
    fallback[rows[~good | is_hparams]] = True
    good &= ~is_hparams
    other = tens & has_md & ~is_scalars  # histograms, images, text...: skipped

    # Tensor: dtype (1, varint) [shape (2) empty] then one value field.
    want = good & tens & ~other
    value = np.full(len(rows), np.nan)
    value_at = np.where(simple, t1 + 1, -1)
    value_kind = simple.astype(np.int8)  # simple_value: float32
    simple &= good
    value[simple] = _gather(buf, t1[simple] + 1, "<f4")
    if want.any():
        ok, val, at, kind = _tensor_values(buf, x0[want], x1[want])
        value[np.flatnonzero(want)[ok]] = val[ok]
        value_at[want], value_kind[want] = at, kind
        fallback[rows[np.flatnonzero(want)[~ok]]] = True
        want[np.flatnonzero(want)[~ok]] = False
    take = good & (simple | want)

    # tags of every value kept or carrying metadata (the latter decide metadata-less tensors)
    tagged = take | (good & has_md)
    idx = np.flatnonzero(tagged)
    if len(idx):
        codes, out.names = _factorize(buf, t0[idx], t1[idx])
        out.code[rows[idx]] = codes
    out.take[rows], out.tagged[rows] = take, tagged
    out.step[rows], out.wall[rows], out.value[rows] = step, wall, value
    out.state[rows] = np.where(simple | is_scalars, ACCEPT, PENDING)
    out.has_md[rows], out.is_scalars[rows] = has_md, is_scalars
    out.value_at[rows] = np.where(value_at >= 0, value_at - start[rows], -1)
    out.value_kind[rows] = value_kind
    return out


def _without_summary(buf: np.ndarray, p: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Records whose rest, from `p` (after wall time and step), is one field that holds no
    summary, optionally followed by the writer's name (source_metadata (10) holding only its
    string `writer` (1)), all of which protobuf reads without fault: the file version every writer
    starts with (3, a string: ASCII is asked, UTF-8 would do), a graph or a meta graph (4 and 9,
    bytes). They hold no scalar, so they need not go to the reference path, whose protobuf import
    (20-40 ms) a run without hparams then never pays."""
    bare = np.zeros(len(p), bool)
    key = _byte(buf, p, e)
    rows = np.flatnonzero((key == 0x1A) | (key == 0x22) | (key == 0x4A))
    if not len(rows):
        return bare
    end = e[rows]
    size, c0, ok = _varint(buf, p[rows] + 1, end)
    c1 = c0 + size.astype(np.int64)
    ok &= (size < (1 << 31)) & (c1 <= end)
    meta, m0, m1 = _field(buf, np.where(ok, c1, end), end, 0x52)
    name, w0, w1 = _field(buf, m0, m1, 0x0A)
    meta &= (m1 == end) & ((m0 == m1) | (name & (w1 == m1)))  # empty, or just the writer's name
    ok &= (c1 == end) | meta
    version = key[rows] == 0x1A
    ok &= ~version | _ascii(buf, c0, c1, ok & version)
    ok &= ~(meta & name) | _ascii(buf, w0, w1, ok & meta & name)
    bare[rows] = ok
    return bare


def _ascii(buf: np.ndarray, start: np.ndarray, stop: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row: is buf[start:stop] all ASCII? Asked only where `rows` holds (False elsewhere),
    through a running count of high bytes over the span those rows cover."""
    out = np.zeros(len(start), bool)
    where = np.flatnonzero(rows)
    if not len(where):
        return out
    a, b = start[where], stop[where]
    lo = int(a.min())
    high = np.concatenate(([0], np.cumsum(buf[lo : int(b.max())] >= 0x80, dtype=np.int64)))
    out[where] = high[b - lo] == high[a - lo]
    return out


def _tensor_values(buf: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scalar float tensors in their usual encodings: (decoded?, value, where the value's bytes
    start, `value_kind` (0 for a half stored as a varint: no fixed place)."""
    n = len(x0)
    ok = (_byte(buf, x0, x1) == 0x08) & (x0 + 2 <= x1)
    dtype = np.where(ok, _byte(buf, x0 + 1, x1), 0)  # single-byte enum values only
    ok &= np.isin(dtype, (_DT_FLOAT, _DT_DOUBLE, _DT_HALF))
    p = x0 + 2
    shape = (_byte(buf, p, x1) == 0x12) & (_byte(buf, p + 1, x1) == 0)  # empty TensorShapeProto
    p = p + 2 * shape
    key = _byte(buf, p, x1)
    size = np.where(dtype == _DT_DOUBLE, 8, np.where(dtype == _DT_FLOAT, 4, 2))
    content = (key == 0x22) & (_byte(buf, p + 1, x1) == size) & (p + 2 + size == x1)
    packed_f = (key == 0x2A) & (dtype == _DT_FLOAT) & (_byte(buf, p + 1, x1) == 4) & (p + 6 == x1)
    packed_d = (key == 0x32) & (dtype == _DT_DOUBLE) & (_byte(buf, p + 1, x1) == 8) & (p + 10 == x1)
    plain_f = (key == 0x2D) & (dtype == _DT_FLOAT) & (p + 5 == x1)
    plain_d = (key == 0x31) & (dtype == _DT_DOUBLE) & (p + 9 == x1)
    half = (key == 0x6A) & (dtype == _DT_HALF)
    val = np.full(n, np.nan)
    f32 = ok & ((content & (dtype == _DT_FLOAT)) | packed_f | plain_f)
    at = np.where(content | packed_f | packed_d, p + 2, p + 1)
    val[f32] = _gather(buf, at[f32], "<f4")
    f64 = ok & ((content & (dtype == _DT_DOUBLE)) | packed_d | plain_d)
    val[f64] = _gather(buf, at[f64], "<f8")
    f16 = ok & content & (dtype == _DT_HALF)
    val[f16] = _gather(buf, at[f16], "<f2")
    hv = ok & half
    if hv.any():
        rows = np.flatnonzero(hv)
        inner = _byte(buf, p[rows] + 1, x1[rows]).astype(np.int64)
        bits, q, good = _varint(buf, p[rows] + 2, x1[rows])
        good &= (inner == q - p[rows] - 2) & (q == x1[rows]) & (bits < 65536)
        val[rows[good]] = bits[good].astype(np.uint16).view(np.float16)
        hv[rows[~good]] = False
    kind = np.select([f32, f64, f16], [1, 2, 3], 0).astype(np.int8)
    return f32 | f64 | f16 | hv, val, at, kind


# --------------------------------------------------------------------------- file reader


def read_event_file(path: Path, fast: bool = True, prefix: str = "") -> EventScalars:
    """All scalars and hparams of one event file; damage is reported, never raised.

    `prefix` is put before every metric name (a Keras split folder's name).
    """
    col = _Collector()
    damage = tfrecord.Damage()
    if fast:
        for batch in tfrecord.scan_batches(path, damage):
            left = _decode_batch(batch, col)
            if len(left):
                buf, offs, lens = batch.buf, batch.offsets, batch.lengths
                _extract([(batch.first + i, buf[offs[i] : offs[i] + lens[i]].tobytes()) for i in left.tolist()], col)
            col.flush()
    else:
        records = enumerate(tfrecord.iter_records(path, damage))
        while block := list(islice(records, 65536)):
            _extract(block, col)
    return col.finish(damage, prefix)
