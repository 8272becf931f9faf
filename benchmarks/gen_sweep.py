"""Generate a real hyperparameter sweep with a known failing region.

Every run is an actual training: a small tanh MLP regressing the digit value
from the 8x8 images of scikit-learn's `digits` set (pixels scaled to [0, 1]),
MSE loss, plain SGD. Plain SGD on a squared loss is stable only below a
learning rate set by the loss surface's sharpest curvature, and heavy-ball
momentum lowers that bound in practice on this problem, so the failing region
is known from the physics rather than scripted: lr = 0.2 diverges to NaN with
or without momentum, lr = 0.07 diverges with momentum 0.9 (nearly always) and
rarely without, everything below trains. Nothing is injected: whatever each
training does is what is logged.

Grid (default, 216 runs): lr {0.001, 0.003, 0.01, 0.03, 0.07, 0.2} x
momentum {0, 0.9} x batch_size {16, 128} x 9 seeds. Runs rotate through three
real writers, each carrying the hyperparameters where its format keeps them:

* TensorBoard (torch `SummaryWriter`, hparams plugin summary in the same file);
* Lightning-style `metrics.csv` (train rows every step, validation rows every
  `eval_every` steps) with `hparams.yaml` beside it;
* Hugging Face-style `trainer_state.json` (`log_history`, `trial_params`).

Usage: python benchmarks/gen_sweep.py OUT [--seeds 9] [--steps 300]
"""
from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
from pathlib import Path

LRS = (0.001, 0.003, 0.01, 0.03, 0.07, 0.2)
MOMENTA = (0.0, 0.9)
BATCH_SIZES = (16, 128)
WRITERS = ("tensorboard", "lightning", "hf")


def _data():
    import torch
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X, dtype=torch.float32) / 16.0
    y = torch.tensor(y, dtype=torch.float32)[:, None]
    return X[:1400], y[:1400], X[1400:], y[1400:]


def train(data, lr: float, momentum: float, batch_size: int, seed: int, steps: int, eval_every: int) -> dict:
    """One SGD training; returns per-step train loss, lr, grad norm and periodic val loss."""
    import torch

    Xtr, ytr, Xva, yva = data
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    out = {"train_loss": [], "lr": [], "grad_norm": [], "val": []}
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(Xtr), (batch_size,), generator=gen)
        loss = torch.nn.functional.mse_loss(model(Xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        out["train_loss"].append(loss.item())
        out["lr"].append(opt.param_groups[0]["lr"])
        out["grad_norm"].append(float(norm))
        if step % eval_every == 0 or step == steps:
            with torch.no_grad():
                out["val"].append((step, torch.nn.functional.mse_loss(model(Xva), yva).item()))
    return out


def write_tensorboard(folder: Path, params: dict, curves: dict) -> None:
    from torch.utils.tensorboard import SummaryWriter
    from torch.utils.tensorboard.summary import hparams

    with SummaryWriter(str(folder)) as writer:
        exp, ssi, sei = hparams(params, {"val/loss": float("nan")})
        for summary in (exp, ssi, sei):
            writer.file_writer.add_summary(summary)
        for i, (loss, lr, norm) in enumerate(zip(curves["train_loss"], curves["lr"], curves["grad_norm"]), start=1):
            writer.add_scalar("train/loss", loss, i)
            writer.add_scalar("train/lr", lr, i)
            writer.add_scalar("train/grad_norm", norm, i)
        for step, val in curves["val"]:
            writer.add_scalar("val/loss", val, step)


def write_lightning(folder: Path, params: dict, curves: dict, steps_per_epoch: int) -> None:
    """Lightning CSVLogger layout: version folder with metrics.csv and hparams.yaml."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hparams.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    fields = ["epoch", "step", "train_loss", "lr-SGD", "grad_norm", "val_loss"]
    vals = dict(curves["val"])
    with open(folder / "metrics.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, fieldnames=fields)
        out.writeheader()
        for i, (loss, lr, norm) in enumerate(zip(curves["train_loss"], curves["lr"], curves["grad_norm"]), start=1):
            epoch = (i - 1) // steps_per_epoch
            out.writerow({"epoch": epoch, "step": i - 1, "train_loss": loss, "lr-SGD": lr, "grad_norm": norm})
            if i in vals:
                out.writerow({"epoch": epoch, "step": i - 1, "val_loss": vals[i]})


def write_hf(folder: Path, params: dict, curves: dict, steps_per_epoch: int, eval_every: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    history = []
    vals = dict(curves["val"])
    for i, (loss, lr, norm) in enumerate(zip(curves["train_loss"], curves["lr"], curves["grad_norm"]), start=1):
        epoch = round(i / steps_per_epoch, 4)
        history.append({"epoch": epoch, "grad_norm": norm, "learning_rate": lr, "loss": loss, "step": i})
        if i in vals:
            history.append({"epoch": epoch, "eval_loss": vals[i], "step": i})
    steps = len(curves["train_loss"])
    state = {
        "best_metric": None,
        "epoch": steps / steps_per_epoch,
        "eval_steps": eval_every,
        "global_step": steps,
        "log_history": history,
        "logging_steps": 1,
        "max_steps": steps,
        "num_train_epochs": math.ceil(steps / steps_per_epoch),
        "train_batch_size": params["batch_size"],
        "trial_params": params,
    }
    (folder / "trainer_state.json").write_text(json.dumps(state, indent=2), encoding="utf-8")


def generate(out: Path, seeds: int = 9, steps: int = 300, eval_every: int = 25, lrs=LRS, momenta=MOMENTA,
             batch_sizes=BATCH_SIZES) -> list[dict]:
    """Train and write every run of the grid; returns one record per run (params, writer, diverged)."""
    import torch

    torch.set_num_threads(1)
    data = _data()
    out = Path(out)
    records = []
    grid = itertools.product(lrs, momenta, batch_sizes, range(seeds))
    for i, (lr, momentum, batch_size, seed) in enumerate(grid):
        params = {"lr": lr, "momentum": momentum, "batch_size": batch_size, "seed": seed}
        curves = train(data, lr, momentum, batch_size, seed, steps, eval_every)
        writer = WRITERS[i % len(WRITERS)]
        name = f"lr{lr:g}_m{momentum:g}_bs{batch_size}_s{seed}"
        steps_per_epoch = max(1, len(data[0]) // batch_size)
        if writer == "tensorboard":
            write_tensorboard(out / name, params, curves)
        elif writer == "lightning":
            write_lightning(out / name / "version_0", params, curves, steps_per_epoch)
        else:
            write_hf(out / name, params, curves, steps_per_epoch, eval_every)
        diverged = not all(math.isfinite(v) for v in curves["train_loss"])
        records.append({"run": name, "writer": writer, "diverged": diverged, **params})
    (out / "SWEEP.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seeds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    records = generate(args.out, seeds=args.seeds, steps=args.steps)
    diverged = sum(r["diverged"] for r in records)
    print(f"{len(records)} runs written to {args.out}; {diverged} diverged")
    for lr in LRS:
        for m in MOMENTA:
            cell = [r for r in records if r["lr"] == lr and r["momentum"] == m]
            print(f"  lr={lr:g} momentum={m:g}: {sum(r['diverged'] for r in cell)}/{len(cell)} diverged")


if __name__ == "__main__":
    main()
