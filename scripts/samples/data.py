"""The two small data sets every sample run trains on, both available offline.

* digits: scikit-learn's bundled 8x8 handwritten digits (1797 images, 10 classes),
  standardised with the training split's statistics;
* text: the source of a few Python standard-library modules, for a tiny
  character-level language model (next character from the previous 16).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

#: Standard-library modules whose source is the char-LM corpus (same text on any CPython 3.11).
TEXT_MODULES = ("textwrap.py", "string.py", "functools.py", "argparse.py")
#: Printable ASCII plus newline; anything else maps to '?'.
VOCAB = "\n" + "".join(chr(c) for c in range(32, 127))
CONTEXT = 16


@dataclass
class Split:
    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)


@dataclass
class Dataset:
    name: str
    train: Split
    val: Split
    classes: int
    #: Raw (unstandardised) training inputs, for faults that skip normalisation.
    train_raw: torch.Tensor | None = None


_cache: dict[str, Dataset] = {}


def digits(seed: int = 0) -> Dataset:
    """Digits split 75/25 with a fixed permutation; inputs standardised per pixel."""
    key = f"digits{seed}"
    if key not in _cache:
        from sklearn.datasets import load_digits

        data = load_digits()
        x = data.data.astype(np.float32)
        y = data.target.astype(np.int64)
        order = np.random.default_rng(seed).permutation(len(y))
        x, y = x[order], y[order]
        cut = int(0.75 * len(y))
        mean = x[:cut].mean(0)
        std = x[:cut].std(0) + 1.0  # +1: blank border pixels have std 0
        norm = (x - mean) / std
        _cache[key] = Dataset(
            "digits",
            Split(torch.from_numpy(norm[:cut]), torch.from_numpy(y[:cut])),
            Split(torch.from_numpy(norm[cut:]), torch.from_numpy(y[cut:])),
            10,
            train_raw=torch.from_numpy(x[:cut]),
        )
    return _cache[key]


def text() -> Dataset:
    """(context, next char) pairs over stdlib source; last 10 % of the text is validation."""
    if "text" not in _cache:
        root = os.path.dirname(os.__file__)
        raw = "".join(open(os.path.join(root, m), encoding="utf-8").read() for m in TEXT_MODULES)
        index = {c: i for i, c in enumerate(VOCAB)}
        ids = torch.tensor([index.get(c, index["?"]) for c in raw], dtype=torch.int64)
        windows = ids.unfold(0, CONTEXT + 1, 1)
        cut = int(0.9 * len(windows))
        tr, va = windows[:cut], windows[cut + CONTEXT :]
        va = va[:: max(1, len(va) // 4000)]  # a fixed 4k-window validation sample keeps eval cheap
        _cache["text"] = Dataset(
            "text", Split(tr[:, :-1], tr[:, -1]), Split(va[:, :-1], va[:, -1]), len(VOCAB)
        )
    return _cache["text"]
