"""Small models that train in seconds on one CPU core.

Each has a `body` and a replaceable `head` (fine-tuning faults swap the head),
and `features(x)` exposes the body output (the scaler fault regularises it).
"""
from __future__ import annotations

import torch
from torch import nn

from .data import CONTEXT


class Net(nn.Module):
    def __init__(self, body: nn.Module, head: nn.Module, prep=None):
        super().__init__()
        self.body = body
        self.head = head
        self.prep = prep

    def features(self, x: torch.Tensor) -> torch.Tensor:
        if self.prep is not None:
            x = self.prep(x)
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def mlp(inputs: int, outputs: int, hidden: int = 128, depth: int = 2, act: str = "relu",
        dropout: float = 0.0, init_gain: float | None = None) -> Net:
    """Plain MLP; `init_gain` rescales the default init (tiny gains start on a saddle)."""
    acts = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}
    layers: list[nn.Module] = []
    width = inputs
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), acts[act]()]
        if dropout:
            layers.append(nn.Dropout(dropout))
        width = hidden
    net = Net(nn.Sequential(*layers), nn.Linear(width, outputs))
    if init_gain is not None:
        with torch.no_grad():
            for m in net.modules():
                if isinstance(m, nn.Linear):
                    m.weight.mul_(init_gain)
                    m.bias.zero_()
    return net


class _Image(nn.Module):
    def forward(self, x):
        return x.view(-1, 1, 8, 8)


def cnn(outputs: int = 10, channels: int = 16) -> Net:
    body = nn.Sequential(
        nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * channels * 16, 64), nn.ReLU(),
    )
    return Net(body, nn.Linear(64, outputs), prep=_Image())


def char_mlp(vocab: int, embed: int = 24, hidden: int = 256) -> Net:
    """Next-character model over a fixed window: embedding -> MLP -> vocabulary logits."""
    emb = nn.Embedding(vocab, embed)
    body = nn.Sequential(nn.Flatten(), nn.Linear(embed * CONTEXT, hidden), nn.GELU(),
                         nn.Linear(hidden, hidden), nn.GELU())
    return Net(body, nn.Linear(hidden, vocab), prep=emb)


def build(task: str, classes: int, **kw) -> Net:
    if task == "digits_mlp":
        return mlp(64, classes, **kw)
    if task == "digits_binary":
        return mlp(64, 1, **kw)
    if task == "digits_cnn":
        return cnn(classes, **kw)
    if task == "charlm":
        return char_mlp(classes, **kw)
    raise ValueError(task)
