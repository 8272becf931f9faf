"""CSV logs as their writers really leave them: a bad cell, an appended log, step columns
named by W&B / Stable-Baselines3 / a hand-written loop, counters that restart every epoch,
European delimiters, gzip, a banner comment; and trainer states with float steps.

Files are written the way the writer writes them (pandas `to_csv`, the `csv` module,
Lightning's CSVLogger layout, `torch.utils.tensorboard`), each in tmp_path.
"""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pandas as pd
import pytest

from logdoctor.ingest import load_runs
from logdoctor.view import RunView
from _ingest_helpers import only_run, series


# --------------------------------------------------------------------------- cells and rows


def test_one_non_numeric_cell_becomes_null_with_a_warning_naming_it(tmp_path):
    loss = [str(2.0 - 0.1 * s) for s in range(20)]
    loss[7] = "diverged"
    pd.DataFrame({"step": range(20), "loss": loss, "val_loss": 1.0, "note": "warmup"}).to_csv(tmp_path / "log.csv", index=False)
    run = only_run(tmp_path)
    loss_series = series(run, "loss")
    assert len(loss_series) == 19 and 7 not in loss_series.steps
    assert run.warnings == ["loss: 1 non-numeric cell(s) skipped, e.g. 'diverged' at line 9"]
    assert "note" not in run.metrics  # a column of words stays text


def test_a_bad_cell_past_the_type_inference_window_is_skipped_not_fatal(tmp_path):
    values = [f"{1.0 / (s + 1)}" for s in range(30000)]
    values[-1] = "nan?"
    pd.DataFrame({"step": range(30000), "loss": values}).to_csv(tmp_path / "log.csv", index=False)
    run = only_run(tmp_path)
    assert len(series(run, "loss")) == 29999
    assert run.warnings == ["loss: 1 non-numeric cell(s) skipped, e.g. 'nan?' at line 30001"]


def test_repeated_header_rows_of_an_appended_log_are_dropped(tmp_path):
    path = tmp_path / "log.csv"
    for start in (0, 5, 10):  # a script that appends each session with to_csv(mode="a") and its header
        frame = pd.DataFrame({"epoch": range(start, start + 5), "loss": [1.0 / (e + 1) for e in range(start, start + 5)]})
        frame.to_csv(path, mode="a", index=False)
    run = only_run(tmp_path)
    assert list(series(run, "loss").steps) == list(range(15))
    assert "2 repeated header row(s) dropped (a log appended to)" in run.notes
    assert run.warnings == []


# --------------------------------------------------------------------------- which column is the step


@pytest.mark.parametrize("step_name", ["train/global_step", "trainer/global_step", "time/total_timesteps", "Step", "iteration", "_step"])
def test_step_columns_are_recognised_by_their_name_tokens(step_name, tmp_path):
    steps = range(0, 2000, 20)
    frame = pd.DataFrame({step_name: steps, "train/loss": [2.0 - s / 2000 for s in steps], "time/iterations": range(1, 101)})
    frame.to_csv(tmp_path / "progress.csv", index=False)
    run = only_run(tmp_path)
    assert step_name not in run.metrics
    assert list(series(run, "train/loss").steps) == list(steps)
    assert run.notes == []


def test_a_loss_logged_per_step_is_a_metric_not_the_step(tmp_path):
    pd.DataFrame({"train_loss_step": [3.0, 2.0, 1.0], "lr": 0.1}).to_csv(tmp_path / "log.csv", index=False)
    run = only_run(tmp_path)
    assert list(series(run, "train_loss_step").values) == [3.0, 2.0, 1.0]


