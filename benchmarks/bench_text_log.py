"""Console-log speed: `logdoctor analyze big.log` vs the regex loop a user would write instead.

    python benchmarks/bench_text_log.py                 # writes benchmarks/data/train_315mb.log once, then times
    python benchmarks/bench_text_log.py --mb 50         # a smaller log
    python benchmarks/bench_text_log.py --markdown      # the table for docs/
    python benchmarks/bench_text_log.py --checkout OLD  # time another source tree (`git archive REV logdoctor`)

The log is what a long PyTorch run leaves behind with `python train.py | tee
train.log`: a step line every step (`epoch 3 | step 1234/5000 | loss 2.3456 |
lr 3.0e-04 | grad_norm 1.23 | 112.4 ms/step`), a validation line every 1,000
steps, a tqdm bar redrawn through `\\r` around each validation, and the odd
warning. Each reader runs in a fresh interpreter and reports wall time and peak
RSS (`ru_maxrss` of the child):

* logdoctor analyze: the whole command, reading, diagnosing and rendering the
  JSON report (`python -m logdoctor analyze LOG -f json -o /dev/null`);
* regex loop: `re.search` for the step and the loss on every line into two
  Python lists, the script people write when they have nothing else (it finds
  one metric, understands no other line and diagnoses nothing).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"

#: Each child prints {"seconds": ..., "peak_mb": ...} as JSON.
CHILD = r"""
import json, re, resource, subprocess, sys, time
reader, log = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if reader == "logdoctor":
    got = subprocess.run([sys.executable, "-m", "logdoctor", "analyze", log, "-f", "json", "-o", "/dev/null"], capture_output=True)
    assert got.returncode in (0, 1), got.stderr.decode()[-500:]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
else:
    step_re, loss_re = re.compile(r"step (\d+)"), re.compile(r"loss ([\d.eE+-]+|nan|inf)")
    steps, losses = [], []
    with open(log, errors="replace") as fh:
        for line in fh:
            s, l = step_re.search(line), loss_re.search(line)
            if s and l:
                steps.append(int(s.group(1)))
                losses.append(float(l.group(1)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak}))
"""


def write_log(path: Path, megabytes: float, steps_per_epoch: int = 5000) -> None:
    """A long run's console output (see the module doc), about `megabytes` MB."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = int(megabytes * 1e6)
    written = 0
    step = 0
    with open(path, "w") as fh:
        fh.write("Namespace(lr=0.0003, batch_size=64, epochs=1000, model='resnet18')\n")
        while written < target:
            epoch, within = divmod(step, steps_per_epoch)
            loss = 2.3 * math.exp(-step / 400_000) + 0.2 + 0.05 * math.sin(step * 0.7)
            lr = 3e-4 * min(1.0, (step + 1) / 2000)
            line = (
                f"epoch {epoch} | step {within + 1}/{steps_per_epoch} | loss {loss:.4f} | lr {lr:.2e} | "
                f"grad_norm {1.0 + 0.3 * math.cos(step):.3f} | {110 + step % 7:.1f} ms/step\n"
            )
            if step % 1000 == 999:
                bar = "".join(f"\rEvaluating: {p:3d}%|{'#' * (p // 10):<10}| {p}/100" for p in range(0, 101, 20))
                line += f"{bar}\nvalidation | step {within + 1} | val_loss {loss + 0.1:.4f} | val_acc {min(0.99, 0.1 + step / 4e6):.4f}\n"
            if step % 250_000 == 7:
                line += "UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly\n"
            fh.write(line)
            written += len(line)
            step += 1


def measure(reader: str, log: Path, checkout: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    # run from the checkout: `python -m` puts the working folder first on the path
    out = subprocess.run(
        [sys.executable, "-c", CHILD, reader, str(log.resolve())], capture_output=True, text=True, env=env, check=True, cwd=checkout
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=315.0, help="size of the generated log in MB")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument(
        "--checkout", type=lambda p: Path(p).resolve(), default=Path(__file__).resolve().parents[1],
        help="the logdoctor source tree to time (an older commit's, for a before/after table)",
    )
    args = parser.parse_args()
    log = DATA / f"train_{args.mb:g}mb.log"
    if not log.is_file():
        write_log(log, args.mb)
    size = log.stat().st_size / 1e6
    lines = sum(1 for _ in open(log, "rb"))
    rows = [(reader, measure(reader, log, args.checkout)) for reader in ("logdoctor", "regex loop")]
    where = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    if args.markdown:
        print(f"{size:.0f} MB console log, {lines:,} lines ({where})\n")
        print("| reader | wall time | peak memory | what it gives |\n| --- | ---: | ---: | --- |")
        gives = {"logdoctor": "every metric, diagnosed, JSON report", "regex loop": "step and loss lists only"}
        for reader, got in rows:
            print(f"| {reader} | {got['seconds']:.1f} s | {got['peak_mb']:.0f} MB | {gives[reader]} |")
    else:
        print(f"{log}: {size:.0f} MB, {lines:,} lines ({where})")
        for reader, got in rows:
            print(f"  {reader:<12} {got['seconds']:7.2f} s  peak {got['peak_mb']:7.0f} MB")


if __name__ == "__main__":
    main()
