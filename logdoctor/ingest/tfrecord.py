"""TFRecord framing with integrity checks: the byte layer under TensorBoard event files.

A TFRecord file is a sequence of records::

    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

Two readers live here and must agree byte for byte (a test checks it):

* `scan_batches` — the fast path. A tight Python walk collects record offsets
  for a block of the file (streamed in chunks, so memory stays bounded); then
  numpy checks every header CRC and every data CRC of the block at once. It
  yields batches of (buffer, data offsets, data lengths) for the vectorised
  event decoder.
* `iter_records` — the reference path: one record at a time, as plainly as the
  format allows.

Damage rules (both paths): a record whose data CRC fails is skipped and
counted — a corrupted record must never become a wrong number. A header whose
CRC fails makes its length untrustworthy, so the reader resynchronises at the
next offset holding a valid header, counting the bytes it skipped. A file that
ends mid-record (a killed run) keeps every complete record and says so once.

A stretch of zeros (a preallocated file, a writer that crashed, a copy tool; as a hole in a
sparse file it costs no disk at all) holds no record: resynchronisation tests no offset whose
12 header bytes are all zero (no length has a zero CRC), and the fast path seeks past a hole
(SEEK_DATA) instead of reading it. A 2 GB hole was scanned at ~22 MB per CPU-second.

CRC-32C is affine, which the fast path uses twice. Records of one length are checked together
(`_group_intact`: the CRC of the XOR of their bytes against the XOR of their CRCs, over subsets
that keep two damaged records from cancelling out), so an intact block costs one C call per
subset instead of one per record; a group that fails, and records too long or too few of their
length, get their own CRCs, computed vectorised (a record's CRC is an XOR of per-position table
lookups: ~0.13 us per record against ~0.16 us per call into the C `crc32c` package; 800k records:
reading 327-425 -> 251-318 ms with the groups). Records over 1 KiB and the reference path use
the C package, imported only once a process has checked a few kB one buffer at a time (`crc32c`);
without it they fall back to plain Python tables (slow, same results).
"""
from __future__ import annotations

import errno
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

HEADER = 12  # uint64 length + uint32 masked crc of the length
FOOTER = 4  # uint32 masked crc of the data
_MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 4 << 20  # bytes read per step of the streaming scan (bounds the per-batch temporaries)


# --------------------------------------------------------------------------- CRC-32C


