"""Records decoded by their shape read exactly what the field parser reads from each of them.

`event_shapes` decodes a large batch's records by comparing them with records the parser already
read; everything it returns must equal what parsing every record returns, on files whose shapes
change (step varints growing, equal-length tags, negative steps, values of every kind) and on
every real file the tests have.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from _tb_writers import REAL, write_mixed, write_scalars
from logdoctor.ingest import event_shapes, tfevents, tfrecord
from test_tfrecord_fastpath import assert_damaged_copies_agree

SAMPLES = Path(__file__).parents[1] / "sample_runs"
COLUMNS = ("fallback", "take", "tagged", "step", "state", "has_md", "is_scalars")


def decoded_alike(path: Path) -> int:
    """Assert both decoders agree on every batch of `path`; returns how many records were decoded by shape."""
    by_shape = 0
    for batch in tfrecord.scan_batches(path, tfrecord.Damage()):
        starts, lengths = batch.offsets, batch.lengths
        parsed = tfevents._parse(batch.buf, starts, starts + lengths)
        shaped = tfevents._decode_records(batch.buf, starts, lengths)
        assert shaped.names == parsed.names
        tagged = parsed.tagged
        assert (shaped.code[tagged] == parsed.code[tagged]).all()
        for name in COLUMNS:
            assert (getattr(shaped, name) == getattr(parsed, name)).all(), name
        take = parsed.take
        assert shaped.value[take].tobytes() == parsed.value[take].tobytes()  # NaN payloads and -0.0 too
        assert shaped.wall[take].tobytes() == parsed.wall[take].tobytes()
        if len(starts) >= event_shapes.MIN_RECORDS:
            by_shape += len(starts) - _parsed_records(batch)
    return by_shape


def _parsed_records(batch) -> int:
    """Records of a batch that `_decode_records` handed to the parser (counted by wrapping it)."""
    count = 0
    real = tfevents._parse

    def counting(buf, o, e):
        nonlocal count
        count += len(o)
        return real(buf, o, e)

    tfevents._parse = counting
    try:
        tfevents._decode_records(batch.buf, batch.offsets, batch.lengths)
    finally:
        tfevents._parse = real
    return count


@pytest.fixture(scope="module")
def shapes_that_change(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("shapes")
    # steps crossing one- to two- to three-byte varints, two tags of one length, a negative step
    steps = [*range(100, 140), *range(16_370, 16_400), *range(2_097_140, 2_097_160)]
    write_scalars(root / "widths", tags=("loss_a", "loss_b", "lr"), steps=steps)
    write_scalars(root / "negative", tags=("x", "y"), steps=range(-3000, 3000))
    write_scalars(root / "tensor", tags=("train/loss", "val/loss"), steps=range(0, 40_000, 4), new_style=True)
    write_scalars(root / "double", tags=("a",), steps=range(600), new_style=True, double=True)
    specials = [("odd", s, v) for s, v in zip(range(600, 1200), [math.nan, math.inf, -math.inf, -0.0, 1e-45] * 120)]
    write_scalars(root / "specials", tags=("odd",), steps=range(600), extra_values=specials)
    for k in range(3):
        write_mixed(root / f"mixed{k}")
    return sorted(root.rglob("events.out.tfevents.*"))


@pytest.fixture
def small_batches_by_shape(monkeypatch):
    """The shape path on batches of any size the parser's head leaves records in (by default only
    batches of `MIN_RECORDS` take it, where it gains)."""
    monkeypatch.setattr(event_shapes, "MIN_RECORDS", 2 * event_shapes.HEAD)


def test_records_decoded_by_shape_equal_the_parsed_ones(shapes_that_change, small_batches_by_shape):
    for path in shapes_that_change:
        decoded_alike(path)


def test_most_records_of_a_long_run_are_decoded_by_shape(shapes_that_change):
    by_name = {p.parent.name: p for p in shapes_that_change}
    n_tensor = tfrecord.Damage()
    list(tfrecord.scan_batches(by_name["tensor"], n_tensor))
    assert decoded_alike(by_name["tensor"]) > 0.6 * n_tensor.records
    negative = tfrecord.Damage()
    list(tfrecord.scan_batches(by_name["negative"], negative))
    assert decoded_alike(by_name["negative"]) > 0.8 * negative.records


def test_a_record_that_differs_from_its_shape_in_one_fixed_byte_is_parsed(shapes_that_change, small_batches_by_shape):
    """A tag byte changed in one record (its CRC ignored: the decoders see bytes after the check)."""
    path = next(p for p in shapes_that_change if p.parent.name == "negative")
    batch = next(tfrecord.scan_batches(path, tfrecord.Damage()))
    buf = batch.buf.copy()
    victim = len(batch.offsets) - 5
    tag_at = int(batch.offsets[victim]) + int(batch.lengths[victim]) - 5 - 1  # last byte of the tag ("x"/"y")
    assert chr(buf[tag_at]) in "xy"
    buf[tag_at] = ord("z")
    parsed = tfevents._parse(buf, batch.offsets, batch.offsets + batch.lengths)
    shaped = tfevents._decode_records(buf, batch.offsets, batch.lengths)
    assert shaped.names == parsed.names and b"z" in shaped.names
    assert shaped.names[shaped.code[victim]] == b"z"


def test_damaged_files_read_by_shape_equal_the_reference(shapes_that_change, small_batches_by_shape, tmp_path, monkeypatch):
    """Cut, flipped, overwritten and prefixed copies: the shape path keeps every damage rule."""
    assert_damaged_copies_agree(shapes_that_change, 12, 120_000, [4096, 65536, 1 << 20], 5, tmp_path, monkeypatch)


def test_small_batches_are_parsed_whole(shapes_that_change):
    path = next(p for p in shapes_that_change if p.parent.name == "widths")
    batch = next(tfrecord.scan_batches(path, tfrecord.Damage()))
    assert len(batch.offsets) < event_shapes.MIN_RECORDS
    assert _parsed_records(batch) == len(batch.offsets)


def test_real_files_decode_alike(small_batches_by_shape):
    files = sorted(SAMPLES.rglob("events.out.tfevents.*"))
    if REAL.is_dir():
        files += sorted(REAL.rglob("events.out.tfevents.*"))
    assert files
    for path in files:
        decoded_alike(path)


def test_a_template_masks_exactly_the_varying_bytes():
    """Wall time and value bytes masked out, a step's varint keeps only its continuation bits."""
    record = np.frombuffer(bytes(range(1, 41)), np.uint8)
    shape = event_shapes._template(record, 0, 0, 40, wall_at=1, step_at=10, step_end=12, value_at=30, value_kind=1)
    mask = np.zeros(40, np.uint8)
    for at, word in zip(shape.at, shape.mask):
        mask[at : at + 8] = np.frombuffer(int(word).to_bytes(8, "little"), np.uint8)
    expected = np.full(40, 0xFF, np.uint8)
    expected[1:9] = 0
    expected[10:12] = 0x80
    expected[30:34] = 0
    assert mask.tolist() == expected.tolist()
    assert shape.at == (0, 8, 16, 24, 32)
