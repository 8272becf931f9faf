"""The fast path (vectorised framing + decode) gives exactly what the protobuf reference path gives.

Checked on every test file: real-writer files in both encodings, odd layouts,
real logs of other people, and damaged copies (truncated, flipped bytes,
garbage before and inside), with blocks small enough that records straddle
block edges. Also: the CRC-32C implementations agree and damage never
produces a wrong number.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

from _tb_writers import REAL, write_hparams, write_mixed, write_scalars
from logdoctor.ingest import tfevents, tfrecord
from logdoctor.ingest.tfevents import read_event_file


def canonical(result):
    """Everything a reader returns, in file order, tags as text."""
    frame = result.frame
    return (
        frame.get_column("step").to_list(),
        frame.get_column("metric").to_list(),
        frame.get_column("value").to_numpy().tobytes(),
        frame.get_column("wall_time").to_numpy().tobytes(),
        result.config,
        result.damage,
        result.undecodable,
    )


def assert_paths_agree(path: Path) -> None:
    reference = canonical(read_event_file(path, fast=False))
    assert canonical(read_event_file(path)) == reference, path


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("written")
    write_scalars(root / "simple", tags=("train/loss", "val/loss", "lr"), steps=range(300))
    write_scalars(root / "tensor", steps=range(0, 3000, 10), new_style=True)
    write_scalars(root / "double", steps=[0, 1, 127, 128, 16383, 16384, 2**40], new_style=True, double=True)
    write_scalars(root / "negative", tags=("x",), steps=[-5, -1, 0, 3])
    write_mixed(root / "mixed")
    write_hparams(root / "hparams")
    return sorted(root.rglob("events.out.tfevents.*"))


def test_fast_equals_reference_on_written_files(written, monkeypatch):
    for path in written:
        assert_paths_agree(path)
    monkeypatch.setattr(tfrecord, "CHUNK", 256)  # records straddle block edges
    for path in written:
        assert_paths_agree(path)


def test_fast_equals_reference_on_sample_runs():
    files = sorted((Path(__file__).parents[1] / "sample_runs").rglob("events.out.tfevents.*"))
    for path in files:
        assert_paths_agree(path)


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-logs not present")
def test_fast_equals_reference_on_real_logs():
    files = sorted(REAL.rglob("events.out.tfevents.*"))
    assert files
    for path in files:
        assert_paths_agree(path)


def damaged_copies(data: bytes, rng: random.Random):
    n = len(data)
    yield "truncated", data[: rng.randrange(n)]
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        flipped[rng.randrange(n)] ^= 1 << rng.randrange(8)
    yield "flipped", bytes(flipped)
    at = rng.randrange(n)
    yield "overwritten", data[:at] + os.urandom(rng.randint(1, 300)) + data[at + rng.randint(1, 200):]
    yield "garbage-prefix", os.urandom(rng.randint(1, 400)) + data


def assert_damaged_copies_agree(sources: list[Path], trials: int, prefix: int, chunks: list[int], seed: int, tmp_path, monkeypatch) -> None:
    """Damaged copies of the first `prefix` bytes of each source in turn, read in blocks of one
    of `chunks` bytes: the fast path returns what the reference path returns."""
    rng = random.Random(seed)
    target = tmp_path / "events.out.tfevents.0.damaged"
    for trial in range(trials):
        data = sources[trial % len(sources)].read_bytes()[:prefix]
        monkeypatch.setattr(tfrecord, "CHUNK", rng.choice(chunks))
        for kind, damaged in damaged_copies(data, rng):
            target.write_bytes(damaged)
            reference = canonical(read_event_file(target, fast=False))
            assert canonical(read_event_file(target)) == reference, (trial, kind)


def test_fast_equals_reference_on_damaged_files(written, tmp_path, monkeypatch):
    sources = [p for p in written if p.parent.name in ("simple", "tensor", "mixed")]
    assert_damaged_copies_agree(sources, 24, 40_000, [512, 4096, 1 << 20], 7, tmp_path, monkeypatch)


def test_single_byte_damage_never_yields_a_wrong_number(written, tmp_path):
    source = next(p for p in written if p.parent.name == "simple")
    clean = read_event_file(source)
    truth = {(m, s): v for m, s, v, _ in clean.frame.iter_rows()}
    data = source.read_bytes()
    rng = random.Random(3)
    target = tmp_path / "events.out.tfevents.0.flip"
    for _ in range(40):
        damaged = bytearray(data)
        damaged[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        target.write_bytes(bytes(damaged))
        got = read_event_file(target)
        pairs = {(m, s): v for m, s, v, _ in got.frame.iter_rows()}
        assert all(truth.get(k) == v for k, v in pairs.items())
        assert len(pairs) >= len(truth) - 2
        assert got.damage.bad_crc + len(got.damage.skipped) >= 1


def test_numpy_crc_fallback_gives_the_same_result(written, monkeypatch):
    expected = [canonical(read_event_file(p)) for p in written]
    monkeypatch.setattr(tfrecord, "_c_crc32c", lambda: None)
    monkeypatch.setattr(tfrecord, "_c_installed", lambda: False)
    monkeypatch.setattr(tfrecord, "_python_bytes", tfrecord._PYTHON_BYTES)  # past Python's share of single checks
    assert [canonical(read_event_file(p)) for p in written] == expected


def test_single_checks_are_the_same_in_python_and_in_c(monkeypatch):
    """`crc32c` checks its first few kB in Python (the C package's import costs more) and the
    rest in C: one buffer gets one CRC either way."""
    rng = np.random.default_rng(2)
    datas = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (0, 1, 8, 40, 1000, 5000, 40_000)]
    monkeypatch.setattr(tfrecord, "_python_bytes", 0)
    in_python = [tfrecord.crc32c(d) for d in datas]  # the last one is past the share: C
    monkeypatch.setattr(tfrecord, "_python_bytes", tfrecord._PYTHON_BYTES)
    assert in_python == [tfrecord.crc32c(d) for d in datas] == [tfrecord._crc32c_py(d) for d in datas]


def test_crc32c_implementations_agree():
    assert tfrecord.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, 20_000, dtype=np.uint8)
    for count, longest in ((200, 2_000), (3, 300), (500, 40)):  # above the tables; few records (C); many short (tables)
        offsets = rng.integers(0, 15_000, count).astype(np.int64)
        lengths = rng.integers(0, longest, count).astype(np.int64)
        got = tfrecord.crc32c_many(buf, offsets, lengths)
        want = [tfrecord._crc32c_py(buf[o : o + n].tobytes()) for o, n in zip(offsets, lengths)]
        assert got.tolist() == want
        if tfrecord._c_crc32c() is not None:
            assert want == [tfrecord._c_crc32c()(buf[o : o + n].tobytes()) for o, n in zip(offsets, lengths)]


def test_a_header_is_judged_by_its_own_crc_whether_its_length_is_looked_up_or_computed():
    rng = np.random.default_rng(1)
    lengths = np.concatenate([rng.integers(0, 1 << 16, 300), rng.integers(1 << 16, 1 << 62, 300), [0, (1 << 16) - 1, 1 << 16]])
    buf = np.zeros(12 * len(lengths), np.uint8)
    for i, length in enumerate(lengths.tolist()):
        raw = int(length).to_bytes(8, "little")
        crc = tfrecord.masked(tfrecord._crc32c_py(raw))
        if i % 3 == 0:
            crc ^= 1 << (i % 32)  # a damaged header
        buf[12 * i : 12 * i + 12] = np.frombuffer(raw + int(crc).to_bytes(4, "little"), np.uint8)
    ok = tfrecord.headers_ok(buf, np.arange(0, len(buf), 12))
    assert ok.tolist() == [i % 3 != 0 for i in range(len(lengths))]


def test_damage_report_counts(written, tmp_path):
    source = next(p for p in written if p.parent.name == "simple")
    data = bytearray(source.read_bytes())
    records = []
    pos = 0
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 8], "little")
        records.append(pos)
        pos += length + 16
    data[records[10] + 14] ^= 0xFF  # inside record 10's data
    data[records[20] + 3] ^= 0xFF  # inside record 20's length: header CRC fails, resync
    target = tmp_path / "events.out.tfevents.0.counts"
    target.write_bytes(bytes(data[:-3]))
    got = read_event_file(target)
    damage = got.damage
    assert damage.bad_crc == 1
    assert damage.skipped and damage.skipped[0][0] == records[20] and damage.skipped[0][1] == records[21] - records[20]
    assert damage.truncated_at == records[-1]
    assert damage.records == len(records) - 3  # one bad CRC, one resynchronised, one truncated
    lines = damage.lines("f")
    assert len(lines) == 3 and all(line.startswith("f: ") for line in lines)


def plain_walk(data: bytes, pos: int = 0) -> tuple[list[int], int]:
    """The walk as the format defines it: one record after another, trusting each length."""
    starts = []
    while pos + tfrecord.HEADER <= len(data):
        nxt = pos + int.from_bytes(data[pos : pos + 8], "little") + tfrecord.HEADER + tfrecord.FOOTER
        if nxt > len(data):
            break
        starts.append(pos)
        pos = nxt
    return starts, pos


def framed(lengths: list[int], rng: random.Random) -> bytes:
    """Records of the given data lengths (CRCs are not the walk's business: random bytes)."""
    out = bytearray()
    for n in lengths:
        out += n.to_bytes(8, "little") + rng.randbytes(4 + n + 4)
    return bytes(out)


@pytest.mark.parametrize("seed", range(12))
def test_the_predicting_walk_places_every_record_exactly_where_the_plain_walk_does(seed):
    """Lengths repeating with a period (tags logged in the same order each step) with breaks (a
    step varint growing a byte, a new tag), random lengths, a cut-off last record, garbage."""
    rng = random.Random(seed)
    period = [rng.randint(20, 60) for _ in range(rng.randint(1, 12))]
    lengths = []
    for _ in range(rng.randint(50, 400)):
        lengths += period
        if rng.random() < 0.05:
            period = [n + rng.choice([0, 1]) for n in period]
        if rng.random() < 0.03:
            lengths += [rng.randint(1, 300) for _ in range(rng.randint(1, 70))]
    data = framed(lengths, rng)
    tails = [b"", data[-rng.randint(1, 40):], rng.randbytes(rng.randint(1, 30))]
    for tail in tails:
        blob = data + tail
        starts, end = tfrecord._walk(blob, np.frombuffer(blob, dtype=np.uint8), 0)
        assert (starts.tolist(), end) == plain_walk(blob)


def _records_of_one_length(rng, n, length):
    """`n` records of `length` random bytes laid out as in a TFRecord file: (buffer, data offsets, stored masked CRCs)."""
    datas = [rng.integers(0, 256, length, dtype=np.uint8).tobytes() for _ in range(n)]
    blob = b"".join(len(d).to_bytes(8, "little") + b"\0" * 4 + d + tfrecord.masked(tfrecord.crc32c(d)).to_bytes(4, "little") for d in datas)
    buf = np.frombuffer(blob, dtype=np.uint8).copy()
    offs = np.arange(n, dtype=np.int64) * (length + 16) + 12
    return buf, offs


@pytest.mark.parametrize("n,length", [(8, 1), (37, 23), (300, 52), (1025, 8)])
def test_records_checked_in_groups_are_judged_as_each_alone(n, length):
    rng = np.random.default_rng(n)
    buf, offs = _records_of_one_length(rng, n, length)
    lens = np.full(n, length, dtype=np.int64)
    assert tfrecord._data_crc_ok(buf, offs, lens).all()
    for damaged in (1, 2, 3):  # random damage in a few records, data or stored CRC
        bad = buf.copy()
        for at in rng.choice(n, damaged, replace=False):
            spot = int(offs[at]) + int(rng.integers(0, length + 4))
            bad[spot] ^= int(rng.integers(1, 256))
        alone = tfrecord.masked(tfrecord.crc32c_many(bad, offs, lens)) == tfrecord._gather_u32(bad, offs + lens)
        assert tfrecord._data_crc_ok(bad, offs, lens).tolist() == alone.tolist()


def test_the_same_damage_in_two_records_of_one_length_does_not_cancel_out():
    rng = np.random.default_rng(1)
    buf, offs = _records_of_one_length(rng, 64, 40)
    for a, b in ((0, 1), (5, 37), (62, 63)):  # XORed together the two damages would cancel
        bad = buf.copy()
        bad[offs[a] + 7] ^= 0x10
        bad[offs[b] + 7] ^= 0x10
        ok = tfrecord._data_crc_ok(bad, offs, np.full(64, 40, dtype=np.int64))
        assert np.flatnonzero(~ok).tolist() == [a, b]


def test_distinct_tags_found_from_the_first_rows_are_np_unique_of_all_rows(monkeypatch):
    """The tag factorisation looks the first rows' distinct hashes up for every row; whether every
    tag shows early or some only late (a validation tag after the first epoch), first indices and
    codes are np.unique's."""
    from logdoctor.ingest import tfevents

    monkeypatch.setattr(tfevents, "_UNIQUE_HEAD", 64)
    rng = np.random.default_rng(1)
    for trial in range(300):
        n = int(rng.integers(0, 3000))
        tags = rng.integers(0, 2**63, int(rng.integers(1, 20)), dtype=np.uint64)
        h = tags[rng.integers(0, len(tags), n)]
        if trial % 3 == 0 and n > 100:
            h[-3:] = rng.integers(0, 2**63, 3, dtype=np.uint64)  # tags first logged late
        first, inverse = tfevents._unique(h)
        _, want_first, want_inverse = np.unique(h, return_index=True, return_inverse=True)
        assert np.array_equal(first, want_first) and np.array_equal(inverse, want_inverse)


def _event_file(path: Path, events: list[bytes]) -> Path:
    """A TFRecord file of these serialized events, framed with valid CRCs."""
    blob = b""
    for data in events:
        head = len(data).to_bytes(8, "little")
        blob += head + tfrecord.masked(tfrecord.crc32c(head)).to_bytes(4, "little") + data
        blob += tfrecord.masked(tfrecord.crc32c(data)).to_bytes(4, "little")
    path.write_bytes(blob)
    return path


def test_events_without_a_summary_are_judged_as_protobuf_judges_them(tmp_path):
    """File versions, graphs and writer names are skipped by the fast path only where protobuf
    reads them without fault; a non-UTF-8 version, an unknown field after them, or a writer name
    that is not text still goes to protobuf, and both paths agree on every one."""
    from tensorboard.compat.proto.event_pb2 import Event, SourceMetadata
    from tensorboard.compat.proto.summary_pb2 import Summary

    scalar = Event(wall_time=1.5, step=3, summary=Summary(value=[Summary.Value(tag="loss", simple_value=0.5)])).SerializeToString()
    version = Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString()
    writer = SourceMetadata(writer="tensorboard.summary.writer.event_file_writer").SerializeToString()
    bare = [
        version,
        version + b"\x52" + bytes([len(writer)]) + writer,  # the writer's name after it, as torch writes
        version + b"\x52\x00",
        Event(step=7, graph_def=b"\xff\x00 any bytes").SerializeToString(),
        Event(meta_graph_def=b"\x80\x81").SerializeToString(),
    ]
    unusual = [
        b"\x09" + bytes(8) + b"\x1a\x02\xc3\x28",  # a version that is not UTF-8: protobuf refuses it
        b"\x1a\x02\xc3\xa9",  # a UTF-8 version beyond ASCII: protobuf reads it
        version + b"\x52\x03\x0a\x01\xff",  # a writer name that is not UTF-8
        version + b"\x52\x02\x10\x01",  # source_metadata holding an unknown field
        version + b"\x60\x01",  # an unknown field after the version
    ]
    path = _event_file(tmp_path / "events.out.tfevents.1.bare", [scalar, *bare, *unusual, scalar])
    assert_paths_agree(path)
    (batch,) = tfrecord.scan_batches(path, tfrecord.Damage())
    parsed = tfevents._parse(batch.buf, batch.offsets, batch.offsets + batch.lengths)
    assert parsed.fallback.tolist() == [False] * (1 + len(bare)) + [True] * len(unusual) + [False]


def test_a_file_without_hparams_is_read_without_protobuf(monkeypatch):
    """The reference path (and its protobuf import, 20-40 ms of a small run) is for records the
    fast path cannot read; a Keras or plain SummaryWriter file holds none."""
    def refuse():
        raise AssertionError("protobuf asked for")

    monkeypatch.setattr(tfevents, "_proto", refuse)
    for path in sorted((Path(__file__).parents[1] / "sample_runs" / "keras_healthy_short_10_epochs").rglob("events.out.tfevents.*")):
        assert len(read_event_file(path)) > 0
