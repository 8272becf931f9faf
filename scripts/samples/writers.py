"""Write a training Log in the layout each logging library produces.

Real libraries where they are installed (torch's SummaryWriter, wandb offline);
where they are not (Lightning, HF Trainer, MLflow) the files are written the way
those libraries write them: same paths, columns, rounding and metadata.

`names` maps the loop's canonical keys (train_loss, val_loss, val_acc, train_acc,
lr, grad_norm, loss_scale, epoch) to the metric names this run uses; keys absent
from `names` are not logged. `every` thins the per-step rows as a script logging
every N steps would.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from .train import Log

TRAIN_KEYS = ("train_loss", "train_acc", "lr", "grad_norm", "loss_scale", "epoch")
EVAL_KEYS = ("val_loss", "val_acc")


def _rows(log: Log, every: int) -> list[dict]:
    return [r for r in log.train if (r["step"] + 1) % every == 0 or r is log.train[-1]]


def _train_items(row: dict, names: dict[str, str]):
    for key in TRAIN_KEYS:
        if key in names and key in row:
            yield names[key], float(row[key])


def _eval_items(row: dict, names: dict[str, str]):
    for key in EVAL_KEYS:
        if key in names:
            yield names[key], float(row[key])


# --- TensorBoard (torch.utils.tensorboard) -------------------------------------------------

def _tb_hparams(writer, hparams: dict) -> None:
    """Hyperparameters into the run's own event file, as Lightning's TensorBoardLogger does."""
    from torch.utils.tensorboard.summary import hparams as hp_summary

    clean = {k: v for k, v in hparams.items() if isinstance(v, (int, float, str, bool))}
    exp, ssi, sei = hp_summary(clean, {})
    for summary in (exp, ssi, sei):
        writer.file_writer.add_summary(summary)


def tensorboard(log: Log, out: Path, names: dict, every: int = 1, new_style: bool = False) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(out), flush_secs=3600)
    _tb_hparams(writer, log.spec.hparams())
    for row in _rows(log, every):
        for name, value in _train_items(row, names):
            writer.add_scalar(name, value, row["step"], walltime=row["time"], new_style=new_style)
    for row in log.evals:
        for name, value in _eval_items(row, names):
            writer.add_scalar(name, value, row["step"], walltime=row["time"], new_style=new_style)
    writer.close()


def keras(log: Log, out: Path, batch_every: int = 0) -> None:
    """Keras' TensorBoard callback: train/ and validation/ event files, per-epoch tags.

    Needs one evaluation per epoch (eval_every = steps per epoch). With
    `batch_every`, also `batch_loss` every N batches (update_freq=N).
    """
    from torch.utils.tensorboard import SummaryWriter

    train_w = SummaryWriter(log_dir=str(out / "train"), flush_secs=3600)
    val_w = SummaryWriter(log_dir=str(out / "validation"), flush_secs=3600)
    by_epoch: dict[int, list[dict]] = {}
    for row in log.train:
        by_epoch.setdefault(row["epoch"], []).append(row)
        if batch_every and (row["step"] + 1) % batch_every == 0:
            train_w.add_scalar("batch_loss", row["train_loss"], row["step"], walltime=row["time"], new_style=True)
    evals = {r["epoch"]: r for r in log.evals}
    for epoch, rows in sorted(by_epoch.items()):
        if epoch not in evals or len(rows) < log.steps_per_epoch and rows[-1] is not log.train[-1]:
            continue
        t = rows[-1]["time"]
        train_w.add_scalar("epoch_loss", float(np.mean([r["train_loss"] for r in rows])), epoch, walltime=t, new_style=True)
        train_w.add_scalar("epoch_accuracy", float(np.mean([r["train_acc"] for r in rows])), epoch, walltime=t, new_style=True)
        train_w.add_scalar("epoch_learning_rate", rows[-1]["lr"], epoch, walltime=t, new_style=True)
        val_w.add_scalar("epoch_loss", evals[epoch]["val_loss"], epoch, walltime=t, new_style=True)
        val_w.add_scalar("epoch_accuracy", evals[epoch]["val_acc"], epoch, walltime=t, new_style=True)
    train_w.close()
    val_w.close()


# --- Weights & Biases, offline ------------------------------------------------------------

def wandb_offline(log: Log, out: Path, names: dict, every: int = 1, project: str = "logdoctor-samples") -> None:
    """A real offline wandb run; keeps only run-*.wandb, config.yaml and wandb-summary.json."""
    import wandb

    out.mkdir(parents=True, exist_ok=True)
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    settings = wandb.Settings(console="off", x_disable_stats=True, save_code=False, disable_git=True,
                              disable_code=True, silent=True)
    run = wandb.init(dir=str(out), project=project, name=out.name, config=log.spec.hparams(),
                     settings=settings, mode="offline")
    evals = {r["step"]: r for r in log.evals}
    rows = {r["step"]: r for r in _rows(log, every)}
    for step in sorted(set(rows) | set(evals)):
        payload = dict(_train_items(rows[step], names)) if step in rows else {}
        if step in evals:
            payload.update(_eval_items(evals[step], names))
        run.log(payload, step=step)
    run.finish()
    _trim_wandb(out / "wandb")


def _trim_wandb(root: Path) -> None:
    for item in list(root.iterdir()):
        if not item.is_dir() or item.is_symlink():
            item.unlink()
            continue
        for sub in list(item.iterdir()):
            if sub.name.startswith("run-") and sub.suffix == ".wandb":
                continue
            if sub.name == "files":
                for f in list(sub.iterdir()):
                    if f.name not in ("config.yaml", "wandb-summary.json"):
                        shutil.rmtree(f) if f.is_dir() else f.unlink()
                continue
            shutil.rmtree(sub) if sub.is_dir() else sub.unlink()


# --- Lightning CSVLogger ------------------------------------------------------------------

def lightning_csv(log: Log, out: Path, names: dict, every: int = 50, lr_name: str = "lr-Adam") -> None:
    """`lightning_logs/version_0/{metrics.csv,hparams.yaml}` as CSVLogger writes them.

    Rows are separate log calls (train step rows every `every` batches with the
    step-level loss and epoch; LearningRateMonitor rows; validation rows; the
    epoch-level training mean at each epoch end); the header is the sorted union
    of keys, missing cells empty; `step` is the global step at logging time.
    """
    import yaml

    folder = out / "lightning_logs" / "version_0"
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    evals = {r["step"]: r for r in log.evals}
    epoch_losses: list[float] = []
    loss_name = names["train_loss"]
    for row in log.train:
        step, epoch = row["step"], row["epoch"]
        epoch_losses.append(row["train_loss"])
        if (step + 1) % every == 0:
            rec = {k: v for k, v in _train_items(row, names) if k != names.get("lr")}
            rec.update({"epoch": epoch, "step": step})
            rows.append(rec)
            if "lr" in names:
                rows.append({lr_name: row["lr"], "step": step})
        if step in evals:
            rec = dict(_eval_items(evals[step], names))
            rec.update({"epoch": epoch, "step": step})
            rows.append(rec)
        if (step + 1) % log.steps_per_epoch == 0 or row is log.train[-1]:
            base = loss_name[: -len("_step")] if loss_name.endswith("_step") else loss_name
            rows.append({f"{base}_epoch": float(np.mean(epoch_losses)), "epoch": epoch, "step": step})
            epoch_losses = []
    keys = sorted(set().union(*rows))
    with open(folder / "metrics.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    with open(folder / "hparams.yaml", "w") as fh:
        yaml.dump(log.spec.hparams(), fh)


# --- Hugging Face Trainer -----------------------------------------------------------------

def hf_trainer(log: Log, out: Path, logging_steps: int = 10, model_config: dict | None = None) -> None:
    """`trainer_state.json` as Trainer.save_state() writes it.

    Loss is the mean over the logging window rounded to 4 decimals (Trainer's
    `round(tr_loss / steps, 4)`), learning_rate the LR of the window's last step,
    grad_norm the last step's pre-clip norm; eval entries carry eval_loss.
    """
    history: list[dict] = []
    window: list[float] = []
    evals = {r["step"]: r for r in log.evals}
    spec = log.spec
    for row in log.train:
        window.append(row["train_loss"])
        gs = row["step"] + 1  # HF's global_step counts completed steps
        if gs % logging_steps == 0:
            history.append({"epoch": row["epoch_float"], "grad_norm": row["grad_norm"],
                            "learning_rate": row["lr"], "loss": round(float(np.mean(window)), 4), "step": gs})
            window = []
        if row["step"] in evals:
            ev = evals[row["step"]]
            history.append({"epoch": ev["epoch_float"], "eval_accuracy": ev["val_acc"], "eval_loss": ev["val_loss"],
                            "eval_runtime": 0.05, "eval_samples_per_second": 9000.0,
                            "eval_steps_per_second": 140.0, "step": gs})
    final = log.train[-1]
    total = final["step"] + 1
    runtime = final["time"] - log.started
    history.append({"epoch": final["epoch_float"], "step": total, "total_flos": 0.0,
                    "train_loss": float(np.nanmean([r["train_loss"] for r in log.train])) if any(
                        math.isfinite(r["train_loss"]) for r in log.train) else float("nan"),
                    "train_runtime": round(runtime, 4),
                    "train_samples_per_second": round(total * spec.batch / max(runtime, 1e-9), 3),
                    "train_steps_per_second": round(total / max(runtime, 1e-9), 3)})
    state = {
        "best_global_step": None, "best_metric": None, "best_model_checkpoint": None,
        "epoch": final["epoch_float"], "eval_steps": spec.eval_every, "global_step": total,
        "is_hyper_param_search": False, "is_local_process_zero": True, "is_world_process_zero": True,
        "log_history": history, "logging_steps": logging_steps, "max_steps": spec.steps,
        "num_input_tokens_seen": 0, "num_train_epochs": math.ceil(spec.steps / log.steps_per_epoch),
        "save_steps": 500,
        "stateful_callbacks": {"TrainerControl": {"args": {
            "should_epoch_stop": False, "should_evaluate": False, "should_log": False,
            "should_save": True, "should_training_stop": True}, "attributes": {}}},
        "total_flos": 0.0, "train_batch_size": spec.batch, "trial_name": None, "trial_params": None,
    }
    out.mkdir(parents=True, exist_ok=True)
    # json.dumps like Trainer: indent 2, sort_keys, NaN/Infinity written as Python does
    (out / "trainer_state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    if model_config:
        (out / "config.json").write_text(json.dumps(model_config, indent=2, sort_keys=True) + "\n")


# --- MLflow file store --------------------------------------------------------------------

def mlflow_store(log: Log, out: Path, names: dict, every: int = 1, experiment: str = "digits") -> None:
    """`mlruns/<exp>/<run>/{meta.yaml,metrics/,params/,tags/}` as mlflow's FileStore writes it."""
    import yaml

    exp_id = str(int(hashlib.md5(experiment.encode()).hexdigest(), 16) % 10**18)  # FileStore: 18-digit ids
    run_id = uuid.uuid5(uuid.NAMESPACE_URL, f"logdoctor-sample/{out.name}").hex
    root = out / "mlruns"
    exp_dir = root / exp_id
    run_dir = exp_dir / run_id
    start_ms = int(log.started * 1000)
    end_ms = int(log.train[-1]["time"] * 1000)
    (root / "0").mkdir(parents=True, exist_ok=True)
    _yaml(root / "0" / "meta.yaml", {
        "artifact_location": "mlflow-artifacts:/0", "creation_time": start_ms, "experiment_id": "0",
        "last_update_time": start_ms, "lifecycle_stage": "active", "name": "Default"}, yaml)
    run_dir.mkdir(parents=True, exist_ok=True)
    _yaml(exp_dir / "meta.yaml", {
        "artifact_location": f"mlflow-artifacts:/{exp_id}", "creation_time": start_ms, "experiment_id": exp_id,
        "last_update_time": start_ms, "lifecycle_stage": "active", "name": experiment}, yaml)
    _yaml(run_dir / "meta.yaml", {
        "artifact_uri": f"mlflow-artifacts:/{exp_id}/{run_id}/artifacts", "end_time": end_ms,
        "entry_point_name": "", "experiment_id": exp_id, "lifecycle_stage": "active", "run_id": run_id,
        "run_name": out.name, "run_uuid": run_id, "source_name": "", "source_type": 4, "source_version": "",
        "start_time": start_ms, "status": 3, "tags": [], "user_id": "trainer"}, yaml)
    series: dict[str, list[str]] = {}
    for row in _rows(log, every):
        for name, value in _train_items(row, names):
            series.setdefault(name, []).append(f"{int(row['time'] * 1000)} {_num(value)} {row['step']}")
    for row in log.evals:
        for name, value in _eval_items(row, names):
            series.setdefault(name, []).append(f"{int(row['time'] * 1000)} {_num(value)} {row['step']}")
    for name, lines in series.items():
        path = run_dir / "metrics" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    (run_dir / "params").mkdir(exist_ok=True)
    for key, value in log.spec.hparams().items():
        (run_dir / "params" / key).write_text(str(value))
    (run_dir / "tags").mkdir(exist_ok=True)
    (run_dir / "tags" / "mlflow.runName").write_text(out.name)
    (run_dir / "tags" / "mlflow.source.type").write_text("LOCAL")
    (run_dir / "artifacts").mkdir(exist_ok=True)


