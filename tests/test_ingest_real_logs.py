"""Real logs written by other people (../shared/real-logs): every folder is read, with the right roles.

The folder sits beside the checkout and is not part of the project: the
tests skip when it is absent. Expectations are what a person reading each
log would say (which metric is the training loss, the validation loss...).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from logdoctor.ingest import load_runs
from logdoctor.view import RunView

REAL = Path(__file__).parents[2] / "shared" / "real-logs"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-logs not present")

FOLDERS = sorted(p.name for p in REAL.iterdir() if p.is_dir()) if REAL.is_dir() else []
HAS_TENSORBOARD_READER = importlib.util.find_spec("logdoctor.ingest.tensorboard") is not None

HF_TINYLLAMA = {
    "train_loss": "loss", "val_loss": "eval_loss", "lr": "learning_rate", "grad_norm": "grad_norm",
    "train_acc": "mean_token_accuracy", "val_acc": "eval_mean_token_accuracy", "epoch": "epoch",
}
YOLO = {"train_loss": "train/box_loss", "val_loss": "val/box_loss", "lr": "lr/pg0", "val_acc": "metrics/mAP50(B)"}

#: folder -> (format, number of runs, primary roles each run must have)
EXPECTED = {
    "hf_tinyllama_finetune_Dheena731": ("hf_trainer", 1, HF_TINYLLAMA),
    "hf_trainer_state_viz_aigoncharov": (
        "hf_trainer", 1,
        {"train_loss": "loss", "val_loss": "eval_g0_loss", "val_acc": "eval_g0_accuracy", "lr": "learning_rate", "grad_norm": "grad_norm"},
    ),
    "hf_whisper_large_v2_japanese_P4P4N1CK": ("hf_trainer", 1, {"train_loss": "loss", "val_loss": "eval_loss", "lr": "learning_rate"}),
    "lightning_pendulum_pinn_Macro1027": ("lightning", 2, {"train_loss": "train_loss_step", "epoch": "epoch"}),
    "mlflow_imageclass_1010sb": ("mlflow", 1, {"val_loss": "val_loss", "val_acc": "val_accuracy"}),
    "wandb_export_nanogpt_druidowm": ("wandb_csv", 8, {"train_loss": "train/loss"}),
    "wandb_runs_table_nanogpt_Lucas-longxutang": (None, 0, {}),
    "wandb_spaceinvaders_mfts": ("wandb", 1, {"reward": "episodic_reward"}),
    "yolov8_fire_smoke_Abonia1": ("ultralytics", 1, YOLO),
    "yolov8_rps_A-Alviento": ("ultralytics", 1, YOLO),
}
#: Roles that say a run was understood at all (something to diagnose).
USEFUL = {"train_loss", "val_loss", "reward", "val_acc", "train_acc"}


def _names_empty_file(error: str) -> bool:
    """Some real logs contain 0-byte files (a run killed at start): one line each is right for those."""
    path = Path(error.split(": ", 1)[0])
    return path.is_file() and path.stat().st_size == 0


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_real_log_is_read_with_roles(folder):
    runs, errors = load_runs(REAL / folder)
    fmt, count, roles = EXPECTED.get(folder, (None, None, {}))
    if folder not in EXPECTED and not HAS_TENSORBOARD_READER:
        pytest.skip("TensorBoard reader not built yet")
    if count == 0:
        assert runs == [] and len(errors) == 1 and "runs-table" in errors[0]
        return
    assert all(_names_empty_file(e) for e in errors), errors
    assert runs and (count is None or len(runs) == count)
    for run in runs:
        assert fmt is None or run.format == fmt
        assert not run.warnings, run.warnings
        view = RunView(run)
        assert USEFUL & set(view.roles), (run.name, run.metrics)
        for role, metric in roles.items():
            assert view.roles.get(role) == metric, (run.name, role, view.roles)


def test_specific_real_log_details():
    (space,), _ = load_runs(REAL / "wandb_spaceinvaders_mfts")
    assert space.config["learning_rate"] == 0.003 and space.config["batch_size"] == 32
    assert "gameplays.size" not in space.metrics  # video records are media, not curves
    (yolo,), _ = load_runs(REAL / "yolov8_rps_A-Alviento")
    assert yolo.config["epochs"] == 100 and yolo.config["optimizer"] == "SGD"
    assert RunView(yolo).all_roles["lr"] == ["lr/pg0", "lr/pg1", "lr/pg2"]
    (hf,), _ = load_runs(REAL / "hf_trainer_state_viz_aigoncharov")
    assert len(RunView(hf).all_roles["val_loss"]) == 6  # one eval loss per eval set
    (whisper,), _ = load_runs(REAL / "hf_whisper_large_v2_japanese_P4P4N1CK")
    assert "train_loss" not in whisper.metrics  # the end-of-training mean is a summary, not a curve
    (mlflow,), _ = load_runs(REAL / "mlflow_imageclass_1010sb")
    assert mlflow.name.endswith("mysterious-goose-781") and mlflow.config == {"epochs": 10, "optimizer": "adam"}


def test_whole_tree_at_once_has_unique_run_names():
    runs, errors = load_runs(REAL)
    errors = [e for e in errors if not _names_empty_file(e)]
    assert len(errors) == 1 and "runs-table" in errors[0]
    names = [r.name for r in runs]
    assert len(names) == len(set(names))
    mine = [r for r in runs if r.format != "tensorboard"]
    assert len(mine) == sum(c for _, c, _ in EXPECTED.values())
