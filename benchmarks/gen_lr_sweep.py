"""Generate a real 24-run SGD learning-rate sweep written by Lightning's CSVLogger.

The sweep of issue 24, re-created: a small ReLU MLP classifies scikit-learn's
`digits` (8x8 images, ten classes, pixels standardised on the training split) with cross-entropy and
plain SGD, trained by `lightning.Trainer` and logged by its `CSVLogger`, so each
run is the `version_N/metrics.csv` + `hparams.yaml` pair a Lightning user has.
Nothing is scripted: at lr 3 and above SGD overshoots, and whatever each
training does (a NaN loss, a network stuck at chance, a run that recovers) is
what is logged.

Grid: lr {0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30} x seeds {0, 1, 2} (24 runs); the
batch size takes each of 32 / 64 / 128 once per learning rate, rotating with
the seed, so it is neither confounded with lr nor with the seed.

    python benchmarks/gen_lr_sweep.py OUT [--epochs 12]
"""
from __future__ import annotations

import argparse
import logging
import warnings
from pathlib import Path

LRS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
SEEDS = (0, 1, 2)
BATCH_SIZES = (32, 64, 128)


def _data():
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    # a pixel that is blank in every training image keeps unit scale (dividing by its ~0 spread would blow
    # the few validation images that touch it up to 1e6)
    mean, std = x_train.mean(axis=0), x_train.std(axis=0).clip(min=1.0)
    as_tensors = lambda a, b: (torch.tensor((a - mean) / std, dtype=torch.float32), torch.tensor(b))  # noqa: E731
    return as_tensors(x_train, y_train), as_tensors(x_val, y_val)


def _module(lr: float, batch_size: int, seed: int):
    import lightning as L
    import torch
    from torch import nn

    class DigitsMLP(L.LightningModule):
        def __init__(self, lr: float, batch_size: int, seed: int, hidden: int = 64):
            super().__init__()
            self.save_hyperparameters()  # -> hparams.yaml
            self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 10))

        def training_step(self, batch, _):
            x, y = batch
            loss = nn.functional.cross_entropy(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, _):
            x, y = batch
            logits = self.net(x)
            self.log("val_loss", nn.functional.cross_entropy(logits, y))
            self.log("val_acc", (logits.argmax(1) == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return DigitsMLP(lr, batch_size, seed)


def train(out: Path, lr: float, batch_size: int, seed: int, epochs: int, data) -> None:
    import lightning as L
    import torch
    from lightning.pytorch.loggers import CSVLogger
    from torch.utils.data import DataLoader, TensorDataset

    L.seed_everything(seed, verbose=False)
    train_set, val_set = (TensorDataset(*d) for d in data)
    model = _module(lr, batch_size, seed)
    logger = CSVLogger(str(out), name=f"lr{lr:g}_bs{batch_size}_s{seed}", version=0)
    trainer = L.Trainer(max_epochs=epochs, logger=logger, log_every_n_steps=5, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1)
    trainer.fit(model, DataLoader(train_set, batch_size=batch_size, shuffle=True,
                                  generator=torch.Generator().manual_seed(seed)),
                DataLoader(val_set, batch_size=256))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--epochs", type=int, default=12)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    data = _data()
    for i, lr in enumerate(LRS):
        for seed in SEEDS:
            batch_size = BATCH_SIZES[(i + seed) % len(BATCH_SIZES)]
            train(args.out, lr, batch_size, seed, args.epochs, data)
            print(f"lr {lr:g}, batch size {batch_size}, seed {seed}: done", flush=True)


if __name__ == "__main__":
    main()
