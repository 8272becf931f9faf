"""Every non-TensorBoard format, read from files its real writer produced.

W&B files come from the wandb package itself (offline mode); formats whose
writer is not installed here (Lightning, Ultralytics, Keras, HF Trainer,
MLflow) use small fixtures in their documented on-disk layout; the real logs
under ../shared/real-logs are covered by test_ingest_real_logs.py.
"""
from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from logdoctor.ingest import load_runs
from logdoctor.ingest import wandb_records, wandb_schema
from logdoctor.view import RunView
from _ingest_helpers import only_run, series

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- W&B offline run (real writer)

STEPS = 3000  # enough history to span many 32 KiB blocks


@pytest.fixture(scope="session")
def wandb_run_dir(tmp_path_factory) -> Path:
    wandb = pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("wandb")
    run = wandb.init(
        dir=str(root),
        mode="offline",
        project="logdoctor-test",
        name="offline-demo",
        config={"lr": 3e-4, "optimizer": {"name": "adamw", "betas": [0.9, 0.95]}, "note": "x" * 70000},
        settings=wandb.Settings(silent=True, x_disable_stats=True),
    )
    for i in range(STEPS):
        row = {"train/loss": 5.0 / (1 + 0.01 * i), "lr": 3e-4 * (1 - i / STEPS), "opt": {"grad_norm": 1.0 + i % 7}}
        if i % 500 == 0:
            row["val/loss"] = 4.0 - i / 1000
        run.log(row, step=i)
    run.log({"train/loss": float("nan")}, step=STEPS)
    run.log({"train/loss": float("inf")}, step=STEPS + 1)
    run.finish()
    wandb.teardown()  # finish() can return before wandb-core has flushed the .wandb file
    (folder,) = [p for p in (root / "wandb").iterdir() if p.is_dir() and not p.is_symlink()]
    return folder


def test_wandb_offline_run_history_config_and_name(wandb_run_dir):
    run = only_run(wandb_run_dir)
    assert run.format == "wandb"
    loss = series(run, "train/loss")
    assert len(loss) == STEPS + 2
    assert loss.values[10] == pytest.approx(5.0 / 1.1)
    assert math.isnan(loss.values[-2]) and math.isinf(loss.values[-1])
    assert list(series(run, "val/loss").steps) == list(range(0, STEPS, 500))
    assert len(series(run, "opt.grad_norm")) == STEPS
    assert run.config["lr"] == pytest.approx(3e-4)
    assert run.config["optimizer.name"] == "adamw"
    assert len(run.config["note"]) == 70000  # a record split over several blocks (FIRST/MIDDLE/LAST)
    assert not any(k.startswith("_") for k in run.config)
    assert any("offline-demo" in n for n in run.notes)
    assert run.warnings == []
    assert RunView(run).roles == {"train_loss": "train/loss", "lr": "lr", "val_loss": "val/loss", "grad_norm": "opt.grad_norm"}


def _wandb_file(folder: Path) -> Path:
    (path,) = folder.glob("run-*.wandb")
    return path


def _copy_run(src: Path, dst: Path, data: bytes) -> Path:
    dst.mkdir(parents=True)
    (dst / _wandb_file(src).name).write_bytes(data)
    return dst


def test_wandb_truncated_file_keeps_complete_records(wandb_run_dir, tmp_path):
    data = _wandb_file(wandb_run_dir).read_bytes()
    keep = 5 * wandb_records.BLOCK + 3  # a killed writer: the last chunk header is cut short
    assert len(data) > keep + wandb_records.BLOCK
    run = only_run(_copy_run(wandb_run_dir, tmp_path / "run-cut", data[:keep]))
    n = len(series(run, "train/loss"))
    assert 0 < n < STEPS
    assert any("mid-record" in w for w in run.warnings)
    assert any("no exit record" in n for n in run.notes)


def test_wandb_bad_checksum_skips_only_that_block(wandb_run_dir, tmp_path):
    data = bytearray(_wandb_file(wandb_run_dir).read_bytes())
    block = wandb_records.BLOCK
    assert len(data) > 6 * block
    data[3 * block + 100] ^= 0xFF  # damage a byte inside block 3
    run = only_run(_copy_run(wandb_run_dir, tmp_path / "run-bad", bytes(data)))
    n = len(series(run, "train/loss"))
    lost = STEPS + 2 - n
    assert 0 < lost < 200, lost  # one 32 KiB block holds well under 200 history rows
    assert any("damaged block" in w for w in run.warnings)


def test_wandb_file_with_garbage_header_is_one_line(tmp_path):
    folder = tmp_path / "run-x"
    folder.mkdir()
    (folder / "run-abc.wandb").write_bytes(b"this is not a wandb file at all")
    runs, errors = load_runs(tmp_path)
    assert runs == [] and len(errors) == 1
    assert "run-abc.wandb" in errors[0] and "not a W&B .wandb file" in errors[0]


