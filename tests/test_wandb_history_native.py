"""W&B history JSONL: the native polars path gives exactly what the per-row reference reading gives.

The reference is `read_jsonl` + `frame_from_rows` (one `json.loads` per line);
`read_history` must agree with it metric by metric, value by value (NaN and
inf included), and must not fall back to it for the files W&B really writes.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from logdoctor.ingest import load_runs, wandb_history
from logdoctor.ingest.wandb_history import frame_from_rows, read_history, read_jsonl

SHARED = Path(__file__).resolve().parents[2] / "shared"


def reference(path: Path) -> tuple[pl.DataFrame, int]:
    rows, bad, _ = read_jsonl(path)
    return frame_from_rows(rows), bad


def by_metric(frame: pl.DataFrame) -> pl.DataFrame:
    """Row order across metrics is the writer's business; within a metric it is kept."""
    return frame.sort("metric", maintain_order=True)


def assert_same(path: Path) -> pl.DataFrame:
    fast, fast_bad, _ = read_history(path)
    ref, ref_bad = reference(path)
    assert fast_bad == ref_bad
    assert_frame_equal(by_metric(fast), by_metric(ref), check_exact=True)
    return fast


@pytest.fixture
def native_only(monkeypatch):
    """Fail the test if read_history falls back to the per-row reading (`reference` keeps its own import)."""

    def refuse(path):
        raise AssertionError(f"{path}: fell back to the per-row reader")

    monkeypatch.setattr(wandb_history, "read_jsonl", refuse)
    yield
    monkeypatch.undo()


def write(tmp_path: Path, lines: list[str], name: str = "history.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def wandb_rows(n: int = 300) -> list[dict]:
    """Rows shaped like a real history: sparse keys (one first logged after row 200), nested dicts, media."""
    rows = []
    for i in range(n):
        row: dict = {"_step": i, "_runtime": i * 0.5, "_timestamp": 1.7e9 + i * 0.5, "train/loss": 2.0 / (i + 1)}
        if i % 10 == 0:
            row["val"] = {"loss": 2.5 / (i + 1), "acc": min(1.0, i / n)}
        if i % 50 == 0:
            row["samples"] = {"_type": "image-file", "path": f"media/images/s_{i}.png", "size": 1024 + i, "width": 64}
            row["grads"] = {"_type": "histogram", "values": [1, 2, 3], "bins": [0.0, 0.5, 1.0, 1.5]}
        if i >= 250:
            row["late/metric"] = float(i)  # first seen after polars' default 100-row schema window
        if i % 7 == 0:
            row["phase"] = "train"
            row["done"] = False
        rows.append(row)
    return rows


def test_wandb_shaped_history_native(tmp_path, native_only):
    path = write(tmp_path, [json.dumps(r) for r in wandb_rows()])
    frame = assert_same(path)
    names = set(frame.get_column("metric").unique())
    assert names == {"train/loss", "val.loss", "val.acc", "late/metric"}  # media, text, booleans skipped
    late = frame.filter(pl.col("metric") == "late/metric")
    assert late.get_column("step").to_list() == list(range(250, 300))
    assert late.get_column("wall_time")[0] == 1.7e9 + 250 * 0.5


def test_nan_and_infinity_tokens_survive_natively(tmp_path, native_only):
    rows = wandb_rows(120)
    rows[40]["train/loss"] = float("nan")
    rows[41]["train/loss"] = float("inf")
    rows[42]["train/loss"] = float("-inf")
    rows[43]["grads"] = {"_type": "histogram", "values": [float("nan"), 1.0], "bins": [0.0, 1.0, 2.0]}
    path = write(tmp_path, [json.dumps(r) for r in rows])  # Python's json writes bare NaN / Infinity / -Infinity
    assert b": NaN" in path.read_bytes() and b": -Infinity" in path.read_bytes()
    frame = assert_same(path)
    loss = frame.filter(pl.col("metric") == "train/loss").sort("step").get_column("value").to_list()
    assert math.isnan(loss[40]) and loss[41] == math.inf and loss[42] == -math.inf and loss[43] == 2.0 / 44


def test_nan_tokens_match_reference(tmp_path):
    rows = wandb_rows(120)
    for i in range(30, 120):
        rows[i]["train/loss"] = float("nan") if i % 2 else float("inf")
    rows[5]["int_then_nan"] = 3
    rows[6]["int_then_nan"] = float("nan")
    assert_same(write(tmp_path, [json.dumps(r) for r in rows]))


def test_compact_separators_and_nan_text_inside_strings(tmp_path):
    rows = [{"_step": i, "loss": float("nan") if i == 3 else 1.0 / (i + 1), "note": "loss: NaN, stopping" if i == 4 else "ok"} for i in range(8)]
    lines = [json.dumps(r, separators=(",", ":")) for r in rows]
    assert_same(write(tmp_path, lines))  # the note forces the per-row reading; the numbers must not change


def test_killed_writer_half_line_is_counted(tmp_path, native_only):
    lines = [json.dumps(r) for r in wandb_rows(30)] + ['{"train/loss": 1.4, "_st']
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines))  # no newline at the end either
    frame = assert_same(path)
    assert read_history(path)[1] == 1 and frame.filter(pl.col("metric") == "train/loss").height == 30


