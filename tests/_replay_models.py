"""Tiny models, batches and checkpoints for the replay tests (each factory is a `--model` target).

Run as a script to write a small real training run with its checkpoint (the
README's replay example):  python tests/_replay_models.py OUT_DIR [LR]
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

FEATURES, CLASSES, EXAMPLES = 16, 10, 32


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    """One intra-op thread for these tiny models: on a shared, busy machine more threads only contend."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A learnable classification batch: labels come from a fixed random linear teacher."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(EXAMPLES, FEATURES, generator=g)
    teacher = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(123))
    return x, (x @ teacher).argmax(dim=1)


def batches():
    """`--data` target: an iterable of batches."""
    return (batch(seed) for seed in range(4))


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, CLASSES)
    )


def mlp_other_head() -> nn.Module:
    """The MLP with a head for another class count: it does not match an `mlp` checkpoint."""
    model = mlp()
    model[5] = nn.Linear(64, CLASSES + 1)
    return model


def mlp_frozen_first() -> nn.Module:
    """The same network with its first layer frozen (a fine-tuning setup)."""
    model = mlp()
    model[0].requires_grad_(False)
    return model


def double_softmax() -> nn.Module:
    """Softmax inside the model, then CrossEntropyLoss: the classic diluted-gradient bug."""
    return nn.Sequential(mlp(), nn.Softmax(dim=1))


def deep_sigmoid() -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(FEATURES, 32), nn.Sigmoid()]
    for _ in range(14):
        layers += [nn.Linear(32, 32), nn.Sigmoid()]
    return nn.Sequential(*layers, nn.Linear(32, CLASSES))


def exploding() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 32), *[nn.Linear(32, 32) for _ in range(8)], nn.Linear(32, CLASSES))
    with torch.no_grad():
        for m in model:
            m.weight.mul_(4.0)
    return model


def dead() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
    with torch.no_grad():
        model[0].bias.fill_(-100.0)
    return model


def big_init() -> nn.Module:
    model = mlp()
    with torch.no_grad():
        model[5].weight.mul_(60.0)
    return model


class Log(nn.Module):
    """log(x) on an input that goes negative: the first NaN appears here."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


def nan_maker() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 32), Log(), nn.Linear(32, CLASSES))


class Detached(nn.Module):
    """A forward that detaches the body: only the head can learn."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU())
        self.head = nn.Linear(32, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).detach())


class Wrapper(nn.Module):
    """A LightningModule-style wrapper holding the network as `self.model`: its names are `model.0.weight`..."""

    def __init__(self):
        super().__init__()
        self.model = mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


def train(model: nn.Module, opt: torch.optim.Optimizer, steps: int, sched=None, data=None) -> None:
    x, y = data or batch()
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        if sched is not None:
            sched.step()


def write_demo(out: Path, lr: float = 1e-6, steps: int = 300) -> None:
    """A real (tiny) run with an LR far too low: log.csv, ckpt.pt and batch.pt in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    data = [batch(seed) for seed in range(8)]
    order = torch.randint(0, len(data), (steps,), generator=torch.Generator().manual_seed(1))
    with open(out / "log.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["step", "loss", "lr"])
        for step in range(steps):
            x, y = data[int(order[step])]
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            writer.writerow([step, loss.item(), lr])
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": steps}, out / "ckpt.pt")
    torch.save(data[0], out / "batch.pt")


if __name__ == "__main__":
    write_demo(Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 1e-6)