def test_wandb_file_is_read_without_the_wandb_package(wandb_run_dir, tmp_path):
    """A base install (no wandb) reads a .wandb file: the schema is described by logdoctor itself."""
    folder = _copy_run(wandb_run_dir, tmp_path / "run-a", _wandb_file(wandb_run_dir).read_bytes())
    script = (
        "import sys; sys.modules['wandb'] = None\n"
        "from logdoctor.ingest import load_runs\n"
        f"runs, errors = load_runs({str(folder)!r})\n"
        "assert errors == [], errors\n"
        "print(runs[0].scalars.filter(metric='train/loss').height)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > STEPS


def _keyed_items(record) -> list[tuple]:
    return [(side, i.key, list(i.nested_key), i.value_json) for side in ("update", "remove") for i in getattr(record, side)]


def test_wandb_records_decode_as_wandb_itself_decodes_them():
    """Every record of every bundled .wandb file: logdoctor's schema and wandb's classes agree, value by value."""
    internal = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    files = sorted((ROOT / "sample_runs").rglob("*.wandb"))
    assert files
    ours, theirs = wandb_schema.record_class()(), internal.Record()
    checked = 0
    for path in files:
        for payload in wandb_records.scan_records(path, wandb_records.ScanStats()):
            ours.ParseFromString(payload)
            theirs.ParseFromString(payload)
            kind = theirs.WhichOneof("record_type")
            if kind == "history":
                assert [(i.key, list(i.nested_key), wandb_schema.item_value_json(i)) for i in ours.history.item] == [
                    (i.key, list(i.nested_key), i.value_json or wandb_schema.item_value_json(i)) for i in theirs.history.item
                ]
                assert ours.history.step.num == theirs.history.step.num
                checked += 1
            elif kind in ("config", "summary"):
                assert _keyed_items(getattr(ours, kind)) == _keyed_items(getattr(theirs, kind))
            elif kind == "run":
                assert (ours.run.run_id, ours.run.display_name) == (theirs.run.run_id, theirs.run.display_name)
            elif kind == "exit":
                assert ours.exit.exit_code == theirs.exit.exit_code
            else:
                assert ours.WhichOneof("record_type") is None
    assert checked > 100


def test_wandb_resumed_run_folders_are_joined(tmp_path):
    wandb = pytest.importorskip("wandb")
    import time

    for part in range(2):
        if part:
            time.sleep(1.05)  # W&B names run folders to the second
        run = wandb.init(dir=str(tmp_path), mode="offline", project="p", id="resume123", resume="allow",
                         config={"lr": 0.1 * (part + 1)}, settings=wandb.Settings(silent=True, x_disable_stats=True))
        for i in range(40):
            run.log({"loss": 1.0 / (1 + i + 40 * part)}, step=i + 40 * part)
        run.finish()
        wandb.teardown()  # finish() can return before wandb-core has flushed the .wandb file
    folders = sorted(p.name for p in (tmp_path / "wandb").iterdir() if p.is_dir() and not p.is_symlink())
    assert len(folders) == 2 and all(f.endswith("-resume123") for f in folders)
    run = only_run(tmp_path)
    assert run.name == f"wandb/{folders[0]}"
    loss = series(run, "loss")
    assert run.warnings == []
    assert list(loss.steps) == list(range(80)) and loss.duplicates == 0
    assert run.config["lr"] == pytest.approx(0.2)  # the later segment's config wins
    assert any("resumed run: joined 2 folders" in n for n in run.notes)


def test_wandb_folder_with_summary_only_says_no_history(tmp_path):
    run_dir = tmp_path / "wandb" / "run-20240101_000000-abc"
    (run_dir / "files").mkdir(parents=True)
    (run_dir / "files" / "wandb-summary.json").write_text('{"loss": 0.5, "_step": 99}')
    (run_dir / "files" / "config.yaml").write_text("lr:\n  value: 0.1\n")
    runs, errors = load_runs(tmp_path)
    assert runs == [] and len(errors) == 1
    assert "run-20240101_000000-abc" in errors[0] and "final summary values only, no history" in errors[0]


# --------------------------------------------------------------------------- old W&B run folder (jsonl)


def test_wandb_old_local_folder(tmp_path):
    run_dir = tmp_path / "wandb" / "run-20200101_000000-abcd1234"
    run_dir.mkdir(parents=True)
    rows = [
        {"loss": 2.0, "_runtime": 1.0, "_timestamp": 1.6e9, "_step": 0},
        {"media": {"_type": "image-file", "path": "x.png", "size": 100}, "_step": 1},
        {"loss": 1.5, "acc": 0.5, "grads": {"norm": 3.0}, "_timestamp": 1.6e9 + 5, "_step": 2},
    ]
    text = "\n".join(json.dumps(r) for r in rows) + "\n" + '{"loss": 1.4, "_st'  # killed mid-line
    (run_dir / "wandb-history.jsonl").write_text(text)
    (run_dir / "wandb-summary.json").write_text('{"loss": 1.5}')
    (run_dir / "wandb-events.jsonl").write_text('{"system.cpu": 50, "_runtime": 3}\n')
    (run_dir / "config.yaml").write_text(
        "wandb_version: 1\n_wandb:\n  desc: null\n  value: {cli_version: 0.9.7}\n"
        "learning_rate:\n  desc: null\n  value: 0.003\nmodel:\n  desc: null\n  value: {depth: 4}\n"
    )
    run = only_run(tmp_path)
    assert run.format == "wandb" and run.name == "wandb/run-20200101_000000-abcd1234"
    assert sorted(run.metrics) == ["acc", "grads.norm", "loss"]  # media sizes and system metrics are not curves
    assert list(series(run, "loss").steps) == [0, 2]
    assert run.config == {"learning_rate": 0.003, "model.depth": 4}
    assert any("1 unreadable line" in w for w in run.warnings)
    assert run.scalars.filter(run.scalars["metric"] == "loss")["wall_time"].to_list() == [1.6e9, 1.6e9 + 5]


# --------------------------------------------------------------------------- W&B exports


def test_wandb_ui_export_several_runs_blanks_and_bands(tmp_path):
    path = tmp_path / "wandb_export_2024.csv"
    path.write_text(
        '"Step","run-a - train/loss","run-a - train/loss__MIN","run-a - train/loss__MAX","run b - train/loss","run b - train/loss__MIN","run b - train/loss__MAX","sweep - lr 0.1 - train/loss"\n'
        '"0","2.0","1.9","2.1","3.0","3.0","3.0","4"\n'
        '"1","1.5","1.4","1.6","2.5","2.5","2.5","3"\n'
        '"2","1.2","1.1","1.3","",""," ","2"\n'
    )
    runs, errors = load_runs(tmp_path)
    assert errors == []
    by_name = {r.name: r for r in runs}
    assert set(by_name) == {"wandb_export_2024.csv/run-a", "wandb_export_2024.csv/run b", "wandb_export_2024.csv/sweep - lr 0.1"}
    assert by_name["wandb_export_2024.csv/sweep - lr 0.1"].metrics == ["train/loss"]
    assert all(r.format == "wandb_csv" for r in runs)
    a, b = by_name["wandb_export_2024.csv/run-a"], by_name["wandb_export_2024.csv/run b"]
    assert a.metrics == ["train/loss"] and list(series(a, "train/loss").values) == [2.0, 1.5, 1.2]
    assert list(series(b, "train/loss").steps) == [0, 1]


def test_wandb_ui_export_with_a_header_longer_than_the_sniff_buffer(tmp_path):
    columns = ['"Step"'] + [f'"sweep_run_{i:04d}_with_a_long_name - train/loss{band}"' for i in range(500) for band in ("", "__MIN", "__MAX")]
    rows = [",".join([str(step)] + [str(1.0 / (step + 1))] * 1500) for step in range(3)]
    path = tmp_path / "wandb_export.csv"
    path.write_text("\n".join([",".join(columns), *rows]) + "\n")
    assert path.stat().st_size > 64 * 1024
    runs, errors = load_runs(tmp_path)
    assert errors == [] and len(runs) == 500 and {r.format for r in runs} == {"wandb_csv"}


def test_wandb_api_history_csv_and_jsonl(tmp_path):
    (tmp_path / "history.csv").write_text(
        "_step,_runtime,_timestamp,train/loss,eval/loss,lr,media\n"
        '0,1.0,1700000000,2.0,,0.1,"{""_type"": ""image""}"\n'
        "1,2.0,1700000001,1.8,,0.1,\n"
        "2,3.0,1700000002,NaN,1.9,0.1,\n"
    )
    (tmp_path / "dump.jsonl").write_text(
        '{"_step": 0, "_runtime": 1, "loss": 1.0}\n{"_step": 5, "loss": NaN, "val": {"loss": 2.0}}\n'
    )
    runs, errors = load_runs(tmp_path)
    assert errors == []
    by_name = {r.name: r for r in runs}
    csv_run, jsonl_run = by_name["history.csv"], by_name["dump.jsonl"]
    assert csv_run.format == jsonl_run.format == "wandb_csv"
    assert sorted(csv_run.metrics) == ["eval/loss", "lr", "train/loss"]
    assert list(series(csv_run, "eval/loss").steps) == [2]
    assert math.isnan(series(csv_run, "train/loss").values[-1])
    assert RunView(csv_run).roles["val_loss"] == "eval/loss"
    assert sorted(jsonl_run.metrics) == ["loss", "val.loss"]
    assert RunView(jsonl_run).roles == {"train_loss": "loss", "val_loss": "val.loss"}


def test_wandb_runs_table_is_reported_as_no_history(tmp_path):
    (tmp_path / "wandb_export.csv").write_text(
        '"Name","State","Notes","User","Tags","Created","Runtime","Sweep","lr","train/loss"\n'
        '"a","finished","-","","","2024-01-01","100","","0.1","1.0"\n'
        '"b","crashed","-","","","2024-01-01","50","","0.3","9.0"\n'
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "runs.csv").write_text('"Name","lr","train/loss"\n"a","0.1","1.0"\n"b","0.3","9.0"\n"c","1","2"\n')
    runs, errors = load_runs(tmp_path)
    assert runs == []
    assert len(errors) == 2 and all("runs-table" in e and "no history" in e for e in errors)
    assert any("2 runs" in e for e in errors) and any("3 runs" in e for e in errors)


# --------------------------------------------------------------------------- CSV layouts


def test_lightning_csvlogger_metrics_and_hparams(tmp_path):
    version = tmp_path / "lightning_logs" / "version_0"
    version.mkdir(parents=True)
    (version / "metrics.csv").write_text(
        "created_at,epoch,lr-AdamW,lr-AdamW-momentum,step,train_loss_epoch,train_loss_step,val_acc,val_loss\n"
        "1.7e9,,0.001,0.9,49,,,,\n"
        "1.7e9,0,,,49,,0.9,,\n"
        "1.7e9,0,,,62,,,0.5,0.8\n"
        "1.7e9,0,,,62,0.85,,,\n"
        "1.7e9,1,,,99,,0.7,,\n"
        "1.7e9,1,,,125,,,0.6,0.75\n"
    )
    (version / "hparams.yaml").write_text("lr: 0.001\nmodel:\n  hidden: 128\nbetas: !!python/tuple\n- 0.9\n- 0.999\n")
    (version / "events.out.tfevents.1700000000.host.1.0").write_bytes(b"")  # a TensorBoardLogger twin
    run = only_run(tmp_path)
    assert any("TensorBoard event file(s) here repeat" in n for n in run.notes)
    assert run.format == "lightning" and run.name == "lightning_logs/version_0"
    assert "created_at" not in run.metrics and run.scalars["wall_time"].min() == 1.7e9
    assert list(series(run, "val_loss").steps) == [62, 125]
    assert list(series(run, "train_loss_step").values) == [0.9, 0.7]
    assert run.config["lr"] == 0.001 and run.config["model.hidden"] == 128 and run.config["betas"] == "[0.9,0.999]"
    roles = RunView(run).roles
    assert roles["train_loss"] == "train_loss_step" and roles["val_loss"] == "val_loss"
    assert roles["lr"] == "lr-AdamW" and roles["val_acc"] == "val_acc" and roles["epoch"] == "epoch"


def test_ultralytics_results_padded_header_and_args(tmp_path):
    train = tmp_path / "runs" / "detect" / "train"
    train.mkdir(parents=True)
    cols = ["epoch", "train/box_loss", "train/cls_loss", "metrics/mAP50(B)", "val/box_loss", "lr/pg0", "lr/pg1"]
    rows = [[0, 1.6, 3.3, 0.15, 2.3, 0.07, 0.003], [1, 1.2, 1.9, 0.25, 2.2, 0.04, 0.006], [2, 1.1, 1.7, 0.31, 2.1, 0.01, 0.009]]
    lines = [",".join(f"{c:>22}" for c in cols)] + [",".join(f"{v:>22}" for v in r) for r in rows]
    (train / "results.csv").write_text("\n".join(lines) + "\n")
    (train / "args.yaml").write_text("task: detect\nepochs: 3\nlr0: 0.01\nbatch: 16\n")
    run = only_run(tmp_path)
    assert run.format == "ultralytics" and run.name == "runs/detect/train"
    assert "epoch" not in run.metrics
    assert list(series(run, "train/box_loss").values) == [1.6, 1.2, 1.1]
    assert run.config == {"task": "detect", "epochs": 3, "lr0": 0.01, "batch": 16}
    view = RunView(run)
    assert view.roles["val_acc"] == "metrics/mAP50(B)" and view.roles["val_loss"] == "val/box_loss"
    assert view.all_roles["lr"] == ["lr/pg0", "lr/pg1"]


def test_yolov5_results_with_opt_and_hyp_and_time_column(tmp_path):
    exp = tmp_path / "runs" / "train" / "exp"
    exp.mkdir(parents=True)
    (exp / "results.csv").write_text(
        "               epoch,      train/box_loss,      train/obj_loss,   metrics/precision,metrics/mAP_0.5:0.95,        val/box_loss,x/lr0,time\n"
        "                   0,            0.11,            0.05,             0.2,             0.1,            0.09,0.07,12.5\n"
        "                   1,            0.09,            0.04,             0.3,             0.2,            0.08,0.05,25.1\n"
    )
    (exp / "opt.yaml").write_text("epochs: 2\nbatch_size: 16\n")
    (exp / "hyp.yaml").write_text("lr0: 0.01\nmomentum: 0.937\n")
    run = only_run(tmp_path)
    assert run.format == "ultralytics" and run.name == "runs/train/exp"
    assert run.config == {"epochs": 2, "batch_size": 16, "lr0": 0.01, "momentum": 0.937}
    assert "time" not in run.metrics and run.scalars["wall_time"].max() == pytest.approx(25.1)
    assert RunView(run).roles == {
        "train_loss": "train/box_loss", "val_acc": "metrics/mAP_0.5:0.95", "val_loss": "val/box_loss", "lr": "x/lr0",
    }


def test_keras_csvlogger_and_history_without_epoch(tmp_path):
    (tmp_path / "training.log.csv").write_text("epoch,accuracy,loss,lr,val_accuracy,val_loss\n0,0.5,1.2,0.001,0.55,1.1\n1,0.6,1.0,0.001,0.6,nan\n")
    (tmp_path / "history.csv").write_text("loss,val_loss\n1.0,1.1\n0.9,1.0\n0.8,1.05\n")
    (tmp_path / "pandas.csv").write_text(",loss,val_loss\n3,1.0,1.1\n4,0.9,1.0\n")  # df.to_csv() keeps the index
    runs, errors = load_runs(tmp_path)
    assert errors == []
    by_name = {r.name: r for r in runs}
    log, hist = by_name["training.log.csv"], by_name["history.csv"]
    assert log.format == hist.format == "keras_csv"
    assert RunView(log).roles == {"train_acc": "accuracy", "train_loss": "loss", "lr": "lr", "val_acc": "val_accuracy", "val_loss": "val_loss"}
    assert math.isnan(series(log, "val_loss").values[1])
    assert list(series(hist, "val_loss").steps) == [0, 1, 2]
    assert any("row number" in n for n in hist.notes)
    pandas = by_name["pandas.csv"]
    assert pandas.format == "keras_csv" and sorted(pandas.metrics) == ["loss", "val_loss"]
    assert list(series(pandas, "loss").steps) == [3, 4] and pandas.notes == []


def test_keras_csvlogger_under_its_documented_log_name(tmp_path):
    (tmp_path / "training.log").write_text("epoch,loss,val_loss\n0,1.0,1.2\n1,0.8,1.1\n")
    (tmp_path / "server.log").write_text("INFO starting\nepoch 1 loss 0.5\n")  # a plain text log: not ours
    run = only_run(tmp_path)
    assert run.format == "keras_csv" and run.name == "training.log"
    assert RunView(run).roles == {"train_loss": "loss", "val_loss": "val_loss"}


def test_generic_wide_and_long_csv_with_duplicate_and_unsorted_steps(tmp_path):
    (tmp_path / "wide.csv").write_text("global_step,train/loss,grad_norm\n0,2.0,1.0\n10,1.5,1.1\n10,1.4,1.2\n5,1.7,0.9\n")
    (tmp_path / "long.csv").write_text("metric,step,value\nloss,0,1.0\nloss,1,0.9\nval_loss,1,1.2\nloss,2,inf\n")
    runs, errors = load_runs(tmp_path)
    assert errors == []
    by_name = {r.name: r for r in runs}
    wide, long = by_name["wide.csv"], by_name["long.csv"]
    assert wide.format == long.format == "csv"
    loss = series(wide, "train/loss")
    assert list(loss.steps) == [0, 5, 10] and list(loss.values) == [2.0, 1.7, 1.4] and loss.duplicates == 1
    assert np.isinf(series(long, "loss").values[-1])
    assert RunView(long).roles == {"train_loss": "loss", "val_loss": "val_loss"}


def test_tensorboard_download_csvs_join_per_run_with_keras_splits(tmp_path):
    """TensorBoard's 'Download CSV': one tag per file; a run's files are one run, Keras splits join it."""
    rows = "Wall time,Step,Value\n1700000000.5,0,2.3\n1700000001.5,1,2.1\n1700000002.5,2,1.9\n"
    for name in ("run-train-tag-epoch_loss.csv", "run-validation-tag-epoch_loss.csv", "run-validation-tag-epoch_accuracy.csv"):
        (tmp_path / "keras" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "keras" / name).write_text(rows)
    for run in ("exp1", "exp2"):
        (tmp_path / "sweep").mkdir(exist_ok=True)
        (tmp_path / "sweep" / f"run-{run}-tag-Loss_train.csv").write_text(rows)
        (tmp_path / "sweep" / f"run-{run}-tag-lr.csv").write_text(rows)
    runs, errors = load_runs(tmp_path)
    assert errors == []
    by_name = {r.name: r for r in runs}
    assert sorted(by_name) == ["keras", "sweep/exp1", "sweep/exp2"] and {r.format for r in runs} == {"csv"}
    keras = RunView(by_name["keras"])
    assert keras.roles == {"train_loss": "train/epoch_loss", "val_loss": "validation/epoch_loss", "val_acc": "validation/epoch_accuracy"}
    assert list(keras.series("train_loss").values) == [2.3, 2.1, 1.9]
    assert by_name["keras"].scalars.get_column("wall_time").min() == 1700000000.5
    assert RunView(by_name["sweep/exp1"]).roles == {"train_loss": "Loss_train", "lr": "lr"}


# --------------------------------------------------------------------------- HF Trainer


def _trainer_state(global_step: int, history: list[dict]) -> str:
    return json.dumps(
        {"global_step": global_step, "max_steps": 30, "num_train_epochs": 3, "train_batch_size": 8,
         "trial_params": None, "log_history": history}
    )


def test_hf_trainer_state_and_checkpoints(tmp_path):
    out = tmp_path / "output"
    history = [
        {"epoch": 0.33, "grad_norm": 4.0, "learning_rate": 5e-5, "loss": 2.5, "step": 10},
        {"epoch": 0.33, "eval_loss": 2.4, "eval_accuracy": 0.3, "eval_runtime": 1.2, "step": 10},
        {"epoch": 0.67, "grad_norm": 3.0, "learning_rate": 4e-5, "loss": float("nan"), "step": 20},
        {"epoch": 1.0, "grad_norm": 2.0, "learning_rate": 3e-5, "loss": 2.0, "step": 30},
        {"epoch": 1.0, "step": 30, "total_flos": 1e15, "train_loss": 2.2, "train_runtime": 100.0},
    ]
    for step, upto in ((10, 2), (20, 3)):
        (out / f"checkpoint-{step}").mkdir(parents=True)
        (out / f"checkpoint-{step}" / "trainer_state.json").write_text(_trainer_state(step, history[:upto]))
    (out / "trainer_state.json").write_text(_trainer_state(30, history))
    (out / "runs" / "Jan01_00-00-00_host").mkdir(parents=True)
    (out / "runs" / "Jan01_00-00-00_host" / "events.out.tfevents.1700000000.host.1.0").write_bytes(b"")
    run = only_run(tmp_path)  # the Trainer's TensorBoard copy is not a second run
    assert any("repeat this log_history" in n for n in run.notes)
    assert run.format == "hf_trainer" and run.name == "output"
    loss = series(run, "loss")
    assert list(loss.steps) == [10, 20, 30] and math.isnan(loss.values[1])
    assert "train_loss" not in run.metrics and "total_flos" not in run.metrics
    assert any("train_loss=2.2" in n for n in run.notes) and any("3 trainer states" in n for n in run.notes)
    assert run.config["train_batch_size"] == 8 and run.config["max_steps"] == 30
    assert RunView(run).roles == {
        "epoch": "epoch", "grad_norm": "grad_norm", "lr": "learning_rate", "train_loss": "loss",
        "val_loss": "eval_loss", "val_acc": "eval_accuracy",
    }


def test_hf_trainer_only_checkpoints_uses_latest(tmp_path):
    history = [{"loss": 3.0 - i * 0.1, "learning_rate": 1e-4, "step": 10 * (i + 1)} for i in range(5)]
    for upto in (2, 5):
        d = tmp_path / "out" / f"checkpoint-{10 * upto}"
        d.mkdir(parents=True)
        (d / "trainer_state.json").write_text(_trainer_state(10 * upto, history[:upto]))
    run = only_run(tmp_path)
    assert len(series(run, "loss")) == 5


# --------------------------------------------------------------------------- MLflow


def _mlflow_run(exp: Path, run_id: str, name: str, metrics: dict[str, list[tuple[float, int]]], params: dict[str, str]):
    run = exp / run_id
    (run / "tags").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "artifacts").mkdir()
    (run / "meta.yaml").write_text(f"run_id: {run_id}\nrun_name: {name}\nexperiment_id: '1'\nlifecycle_stage: active\nstatus: 3\n")
    (run / "tags" / "mlflow.runName").write_text(name)
    for key, points in metrics.items():
        path = run / "metrics" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{1700000000000 + 1000 * s} {v} {s}\n" for v, s in points))
    for key, value in params.items():
        (run / "params" / key).write_text(value)


