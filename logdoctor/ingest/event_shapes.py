"""Event records of one shape, decoded without parsing them: the large-file path of the decoder.

A writer logs the same tags every step, so nearly every record of a large event file has the
same bytes as an earlier record of its tag except in three places: the wall time, the step and
the value. The field parser in `tfevents` reads a batch's first `HEAD` records; each record it
decoded whose value sits at a fixed place becomes a template: its length, its bytes with those
three places masked out (a varint step keeps its continuation bits, so its width is fixed too),
and what the parser made of it (tag, plugin, state). Any later record of the template's length
whose masked bytes equal the template's is the same structure with other numbers: every choice
the parser makes depends only on the bytes the template fixes. Its numbers are then read at the
template's offsets, the same bytes by the same conversions the parser uses. Records that match no
template go to the parser. Per record, a few masked word comparisons and three reads replace the
parser's field-by-field walk and the tag's hashing: reading a 2M-scalar legacy file went from
0.56-0.60 to 0.50-0.52 CPU-s, an 800k one from 0.22 to 0.16 (`docs/performance.md`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .event_rows import VALUE_DTYPES, Decoded
from .tfrecord import unaligned

#: Batches of fewer records are parsed whole: below about 8,000 records the parser's cost is its
#: numpy calls, not their length, and the shape path's rounds cost more than they save (an audit's
#: 2,500-record event files read in 5.3 ms instead of 3.7 by shape).
MIN_RECORDS = 8192
#: Records of a batch the field parser decodes first; their shapes become the templates.
HEAD = 256
#: Templates tried on a batch at most (a file with more shapes than this in its first records
#: leaves the rest to the parser).
MOST = 64
#: Rounds of parsing a batch's next `HEAD` undecoded records and decoding their shapes.
ROUNDS = 4


@dataclass(frozen=True)
class Template:
    """The shape of record `row`: `length` bytes whose 8-byte words at `at`, masked by `mask`,
    equal `want`; and where its numbers lie (see `Decoded`)."""

    row: int
    length: int
    at: tuple[int, ...]
    mask: tuple[np.uint64, ...]
    want: tuple[np.uint64, ...]
    wall_at: int
    step_at: int
    step_end: int
    value_at: int
    value_kind: int


def templates(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, rows: Decoded, parsed: np.ndarray) -> list[Template]:
    """A template for each distinct shape among the records `parsed` (indices into `rows`, the
    batch's records at `starts` of `lengths`): the first record of each (length, tag, layout)."""
    keep = parsed[rows.take[parsed] & ~rows.fallback[parsed] & (rows.value_kind[parsed] > 0) & (lengths[parsed] >= 8)]
    columns = (lengths, rows.code, rows.wall_at, rows.step_at, rows.step_end, rows.value_at, rows.value_kind)
    seen: set[tuple[int, ...]] = set()
    out: list[Template] = []
    for row, shape in zip(keep.tolist(), np.stack([c[keep] for c in columns], axis=1).tolist()):
        if tuple(shape) in seen:
            continue
        seen.add(tuple(shape))
        length, _, wall_at, step_at, step_end, value_at, value_kind = shape
        out.append(_template(buf, int(starts[row]), row, length, wall_at, step_at, step_end, value_at, value_kind))
        if len(out) == MOST:
            break
    return out


def _template(buf: np.ndarray, start: int, row: int, length: int, wall_at: int, step_at: int, step_end: int,
              value_at: int, value_kind: int) -> Template:
    mask = np.full(length, 0xFF, np.uint8)
    if wall_at >= 0:
        mask[wall_at : wall_at + 8] = 0
    if step_at >= 0:
        mask[step_at:step_end] = 0x80
    mask[value_at : value_at + np.dtype(VALUE_DTYPES[value_kind]).itemsize] = 0
    at = np.minimum(np.arange(0, length, 8), length - 8)  # the last word ends with the record
    words = unaligned(mask, "<u8")[at]
    want = unaligned(buf[start : start + length], "<u8")[at] & words
    return Template(row, length, tuple(at.tolist()), tuple(words), tuple(want), wall_at, step_at, step_end, value_at, value_kind)


def fill(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, rows: Decoded, shapes: list[Template], todo: np.ndarray) -> None:
    """Decode each record still `todo` that has one of the `shapes` as the parser decoded the
    shape's own record of `rows`, into `rows`; those records are no longer `todo`."""
    words = unaligned(buf, "<u8")
    of_length: dict[int, np.ndarray] = {}
    for shape in shapes:
        if shape.length not in of_length:
            of_length[shape.length] = lengths == shape.length
        found = np.flatnonzero(of_length[shape.length] & todo)
        at = starts[found]
        differ = np.zeros(len(found), np.uint64)
        for offset, mask, want in zip(shape.at, shape.mask, shape.want):
            word = words[at + offset]
            word &= mask
            word ^= want
            differ |= word
        same = differ == 0
        found, at = found[same], at[same]
        if not len(found):
            continue
        todo[found] = False
        for name in ("take", "tagged", "code", "state", "has_md", "is_scalars"):
            column = getattr(rows, name)
            column[found] = column[shape.row]
        if shape.wall_at >= 0:
            rows.wall[found] = unaligned(buf, "<f8")[at + shape.wall_at]
        if shape.step_at >= 0:
            step = (buf[at + shape.step_at] & 0x7F).astype(np.uint64)
            for k in range(1, shape.step_end - shape.step_at):
                step |= (buf[at + shape.step_at + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
            rows.step[found] = step.view(np.int64)
        rows.value[found] = unaligned(buf, VALUE_DTYPES[shape.value_kind])[at + shape.value_at]