@pytest.mark.parametrize(
    "lines",
    [
        # no _step: the row number is the step; blank lines are not rows
        ['{"loss": 1.0}', "", '{"loss": 0.9}', '{"loss": 0.8, "_step": 10}'],
        # float steps: whole ones count, others drop the row
        ['{"_step": 0.0, "loss": 1.0}', '{"_step": 1.5, "loss": 0.9}', '{"_step": 2, "loss": 0.8}'],
        # a key that is a number in some rows and media in others (per-row reading)
        ['{"_step": 0, "img": 1.0}', '{"_step": 1, "img": {"_type": "image-file", "size": 5}}'],
        # a number in some rows, a dict in others
        ['{"_step": 0, "m": 1.0}', '{"_step": 1, "m": {"a": 2.0}}'],
        # booleans and integers in one key
        ['{"_step": 0, "flag": true}', '{"_step": 1, "flag": 3}'],
        # numbers and text in one key
        ['{"_step": 0, "lr": 0.1}', '{"_step": 1, "lr": "warmup"}'],
        # numbers logged as text only: not a curve
        ['{"_step": 0, "lr": "0.1"}', '{"_step": 1, "lr": "0.2"}'],
        # a JSON line that is not an object, mid-file
        ['{"_step": 0, "loss": 1.0}', "[1, 2]", '{"_step": 2, "loss": 0.5}'],
        # the same dotted name flat and nested
        ['{"_step": 0, "val.loss": 1.0}', '{"_step": 1, "val": {"loss": 0.5}}'],
        # nested media inside a plain dict, and a dict that only sometimes is media
        ['{"_step": 0, "eval": {"loss": 1.0, "pred": {"_type": "table-file", "nrows": 3}}}',
         '{"_step": 1, "eval": {"loss": 0.7}}'],
        ['{"_step": 0, "x": {"_type": "image-file", "size": 3}}', '{"_step": 1, "x": {"size": 4.0}}'],
        # huge integers
        ['{"_step": 0, "tokens": 18446744073709551615}', '{"_step": 1, "tokens": 5}'],
        # only bookkeeping
        ['{"_step": 0, "_runtime": 1.0}'],
    ],
)
def test_odd_files_match_reference(tmp_path, lines):
    assert_same(write(tmp_path, lines))


def test_undecodable_bytes_match_reference(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_bytes(b'{"_step": 0, "loss": 1.0, "name": "caf\xe9"}\n{"_step": 1, "loss": 0.5}\n')
    assert_same(path)


def test_load_runs_uses_it_for_api_dumps(tmp_path):
    write(tmp_path, [json.dumps(r) for r in wandb_rows(60)] + ['{"train/loss": 0.1, "_st'], name="dump.jsonl")
    (run,), errors = load_runs(tmp_path)
    assert errors == [] and run.format == "wandb_csv"
    assert any("skipped 1 unreadable line" in w for w in run.warnings)
    assert sorted(run.metrics) == ["train/loss", "val.acc", "val.loss"]


@pytest.mark.skipif(not (SHARED / "real-logs").is_dir(), reason="shared real logs not present")
def test_real_wandb_history_matches_reference():
    files = sorted((SHARED / "real-logs").rglob("wandb-history.jsonl"))
    assert files
    for path in files:
        assert_same(path)


@pytest.fixture
def tiny_sample(monkeypatch):
    """Infer the schema from a handful of lines, as on a file of millions."""
    monkeypatch.setattr(wandb_history, "_SAMPLE_ALL_BYTES", 0)
    monkeypatch.setattr(wandb_history, "_SAMPLE_LINES", 4)
    monkeypatch.setattr(wandb_history, "_SAMPLE_ENDS", 2)


@pytest.mark.parametrize(
    "late",
    [
        {"test/acc": 0.91},  # a key logged once, mid-run
        {"val": {"loss": 0.5, "f1": 0.7}},  # a nested key the sample's dicts never had
        {"train/loss": 0.25},  # an int column that turns float (the sample typed it Int64)
        {"train/loss": float("nan")},  # NaN in one line only
    ],
)
def test_keys_and_types_outside_the_schema_sample(tmp_path, tiny_sample, native_only, late):
    rows = [{"_step": i, "train/loss": 3 - i // 100, "val": {"loss": 1.0}} for i in range(400)]
    rows[250].update(late)
    path = write(tmp_path, [json.dumps(r) for r in rows])
    assert b'"_step": 250,' not in wandb_history._sample_lines(path.read_bytes())
    frame = assert_same(path)
    names = {"val": "val.f1", "test/acc": "test/acc", "train/loss": "train/loss"}
    at = frame.filter((pl.col("step") == 250) & (pl.col("metric") == names[next(iter(late))]))
    assert at.height == 1