@pytest.mark.parametrize("counter,stride", [("iter", 10), ("batch", 1)])
def test_a_counter_that_restarts_every_epoch_becomes_a_global_step(counter, stride, tmp_path):
    with open(tmp_path / "log.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["epoch", counter, "loss"])
        for epoch in range(5):
            for i in range(0, 100, stride):
                writer.writerow([epoch, i, 2.0 - 0.003 * (epoch * 100 + i)])
    run = only_run(tmp_path)
    loss = series(run, "loss")
    assert len(loss) == 5 * 100 // stride and loss.duplicates == 0
    assert list(loss.steps[:2]) == [0, stride] and loss.steps[-1] == 500 - stride
    assert np.all(np.diff(loss.values) < 0)
    assert f"{counter} restarts every epoch: step = epoch index x 100 + {counter}" in run.notes


def test_a_fractional_epoch_keeps_every_row_in_order(tmp_path):
    epochs = [s / 4 for s in range(20)]
    pd.DataFrame({"epoch": epochs, "loss": [1.0 / (s + 1) for s in range(20)]}).to_csv(tmp_path / "history.csv", index=False)
    run = only_run(tmp_path)
    loss = series(run, "loss")
    assert len(loss) == 20 and loss.duplicates == 0 and np.all(np.diff(loss.values) < 0)
    assert list(series(run, "epoch").values) == epochs  # still there for the epoch role
    assert any("epoch is fractional or repeats" in n for n in run.notes)


def test_a_restarted_keras_log_keeps_the_epoch_as_step(tmp_path):
    """CSVLogger(append=True) after resuming from epoch 3: epochs go back, the newer values win."""
    (tmp_path / "training.log").write_text("epoch,loss\n0,1.0\n1,0.9\n2,0.8\n3,0.7\n4,0.6\n3,0.65\n4,0.55\n5,0.5\n")
    run = only_run(tmp_path)
    loss = series(run, "loss")
    assert list(loss.steps) == [0, 1, 2, 3, 4, 5] and list(loss.values) == [1.0, 0.9, 0.8, 0.65, 0.55, 0.5]
    # said where analyze shows it, not only in inspect's per-metric counts
    assert any("'epoch' goes back 1 time(s) (first from 4 to 3)" in w for w in run.warnings)


def test_two_logs_appended_into_one_csv_are_flagged_and_an_ordinary_log_is_not(tmp_path):
    """Stable-Baselines3-style progress.csv: an aborted run's rows, then a new run from the start."""
    first = tmp_path / "a" / "progress.csv"
    first.parent.mkdir()
    rows = [(5120 * i, 1.0 / i) for i in (1, 2, 3, 4)] + [(1280 * i, 1.2 / i) for i in range(1, 40)]
    pd.DataFrame(rows, columns=["time/total_timesteps", "train/loss"]).to_csv(first, index=False)
    assert any("goes back 1 time(s) (first from 20480 to 1280)" in w for w in only_run(first.parent).warnings)
    clean = tmp_path / "b" / "progress.csv"
    clean.parent.mkdir()
    pd.DataFrame(rows[4:], columns=["time/total_timesteps", "train/loss"]).to_csv(clean, index=False)
    assert not any("goes back" in w for w in only_run(clean.parent).warnings)


def test_lightning_rows_without_a_step_are_placed_at_the_last_step_of_their_epoch(tmp_path):
    version = tmp_path / "lightning_logs" / "version_0"
    version.mkdir(parents=True)
    rows = []
    for epoch in range(5):
        rows += [{"epoch": epoch, "step": epoch * 4 + b, "train/loss_step": 2 - 0.05 * (epoch * 4 + b)} for b in range(4)]
        rows.append({"epoch": epoch, "step": None, "val/loss": 2 - 0.1 * epoch, "val/acc_top1": 0.1 * epoch})
    pd.DataFrame(rows).to_csv(version / "metrics.csv", index=False)
    (version / "hparams.yaml").write_text("lr: 0.001\n")
    run = only_run(tmp_path)
    assert run.format == "lightning"
    assert list(series(run, "val/loss").steps) == [3, 7, 11, 15, 19]
    assert list(series(run, "val/acc_top1").values) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    assert "5 row(s) without a step placed at the last step logged in their epoch" in run.notes


def test_a_header_only_lightning_csv_gives_way_to_its_tensorboard_twin(tmp_path):
    from _tb_writers import write_scalars

    version = tmp_path / "lightning_logs" / "version_0"
    truth = write_scalars(version, tags=("train_loss_step",), steps=range(30))
    (version / "metrics.csv").write_text("epoch,step,train_loss_step,val_loss\n")  # killed before the first flush
    (version / "hparams.yaml").write_text("lr: 0.001\n")
    run = only_run(tmp_path)
    assert run.format == "tensorboard" and run.config == {"lr": 0.001}
    assert len(series(run, "train_loss_step")) == len(truth) == 30
    assert any("instead of the CSV" in n and "header but no rows" in n for n in run.notes)


# --------------------------------------------------------------------------- dialects and containers


def test_semicolon_decimal_comma_and_tab_separated_logs(tmp_path):
    frame = pd.DataFrame({"step": range(20), "loss": [1.0 / (s + 1) for s in range(20)], "val_loss": [1.1 / (s + 1) for s in range(20)]})
    for name, options in {"excel_de": {"sep": ";", "decimal": ","}, "semicolon": {"sep": ";"}, "tabs_csv": {"sep": "\t"}}.items():
        (tmp_path / name).mkdir()
        frame.to_csv(tmp_path / name / "log.csv", index=False, **options)
    (tmp_path / "tsv").mkdir()
    frame.to_csv(tmp_path / "tsv" / "log.tsv", index=False, sep="\t")
    runs, errors = load_runs(tmp_path)
    assert errors == [] and sorted(r.name for r in runs) == ["excel_de/log.csv", "semicolon/log.csv", "tabs_csv/log.csv", "tsv/log.tsv"]
    for run in runs:
        assert RunView(run).roles == {"train_loss": "loss", "val_loss": "val_loss"}, run.name
        assert series(run, "loss").values[1] == pytest.approx(0.5), run.name


def test_gzip_and_a_banner_comment_line(tmp_path):
    frame = pd.DataFrame({"step": range(20), "loss": [1.0 / (s + 1) for s in range(20)]})
    (tmp_path / "gz").mkdir()
    frame.to_csv(tmp_path / "gz" / "metrics.csv.gz", index=False)  # pandas compresses by the suffix
    (tmp_path / "banner").mkdir()
    with open(tmp_path / "banner" / "log.csv", "w") as fh:
        fh.write("# generated by train.py --lr 0.1\n")
        frame.to_csv(fh, index=False)
    runs, errors = load_runs(tmp_path)
    assert errors == [] and sorted(r.name for r in runs) == ["banner/log.csv", "gz/metrics.csv.gz"]
    assert all(len(series(r, "loss")) == 20 for r in runs)


def test_random_bytes_under_a_csv_name_are_named_binary(tmp_path):
    (tmp_path / "log.csv").write_bytes(np.random.default_rng(0).integers(0, 256, 500, dtype=np.uint8).tobytes())
    runs, errors = load_runs(tmp_path)
    assert runs == [] and errors == [f"{tmp_path / 'log.csv'}: not a text CSV (binary data)"]


def test_a_corrupt_gzip_stream_is_one_skipped_line_not_a_traceback(tmp_path):
    # a valid gzip header followed by bytes that are no deflate stream: zlib.error, not an OSError
    (tmp_path / "metrics.csv.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(7, 255)))
    runs, errors = load_runs(tmp_path)
    assert runs == [] and len(errors) == 1 and errors[0].startswith(f"{tmp_path / 'metrics.csv.gz'}: ")


def test_a_latin1_accent_is_text_not_binary(tmp_path):
    (tmp_path / "log.csv").write_bytes("step,loss,précision\n".encode("latin-1") + b"0,1.0,0.1\n1,0.5,0.2\n")
    assert len(series(only_run(tmp_path), "loss")) == 2


# --------------------------------------------------------------------------- HF trainer state


def test_trainer_state_with_float_steps(tmp_path):
    history = [{"epoch": s / 100, "loss": 2.0 - s / 300, "step": float(s)} for s in range(10, 310, 10)]
    history.append({"eval_loss": 1.5, "step": 300.0})
    state = {"global_step": 300.0, "max_steps": 300, "log_history": history}
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    run = only_run(tmp_path)
    assert run.warnings == []
    assert list(series(run, "loss").steps) == list(range(10, 310, 10))
    assert series(run, "eval_loss").steps[0] == 300 and not math.isnan(series(run, "eval_loss").values[0])


def test_rows_with_neither_step_nor_epoch_are_skipped_with_a_warning(tmp_path):
    with open(tmp_path / "log.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["step", "loss", "val_loss"])
        writer.writerows([[0, 1.0, ""], [1, 0.9, ""], ["", "", 0.95], [2, 0.8, ""]])
    run = only_run(tmp_path)
    assert list(series(run, "loss").steps) == [0, 1, 2] and "val_loss" not in run.metrics
    assert run.warnings == ["1 row(s) with values but no step skipped"]


def test_a_bad_cell_in_a_wandb_chart_export_is_a_warning_too(tmp_path):
    """W&B and TensorBoard-download CSVs go through the same table reading: what it skips is said."""
    loss = [f"{2.0 - 0.05 * s:.3f}" for s in range(30)]
    loss[12] = "NaN?"
    rows = ["Step,sweep-7 - train/loss,sweep-7 - train/loss__MIN,sweep-7 - train/loss__MAX"]
    rows += [f"{s},{v},{v},{v}" for s, v in enumerate(loss)]
    (tmp_path / "wandb_export_2024.csv").write_text("\n".join(rows) + "\n")
    run = only_run(tmp_path)
    assert run.format == "wandb_csv" and len(series(run, "train/loss")) == 29
    assert any("non-numeric cell(s) skipped, e.g. 'NaN?'" in w for w in run.warnings)
