"""Real small CPU trainings for `logdoctor compare`, written at test time by the sample runs' own loop
and writers (scripts/samples: a digits MLP, Adam, batch 32, evaluated every 20 steps).

* `base`: the recipe, seed 0, TensorBoard (SummaryWriter);
* `base_csv`: the same training written as a plain CSV (the cross-format baseline);
* `seed1`, `seed2`: the same recipe, seeds 1 and 2, plain CSV;
* `lr_tenth`: the recipe at a tenth of the learning rate, seed 0, TensorBoard;
* `fp16`: the recipe with `model.half()` and no loss scaling or fp32 master weights (Adam's
  eps rounds to 0 in fp16: the loss is NaN from the first update), plain CSV.

300 steps each, one CPU thread: about half a second a run.
"""
from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
STEPS = 300
LR = 1e-3


def write_runs(out: Path) -> dict[str, Path]:
    """Train and write every run under `out`; their folders by name."""
    import torch

    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples import writers
        from samples.recipes import NAMES
        from samples.train import Spec, train
    finally:
        sys.path.remove(str(SCRIPTS))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny MLP: threads only contend
    try:
        recipe = dict(task="digits_mlp", steps=STEPS, eval_every=20)
        base = train(Spec(seed=0, lr=LR, **recipe))
        runs = {name: out / name for name in ("base", "base_csv", "seed1", "seed2", "lr_tenth", "fp16")}
        writers.tensorboard(base, runs["base"], NAMES["tensorboard"])
        writers.plain_csv(base, runs["base_csv"], NAMES["csv"])
        for seed in (1, 2):
            writers.plain_csv(train(Spec(seed=seed, lr=LR, **recipe)), runs[f"seed{seed}"], NAMES["csv"])
        writers.tensorboard(train(Spec(seed=0, lr=LR / 10, **recipe)), runs["lr_tenth"], NAMES["tensorboard"])
        writers.plain_csv(train(Spec(seed=0, lr=LR, fault="fp16_no_scaler", **recipe)), runs["fp16"], NAMES["csv"])
    finally:
        torch.set_num_threads(threads)
    return runs
