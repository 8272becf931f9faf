"""The binary `run-<id>.wandb` file of a W&B run folder: framing and records.

Recent wandb versions keep a run's whole history, config and summary only in
this file (online runs too, until synced). wandb ships the protobuf schema of
its records but no reader, so the framing is read here, and the records are
decoded with the few fields of that schema described in `wandb_schema`: the
wandb package is not needed. It is LevelDB's log format with a file header:

    header := ident ":W&B" (4 bytes) | magic 0xBEE1 (uint16 LE) | version (uint8)
    then 32 KiB blocks (the header counts toward the first one);
    chunk  := checksum (uint32 LE) | length (uint16 LE) | type (uint8) | data
    type   := FULL 1 | FIRST 2 | MIDDLE 3 | LAST 4  (a record split across blocks)

Where LevelDB checksums with masked CRC-32C, wandb uses zlib's CRC-32 of the
type byte followed by the data (checked against files wandb 0.31 wrote). A
block tail shorter than a chunk header is zero padding. A chunk with a bad
checksum makes the rest of its block untrustworthy: it is skipped and counted,
and reading resumes at the next block, so one damaged block costs only the
records inside it. A truncated file (killed run) keeps every complete record.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import ReadError
from .limits import MAX_WIDTH, loads
from .wandb_schema import item_value_json, record_class

BLOCK = 32 * 1024
CHUNK_HEADER = 7
FILE_IDENT = b":W&B"
FILE_MAGIC = 0xBEE1
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
#: CRC of each type byte: the running CRC every chunk checksum starts from.
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (FULL, FIRST, MIDDLE, LAST)}


@dataclass
class ScanStats:
    """What the framing reader had to skip (reported as run warnings)."""

    records: int = 0
    bad_chunks: int = 0
    broken_records: int = 0
    truncated: bool = False


def scan_records(path: Path, stats: ScanStats) -> Iterator[bytes]:
    """Yield each record's payload bytes, reassembling FIRST/MIDDLE/LAST chunks."""
    with open(path, "rb") as fh:
        head = fh.read(CHUNK_HEADER)
        if len(head) < CHUNK_HEADER:
            raise ReadError(f"{path}: empty or truncated .wandb file (no header)")
        ident, magic, _version = struct.unpack("<4sHB", head)
        if ident != FILE_IDENT or magic != FILE_MAGIC:
            raise ReadError(f"{path}: not a W&B .wandb file (bad header)")
        block = head + fh.read(BLOCK - CHUNK_HEADER)
        pos = CHUNK_HEADER
        pending: bytearray | None = None
        while True:
            last = len(block) < BLOCK
            while True:
                left = len(block) - pos
                if left < CHUNK_HEADER:
                    stats.truncated |= last and any(block[pos:])  # a chunk header cut short
                    break
                checksum, length, kind = struct.unpack_from("<IHB", block, pos)
                if kind == 0 and length == 0:
                    break  # zero padding: rest of the block is unused
                end = pos + CHUNK_HEADER + length
                if end > len(block):
                    if last:
                        stats.truncated = True
                    else:
                        stats.bad_chunks += 1
                    break
                data = block[pos + CHUNK_HEADER : end]
                if kind not in _TYPE_CRC or zlib.crc32(data, _TYPE_CRC[kind]) != checksum:
                    stats.bad_chunks += 1
                    pending = None
                    break  # the rest of this block cannot be trusted
                pos = end
                if kind == FULL:
                    if pending is not None:
                        stats.broken_records += 1
                        pending = None
                    stats.records += 1
                    yield data
                elif kind == FIRST:
                    if pending is not None:
                        stats.broken_records += 1
                    pending = bytearray(data)
                elif pending is None:
                    stats.broken_records += 1  # a MIDDLE/LAST whose start was lost
                elif kind == MIDDLE:
                    pending += data
                else:
                    stats.records += 1
                    yield bytes(pending + data)
                    pending = None
            if last:
                break
            block = fh.read(BLOCK)
            pos = 0
            if not block:
                break
        if pending is not None:
            stats.truncated = True


@dataclass
class WandbLog:
    """What one .wandb file says about its run."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    run_id: str | None = None
    exit_code: int | None = None
    undecodable: int = 0
    #: History records holding more than limits.MAX_WIDTH values, left out.
    refused: int = 0
    stats: ScanStats = field(default_factory=ScanStats)


def _key(item) -> str:
    """`a.b` for nested keys (as the W&B UI shows them); one-part keys without a join (hot path)."""
    nested = item.nested_key
    if not nested:
        return item.key
    return nested[0] if len(nested) == 1 else ".".join(nested)


def _value(text: str) -> Any:
    try:
        return loads(text)
    except ValueError:  # damaged, or nested past limits.MAX_DEPTH: kept as text, no metric
        return text


def _history_value(text: str) -> Any:
    """Most history values are plain numbers: float() is several times faster than json.loads."""
    try:
        return float(text)
    except ValueError:
        return _value(text)


def _apply(target: dict[str, Any], update, remove=(), decode=_value) -> None:
    for item in update:
        target[_key(item)] = decode(item.value_json)
    for item in remove:
        target.pop(_key(item), None)


def read_wandb_file(path: Path) -> WandbLog:
    """Decode history rows, config, summary, name and exit code from a .wandb file."""
    from google.protobuf.message import DecodeError

    log = WandbLog()
    summary_text: dict[str, str] = {}
    record = record_class()()
    for payload in scan_records(path, log.stats):
        try:
            record.ParseFromString(payload)
        except DecodeError:
            log.undecodable += 1
            continue
        kind = record.WhichOneof("record_type")
        if kind == "history":
            if len(record.history.item) > MAX_WIDTH:
                log.refused += 1
                continue
            row = {_key(item): _history_value(item_value_json(item)) for item in record.history.item}
            if record.history.HasField("step"):
                row["_step"] = record.history.step.num
            log.rows.append(row)
        elif kind == "config":
            _apply(log.config, record.config.update, record.config.remove)
        elif kind == "summary":  # one per step: keep the text, decode only the final values
            _apply(summary_text, record.summary.update, record.summary.remove, decode=str)
        elif kind == "run":
            run = record.run
            log.name = run.display_name or log.name
            log.run_id = run.run_id or log.run_id
            _apply(log.config, run.config.update, run.config.remove)
        elif kind == "exit":
            log.exit_code = record.exit.exit_code
    log.summary = {key: _value(text) for key, text in summary_text.items()}
    return log