def test_mlflow_file_store(tmp_path):
    exp = tmp_path / "mlruns" / "1"
    exp.mkdir(parents=True)
    (exp / "meta.yaml").write_text("experiment_id: '1'\nname: demo\nlifecycle_stage: active\n")
    _mlflow_run(exp, "a" * 32, "brave-fox-1", {"train/loss": [(2.0, 0), (1.5, 1), (float("nan"), 2)], "val_loss": [(1.9, 1)]},
                {"lr": "0.01", "optimizer": "adam", "epochs": "3"})
    _mlflow_run(exp, "b" * 32, "brave-fox-1", {"loss": [(1.0, 0)]}, {"lr": "0.1"})
    (exp / ("b" * 32) / "metrics" / "broken").write_text("garbage\n")
    runs, errors = load_runs(tmp_path)
    assert errors == []
    assert sorted(r.name for r in runs) == ["mlruns/1/brave-fox-1", "mlruns/1/brave-fox-1-bbbbbbbb"]
    run = next(r for r in runs if r.name == "mlruns/1/brave-fox-1")
    assert run.format == "mlflow"
    loss = series(run, "train/loss")
    assert list(loss.steps) == [0, 1, 2] and math.isnan(loss.values[2])
    assert run.scalars["wall_time"].min() == pytest.approx(1.7e9)
    assert run.config == {"lr": 0.01, "optimizer": "adam", "epochs": 3}
    assert RunView(run).roles == {"train_loss": "train/loss", "val_loss": "val_loss"}
    assert any("experiment 'demo'" in n for n in run.notes)
    other = next(r for r in runs if r.name != run.name)
    assert any("broken" in w for w in other.warnings)


