"""A source with no scalar data is skipped with one line naming the file, never shown as a healthy
run; `analyze` on a path with nothing to diagnose is an input error (exit 2)."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from _tb_writers import event_file, write_scalars
from logdoctor.cli import app
from logdoctor.ingest import load_runs

ENV = {"COLUMNS": "220", "NO_COLOR": "1"}


def _old_wandb_run(root, history: bytes):
    """An old-layout W&B run folder (wandb < 0.10): history, summary and config side by side."""
    folder = root / "wandb" / "run-20200101_000000-abc"
    folder.mkdir(parents=True)
    (folder / "wandb-history.jsonl").write_bytes(history)
    (folder / "wandb-summary.json").write_text('{"loss": 1.0}')
    return folder / "wandb-history.jsonl"


def test_histograms_only_is_a_skipped_source_and_analyze_exits_2(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "run")) as writer:
        for step in range(5):
            writer.add_histogram("w", np.random.randn(100), step)
    runs, errors = load_runs(tmp_path)
    assert runs == [] and len(errors) == 1 and "no scalar summaries (only graphs, histograms" in errors[0]
    result = CliRunner().invoke(app, ["analyze", str(tmp_path), "--format", "json"], env=ENV)
    doc = json.loads(result.stdout)  # still a report: no runs, none healthy, and why in `skipped`
    assert result.exit_code == 2 and doc["runs"] == [] and doc["summary"]["by_verdict"]["healthy"] == 0
    assert "no scalar summaries" in doc["skipped"][0] and "HEALTHY" not in result.stderr
    assert result.stderr.strip().endswith(f"logdoctor: {tmp_path}: no usable training log")


def test_a_folder_with_no_log_at_all_exits_2_with_one_line(tmp_path):
    result = CliRunner().invoke(app, ["analyze", str(tmp_path)], env=ENV)
    assert result.exit_code == 2 and result.output == f"logdoctor: {tmp_path}: no training log found\n"


def test_a_gzipped_event_file_says_so(tmp_path):
    write_scalars(tmp_path / "run", steps=range(10))
    path = event_file(tmp_path / "run")
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    runs, errors = load_runs(tmp_path)
    assert runs == [] and len(errors) == 1 and "gzip-compressed event file" in errors[0]


@pytest.mark.parametrize(
    "history, reason",
    [(b"", "empty file (0 bytes)"), (b"hello world\n\x00\x01\x02\n", "no line is a W&B history row (2 unreadable line(s))")],
)
def test_an_empty_or_garbage_wandb_history_is_one_line_naming_the_file(tmp_path, history, reason):
    path = _old_wandb_run(tmp_path, history)
    runs, errors = load_runs(tmp_path)
    assert runs == [] and errors == [f"{path}: {reason}, no history" if not history else f"{path}: {reason}"]


def test_a_garbage_mlflow_run_is_skipped_and_its_siblings_read(tmp_path):
    exp = tmp_path / "mlruns" / "0"
    for run_id, lines in (("a" * 32, "1700000000000 0.5 0\n1700000001000 0.4 1\n"), ("e" * 32, "hello world\n\x00\x01\x02\n")):
        (exp / run_id / "metrics").mkdir(parents=True)
        (exp / run_id / "meta.yaml").write_text(f"run_id: {run_id}\nexperiment_id: '0'\nlifecycle_stage: active\n")
        (exp / run_id / "metrics" / "loss").write_text(lines)
    (exp / "meta.yaml").write_text("experiment_id: '0'\nname: demo\n")
    runs, errors = load_runs(tmp_path)
    assert [r.name for r in runs] == ["mlruns/0/" + "a" * 32]
    assert errors == [f"{exp / ('e' * 32) / 'metrics' / 'loss'}: not an MLflow metric file (no 'timestamp value step' line)"]


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf", b"not json\n"], ids=["byte-order mark", "bad first line"])
def test_a_history_jsonl_with_a_bom_or_a_bad_first_line_is_still_read(tmp_path, prefix):
    rows = [{"_step": i, "_runtime": i, "loss": 1 / (i + 1)} for i in range(5)]
    (tmp_path / "history.jsonl").write_bytes(prefix + "\n".join(json.dumps(r) for r in rows).encode() + b"\n")
    runs, errors = load_runs(tmp_path)
    assert errors == [] and len(runs) == 1 and len(runs[0].scalars) == 5
    assert runs[0].warnings == ([] if prefix.startswith(b"\xef") else ["history.jsonl: skipped 1 unreadable line(s)"])


def test_a_folder_that_cannot_be_listed_is_one_line_and_the_rest_is_read(tmp_path, monkeypatch):
    import os

    write_scalars(tmp_path / "ok", steps=range(10))
    (tmp_path / "locked").mkdir()
    scandir = os.scandir

    def denied(path="."):  # what a folder without read permission does to a non-root user
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    runs, errors = load_runs(tmp_path)
    assert [r.name for r in runs] == ["ok"]
    assert errors == [f"{tmp_path / 'locked'}: cannot read folder (Permission denied)"]
