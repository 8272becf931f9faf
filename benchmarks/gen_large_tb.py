"""Write the large TensorBoard event files the ingest benchmark reads.

The files come from the real writer (``torch.utils.tensorboard.SummaryWriter``),
so the benchmark measures the byte layout users actually have on disk: one run
of ``--steps`` steps x ``--tags`` tags, once with the legacy ``simple_value``
encoding and once with the TF2 ``tensor`` encoding (``new_style=True``).

    python benchmarks/gen_large_tb.py            # 200k steps x 10 tags -> benchmarks/data/
    python benchmarks/gen_large_tb.py --steps 2000 --tags 5 --out /tmp/small
"""
from __future__ import annotations

import argparse
import math
import shutil
import time
from pathlib import Path

import numpy as np

TAG_NAMES = ("train/loss", "val/loss", "train/acc", "val/acc", "lr", "grad_norm", "loss_scale", "throughput")


def tags(n: int) -> list[str]:
    """`n` realistic tag names (extra ones numbered)."""
    return [TAG_NAMES[i] if i < len(TAG_NAMES) else f"extra/metric_{i}" for i in range(n)]


def write(folder: Path, steps: int, n_tags: int, new_style: bool, seed: int = 0) -> Path:
    """One event file in `folder` (replaced if present); returns the file."""
    from torch.utils.tensorboard import SummaryWriter

    if folder.exists():
        shutil.rmtree(folder)
    rng = np.random.default_rng(seed)
    names = tags(n_tags)
    noise = rng.normal(0.0, 0.02, size=(steps, n_tags))
    writer = SummaryWriter(log_dir=str(folder), max_queue=10_000, flush_secs=3600)
    for step in range(steps):
        base = 2.5 * math.exp(-step / (steps / 5)) + 0.3
        for j, name in enumerate(names):
            writer.add_scalar(name, base * (1 + j / 10) + noise[step, j], step, new_style=new_style)
    writer.close()
    (event_file,) = folder.glob("events.out.tfevents.*")
    return event_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--tags", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    args = parser.parse_args()
    for encoding, new_style in (("simple_value", False), ("tensor", True)):
        start = time.perf_counter()
        path = write(args.out / f"tb_{encoding}", args.steps, args.tags, new_style)
        size = path.stat().st_size / 1e6
        print(f"{encoding:>12}: {path} ({size:.0f} MB, {args.steps * args.tags:,} scalars, "
              f"{time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