def _make_tables(depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Byte table, per-distance tables and per-length constants for table-driven CRC-32C.

    CRC is affine over GF(2): crc(b_0..b_{L-1}) = K[L] ^ XOR_j Q[L-1-j][b_j], where
    Q[d] is the byte table pushed through d zero bytes and K[L] the effect of
    the initial register. That turns a CRC into independent table lookups, which
    numpy can do for many records at once.
    """
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table[i] = c
    eight = np.uint32(8)
    dist = np.empty((depth, 256), dtype=np.uint32)
    dist[0] = table
    for d in range(1, depth):
        prev = dist[d - 1]
        dist[d] = table[prev & 0xFF] ^ (prev >> eight)
    const = np.empty(depth + 1, dtype=np.uint32)
    reg = np.uint32(0xFFFFFFFF)
    for length in range(depth + 1):
        const[length] = reg ^ np.uint32(0xFFFFFFFF)
        reg = table[reg & 0xFF] ^ (reg >> eight)
    return table, dist, const


_VEC_DEPTH = 1024  # records up to this many bytes get the vectorised CRC (fallback mode)
_TABLE, _DIST, _CONST = _make_tables(_VEC_DEPTH)
_TABLE_LIST = _TABLE.tolist()


def _crc32c_py(data: bytes) -> int:
    """Plain table-driven CRC-32C of one buffer (~100 ns a byte: a process's first few kB, and
    everything where the C package is not installed)."""
    crc = 0xFFFFFFFF
    table = _TABLE_LIST
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c_many(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32C of `lengths[i]` bytes at `offsets[i]` of `buf` (uint8), for every i, vectorised; one
    C call per record for those too long for the tables, and for all of them when they are fewer
    than the bytes of the longest (the vectorised path makes a numpy pass per byte: a small event
    file's few odd records, its header and hparams, cost 12 % of reading it)."""
    out = np.empty(len(offsets), dtype=np.uint32)
    if not len(offsets):
        return out
    big = lengths > _VEC_DEPTH
    if _c_installed() and not big.all() and np.count_nonzero(~big) < int(lengths[~big].max()):
        big[:] = True
    for i in np.flatnonzero(big):
        out[i] = crc32c(buf[offsets[i] : offsets[i] + lengths[i]].data)
    small = np.flatnonzero(~big)
    if not len(small):
        return out
    lens = lengths[small]
    order = np.argsort(-lens, kind="stable")
    lens = lens[order]
    ends = offsets[small][order] + lens  # end offsets, longest first
    acc = _CONST[lens]
    # number of records longer than d, for d = 0..max-1 (records sorted longest first)
    counts = np.searchsorted(-lens, -np.arange(int(lens[0])), side="left")
    for d in range(int(lens[0])):
        k = counts[d]
        acc[:k] ^= _DIST[d][buf[ends[:k] - 1 - d]]
    out[small[order]] = acc
    return out


def masked(crc: np.ndarray | int):
    """TFRecord's masked CRC: rotate right by 15 bits and add a constant (mod 2**32)."""
    if isinstance(crc, np.ndarray):
        crc = crc.astype(np.uint32)
        rot = (crc >> np.uint32(15)) | (crc << np.uint32(17))
        return rot + np.uint32(_MASK_DELTA)
    crc &= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C of one buffer: plain Python tables for the first `_PYTHON_BYTES` bytes a process
    checks one buffer at a time, the C package (hardware-accelerated) for any buffer past that
    share, Python again where it is not installed. Importing the package costs 25-30 ms of CPU (it
    reads its own version from the installed metadata): more than a small event file's few single
    checks (its header, hparams, CRC groups: a few kB) cost in Python."""
    global _python_bytes
    size = len(data)
    if _python_bytes + size <= _PYTHON_BYTES:
        _python_bytes += size
        return _crc32c_py(bytes(data))
    c_crc = _c_crc32c()
    return c_crc(data) if c_crc is not None else _crc32c_py(bytes(data))


#: Bytes checked by `crc32c` in Python before the C package is imported for the rest.
_PYTHON_BYTES = 1 << 15
_python_bytes = 0


@lru_cache(maxsize=1)
def _c_crc32c():
    """The C package's CRC-32C function, imported on first need; None where it is not installed."""
    try:
        from crc32c import crc32c as c_crc
    except ImportError:
        return None
    return c_crc


@lru_cache(maxsize=1)
def _c_installed() -> bool:
    """Whether the C package is there to call, found without importing it."""
    from importlib.util import find_spec

    return find_spec("crc32c") is not None


def unaligned(buf: np.ndarray, dtype: str) -> np.ndarray:
    """A view of `buf` (uint8) whose element i is the `dtype` number starting at byte i.

    numpy allows a one-byte stride for wider types, so reading numbers at
    arbitrary offsets is one gather instead of a byte gather per number.
    """
    width = np.dtype(dtype).itemsize
    return np.ndarray((max(len(buf) - width + 1, 0),), dtype=dtype, buffer=buf, strides=(1,))


def _gather_u32(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return unaligned(buf, "<u4")[pos]


def _gather_u64(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return unaligned(buf, "<u8")[pos]


def headers_ok(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For record starts in `buf`: does the masked CRC of each 8-byte length match? A length below
    `_HEADER_TABLE` (any scalar record) has its CRC looked up, not computed: a lookup instead of
    eight."""
    if not len(starts):
        return np.zeros(0, dtype=bool)
    lengths = _gather_u64(buf, starts)
    short = lengths < _HEADER_TABLE
    expected = np.empty(len(starts), np.uint32)
    expected[short] = _length_crcs()[lengths[short]]
    if not short.all():
        expected[~short] = masked(_length_crc(buf, starts[~short]))
    return expected == _gather_u32(buf, starts + 8)


def _length_crc(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """CRC-32C of the 8 bytes at each of `starts`."""
    crcs = np.full(len(starts), _CONST[8], dtype=np.uint32)
    for d in range(8):  # fixed length: no sorting by length needed
        crcs ^= _DIST[d][buf[starts + (7 - d)]]
    return crcs


#: Record lengths whose header CRC `headers_ok` looks up.
_HEADER_TABLE = 1 << 16


@lru_cache(maxsize=1)
def _length_crcs() -> np.ndarray:
    """The masked CRC a header stores for each length below `_HEADER_TABLE`."""
    raw = np.arange(_HEADER_TABLE, dtype="<u8").view(np.uint8)
    return masked(_length_crc(raw, np.arange(0, len(raw), 8)))


def _header_ok_at(data: bytes, pos: int) -> bool:
    return masked(crc32c(data[pos : pos + 8])) == _U32.unpack_from(data, pos + 8)[0]


def _resync_vectorised(data: bytes, buf: np.ndarray, start: int) -> int | None:
    """First offset >= start in `data` with a valid record header, or None. Offsets whose 12
    bytes are all zero are not tested: an all-zero header is never valid."""
    n = len(data)
    block = 1 << 20
    lo = start
    while lo + HEADER <= n:
        hi = min(n - HEADER + 1, lo + block)
        nonzero = np.concatenate(([0], np.cumsum(buf[lo : hi + HEADER - 1] != 0, dtype=np.int32)))
        cand = np.arange(lo, hi, dtype=np.int64)[nonzero[HEADER:] > nonzero[: hi - lo]]
        hits = cand[headers_ok(buf, cand)]
        if len(hits):
            return int(hits[0])
        lo = hi
    return None


# --------------------------------------------------------------------------- damage report


@dataclass
class Damage:
    """What a scan of one file could not use; `lines()` says it for the user."""

    records: int = 0
    bad_crc: int = 0
    #: (file offset, bytes skipped) for each corrupted header the reader resynchronised past.
    skipped: list[tuple[int, int]] = field(default_factory=list)
    #: File offset of a trailing incomplete record (killed writer), if any.
    truncated_at: int | None = None
    size: int = 0
    #: The file starts with gzip's magic bytes (someone compressed the log to archive it).
    gzip: bool = False

    def lines(self, name: str) -> list[str]:
        out = []
        if self.bad_crc:
            out.append(f"{name}: {self.bad_crc} record(s) failed their CRC check and were skipped")
        if self.skipped:
            total = sum(b for _, b in self.skipped)
            out.append(
                f"{name}: corrupted record header at byte {self.skipped[0][0]:,}; "
                f"{total:,} byte(s) skipped in {len(self.skipped)} place(s)"
            )
        if self.truncated_at is not None:
            out.append(
                f"{name}: file ends mid-record at byte {self.truncated_at:,} (run killed while writing?); "
                f"kept the {self.records:,} complete record(s) before it"
            )
        return out

    def problem(self) -> str | None:
        """Why nothing at all could be read from the file (None when some record was intact)."""
        if self.records:
            return None
        if self.size == 0:
            return "empty event file (0 bytes)"
        if self.gzip:
            return "gzip-compressed event file: decompress it (gunzip) to read it"
        if self.bad_crc:
            return f"no intact record: all {self.bad_crc} failed their CRC check"
        if self.truncated_at == 0:
            return f"event file ends inside its first record ({self.size} bytes; run killed at start?)"
        return "not a TensorBoard event file (no valid record header)"


# --------------------------------------------------------------------------- reference path


def iter_records(path: Path, damage: Damage, limit: int | None = None) -> Iterator[bytes]:
    """Yield each intact record's data, one at a time (the reference reader); with `limit`, only
    the records within the file's first `limit` bytes (a peek at what a file holds)."""
    with open(path, "rb") as fh:
        data = fh.read(-1 if limit is None else limit)
    damage.size = n = len(data)
    damage.gzip = data.startswith(_GZIP_MAGIC)
    pos = 0
    while pos < n:
        if pos + HEADER > n:
            damage.truncated_at = pos
            return
        if not _header_ok_at(data, pos):
            nxt = next((q for q in range(pos + 1, n - HEADER + 1) if _header_ok_at(data, q)), None)
            damage.skipped.append((pos, (nxt if nxt is not None else n) - pos))
            if nxt is None:
                return
            pos = nxt
            continue
        (length,) = _U64.unpack_from(data, pos)
        end = pos + HEADER + length
        if end + FOOTER > n:
            damage.truncated_at = pos
            return
        record = data[pos + HEADER : end]
        if masked(crc32c(record)) == _U32.unpack_from(data, end)[0]:
            damage.records += 1
            yield record
        else:
            damage.bad_crc += 1
        pos = end + FOOTER


# --------------------------------------------------------------------------- fast path


@dataclass
class Batch:
    """Intact records of one block: `buf` (uint8 view) with each record's data offset and length."""

    buf: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    #: Index in the file (count of intact records before the first of this batch).
    first: int


#: Records walked one by one before (and after every break of) a pattern of record lengths...
_LEARN = 64
#: ...and the longest period looked for in it (a step logs each of its tags in the same order).
_MAX_PERIOD = 32


def _walk(data: bytes, buf: np.ndarray, pos: int) -> tuple[np.ndarray, int]:
    """Offsets of consecutive records from `pos` that fit in `data`, and the first offset after them.

    Lengths are not trusted yet (their header CRCs are checked afterwards, all at once). A
    record's offset depends on every length before it, so the plain walk is one Python step per
    record. But a writer logs the same tags in the same order every step, so record lengths repeat
    with a short period: after a few records walked one by one, whole stretches are predicted from
    that period and every predicted length is confirmed in one vectorised read. Where a length
    differs (the step's varint grew a byte, a new tag), the walk goes on one by one from that
    record, the last one the confirmed lengths place exactly. The result is the plain walk's.
    """
    parts: list[np.ndarray] = []
    while True:
        starts, pos = _walk_some(data, pos, _LEARN)
        parts.append(np.asarray(starts, dtype=np.int64))
        if len(starts) < _LEARN:
            break  # the data ends here
        frames = np.diff(np.r_[starts, pos])
        period = _period(frames)
        if period is not None:
            predicted, pos = _predict(buf, pos, frames[-period:])
            parts.append(predicted)
    return np.concatenate(parts), pos


def _walk_some(data: bytes, pos: int, most: int) -> tuple[list[int], int]:
    """Up to `most` consecutive record offsets from `pos`, one Python step each."""
    unpack = _U64.unpack_from
    size = len(data)
    limit = size - HEADER
    frame = HEADER + FOOTER
    starts: list[int] = []
    add = starts.append
    while pos <= limit and len(starts) < most:
        nxt = pos + unpack(data, pos)[0] + frame
        if nxt > size:
            break
        add(pos)
        pos = nxt
    return starts, pos


def _period(frames: np.ndarray) -> int | None:
    """The shortest period with which the record sizes repeat over the whole window, if any. Only
    the shifts that bring back the first size are tried (a tag's record recurs once a cycle)."""
    longest = min(_MAX_PERIOD, len(frames) // 2)
    for period in (np.flatnonzero(frames[1 : longest + 1] == frames[0]) + 1).tolist():
        if np.array_equal(frames[period:], frames[:-period]):
            return period
    return None


def _predict(buf: np.ndarray, pos: int, pattern: np.ndarray) -> tuple[np.ndarray, int]:
    """Record offsets from `pos` assuming sizes keep repeating `pattern`, for as many whole cycles
    as the buffer holds, cut before the first record whose stored length breaks the pattern."""
    cycle = int(pattern.sum())
    cycles = (len(buf) - pos) // cycle
    if cycles <= 0:
        return np.zeros(0, dtype=np.int64), pos
    within = np.r_[0, np.cumsum(pattern)[:-1]]
    starts = (pos + cycle * np.arange(cycles, dtype=np.int64)[:, None] + within[None, :]).ravel()
    expected = np.tile(pattern - (HEADER + FOOTER), cycles).astype(np.uint64)
    broken = np.flatnonzero(_gather_u64(buf, starts) != expected)
    if len(broken):
        return starts[: broken[0]], int(starts[broken[0]])
    return starts, pos + cycles * cycle


def _data_crc_ok(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Per record: does the stored masked CRC match the data?

    Records of one length are first checked together (`_group_intact`); only a group that fails
    is checked record by record, to find the records to skip."""
    stored = _gather_u32(buf, offs + lens)
    ok = np.ones(len(offs), dtype=bool)
    if not len(offs):
        return ok
    short = lens <= _VEC_DEPTH
    counts = np.bincount(lens[short], minlength=1)
    alone = ~short | (counts[np.minimum(lens, len(counts) - 1)] < _GROUP_MIN)  # long, or too few of their length
    for length in np.flatnonzero(counts >= _GROUP_MIN).tolist():
        group = np.flatnonzero(lens == length)
        if not _group_intact(buf, offs[group], length, unmasked(stored[group])):
            alone[group] = True
    if alone.any():
        ok[alone] = masked(crc32c_many(buf, offs[alone], lens[alone])) == stored[alone]
    return ok


#: Records of one length checked together when there are at least this many of them.
_GROUP_MIN = 8


def unmasked(stored: np.ndarray) -> np.ndarray:
    """The CRCs behind TFRecord's masked CRCs (`masked` undone: subtract, rotate left by 15)."""
    crc = stored.astype(np.uint32) - np.uint32(_MASK_DELTA)
    return (crc << np.uint32(15)) | (crc >> np.uint32(17))


@lru_cache(maxsize=None)
def _zeros_crc(length: int) -> int:
    return crc32c(bytes(length))


def _group_intact(buf: np.ndarray, offs: np.ndarray, length: int, crcs: np.ndarray) -> bool:
    """Whether records of one `length` all match their CRCs, from a few checks of XORs of them.

    CRC is affine: for records of one length, the XOR of their CRCs is the CRC of the XOR of
    their bytes (with the CRC of `length` zero bytes added when their number is even). So the
    records are checked in subsets: all of them, and for each bit of a record's index within the
    group, the records whose index has that bit set. A damaged record is caught as surely as by
    its own CRC (some subset holds it without any other damaged record that could cancel it: two
    indices differ in a bit); damage escapes only if it is identical in three or more records
    whose indices XOR to zero, or if a CRC misses it anyway. The subsets come from halving: the
    records whose index has bit 0 set are the odd columns; XORing each even column with the odd
    one after it leaves a table half as wide whose odd columns are the records with bit 1 set, and
    so on (2n column XORs in all). Rows: the record's 8-byte words, its CRC, and a 1 whose XOR is
    the parity of the subset's size."""
    n, width = len(offs), -(-length // 8)
    if int(offs[-1]) + width * 8 > len(buf):  # the last record's padding would run past the buffer
        buf, offs = np.concatenate([buf[int(offs[0]) :], np.zeros(8, np.uint8)]), offs - offs[0]
    rows = sliding_window_view(buf, width * 8)[offs]  # whole words: a copy of contiguous rows
    rows[:, length:] = 0
    table = np.zeros((width + 2, 1 << (n - 1).bit_length()), dtype=np.uint64)  # zero columns XOR to nothing
    table[:width, :n] = rows.view("<u8").T
    table[width, :n] = crcs
    table[width + 1, :n] = 1
    checks = [np.bitwise_xor.reduce(table, axis=1)]
    while table.shape[1] > 1:
        odd = table[:, 1::2]
        checks.append(np.bitwise_xor.reduce(odd, axis=1))
        table = table[:, 0::2] ^ odd
    zeros = _zeros_crc(length)
    for check in checks:
        crc = crc32c(check[:width].astype("<u8").tobytes()[:length])
        if crc ^ (0 if check[width + 1] & 1 else zeros) != int(check[width]):
            return False
    return True


def _frame_block(data: bytes, buf: np.ndarray, eof: bool, base: int, damage: Damage, skipping: int | None, chunk: int):
    """Frame one block: (record starts with intact headers, first unconsumed offset,
    bytes to read next, skip state).

    `skipping` is the file offset where an unfinished resynchronisation began
    (a corrupted header whose successor has not been found yet), else None.
    """
    pos = 0
    parts: list[np.ndarray] = []
    want = chunk
    while True:
        if skipping is not None:
            nxt = _resync_vectorised(data, buf, pos)
            if nxt is None:  # keep the last HEADER-1 bytes: a header may straddle the block edge
                pos = len(data) if eof else max(pos, len(data) - HEADER + 1)
                break
            damage.skipped.append((skipping, base + nxt - skipping))
            skipping, pos = None, nxt
        arr, end = _walk(data, buf, pos)
        bad = np.flatnonzero(~headers_ok(buf, arr))
        if len(bad):  # every length after a bad header is garbage: cut there
            arr, end = arr[: bad[0]], int(arr[bad[0]])
        parts.append(arr)
        if len(bad) or (end + HEADER <= len(data) and not _header_ok_at(data, end)):
            skipping, pos = base + end, end + 1
            continue
        pos = end
        if end + HEADER <= len(data):  # a valid header whose record runs past the block
            (length,) = _U64.unpack_from(data, end)
            want = max(chunk, end + HEADER + length + FOOTER - len(data))
        break
    starts_all = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return starts_all, pos, want, skipping


def _next_data(fd: int, at: int, size: int) -> int:
    """The first offset >= `at` that is not in a hole of the file (`size` when only a hole is
    left); `at` itself where the filesystem cannot tell."""
    try:
        return os.lseek(fd, at, os.SEEK_DATA)
    except OSError as exc:
        return size if exc.errno == errno.ENXIO else at
    except AttributeError:  # pragma: no cover - a platform without SEEK_DATA
        return at


def scan_batches(path: Path, damage: Damage, chunk: int | None = None) -> Iterator[Batch]:
    """Stream a file as batches of intact records (the fast path; same damage rules as `iter_records`).

    The blocks are read into one buffer, reused: a batch's `buf` holds its records only until the
    next batch is asked for. A fresh 4 MB block each time cost a copy of the file and a page fault
    per 4 kB of it (2M-scalar file: 24,000 faults)."""
    chunk = chunk or CHUNK
    damage.size = Path(path).stat().st_size
    store, kept, base, eof, want, skipping = bytearray(chunk), 0, 0, False, chunk, None
    with open(path, "rb") as fh, open(path, "rb", buffering=0) as holes:  # holes: asked where data resumes (its own offset)
        damage.gzip = fh.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
        fh.seek(0)
        while True:
            if len(store) < kept + want:  # a record longer than a block
                store = store[:kept] + bytearray(want)
            got = fh.readinto(memoryview(store)[kept : kept + want])
            eof = got < want
            data = memoryview(store)[: kept + got]
            buf = np.frombuffer(store, dtype=np.uint8, count=len(data))
            starts, pos, want, skipping = _frame_block(data, buf, eof, base, damage, skipping, chunk)
            if len(starts):
                lens = _gather_u64(buf, starts).astype(np.int64)
                offs = starts + HEADER
                good = _data_crc_ok(buf, offs, lens)
                if not good.all():
                    damage.bad_crc += int(len(good) - good.sum())
                    offs, lens = offs[good], lens[good]
                if len(offs):
                    yield Batch(buf, offs, lens, damage.records)
                    damage.records += len(offs)
            if eof:
                if skipping is not None:
                    damage.skipped.append((skipping, damage.size - skipping))
                elif pos < len(data):
                    damage.truncated_at = base + pos
                return
            base += pos
            kept = len(data) - pos
            if pos:  # the unfinished record moves to the front (copied first: the two may overlap)
                store[:kept] = bytes(data[pos:])
            if skipping is not None:  # still looking for a header: a hole ahead is skipped, not read
                here = base + kept
                ahead = _next_data(holes.fileno(), here, damage.size)
                if ahead - here > HEADER:
                    base, kept = ahead - (HEADER - 1), 0  # its last 11 zeros: a header may start there
                    fh.seek(base)