def _write_metric(run: Path, key: str, rows: list[tuple[int, float, int]]):
    path = run / "metrics" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{1700000000000 + 1000 * t} {v} {s}\n" for t, v, s in rows))


def test_mlflow_step0_value_logged_after_the_curve_is_a_summary_not_its_start(tmp_path):
    exp = tmp_path / "mlruns" / "1"
    _mlflow_run(exp, "c" * 32, "trial", {}, {})
    run_dir = exp / ("c" * 32)
    # epochs 0..5 falling, then the final loss logged again without a step (MLflow writes step 0)
    curve = [(t, 1.0 - 0.15 * t, t) for t in range(6)]
    _write_metric(run_dir, "train_loss", curve + [(7, 0.25, 0)])
    run = only_run(tmp_path)
    loss = series(run, "train_loss")
    assert list(loss.steps) == [0, 1, 2, 3, 4, 5] and loss.values[0] == 1.0
    assert any("closing summaries" in n and "train_loss" in n for n in run.notes)


def test_mlflow_restart_from_step0_keeps_its_points(tmp_path):
    exp = tmp_path / "mlruns" / "1"
    _mlflow_run(exp, "d" * 32, "trial", {}, {})
    # a second attempt logs steps 0..2 again after the first reached step 2: it goes on past step 0
    rows = [(0, 1.0, 0), (1, 0.9, 1), (2, 0.8, 2), (3, 1.1, 0), (4, 0.7, 1), (5, 0.5, 2)]
    _write_metric(exp / ("d" * 32), "loss", rows)
    run = only_run(tmp_path)
    assert list(series(run, "loss").values) == [1.1, 0.7, 0.5]
    assert not any("closing summaries" in n for n in run.notes)