def _num(value: float) -> str:
    return repr(float(value))


def _yaml(path: Path, content: dict, yaml) -> None:
    with open(path, "w") as fh:
        yaml.safe_dump(content, fh, default_flow_style=False)


# --- plain CSV ----------------------------------------------------------------------------

def plain_csv(log: Log, out: Path, names: dict, every: int = 1, filename: str = "log.csv") -> None:
    """A hand-rolled per-step CSV: step, epoch, metrics...; validation cells empty between evals."""
    out.mkdir(parents=True, exist_ok=True)
    evals = {r["step"]: r for r in log.evals}
    columns = ["step"] + [names[k] for k in TRAIN_KEYS + EVAL_KEYS if k in names]
    with open(out / filename, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in log.train:
            if not ((row["step"] + 1) % every == 0 or row["step"] in evals or row is log.train[-1]):
                continue
            rec = {"step": row["step"], **{k: _fmt(v) for k, v in _train_items(row, names)}}
            if row["step"] in evals:
                rec.update({k: _fmt(v) for k, v in _eval_items(evals[row["step"]], names)})
            writer.writerow(rec)
    (out / "config.json").write_text(json.dumps(log.spec.hparams(), indent=2) + "\n")


def keras_history_csv(log: Log, out: Path, filename: str = "history.csv") -> None:
    """Keras' CSVLogger: one row per epoch, `epoch` first then sorted metric names."""
    out.mkdir(parents=True, exist_ok=True)
    evals = {r["epoch"]: r for r in log.evals}
    by_epoch: dict[int, list[dict]] = {}
    for row in log.train:
        by_epoch.setdefault(row["epoch"], []).append(row)
    with open(out / filename, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["epoch", "accuracy", "learning_rate", "loss", "val_accuracy", "val_loss"])
        for epoch, rows in sorted(by_epoch.items()):
            if epoch not in evals:
                continue
            writer.writerow([epoch, float(np.mean([r["train_acc"] for r in rows])), rows[-1]["lr"],
                             float(np.mean([r["train_loss"] for r in rows])), evals[epoch]["val_acc"],
                             evals[epoch]["val_loss"]])


def _fmt(value: float) -> str:
    return repr(float(value))
