"""Regenerate sample_runs/: small real trainings on CPU, some with real bugs, in many log formats.

    python scripts/make_sample_runs.py                 # all runs + sample_runs/labels.json
    python scripts/make_sample_runs.py --only 'tb_*'   # a subset (labels of the others kept)
    python scripts/make_sample_runs.py --plots /tmp/p  # also draw each run's curves to PNGs

Each run trains a model from scripts/samples/models.py with the loop in
scripts/samples/train.py (seeded, one CPU thread) and is written by
scripts/samples/writers.py in the layout of one logging library. The label of
every run (expected finding codes, healthy or not, how the fault was injected,
what the curve shows) comes from scripts/samples/recipes.py.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import math
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from samples import writers  # noqa: E402
from samples.recipes import RECIPES, Recipe  # noqa: E402
from samples.train import Log, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: Format name in labels.json per recipe format.
LABEL_FORMAT = {"tensorboard": "tensorboard", "tensorboard-new": "tensorboard", "keras": "tensorboard",
                "wandb": "wandb", "lightning": "lightning", "hf": "hf_trainer", "mlflow": "mlflow",
                "csv": "csv", "keras-csv": "csv"}


#: Roughly how many rows a format keeps per run unless a recipe says otherwise (keeps the tree small).
ROWS = {"tensorboard": 700, "tensorboard-new": 700, "wandb": 300, "mlflow": 700, "csv": 1500}


def write(recipe: Recipe, log: Log, out: Path) -> None:
    fmt, names, kw = recipe.format, recipe.names(), dict(recipe.writer)
    if fmt in ROWS and "every" not in kw:
        kw["every"] = max(1, round(len(log.train) / ROWS[fmt]))
    if fmt == "tensorboard":
        writers.tensorboard(log, out, names, **kw)
    elif fmt == "tensorboard-new":
        writers.tensorboard(log, out, names, new_style=True, **kw)
    elif fmt == "keras":
        writers.keras(log, out, **kw)
    elif fmt == "wandb":
        writers.wandb_offline(log, out, names, **kw)
    elif fmt == "lightning":
        writers.lightning_csv(log, out, names, **kw)
    elif fmt == "hf":
        writers.hf_trainer(log, out, **kw)
    elif fmt == "mlflow":
        writers.mlflow_store(log, out, names, **kw)
    elif fmt == "csv":
        writers.plain_csv(log, out, names, **kw)
    elif fmt == "keras-csv":
        writers.keras_history_csv(log, out, **kw)
    else:
        raise ValueError(f"{recipe.run_id}: unknown format {fmt}")


def label(recipe: Recipe) -> dict:
    return {"codes": list(recipe.codes), "healthy": recipe.healthy, "format": LABEL_FORMAT[recipe.format],
            "fault": recipe.fault, "notes": recipe.notes}


def summary(log: Log) -> str:
    """Numbers to check a label against: loss at fractions of the run, NaNs, LR and scale ends."""
    loss = np.array([r["train_loss"] for r in log.train])
    n = len(loss)
    at = [np.nanmedian(loss[int(f * (n - 1)): int(f * (n - 1)) + max(1, n // 25)]) for f in (0, .1, .25, .5, .75, .96)]
    val = [r["val_loss"] for r in log.evals]
    text = (f"steps={n} loss@0/10/25/50/75/100%={np.round(at, 4).tolist()} nonfinite={int(np.sum(~np.isfinite(loss)))} "
            f"val min={np.nanmin(val) if np.isfinite(val).any() else float('nan'):.4g} "
            f"last={val[-1]:.4g} lr first/last={log.train[0]['lr']:.3g}/{log.train[-1]['lr']:.3g} "
            f"grad_norm median={np.nanmedian([r['grad_norm'] for r in log.train]):.3g}")
    if "loss_scale" in log.train[-1]:
        text += f" scale min/last={min(r['loss_scale'] for r in log.train):.3g}/{log.train[-1]['loss_scale']:.3g}"
    return text


def plot(recipe: Recipe, log: Log, folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in ("lr", "grad_norm", "loss_scale") if k in log.train[0]]
    fig, axes = plt.subplots(1, 1 + len(keys), figsize=(4.5 * (1 + len(keys)), 3.2))
    steps = [r["step"] for r in log.train]
    ax = axes[0]
    ax.plot(steps, [r["train_loss"] for r in log.train], lw=0.6, label="train")
    ax.plot([r["step"] for r in log.evals], [r["val_loss"] for r in log.evals], "o-", ms=2, label="val")
    ax.set_title(f"{recipe.run_id}\n{recipe.codes or 'healthy'}", fontsize=8)
    ax.legend(fontsize=7)
    finite = [v for r in log.train if math.isfinite(v := r["train_loss"])]
    if finite and max(finite) / max(min(finite), 1e-12) > 50:
        ax.set_yscale("log")
    for ax, key in zip(axes[1:], keys):
        ax.plot(steps, [r[key] for r in log.train], lw=0.6)
        ax.set_title(key, fontsize=8)
        if key != "lr" or max(r["lr"] for r in log.train) > 0:
            ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(folder / f"{recipe.run_id}.png", dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "sample_runs")
    parser.add_argument("--only", action="append", help="glob(s) of run ids to (re)generate")
    parser.add_argument("--plots", type=Path, help="write one PNG per run here")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    ids = [r.run_id for r in RECIPES]
    if len(set(ids)) != len(ids):
        parser.error("duplicate run ids in recipes")
    chosen = [r for r in RECIPES if not args.only or any(fnmatch.fnmatch(r.run_id, p) for p in args.only)]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.plots:
        args.plots.mkdir(parents=True, exist_ok=True)
    labels_path = args.out / "labels.json"
    labels = json.loads(labels_path.read_text()) if labels_path.exists() and args.only else {}
    if not args.only:  # a full rebuild also drops runs whose recipe was removed
        for stale in sorted(p for p in args.out.iterdir() if p.is_dir() and p.name not in ids):
            shutil.rmtree(stale)
    started = time.time()
    for recipe in chosen:
        t0 = time.time()
        log = train(recipe.spec)
        out = args.out / recipe.run_id
        if out.exists():
            shutil.rmtree(out)
        write(recipe, log, out)
        labels[recipe.run_id] = label(recipe)
        if args.plots:
            plot(recipe, log, args.plots)
        print(f"{recipe.run_id:40s} {time.time() - t0:5.1f}s {summary(log)}", flush=True)
    known = set(ids)
    labels = {k: labels[k] for k in ids if k in labels and k in known}
    labels_path.write_text(json.dumps(labels, indent=2) + "\n")
    print(f"{len(chosen)} runs in {time.time() - started:.0f}s; {len(labels)} labelled in {labels_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