# --------------------------------------------------------------------------- bad input


def test_bad_files_are_one_line_each_and_others_still_read(tmp_path):
    (tmp_path / "good.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "garbage.csv").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "header_only.csv").write_text("step,loss\n")
    (tmp_path / "words.csv").write_text("step,loss\nfirst,high\n")
    (tmp_path / "people.csv").write_text("name,city\nada,london\n")  # not a log: ignored quietly
    (tmp_path / "random.json").write_text('{"hello": 1}')  # not a log: ignored quietly
    bad_hf = tmp_path / "hf_no_history"
    bad_hf.mkdir()
    (bad_hf / "trainer_state.json").write_text('{"global_step": 10}')
    truncated = tmp_path / "hf_truncated"
    truncated.mkdir()
    (truncated / "trainer_state.json").write_text('{"log_history": [{"loss": 1.0, "st')
    empty_state = tmp_path / "hf_empty"
    empty_state.mkdir()
    (empty_state / "trainer_state.json").write_bytes(b"")
    runs, errors = load_runs(tmp_path)
    assert [r.name for r in runs] == ["good.csv"]
    assert len(errors) == 7, errors
    for fragment in ("empty.csv", "garbage.csv", "header_only.csv", "words.csv", "hf_no_history", "hf_truncated", "hf_empty"):
        assert sum(fragment in e for e in errors) == 1, (fragment, errors)
    assert all("\n" not in e and "Traceback" not in e for e in errors)
    assert any("no 'log_history'" in e for e in errors)


def test_explicit_non_log_file_gets_a_reason(tmp_path):
    path = tmp_path / "random.json"
    path.write_text("[1, 2, 3]")
    runs, errors = load_runs(path)
    assert runs == [] and errors == [f"{path}: not a training log logdoctor recognises"]


def test_explicit_single_files_are_read(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(_trainer_state(2, [{"loss": 1.0, "step": 1}, {"loss": 0.5, "step": 2}]))
    assert only_run(path).format == "hf_trainer"
    csv_path = tmp_path / "results.csv"
    csv_path.write_text("epoch,train/box_loss,val/box_loss\n0,1.0,1.1\n")
    (tmp_path / "args.yaml").write_text("epochs: 1\n")
    run = only_run(csv_path)
    assert run.format == "ultralytics" and run.config == {"epochs": 1}


def test_scan_records_counts_and_reassembles(tmp_path):
    """The framing reader on hand-framed chunks: FULL, FIRST/LAST across a block, zero padding."""
    import zlib

    def chunk(kind: int, data: bytes) -> bytes:
        return struct.pack("<IHB", zlib.crc32(bytes([kind]) + data), len(data), kind) + data

    block = wandb_records.BLOCK
    head = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
    first = chunk(1, b"alpha")
    room = block - len(head) - len(first) - 7  # data that fits in block 0 after a FIRST header
    big = bytes(range(256)) * 200
    body = head + first + chunk(2, big[:room])
    assert len(body) == block
    body += chunk(4, big[room:]) + chunk(1, b"omega")
    path = tmp_path / "run-x.wandb"
    path.write_bytes(body)
    stats = wandb_records.ScanStats()
    assert list(wandb_records.scan_records(path, stats)) == [b"alpha", big, b"omega"]
    assert stats.records == 3 and stats.bad_chunks == 0 and not stats.truncated


_MUTATION_SEEDS = {
    "metrics.csv": b"epoch,step,train_loss_step,val_loss\n0,9,1.0,\n0,9,,1.2\n1,19,0.8,\n",
    "results.csv": b"   epoch,  train/box_loss,  val/box_loss\n  0,  1.0,  1.1\n  1,  0.9,  1.0\n",
    "long.csv": b"metric,step,value\nloss,0,1\nloss,1,0.5\n",
    "trainer_state.json": b'{"global_step": 2, "log_history": [{"loss": 1.0, "step": 1}, {"eval_loss": 2, "step": 2}]}',
    "h.jsonl": b'{"_step": 0, "loss": 1}\n{"_step": 1, "loss": 0.5}\n',
    "wandb_export.csv": b'"Step","a - loss","a - loss__MIN"\n0,1,1\n1,0.5,0.5\n',
}


@pytest.mark.parametrize("name", sorted(_MUTATION_SEEDS))
def test_damaged_text_logs_never_hit_the_reader_bug_fallback(name, tmp_path):
    """Randomly damaged files: each is read or named in one deliberate line, never an unforeseen exception."""
    import random

    rng = random.Random(name)
    for i in range(25):
        data = bytearray(_MUTATION_SEEDS[name])
        for _ in range(rng.randrange(1, 6)):
            pos = rng.randrange(len(data))
            if rng.random() < 0.5:
                data[pos] = rng.choice(b',\n"{}[]:0123456789.-eEnaN x\x00\xff')
            else:
                del data[pos]
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / name).write_bytes(bytes(data))
        _, errors = load_runs(folder)
        assert not any("could not read" in e for e in errors), (bytes(data), errors)


def test_config_files_with_python_tags_and_wandb_wrappers(tmp_path):
    from logdoctor.ingest.hparams import load_config_file, parse_scalar

    path = tmp_path / "hparams.yaml"
    path.write_text(
        "args: !!python/object:argparse.Namespace\n  lr: 0.01\n  layers: 4\n"
        "dtype: !!python/object/apply:torch.float32 []\nopt: !!python/name:torch.optim.Adam ''\n"
        "betas: !!python/tuple\n- 0.9\n- 0.99\n"
        "wandb_version: 1\n_wandb:\n  value: {cli_version: 0.16.0}\nbatch:\n  desc: null\n  value: 32\n"
    )
    warnings: list[str] = []
    assert load_config_file(path, warnings) == {
        "args.lr": 0.01, "args.layers": 4, "dtype": "torch.float32", "opt": "torch.optim.Adam",
        "betas": "[0.9,0.99]", "batch": 32,
    }
    assert warnings == []
    (tmp_path / "bad.yaml").write_text("a: [unclosed\n")
    assert load_config_file(tmp_path / "bad.yaml", warnings) == {} and "bad.yaml" in warnings[0]
    assert [parse_scalar(t) for t in ("3", "0.5", "True", "adam", " 1e-3\n")] == [3, 0.5, True, "adam", 0.001]


def test_a_csv_head_splits_into_comment_lines_header_and_data_as_its_lines_say():
    """The sniffer's header finder agrees with splitting the head into lines, on every small text of
    comment marks, separators, newlines and carriage returns."""
    import random

    from logdoctor.ingest.csv_table import _header_line

    def by_lines(text):
        lines = text.split("\n")
        comments = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
        first = lines[comments].rstrip("\r") if comments < len(lines) else ""
        return comments, first, "\n".join(lines[comments + 1 :])

    rng = random.Random(0)
    for _ in range(5000):
        text = "".join(rng.choice(["#", "a", ",", "\n", "\r", ";", "1"]) for _ in range(rng.randint(1, 12)))
        assert _header_line(text) == by_lines(text), repr(text)
    assert _header_line("# run 3\n#\nstep,loss\r\n1,2\n") == (2, "step,loss", "1,2\n")
