"""`logdoctor inspect` on a mixed folder: every run, its format, metrics, step ranges and roles."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor.cli import app

WIDE = {"COLUMNS": "220", "NO_COLOR": "1"}


def _invoke(*args: str):
    return CliRunner().invoke(app, ["inspect", *args], env=WIDE)


@pytest.fixture
def mixed(tmp_path) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    (root / "plain.csv").write_text("step,loss,objective\n0,2.0,5\n10,1.5,4\n10,1.4,3\n5,1.8,4.5\n")
    version = root / "lightning_logs" / "version_0"
    version.mkdir(parents=True)
    (version / "metrics.csv").write_text("epoch,step,train_loss_step,val_loss\n0,9,1.0,\n0,9,,1.2\n1,19,0.8,\n1,19,,1.1\n")
    (version / "hparams.yaml").write_text("lr: 0.01\nbatch_size: 32\n")
    hf = root / "hf_out"
    hf.mkdir()
    (hf / "trainer_state.json").write_text(json.dumps({"global_step": 20, "log_history": [
        {"loss": 2.0, "learning_rate": 1e-4, "grad_norm": 3.0, "epoch": 0.5, "step": 10},
        {"loss": 1.8, "learning_rate": 5e-5, "grad_norm": 2.0, "epoch": 1.0, "step": 20},
        {"eval_loss": 1.9, "epoch": 1.0, "step": 20},
    ]}))
    wb = root / "wandb" / "run-20200101_000000-abc"
    wb.mkdir(parents=True)
    (wb / "wandb-history.jsonl").write_text('{"_step": 0, "episode_reward": 1.0}\n{"_step": 1, "episode_reward": 3.0}\n')
    (wb / "config.yaml").write_text("gamma:\n  desc: null\n  value: 0.99\n")
    (root / "export.csv").write_text('"Step","a - train/loss","a - train/loss__MIN","b - train/loss"\n0,1,1,2\n1,0.5,0.5,\n')
    exp = root / "mlruns" / "0"
    (exp / "r1" / "metrics").mkdir(parents=True)
    (exp / "meta.yaml").write_text("name: Default\n")
    (exp / "r1" / "meta.yaml").write_text("run_name: calm-owl\nlifecycle_stage: active\n")
    (exp / "r1" / "metrics" / "val_accuracy").write_text("1700000000000 0.5 0\n1700000001000 0.6 1\n")
    (root / "empty.csv").write_bytes(b"")
    (root / "notes.csv").write_text("author,comment\nme,hello\n")  # not a log: ignored quietly
    return root


def test_inspect_lists_every_run_with_format_metrics_steps_and_roles(mixed):
    result = _invoke(str(mixed))
    assert result.exit_code == 0, result.output
    out = result.output
    expected_runs = {
        "plain": "csv",  # a log file with a name of its own is named by its stem
        "lightning_logs/version_0": "lightning",
        "hf_out": "hf_trainer",
        "wandb/run-20200101_000000-abc": "wandb",
        "a": "wandb_csv",  # runs are named as analyze names them: writer boilerplate dropped
        "b": "wandb_csv",
        "calm-owl": "mlflow",
    }
    for name, fmt in expected_runs.items():
        assert re.search(rf"^{re.escape(name)}\s+\[{fmt}\]", out, re.M), (name, out)
    rows = {
        "loss": r"train_loss\s+4\s+0–10\s+1 duplicate steps \(last value kept\); 1 backward step jumps \(sorted\)",
        "train_loss_step": r"train_loss\s+2\s+9–19",
        "val_loss": r"val_loss\s+2\s+9–19",
        "learning_rate": r"lr\s+2\s+10–20",
        "grad_norm": r"grad_norm\s+2\s+10–20",
        "eval_loss": r"val_loss\s+1\s+20–20",
        "episode_reward": r"reward\s+2\s+0–1",
        "val_accuracy": r"val_acc\s+2\s+0–1",
    }
    for metric, pattern in rows.items():
        assert re.search(rf"^{re.escape(metric)}\s+{pattern}", out, re.M), (metric, out)
    assert "config: batch_size, lr" in out and "config: gamma" in out
    assert "skipped: " in out and "empty.csv: empty file (0 bytes)" in out
    assert "notes.csv" not in out
    assert "7 runs found (csv 1, hf_trainer 1, lightning 1, mlflow 1, wandb 1, wandb_csv 2), 1 source skipped" in out


def test_inspect_applies_role_overrides_from_config(mixed, tmp_path):
    config = tmp_path / "logdoctor.toml"
    config.write_text('[roles]\ntrain_loss = ["objective"]\n')
    result = _invoke(str(mixed / "plain.csv"), "--config", str(config))
    assert result.exit_code == 0, result.output
    assert re.search(r"^objective\s+train_loss\s+4", result.output, re.M)
    assert re.search(r"^loss\s+4", result.output, re.M)  # no longer given the role


def test_inspect_missing_path_is_one_line_exit_2(tmp_path):
    result = _invoke(str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "no such file or folder" in result.output and "Traceback" not in result.output


def test_control_characters_in_log_strings_never_reach_the_terminal(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "run")) as writer:
        for step in range(20):
            writer.add_scalar("\x1b[31mval_loss\x1b[0m", 1.0 / (step + 1), step)
            writer.add_scalar("loss\x07\nnext", 1.0 / (step + 1), step)
    for command in (["inspect", str(tmp_path)], ["analyze", str(tmp_path)], ["analyze", str(tmp_path), "--format", "md"]):
        result = CliRunner().invoke(app, command, env=WIDE)
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output, command
    result = _invoke(str(tmp_path))
    assert "\\x1b[31mval_loss\\x1b[0m" in result.output and "loss\\x07\\x0anext" in result.output
